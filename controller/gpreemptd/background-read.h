/* SPDX-License-Identifier: MIT */
/*
 * Blocking reads off the loop thread.
 *
 * Reading debugfs kfd/mqds takes every KFD process's mutex in turn and
 * regenerates the whole dump whenever its buffer grows
 * (kfd_debugfs_mqds_by_process; kfd-hazards.md §4): on the loop it holds
 * up every poll, suspension and resume for as long as any process's
 * ioctl holds its mutex. A job here runs its read on one helper thread
 * and hands the result to its done callback on the sd-event loop, woken
 * through an eventfd.
 *
 * - One job at a time per key (an online process's pid, say): a second
 *   submission while one is queued, running or undelivered gets -EBUSY.
 * - Jobs run one after the other, in submission order: the reads this is
 *   for contend for the same kernel locks, so running two at once gains
 *   nothing.
 * - The helper runs at SCHED_OTHER even when the loop thread that created
 *   it is at SCHED_FIFO (RealtimePriority=), with every signal blocked
 *   (the daemon takes its signals through the loop).
 * - background_read_cancel() drops a job: not run if still queued, its
 *   result freed and not delivered otherwise. background_read_free() (at
 *   shutdown) drops every job and waits for the read in progress, if any,
 *   to return: a read in the kernel cannot be interrupted.
 */
#pragma once

#include <stdint.h>
#include <systemd/sd-event.h>

struct background_read;

struct background_read_job {
        uint64_t key;
        /* On the helper thread: touches nothing of the loop's. Returns 0 with *ret_result, or -errno. */
        int (*read)(void *arg, void **ret_result);
        /* On the loop thread: r is read's return; the callback owns result (NULL after a failure). */
        void (*done)(uint64_t key, int r, void *result, void *userdata);
        /* Frees a result that will not be delivered; may be NULL when read never returns one. */
        void (*free_result)(void *result);
        /* Frees arg once the job is over, delivered or not; NULL when the caller keeps it. */
        void (*free_arg)(void *arg);
        void *arg;
        void *userdata;
};

/* Starts the helper thread and its eventfd source on e at priority. Returns 0 or -errno. */
int background_read_new(sd_event *e, int64_t priority, struct background_read **ret);
struct background_read *background_read_free(struct background_read *b);

/*
 * Queues the job (copied). Returns 0; -EBUSY when its key has a job not yet
 * delivered; -ENOMEM. On failure the job's arg is still the caller's.
 */
int background_read_submit(struct background_read *b, const struct background_read_job *job);

/* Drops key's job. Returns 0, or -ENOENT when it has none. */
int background_read_cancel(struct background_read *b, uint64_t key);
