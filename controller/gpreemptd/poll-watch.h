/* SPDX-License-Identifier: MIT */
/*
 * A GPU's polled online queues as the preemption worker watches them: what
 * to read of each process (its queues' write and read indices, the remote
 * iovecs the detector reads) and what the detector found there at its last
 * look, when the GPU's online side was idle. A poll that finds any index
 * changed has found new online work.
 *
 * Why the worker polls: with polling only (or queues past the four debug
 * registers), the loop's busy cadence saw a store and then handed the
 * suspension to the worker, a cross-thread wake-up that was most of the
 * reaction (docs/benchmarks/reaction.md). The worker reads the queues
 * itself while its GPU is marked to suspend (preemption-worker.h), as it
 * waits on breakpoints, and suspends on what it finds without waking
 * anyone.
 *
 * Like the loop's quick look (detector.h), a poll reads the processes whose
 * queues moved within the active window every time and the quiet ones one
 * at a time, in turn. Reads use process_vm_readv only: the detector hands
 * out no watch for a process it reads through /proc/PID/mem. A process that
 * can no longer be read (exited, or a queue unmapped) ends the watch, which
 * is then incomplete: its owner hands its GPU back to the loop's looks,
 * which find out why.
 *
 * Owned by one thread at a time (the detector builds it, the worker polls it).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "cleanup.h"

struct poll_watch;

/* An index of a queue: where it lands in the process's read, and the value it must keep. */
struct poll_watch_index {
        size_t offset;
        uint64_t value;
};

/* A watch polled every interval_ns until until_ns (CLOCK_MONOTONIC). Returns 0 or -ENOMEM. */
int poll_watch_new(uint64_t interval_ns, uint64_t until_ns, struct poll_watch **ret);
struct poll_watch *poll_watch_free(struct poll_watch *w);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct poll_watch *, poll_watch_free);

/*
 * Adds pid's read: remote iovecs whose bytes, in order, make a buffer in
 * which indices[] are found. active: read at every poll. Returns 0,
 * -EINVAL (an index outside the read), or -ENOMEM.
 */
int poll_watch_add_process(struct poll_watch *w, pid_t pid, bool active, const struct iovec *remote, size_t n_remote,
                           const struct poll_watch_index *indices, size_t n_indices);
size_t poll_watch_n_processes(const struct poll_watch *w);

/* When the polls end (CLOCK_MONOTONIC), as given. */
uint64_t poll_watch_until(const struct poll_watch *w);
/* Whether the watch still covers every process added: false once a read failed. */
bool poll_watch_complete(const struct poll_watch *w);
/* When the next poll is due; UINT64_MAX once the watch has ended (until_ns, nothing to read, or incomplete). */
uint64_t poll_watch_next_due(const struct poll_watch *w);
/*
 * Polls at now_ns: reads the active processes and the next quiet one.
 * Returns true when an index changed (*ret_pid: whose), false otherwise.
 */
bool poll_watch_poll(struct poll_watch *w, uint64_t now_ns, pid_t *ret_pid);
