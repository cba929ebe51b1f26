/* SPDX-License-Identifier: MIT */
#include "emulated-app.h"

#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

static char *read_output(const struct emulated_app *a)
{
        static char buf[1 << 20];
        int fd = open(a->output, O_RDONLY | O_CLOEXEC);
        ssize_t n;

        assert_true(fd >= 0);
        n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        buf[n > 0 ? n : 0] = '\0';
        return buf;
}

void emulated_app_fork(struct emulated_app *a, const char *binary, const char *const *args)
{
        static unsigned counter;
        const char *argv[32];
        size_t n = 0;
        int fd, gate[2];

        snprintf(a->output, sizeof(a->output), "/tmp/gpreempt-app-%d-%u.out", (int)getpid(), counter++);
        argv[n++] = binary;
        for (size_t i = 0; args[i] && n < 28; i++)
                argv[n++] = args[i];
        argv[n++] = "--report";
        argv[n++] = "json";
        argv[n] = NULL;
        /* created before the fork, so it exists when we start reading it */
        fd = open(a->output, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        assert_true(fd >= 0);
        assert_int_equal(pipe2(gate, O_CLOEXEC), 0);
        a->pid = fork();
        assert_true(a->pid >= 0);
        if (a->pid == 0) {
                char go;

                /* a failing test must not leave GPU jobs behind */
                prctl(PR_SET_PDEATHSIG, SIGKILL);
                /*
                 * A job of its own, as a shell starts one: the kernel discards
                 * SIGTSTP sent to an orphaned process group (kernel/signal.c:
                 * get_signal, is_current_pgrp_orphaned), and the test's may be one.
                 */
                setpgid(0, 0);
                close(gate[1]);
                if (read(gate[0], &go, 1) != 1)
                        _exit(126);
                dup2(fd, STDOUT_FILENO);
                execv(binary, (char *const *)argv);
                _exit(127);
        }
        close(fd);
        close(gate[0]);
        a->gate_fd = gate[1];
}

void emulated_app_release(struct emulated_app *a)
{
        assert_int_equal(write(a->gate_fd, "", 1), 1);
        close(a->gate_fd);
        a->gate_fd = 0;
        for (int i = 0; i < 1000; i++) {
                if (strstr(read_output(a), "READY pid="))
                        return;
                usleep(10000);
        }
        fail_msg("pid %d did not print READY within 10 s", (int)a->pid);
}

void emulated_app_start(struct emulated_app *a, const char *binary, const char *const *args)
{
        emulated_app_fork(a, binary, args);
        emulated_app_release(a);
}

/* Asks for a report and returns the value after key (e.g. "\"kernels\":") in it, the first one. */
static const char *report_value(struct emulated_app *a, const char *key)
{
        size_t before = strlen(read_output(a));

        kill(a->pid, SIGUSR1);
        for (int i = 0; i < 500; i++) {
                const char *out = read_output(a);
                const char *k;

                if (strlen(out) > before && out[strlen(out) - 1] == '\n') {
                        k = strstr(out + before, key);
                        if (!k)
                                fail_msg("the report of pid %d has no %s: %s", (int)a->pid, key, out + before);
                        return k + strlen(key);
                }
                usleep(10000);
        }
        fail_msg("no report from pid %d", (int)a->pid);
        return NULL;
}

int64_t emulated_app_kernels(struct emulated_app *a)
{
        return strtoll(report_value(a, "\"kernels\":"), NULL, 10);
}

double emulated_app_longest_kernel_ms(struct emulated_app *a)
{
        /* the keys of latency_ms, the first object of the report with a "max" */
        const char *latency = report_value(a, "\"latency_ms\":"), *max = strstr(latency, "\"max\":");

        if (!max)
                fail_msg("the report of pid %d has no latency_ms max: %s", (int)a->pid, latency);
        return strtod(max + strlen("\"max\":"), NULL);
}

uint64_t emulated_app_read_pointer_address(struct emulated_app *a)
{
        return strtoull(report_value(a, "\"read_pointer_address\":\""), NULL, 16);
}

int emulated_app_wait(struct emulated_app *a, int timeout_ms)
{
        int status;

        for (int i = 0; i <= timeout_ms / 10; i++) {
                if (waitpid(a->pid, &status, WNOHANG) == a->pid) {
                        a->pid = 0;
                        return status;
                }
                usleep(10000);
        }
        return -1;
}

void emulated_app_stop(struct emulated_app *a)
{
        if (a->gate_fd > 0)
                close(a->gate_fd);
        a->gate_fd = 0;
        if (a->pid > 0) {
                kill(a->pid, SIGKILL);
                waitpid(a->pid, NULL, 0);
                a->pid = 0;
        }
        if (a->output[0])
                unlink(a->output);
        a->output[0] = '\0';
}
