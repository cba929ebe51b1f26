/* SPDX-License-Identifier: MIT */
#include "test-support.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "proc-status.h"

uint64_t now_usec(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

uint64_t now_nsec(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void sleep_ms(int ms)
{
        struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };

        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                ;
}

int child_spawn(char *const argv[], bool merge_stderr, struct child *ret_child)
{
        int out[2], in[2];
        pid_t pid;

        if (pipe2(out, O_CLOEXEC) < 0)
                return NEG_ERRNO();
        if (pipe2(in, O_CLOEXEC) < 0) {
                close(out[0]);
                close(out[1]);
                return NEG_ERRNO();
        }
        pid = fork();
        if (pid < 0)
                return NEG_ERRNO();
        if (pid == 0) {
                dup2(in[0], STDIN_FILENO);
                dup2(out[1], STDOUT_FILENO);
                if (merge_stderr)
                        dup2(out[1], STDERR_FILENO);
                execv(argv[0], argv);
                _exit(127);
        }
        close(out[1]);
        close(in[0]);
        *ret_child = (struct child){ .pid = pid, .stdout_fd = out[0], .stdin_fd = in[1] };
        return 0;
}

int child_wait_line(struct child *c, const char *prefix, int timeout_ms, char *ret_line,
                    size_t line_size)
{
        uint64_t deadline = now_usec() + (uint64_t)timeout_ms * 1000u;
        size_t scanned = 0;

        for (;;) {
                /* Look for a complete line with the prefix in what we have. */
                while (scanned < c->output_len) {
                        char *line = c->output + scanned;
                        char *nl = memchr(line, '\n', c->output_len - scanned);

                        if (!nl)
                                break;
                        if (strncmp(line, prefix, strlen(prefix)) == 0) {
                                if (ret_line) {
                                        size_t n = (size_t)(nl - line);

                                        if (n >= line_size)
                                                n = line_size - 1;
                                        memcpy(ret_line, line, n);
                                        ret_line[n] = '\0';
                                }
                                /* Forget everything up to this line. */
                                memmove(c->output, nl + 1,
                                        c->output_len - (size_t)(nl + 1 - c->output));
                                c->output_len -= (size_t)(nl + 1 - c->output);
                                return 0;
                        }
                        scanned = (size_t)(nl + 1 - c->output);
                }

                uint64_t now = now_usec();
                if (now >= deadline)
                        return -ETIMEDOUT;
                struct pollfd p = { .fd = c->stdout_fd, .events = POLLIN };
                int r = poll(&p, 1, (int)((deadline - now) / 1000u) + 1);
                if (r < 0 && errno != EINTR)
                        return NEG_ERRNO();
                if (r <= 0)
                        continue;
                if (c->output_len == sizeof(c->output)) {
                        /* Keep the newest half: old lines are of no interest. */
                        memmove(c->output, c->output + sizeof(c->output) / 2,
                                sizeof(c->output) / 2);
                        c->output_len = sizeof(c->output) / 2;
                        scanned = 0;
                }
                ssize_t n = read(c->stdout_fd, c->output + c->output_len,
                                 sizeof(c->output) - c->output_len);
                if (n == 0)
                        return -EPIPE;
                if (n > 0)
                        c->output_len += (size_t)n;
        }
}

int child_wait_exit(struct child *c, int timeout_ms, int *ret_status)
{
        uint64_t deadline = now_usec() + (uint64_t)timeout_ms * 1000u;
        int status;

        for (;;) {
                pid_t r = waitpid(c->pid, &status, WNOHANG);

                if (r == c->pid) {
                        c->pid = 0;
                        if (ret_status)
                                *ret_status = status;
                        return 0;
                }
                if (r < 0)
                        return NEG_ERRNO();
                if (now_usec() >= deadline)
                        return -ETIMEDOUT;
                sleep_ms(2);
        }
}

void child_kill(struct child *c)
{
        if (c->pid > 0) {
                kill(c->pid, SIGKILL);
                waitpid(c->pid, NULL, 0);
                c->pid = 0;
        }
        if (c->stdout_fd >= 0)
                close(c->stdout_fd);
        if (c->stdin_fd >= 0)
                close(c->stdin_fd);
        c->stdout_fd = c->stdin_fd = -1;
}

int cycler_spawn(const char *cycler_path, struct child *ret_child)
{
        /*
         * LeakSanitizer cannot work in a traced process (it stops the world
         * with ptrace), and the cycler exits while traced: under the
         * sanitizers its leak check must be off.
         */
        const char *asan = getenv("ASAN_OPTIONS");
        char asan_env[512];
        char *argv[] = { (char *)"/usr/bin/env", asan_env, (char *)cycler_path, NULL };
        int r;

        snprintf(asan_env, sizeof(asan_env), "ASAN_OPTIONS=%s%sdetect_leaks=0", asan ? asan : "",
                 asan && *asan ? ":" : "");
        r = child_spawn(argv, false, ret_child);
        if (r < 0)
                return r;
        r = child_wait_line(ret_child, "WAITING", 5000, NULL, 0);
        if (r < 0)
                child_kill(ret_child);
        return r;
}

int app_spawn(const char *app_path, const char *const args[], struct child *ret_child)
{
        char *argv[32];
        size_t n = 0;
        int r;

        argv[n++] = (char *)app_path;
        argv[n++] = (char *)"--report";
        argv[n++] = (char *)"none";
        for (size_t i = 0; args && args[i] && n < ELEMENTSOF(argv) - 1; i++)
                argv[n++] = (char *)args[i];
        argv[n] = NULL;

        r = child_spawn(argv, false, ret_child);
        if (r < 0)
                return r;
        r = child_wait_line(ret_child, "READY ", 10000, NULL, 0);
        if (r < 0)
                child_kill(ret_child);
        return r;
}

int child_run_to_end(struct child *c, int timeout_ms, int *ret_status)
{
        uint64_t deadline = now_usec() + (uint64_t)timeout_ms * 1000u;

        for (;;) {
                struct pollfd p = { .fd = c->stdout_fd, .events = POLLIN };
                uint64_t now = now_usec();
                ssize_t n;

                if (now >= deadline)
                        return -ETIMEDOUT;
                if (poll(&p, 1, (int)((deadline - now) / 1000u) + 1) <= 0)
                        continue;
                if (c->output_len >= sizeof(c->output) - 1)
                        return -ENOBUFS;
                n = read(c->stdout_fd, c->output + c->output_len,
                         sizeof(c->output) - 1 - c->output_len);
                if (n > 0) {
                        c->output_len += (size_t)n;
                        continue;
                }
                if (n < 0 && errno == EINTR)
                        continue;
                /* EOF: every writer is gone. */
                c->output[c->output_len] = '\0';
                return child_wait_exit(c, (int)((deadline - now_usec()) / 1000u) + 1, ret_status);
        }
}

int peek_u64(pid_t pid, uint64_t address, uint64_t *ret_value)
{
        uint64_t value;
        struct iovec local = { .iov_base = &value, .iov_len = sizeof(value) };
        struct iovec remote = { .iov_base = (void *)(uintptr_t)address, .iov_len = sizeof(value) };

        if (process_vm_readv(pid, &local, 1, &remote, 1, 0) != sizeof(value))
                return -EIO;
        *ret_value = value;
        return 0;
}

char process_state(pid_t pid)
{
        struct proc_stat st;

        return proc_stat_read(pid, &st) < 0 ? 0 : st.state;
}

pid_t tracer_of(pid_t pid)
{
        char path[64], line[256];
        _cleanup_fclose_ FILE *f = NULL;

        snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
        f = fopen(path, "re");
        if (!f)
                return -1;
        while (fgets(line, sizeof(line), f))
                if (strncmp(line, "TracerPid:", 10) == 0)
                        return (pid_t)atoi(line + 10);
        return -1;
}

int count_lines(const char *path)
{
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        int n = 0, ch;

        if (!f)
                return 0;
        while ((ch = fgetc(f)) != EOF)
                n += ch == '\n';
        return n;
}
