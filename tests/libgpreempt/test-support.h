/* SPDX-License-Identifier: MIT */
/* Child processes and polling helpers shared by the libgpreempt tests. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct child {
        pid_t pid;
        int stdout_fd; /* read end of the child's stdout */
        int stdin_fd;  /* write end of the child's stdin */
        char output[8192];
        size_t output_len;
};

/* fork+exec argv (NULL-terminated) with stdin/stdout on pipes; stderr too
 * goes to the stdout pipe when merge_stderr. */
int child_spawn(char *const argv[], bool merge_stderr, struct child *ret_child);
/* Reads everything the child writes until it exits (at most timeout_ms),
 * NUL-terminated in c->output, and its wait status. */
int child_run_to_end(struct child *c, int timeout_ms, int *ret_status);
/* Reads the child's output until a line starting with prefix arrives; copies
 * that line to ret_line (if not NULL). -ETIMEDOUT after timeout_ms. */
int child_wait_line(struct child *c, const char *prefix, int timeout_ms, char *ret_line,
                    size_t line_size);
/* Waits for the child to exit (it is ours, not traced). -ETIMEDOUT after timeout_ms. */
int child_wait_exit(struct child *c, int timeout_ms, int *ret_status);
/* SIGKILL and reap; safe on a child already reaped (pid 0). */
void child_kill(struct child *c);
/* Spawns kfdemu-app with args and waits for its READY line. */
int app_spawn(const char *app_path, const char *const args[], struct child *ret_child);
/* Spawns runtime-cycler (tests/libgpreempt) and waits for its WAITING line. */
int cycler_spawn(const char *cycler_path, struct child *ret_child);

uint64_t now_usec(void);
/* CLOCK_MONOTONIC in nanoseconds, for benchmarks. */
uint64_t now_nsec(void);
void sleep_ms(int ms);
/* One u64 of another process's memory (the tests run as root). */
int peek_u64(pid_t pid, uint64_t address, uint64_t *ret_value);
/* The state letter of /proc/pid/stat ('R', 'S', 'T', 't', 'Z'...), or 0. */
char process_state(pid_t pid);
/* TracerPid of /proc/pid/status, -1 if unreadable. */
pid_t tracer_of(pid_t pid);
/* Number of lines in a file, 0 if it does not exist. */
int count_lines(const char *path);
