/* SPDX-License-Identifier: MIT */
#include "target.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cleanup.h"
#include "dbgtrap.h"
#include "eventfifo.h"
#include "opts.h"
#include "ptrace.h"

bool target_on_tracer_thread(const struct gp_target *target)
{
        return pthread_equal(pthread_self(), target->tracer_thread);
}

int target_check_usable(const struct gp_target *target)
{
        if (!target_on_tracer_thread(target))
                return -GP_ERR_WRONG_THREAD;
        if (target->gone)
                return -GP_ERR_TARGET_GONE;
        return 0;
}

void target_emit(struct gp_target *target, const struct gp_event *event)
{
        if (target->event_fn)
                target->event_fn(target, event, target->event_userdata);
}

void target_mark_gone(struct gp_target *target)
{
        target->gone = true;
        /* The kernel disabled the session itself (and resumed the queues);
         * a DISABLE now would only meet a different process. */
        target->debug_enabled = false;
        target->n_queues = 0;
}

int grow_array(void **array, size_t *capacity, size_t n, size_t size)
{
        size_t new_capacity;
        void *p;

        if (n <= *capacity)
                return 0;
        new_capacity = n < 16 ? 16 : n + n / 2;
        p = reallocarray(*array, new_capacity, size);
        if (!p)
                return -ENOMEM;
        *array = p;
        *capacity = new_capacity;
        return 0;
}

static void target_free(struct gp_target *target)
{
        if (target->event_fd >= 0)
                close(target->event_fd);
        free(target->queues);
        free(target->queue_ids);
        free(target->queue_gpu_ids);
        free(target->snapshot_buffer);
        free(target->id_array);
        free(target->statuses);
        free(target);
}

/* A target asleep in runtime enable/disable waits for an ack that DISABLE
 * does not give (kfd_dbg_trap_disable leaves runtime_enable_sema alone): it
 * would sleep until some signal came. So the ack goes first, with the target
 * stopped, since a target left running could raise the event between the last
 * query and DISABLE. The caller is tearing down: its callback hears nothing
 * more, as the state behind it may be half gone already. */
static int target_ack_before_disable(struct gp_target *target)
{
        int r;

        target->event_fn = NULL;
        r = target_handle_events(target);
        if (r < 0)
                log_err(&target->context->logger,
                        "pid %d: handling its last events before DISABLE failed: %s", target->pid,
                        strerror(-r));
        return r < 0 ? r : 0;
}

/* Ends the kfd session and the ptrace session, whichever exist. */
static int target_release(struct gp_target *target)
{
        const struct gp_logger *logger = &target->context->logger;
        struct ptrace_stop stop;
        bool stopped = false;
        int r = 0, k;

        if (target->seized) {
                /* PTRACE_DETACH also needs the tracee in a ptrace-stop. */
                k = ptrace_interrupt_leader(target->pid, &stop);
                if (k < 0) {
                        log_err(logger, "pid %d: stopping it to detach failed: %s", target->pid,
                                strerror(-k));
                        r = k;
                }
                stopped = k > 0;
                if (k == 0)
                        target_mark_gone(target);
        }
        if (target->debug_enabled) {
                k = target_ack_before_disable(target);
                if (k < 0 && r == 0)
                        r = k;
                /* kfd_dbg_trap_disable resumes every queue of the target. */
                k = dbgtrap_disable(target->context->kfd_fd, target->pid);
                if (k < 0 && k != -ESRCH) {
                        log_err(logger, "pid %d: DISABLE failed: %s", target->pid, strerror(-k));
                        if (r == 0)
                                r = k;
                }
                target->debug_enabled = false;
        }
        if (stopped) {
                k = ptrace_detach_stopped(target->pid, &stop);
                if (k < 0) {
                        log_err(logger, "pid %d: ptrace detach failed: %s", target->pid,
                                strerror(-k));
                        if (r == 0)
                                r = k;
                }
        }
        target->seized = false;
        return r;
}

/* Undoes a half-done attach: the process is left as it was found. */
static void target_release_and_free(struct gp_target *target)
{
        (void)target_release(target);
        target_free(target);
}

DEFINE_TRIVIAL_CLEANUP_FUNC(struct gp_target *, target_release_and_free)

static int runtime_state_to_error(enum gp_runtime_state state)
{
        switch (state) {
        case GP_RUNTIME_ENABLED_BUSY:
                return -GP_ERR_VMID_BUSY;
        case GP_RUNTIME_ENABLED_ERROR:
                return -GP_ERR_RUNTIME_ERROR;
        default:
                return 0;
        }
}

/* Where KFD lists its processes (kfd-interface.md §8.1). */
#define KFD_SYSFS_ROOT "/sys/class/kfd/kfd"

