/* SPDX-License-Identifier: MIT */
/*
 * libgpreempt: suspend and resume another process's AMD GPU hardware queues
 * through the amdkfd debugger interface (AMDKFD_IOC_DBG_TRAP, KFD >= 1.13).
 *
 * Objects
 *   gp_context  one per thread that manages targets: the library's own
 *               /dev/kfd file and the log callback.
 *   gp_target   one per managed process: the ptrace session on its
 *               thread-group leader, the debug event FIFO and the kfd debug
 *               session, plus the last known queue list.
 *
 * Conventions
 *   - Every function that can fail returns 0 (or a non-negative count) on
 *     success and a negative errno on failure. Outputs named ret_* are
 *     written only on success.
 *   - The kernel checks that every debugger call comes from the very thread
 *     that is the target's ptrace tracer (kfd_ioctl_set_debug_trap:
 *     ptrace_parent(target->lead_thread) != current). Every gp_target_*
 *     call that talks to the kernel therefore returns GP_ERR_WRONG_THREAD
 *     when called from another thread than gp_target_attach() was.
 *   - gp_explain() turns an error and its context into one sentence that
 *     says what failed, why, and what to do.
 *   - The library never writes to stdout or stderr: install a log callback.
 *   - Options structs start with their size (set .sz = sizeof(struct ...))
 *     so they can grow without breaking callers.
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Errors of the library's own making (negated when returned). */
/* A target was used from another thread than the one that attached it. */
#define GP_ERR_WRONG_THREAD EXDEV
/* Suspend/resume matched no queue (the target has none, or none on the
 * requested GPUs): never reported as success. */
#define GP_ERR_NO_QUEUES ENOENT
/* ENABLE succeeded but the kernel left the runtime ENABLED_BUSY: on GPUs
 * without per-VMID debugging another process holds the debug VMID. */
#define GP_ERR_VMID_BUSY EUSERS
/* ENABLE succeeded but the kernel left the runtime ENABLED_ERROR. */
#define GP_ERR_RUNTIME_ERROR ENOTRECOVERABLE
/* /dev/kfd speaks a KFD interface older than 1.13 (no debugger API). */
#define GP_ERR_KFD_TOO_OLD EPROTONOSUPPORT
/* The target exited, or exec'd (which ends its kfd debug session). */
#define GP_ERR_TARGET_GONE ESRCH
/* The target is the calling process: ptrace cannot trace its own thread group. */
#define GP_ERR_SELF EDEADLK
/* The target does not use the GPU (it never opened /dev/kfd): attaching would
 * make the kernel create a KFD process for it, so gp_target_attach refuses. */
#define GP_ERR_NOT_GPU_PROCESS ENOTCONN

enum gp_log_level {
        GP_LOG_ERR = 3,     /* an operation failed */
        GP_LOG_WARNING = 4, /* something unexpected that the library handled */
        GP_LOG_INFO = 6,    /* state changes: attach, runtime events, detach */
        GP_LOG_DEBUG = 7,   /* every kernel call and ptrace stop */
};

typedef void (*gp_log_fn)(enum gp_log_level level, const char *message, void *userdata);

struct gp_context;
struct gp_target;

struct gp_context_opts {
        size_t sz;
        gp_log_fn log_fn;
        void *log_userdata;
        /* Messages above this level are not formatted; 0 means GP_LOG_INFO. */
        enum gp_log_level log_level;
        /* NULL means "/dev/kfd". */
        const char *kfd_path;
};

/* Opens the KFD device and checks its interface version (>= 1.13, < 2.0). */
int gp_context_new(const struct gp_context_opts *opts, struct gp_context **ret_context);
/* Returns NULL. Detach every target first. */
struct gp_context *gp_context_free(struct gp_context *context);
void gp_context_kfd_version(const struct gp_context *context, uint32_t *ret_major,
                            uint32_t *ret_minor);

/* kfd's runtime_state of a target (enum kfd_dbg_runtime_state). */
enum gp_runtime_state {
        GP_RUNTIME_DISABLED = 0,
        GP_RUNTIME_ENABLED = 1,
        GP_RUNTIME_ENABLED_BUSY = 2,
        GP_RUNTIME_ENABLED_ERROR = 3,
};

