/* SPDX-License-Identifier: MIT */
/* The target object shared by attach/detach, snapshot, suspend and events. */
#pragma once

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "context.h"
#include <gpreempt/gpreempt.h>
#include "kfd-abi.h"

/* What the library asks kfd to be told about (kfd-interface.md §5: a
 * subscribed GPU exception is diverted from the runtime, so nothing else). */
#define GP_EVENT_SUBSCRIPTION                                                    \
        (KFD_EC_MASK(EC_QUEUE_NEW) | KFD_EC_MASK(EC_DEVICE_QUEUE_DELETE) |       \
         KFD_EC_MASK(EC_PROCESS_RUNTIME))

/* Bound on the queue list we accept from the kernel: well above
 * KFD_MAX_NUM_OF_QUEUES_PER_PROCESS (1024; a proposed patch raises it to
 * 4160), so only a broken reply hits it. */
#define GP_MAX_QUEUES 8192

struct gp_target {
        struct gp_context *context;
        pid_t pid;
        /* kfd checks ptrace_parent(lead_thread) == current, a thread: the
         * one that attached. pthread_self() identifies it without the
         * syscall gettid() costs on every suspend/resume. */
        pthread_t tracer_thread;
        int event_fd;
        enum gp_runtime_state runtime_state;
        bool seized;
        bool debug_enabled;
        bool gone;
        /* Its last ptrace stop was a group-stop that SIGCONT has not ended. */
        bool group_stopped;
        /* An event said the queue list changed since the last snapshot. */
        bool queues_stale;

        gp_event_fn event_fn;
        void *event_userdata;

        /* The last snapshot. */
        struct gp_queue *queues;
        size_t n_queues;
        size_t queues_capacity;
        /* The same queues' ids and GPUs, packed: suspend/resume scan these
         * instead of the 80-byte records, so the hot path touches a few
         * cache lines even for many queues (it runs cold, right after the
         * thread slept in the previous ioctl). */
        uint32_t *queue_ids;
        uint32_t *queue_gpu_ids;
        size_t packed_capacity;
        struct kfd_queue_snapshot_entry *snapshot_buffer;
        size_t snapshot_capacity;

        /* Reused by every suspend/resume so the hot path does not allocate. */
        uint32_t *id_array;
        struct gp_queue_status *statuses;
        size_t n_statuses;
        size_t array_capacity;
};

bool target_on_tracer_thread(const struct gp_target *target);
/* 0, or -GP_ERR_WRONG_THREAD / -GP_ERR_TARGET_GONE. */
int target_check_usable(const struct gp_target *target);
void target_emit(struct gp_target *target, const struct gp_event *event);
/* Marks the target gone: its kfd session ended with its mm. */
void target_mark_gone(struct gp_target *target);
/* Internal snapshot: refreshes target->queues. */
int target_refresh_queues(struct gp_target *target);
/* Processes pending events without the thread check (already done). */
int target_handle_events(struct gp_target *target);
/* Grows a realloc'd array to hold at least n elements of size. */
int grow_array(void **array, size_t *capacity, size_t n, size_t size);