/*
 * Whether pid is a process that attaching may touch: another process, one
 * that uses the GPU unless the caller means to attach before it does. ENABLE makes the kernel create a KFD process for a
 * target that never opened /dev/kfd (kfd-interface.md §3, step 4), which
 * would then stay and be listed as a GPU process; a process with a KFD
 * process has a /sys/class/kfd/kfd/proc/<pid> directory (§8.1). Where no
 * KFD sysfs can be seen at all (no /sys/class/kfd/kfd), nothing can be
 * told, and ENABLE decides.
 */
static int check_target(pid_t pid, bool before_gpu_use)
{
        char path[64];

        if (pid == getpid())
                return -GP_ERR_SELF;
        /* no such process: the same answer PTRACE_SEIZE would give */
        if (kill(pid, 0) < 0 && errno == ESRCH)
                return -ESRCH;
        if (before_gpu_use || access(KFD_SYSFS_ROOT, F_OK) < 0)
                return 0;
        snprintf(path, sizeof(path), KFD_SYSFS_ROOT "/proc/%d", (int)pid);
        return access(path, F_OK) == 0 ? 0 : -GP_ERR_NOT_GPU_PROCESS;
}

GP_EXPORT int gp_target_attach(struct gp_context *context, pid_t pid,
                               const struct gp_attach_opts *opts, struct gp_target **ret_target)
{
        _cleanup_(target_release_and_freep) struct gp_target *target = NULL;
        const struct gp_logger *logger;
        struct kfd_runtime_info info;
        int r;

        if (!context || pid <= 0 || !ret_target || !OPTS_VALID(opts))
                return -EINVAL;
        logger = &context->logger;
        r = check_target(pid, OPTS_GET(opts, before_gpu_use, false));
        if (r < 0) {
                log_err(logger, "pid %d: not attached: %s", pid, strerror(-r));
                return r;
        }

        target = calloc(1, sizeof(*target));
        if (!target)
                return -ENOMEM;
        target->context = context;
        target->pid = pid;
        target->tracer_thread = pthread_self();
        target->event_fd = -1;
        target->event_fn = OPTS_GET(opts, event_fn, NULL);
        target->event_userdata = OPTS_GET(opts, event_userdata, NULL);

        /* kfd checks the tracer of the target's lead thread, so seize the
         * thread-group leader; a tid would be a different task. */
        r = ptrace_seize_leader(pid);
        if (r < 0) {
                log_err(logger, "pid %d: PTRACE_SEIZE failed: %s", pid, strerror(-r));
                return r;
        }
        target->seized = true;

        r = eventfifo_open(&target->event_fd);
        if (r < 0) {
                log_err(logger, "pid %d: cannot create the debug event FIFO: %s", pid,
                        strerror(-r));
                return r;
        }

        r = dbgtrap_enable(context->kfd_fd, pid, GP_EVENT_SUBSCRIPTION, target->event_fd, &info);
        if (r < 0) {
                log_err(logger, "pid %d: ENABLE failed: %s", pid, strerror(-r));
                /* kfd_dbg_trap_enable leaves debug_trap_enabled set when the
                 * rinfo copy-out fails (kfd-interface.md §9.11). Any other
                 * failure left no session of ours, and DISABLE (which skips
                 * the ptrace check) could end somebody else's. */
                if (r == -EFAULT)
                        (void)dbgtrap_disable(context->kfd_fd, pid);
                return r;
        }
        target->debug_enabled = true;
        target->runtime_state = (enum gp_runtime_state)info.runtime_state;
        log_info(logger, "pid %d: attached, runtime %s", pid,
                 gp_runtime_state_to_string(target->runtime_state));

        /* kfd_dbg_trap_activate swallows its errors into the runtime state:
         * in these states no suspend can ever succeed. */
        r = runtime_state_to_error(target->runtime_state);
        if (r < 0)
                return r;

        /* Every queue that existed before ENABLE still carries EC_QUEUE_NEW
         * and cannot be suspended until a snapshot clears it. */
        r = target_refresh_queues(target);
        if (r < 0) {
                log_err(logger, "pid %d: first queue snapshot failed: %s", pid, strerror(-r));
                return r;
        }

        *ret_target = TAKE_PTR(target);
        return 0;
}

GP_EXPORT int gp_target_detach(struct gp_target *target)
{
        int r;

        if (!target)
                return 0;
        if (!target_on_tracer_thread(target))
                /* Only the tracer thread can PTRACE_DETACH; DISABLE alone would
                 * leave the process traced by a thread that forgot it. */
                return -GP_ERR_WRONG_THREAD;
        r = target_release(target);
        log_info(&target->context->logger, "pid %d: detached", target->pid);
        target_free(target);
        return r;
}

GP_EXPORT pid_t gp_target_pid(const struct gp_target *target)
{
        return target->pid;
}

GP_EXPORT enum gp_runtime_state gp_target_runtime_state(const struct gp_target *target)
{
        return target->runtime_state;
}

GP_EXPORT int gp_target_is_gone(const struct gp_target *target)
{
        return target->gone;
}

GP_EXPORT int gp_target_event_fd(const struct gp_target *target)
{
        return target->event_fd;
}
