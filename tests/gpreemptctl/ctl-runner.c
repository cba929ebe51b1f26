/* SPDX-License-Identifier: MIT */
#include "ctl-runner.h"

#include <grp.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <signal.h>
#include <unistd.h>
#include <cmocka.h>

/* Reads what the child left in fd, NUL-terminated and cut to size. */
static void slurp(int fd, char *buf, size_t size)
{
        ssize_t n = pread(fd, buf, size - 1, 0);

        buf[n > 0 ? n : 0] = '\0';
        close(fd);
}

void ctl_start(const char *binary, const char *const *env, uid_t as_uid, const char *const *args,
               struct ctl_process *ret)
{
        /* memfds rather than pipes: the child can print any amount without
         * waiting for the parent to read. */
        int out = memfd_create("ctl-out", MFD_CLOEXEC), err = memfd_create("ctl-err", MFD_CLOEXEC);
        const char *argv[32] = { binary };
        size_t n = 1;
        pid_t pid;

        assert_true(out >= 0 && err >= 0);
        for (; args[n - 1]; n++) {
                assert_true(n + 1 < sizeof(argv) / sizeof(argv[0]));
                argv[n] = args[n - 1];
        }
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                prctl(PR_SET_PDEATHSIG, SIGKILL);
                dup2(out, STDOUT_FILENO);
                dup2(err, STDERR_FILENO);
                for (size_t i = 0; env && env[i]; i++)
                        putenv((char *)env[i]);
                if (as_uid != 0 &&
                    (setgroups(0, NULL) < 0 || setresgid(as_uid, as_uid, as_uid) < 0 ||
                     setresuid(as_uid, as_uid, as_uid) < 0))
                        _exit(126);
                execv(binary, (char *const *)argv);
                _exit(127);
        }
        *ret = (struct ctl_process){ .pid = pid, .out = out, .err = err };
}

void ctl_finish(struct ctl_process *p, struct ctl_result *ret)
{
        int status;

        assert_int_equal(waitpid(p->pid, &status, 0), p->pid);
        ret->exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        slurp(p->out, ret->out, sizeof(ret->out));
        slurp(p->err, ret->err, sizeof(ret->err));
        p->pid = 0;
}

void ctl_run(const char *binary, const char *const *env, uid_t as_uid, const char *const *args,
             struct ctl_result *ret)
{
        struct ctl_process p;

        ctl_start(binary, env, as_uid, args, &p);
        ctl_finish(&p, ret);
}
