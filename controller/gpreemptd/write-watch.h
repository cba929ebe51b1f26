/* SPDX-License-Identifier: MIT */
/*
 * A hardware write breakpoint on one 8-byte word of another process (an
 * online queue's write_dispatch_id), in every one of its threads. Each
 * thread's breakpoint fd is added to an epoll set the caller gives, with the
 * caller's key as its data: the store that publishes the first packet after
 * an idle period wakes whoever waits on that set, so an idle GPU needs no
 * polling. The waiter need not be the owner's thread (the daemon's
 * preemption worker waits on the set and suspends at once): it gets only the
 * key, and the owner takes the wake-up with write_watch_consume().
 *
 * The breakpoint costs the target a debug trap on every store to the word,
 * so it is opened disabled and the caller enables it only while it waits for
 * the idle -> busy edge (detector.c).
 *
 * Kernel facts this relies on (linux kernel/events/, checked against 6.18):
 *  - hw_breakpoint.c reserve_bp_slot()/toggle_bp_slot(): a task has as many
 *    breakpoint slots as the CPU has debug registers (4 on x86); one more is
 *    refused with ENOSPC.
 *  - core.c perf_mmap(): an inherited per-task event (cpu -1, inherit=1)
 *    cannot be mmapped (EINVAL), and core.c perf_poll() answers EPOLLHUP for
 *    an event without a ring buffer. So each breakpoint sends its samples, by
 *    PERF_EVENT_IOC_SET_OUTPUT, into the ring buffer of a dummy event on the
 *    same thread (perf_event_set_output() allows a per-task redirect only
 *    within one task), and the breakpoint's own fd is polled.
 *  - core.c perf_output_begin(): an inherited child writes to its parent's
 *    buffer, so threads created after opening are covered by inherit=1
 *    (inherit_thread=1 leaves forked processes out).
 *  - core.c _perf_ioctl(): ENABLE/DISABLE apply to the inherited children
 *    too (perf_event_for_each_child), and inherit_event() copies the OFF
 *    state to threads created while disabled.
 *  - core.c is_event_hup(): the breakpoint's fd reports EPOLLHUP once its
 *    thread and every thread inheriting from it have exited. The fds are
 *    added edge-triggered (EPOLLET), so a hang-up is reported once and an
 *    exited thread cannot wake the waiter forever; perf_poll() reports each
 *    sample's EPOLLIN once anyway (it exchanges rb->poll with 0).
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* x86 has four debug registers per thread: a fifth breakpoint is refused. */
#define WRITE_WATCH_MAX_PER_THREAD 4

struct write_watch;

/*
 * Opens a disabled write breakpoint on the 8 bytes at address in every
 * thread of pid, each fd in epoll_fd with key as its data (EPOLLIN: a store;
 * EPOLLHUP: a thread covered exited). Returns 0, or -errno when any thread
 * refuses it (EACCES or EPERM: no CAP_PERFMON; ENOSPC: its debug registers
 * are taken; ESRCH: the process is gone; EMFILE, ENOMEM), with nothing left
 * open.
 */
int write_watch_new(int epoll_fd, uint64_t key, pid_t pid, uint64_t address, struct write_watch **ret_watch);
/* Arms or disarms the breakpoint in every thread. Returns 0 or -errno. */
int write_watch_set_enabled(struct write_watch *w, bool enabled);
/* Whether it is armed, as far as its owner knows (write_watch_disarmed_elsewhere() included). */
bool write_watch_enabled(const struct write_watch *w);
/*
 * Its breakpoint fds, one per thread covered, up to max; returns how many
 * there are. A duplicate of them disarms it from another thread
 * (PERF_EVENT_IOC_DISABLE reaches the same events); the owner then says so
 * with write_watch_disarmed_elsewhere().
 */
size_t write_watch_fds(const struct write_watch *w, int *out, size_t max);
/* The breakpoint was disarmed through duplicates of its fds: counted disarmed, the next arming enables it. */
void write_watch_disarmed_elsewhere(struct write_watch *w);
/*
 * The owner's side of a wake-up with this watch's key: marks the samples
 * read, so that the ring buffers never fill and every later store wakes the
 * waiter again. Returns whether every thread covered has exited. The
 * hang-up is read by poll(), which also takes the wake-up of a store made
 * since (perf_poll() reports a sample's EPOLLIN once, to whoever asks
 * first): *ret_stored says whether it did, and the store is then the
 * owner's to act on, as the waiter will not be woken for it.
 */
bool write_watch_consume(struct write_watch *w, bool *ret_stored);
/* Takes its fds out of the epoll set and closes them. */
void write_watch_free(struct write_watch *w);

/* Why a breakpoint could not be opened, for an operator. */
const char *write_watch_strerror(int error);
