/* SPDX-License-Identifier: MIT */
#include "cli-run.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

extern char **environ;

struct sink {
        int fd;
        char *buf;
        size_t len;
};

static void drain(struct sink *s)
{
        char chunk[65536];
        ssize_t n = read(s->fd, chunk, sizeof(chunk));
        assert_true(n >= 0);
        if (n == 0) {
                close(s->fd);
                s->fd = -1;
                return;
        }
        s->buf = realloc(s->buf, s->len + (size_t) n + 1);
        assert_non_null(s->buf);
        memcpy(s->buf + s->len, chunk, (size_t) n);
        s->len += (size_t) n;
        s->buf[s->len] = 0;
}

int cli_run(const char *const *argv, const char *stdin_text, struct cli_output *ret)
{
        int in[2], out[2], err[2];
        assert_int_equal(pipe2(in, O_CLOEXEC), 0);
        assert_int_equal(pipe2(out, O_CLOEXEC), 0);
        assert_int_equal(pipe2(err, O_CLOEXEC), 0);

        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, in[0], 0);
        posix_spawn_file_actions_adddup2(&fa, out[1], 1);
        posix_spawn_file_actions_adddup2(&fa, err[1], 2);
        pid_t pid;
        assert_int_equal(posix_spawn(&pid, argv[0], &fa, NULL, (char *const *) argv, environ), 0);
        posix_spawn_file_actions_destroy(&fa);
        close(in[0]);
        close(out[1]);
        close(err[1]);

        if (stdin_text) {
                /* A program that refuses its options exits without reading
                 * its input: that is EPIPE here, not the test's death. */
                size_t len = strlen(stdin_text);
                signal(SIGPIPE, SIG_IGN);
                ssize_t n = write(in[1], stdin_text, len);
                assert_true(n == (ssize_t) len || (n < 0 && errno == EPIPE));
        }
        close(in[1]);

        struct sink sinks[2] = { { .fd = out[0] }, { .fd = err[0] } };
        while (sinks[0].fd >= 0 || sinks[1].fd >= 0) {
                struct pollfd p[2] = { { .fd = sinks[0].fd, .events = POLLIN }, { .fd = sinks[1].fd, .events = POLLIN } };
                assert_true(poll(p, 2, -1) > 0);
                for (int i = 0; i < 2; i++)
                        if (sinks[i].fd >= 0 && p[i].revents)
                                drain(&sinks[i]);
        }
        int status;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status));
        ret->out = sinks[0].buf ? sinks[0].buf : strdup("");
        ret->err = sinks[1].buf ? sinks[1].buf : strdup("");
        return WEXITSTATUS(status);
}

void cli_output_free(struct cli_output *o)
{
        free(o->out);
        free(o->err);
}