/* "disabled", "enabled", "enabled-busy", "enabled-error". */
const char *gp_runtime_state_to_string(enum gp_runtime_state state);
/* "pm4", "sdma", "aql", "sdma-xgmi" for KFD_IOC_QUEUE_TYPE_*. */
const char *gp_queue_type_to_string(uint32_t type);

enum gp_event_type {
        /* A queue appeared (queue_id, gpu_id); it is not suspended. */
        GP_EVENT_QUEUE_NEW = 1,
        /* A queue on gpu_id was destroyed (the kernel does not say which). */
        GP_EVENT_QUEUE_DELETED,
        /* The target's runtime enabled or disabled debugging (runtime_state);
         * the library has already acknowledged it. */
        GP_EVENT_RUNTIME,
        /* The target entered a group-stop (stop_signal); it stays stopped until
         * someone sends SIGCONT, exactly as without a tracer. */
        GP_EVENT_STOPPED,
        /* The target's leader is about to exit (exit_status -1) or has
         * exited (exit_status as from waitpid: the tracer collects it, and
         * when the target is the caller's own child it is thereby reaped);
         * its kfd session is gone. */
        GP_EVENT_EXITED,
        /* The target exec'd: the kernel ended its kfd debug session. */
        GP_EVENT_EXECED,
        /* The group-stop GP_EVENT_STOPPED reported ended: someone sent
         * SIGCONT (which the target still receives as sent). */
        GP_EVENT_CONTINUED,
};

struct gp_event {
        enum gp_event_type type;
        uint32_t gpu_id;
        uint32_t queue_id;
        enum gp_runtime_state runtime_state;
        int stop_signal;
        int exit_status;
};

typedef void (*gp_event_fn)(struct gp_target *target, const struct gp_event *event,
                            void *userdata);

struct gp_attach_opts {
        size_t sz;
        gp_event_fn event_fn;
        void *event_userdata;
        /* Attach to a process that has not opened /dev/kfd yet (to hold it
         * from the moment its runtime starts). The kernel then creates a KFD
         * process for it, which stays even if it never uses the GPU; without
         * this, such a target is refused with GP_ERR_NOT_GPU_PROCESS. */
        bool before_gpu_use;
};

/*
 * Seizes the process (its thread-group leader), opens a debug event FIFO and
 * enables the kfd debug session with a subscription to new queues, queue
 * deletions and runtime events, then takes a first queue snapshot. On any
 * failure the process is left as it was found.
 *
 * A target whose runtime is not enabled yet (GP_RUNTIME_DISABLED) is
 * attached: its GP_EVENT_RUNTIME comes through gp_target_process_events().
 * The calling process itself is refused (GP_ERR_SELF), and so is a process
 * that does not use the GPU unless opts->before_gpu_use.
 */
int gp_target_attach(struct gp_context *context, pid_t pid, const struct gp_attach_opts *opts,
                     struct gp_target **ret_target);
/* Ends the kfd session (which resumes every queue), detaches ptrace and
 * frees the target, whatever fails on the way (returns the first error).
 * It stops the target first and acknowledges a runtime event still pending
 * (DISABLE would not wake a runtime waiting for it); the attach callback is
 * not called for such last events. From another thread than the attaching
 * one it only returns -GP_ERR_WRONG_THREAD, since only the tracer thread can
 * detach. */
int gp_target_detach(struct gp_target *target);

pid_t gp_target_pid(const struct gp_target *target);
enum gp_runtime_state gp_target_runtime_state(const struct gp_target *target);
/* 1 once the target exited or exec'd: only gp_target_detach() is useful then. */
int gp_target_is_gone(const struct gp_target *target);

/* Readable when the kernel has debug events for the target: then call
 * gp_target_process_events(). */
int gp_target_event_fd(const struct gp_target *target);
/* Drains the FIFO, queries every pending event, acknowledges runtime events
 * exactly once and reports each event to the attach callback. Returns the
 * number of events handled. */
int gp_target_process_events(struct gp_target *target);
/* Services every pending ptrace stop of the target without blocking
 * (signal-delivery stops get their signal re-injected, group-stops are
 * listened, exit and exec are reported). Call it whenever the calling thread
 * gets SIGCHLD. Returns the number of stops handled. */
int gp_target_service_ptrace(struct gp_target *target);

