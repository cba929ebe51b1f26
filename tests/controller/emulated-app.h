/* SPDX-License-Identifier: MIT */
/* kfdemu-app processes for integration tests: start one, wait for READY, read its reports. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct emulated_app {
        pid_t pid;
        char output[160]; /* its stdout: READY line, then JSON reports */
        int gate_fd;      /* > 0 from emulated_app_fork() to emulated_app_release() */
};

/* Starts binary with args (NULL-terminated) and --report json; waits for READY. */
void emulated_app_start(struct emulated_app *a, const char *binary, const char *const *args);
/*
 * The same in two steps: forks a child that waits, so that its pid is known
 * (to register it, say) before it executes binary; emulated_app_release()
 * lets it exec and waits for READY.
 */
void emulated_app_fork(struct emulated_app *a, const char *binary, const char *const *args);
void emulated_app_release(struct emulated_app *a);
/* Asks for a report (SIGUSR1) and returns its "kernels" count. */
int64_t emulated_app_kernels(struct emulated_app *a);
/*
 * Asks for a report and returns the longest any of a's kernels has taken so
 * far, in ms, from its submission to its end on the GPU by the GPU's own
 * timestamps (the report's latency_ms max): a suspension of its queue is in
 * it, how late the test or the report ran is not.
 */
double emulated_app_longest_kernel_ms(struct emulated_app *a);
/*
 * Asks for a report and returns where its first queue's read index lives in
 * its memory: the GPU's progress, readable (process_vm_readv) even while
 * the app is stopped and cannot report.
 */
uint64_t emulated_app_read_pointer_address(struct emulated_app *a);
/* Waits up to timeout_ms for the app to exit; returns its wait status or -1. */
int emulated_app_wait(struct emulated_app *a, int timeout_ms);
void emulated_app_stop(struct emulated_app *a);