struct gp_queue {
        uint32_t queue_id;
        uint32_t gpu_id;
        uint32_t type; /* KFD_IOC_QUEUE_TYPE_*: 0 PM4, 1 SDMA, 2 AQL, 3 SDMA_XGMI */
        uint32_t ring_size; /* bytes */
        uint64_t ring_base_address;
        uint64_t read_pointer_address;  /* in the target's address space */
        uint64_t write_pointer_address; /* in the target's address space */
        uint64_t ctx_save_restore_address;
        uint32_t ctx_save_restore_area_size;
        uint64_t exception_status;
};

/* Re-reads the queue list from the kernel (clearing EC_QUEUE_NEW so every
 * listed queue can be suspended). *ret_queues points into the target and
 * stays valid until the next call on it. */
int gp_target_snapshot(struct gp_target *target, const struct gp_queue **ret_queues,
                       size_t *ret_n_queues);
/* Reads a queue's live read/write indices from the target's memory
 * (process_vm_readv; any thread of the caller may do this). */
int gp_target_read_queue_indices(struct gp_target *target, const struct gp_queue *queue,
                                 uint64_t *ret_read_index, uint64_t *ret_write_index);

enum gp_queue_result {
        GP_QUEUE_DONE = 0,    /* suspended (or resumed) now or before */
        GP_QUEUE_INVALID = 1, /* no such queue, new, or being destroyed */
        GP_QUEUE_ERROR = 2,   /* the hardware scheduler failed */
};

struct gp_queue_status {
        uint32_t queue_id;
        uint32_t gpu_id;
        enum gp_queue_result result;
};

struct gp_queue_opts {
        size_t sz;
        /* Only queues on these GPUs; NULL/0 means every GPU. */
        const uint32_t *gpu_ids;
        size_t n_gpu_ids;
        /* Only these queues (e.g. the ones a GP_EVENT_QUEUE_NEW named, so
         * the others are not preempted again); NULL/0 means every queue. */
        const uint32_t *queue_ids;
        size_t n_queue_ids;
        /* Wave time before the context save, in ~1000 GPU clocks (HWS only;
         * the kernel turns 0 into 1). */
        uint32_t grace_period;
};

struct gp_queue_report {
        size_t n_done;
        size_t n_invalid;
        size_t n_error;
        /* Queues that came back INVALID and were retried after a snapshot. */
        size_t n_retried;
        /* Per-queue results; valid until the next call on the target. */
        const struct gp_queue_status *queues;
        size_t n_queues;
};

/* Suspend the target's queues (those on opts->gpu_ids, or all) as the
 * processed events describe them: call gp_target_process_events() whenever
 * the event fd is readable, and suspend the queues its GP_EVENT_QUEUE_NEW
 * names. Queues that come back INVALID are retried once after a fresh
 * snapshot. Returns the number of suspended queues; GP_ERR_NO_QUEUES if none
 * matched. A partial result is a success: check report.n_invalid and
 * report.n_error. No system call but the ioctl(s). */
int gp_target_suspend(struct gp_target *target, const struct gp_queue_opts *opts,
                      struct gp_queue_report *ret_report);
int gp_target_resume(struct gp_target *target, const struct gp_queue_opts *opts,
                     struct gp_queue_report *ret_report);

/* What the caller was doing when the error happened. */
enum gp_op {
        GP_OP_OPEN = 1, /* gp_context_new */
        GP_OP_ATTACH,
        GP_OP_SNAPSHOT,
        GP_OP_SUSPEND,
        GP_OP_RESUME,
        GP_OP_EVENTS,
        GP_OP_PTRACE,
        GP_OP_DETACH,
};

struct gp_explain_opts {
        size_t sz;
        int error; /* negative errno as returned */
        enum gp_op op;
        pid_t pid; /* 0 when there is no target */
        /* The target's runtime state when known, else -1. */
        int runtime_state;
        /* The KFD interface found by gp_context_new (0 if unknown). */
        uint32_t kfd_major, kfd_minor;
};

/* One sentence (malloc'd, no trailing newline) saying what failed, why and
 * what to do. Inspects /proc and /sys to tell causes apart. */
int gp_explain(const struct gp_explain_opts *opts, char **ret_sentence);

#ifdef __cplusplus
}
#endif
