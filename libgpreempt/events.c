/* SPDX-License-Identifier: MIT */
#include <string.h>

#include "dbgtrap.h"
#include "eventfifo.h"
#include "opts.h"
#include "ptrace.h"
#include "target.h"

/* QUERY_DEBUG_EVENT returns one source per call and statuses are sticky; a
 * kernel that kept returning a source we cleared would loop us forever. One
 * round per possible queue, device and the process is plenty. */
#define GP_MAX_EVENTS_PER_ROUND (GP_MAX_QUEUES + 64)

/* The bits we clear through QUERY_DEBUG_EVENT. EC_PROCESS_RUNTIME is left to
 * QUERY_EXCEPTION_INFO, which must find it raised to return the new runtime
 * state (it answers ENODATA otherwise). */
#define GP_EVENT_CLEAR_MASK (KFD_EC_MASK(EC_QUEUE_NEW) | KFD_EC_MASK(EC_DEVICE_QUEUE_DELETE))

static int handle_runtime_event(struct gp_target *target)
{
        const int kfd_fd = target->context->kfd_fd;
        const struct gp_logger *logger = &target->context->logger;
        struct kfd_runtime_info info;
        int r, k;

        r = dbgtrap_take_runtime_info(kfd_fd, target->pid, &info);
        /* Acknowledge exactly once per raised EC_PROCESS_RUNTIME, even when
         * reading the state failed: the target sleeps in runtime_enable /
         * runtime_disable (down_interruptible on runtime_enable_sema) until
         * it gets this, and an extra ack would be banked by the counting
         * semaphore and release its next wait too early. */
        k = dbgtrap_send_runtime_event(kfd_fd, target->pid, KFD_EC_MASK(EC_PROCESS_RUNTIME));
        if (r < 0) {
                log_err(logger, "pid %d: reading the runtime state failed: %s", target->pid,
                        strerror(-r));
                return r;
        }
        if (k < 0) {
                log_err(logger, "pid %d: acknowledging the runtime event failed: %s", target->pid,
                        strerror(-k));
                return k;
        }

        target->runtime_state = (enum gp_runtime_state)info.runtime_state;
        log_info(logger, "pid %d: runtime %s debugging (state %u), acknowledged", target->pid,
                 info.runtime_state == GP_RUNTIME_DISABLED ? "disabled" : "enabled",
                 info.runtime_state);
        /* A runtime disable resumed every queue (kfd_dbg_trap_deactivate);
         * an enable happens before any queue exists. */
        target->queues_stale = true;
        target_emit(target, &(struct gp_event){ .type = GP_EVENT_RUNTIME,
                                                .runtime_state = target->runtime_state });
        return 0;
}

static int handle_one_event(struct gp_target *target, uint64_t status, uint32_t gpu_id,
                            uint32_t queue_id)
{
        /* The reported status is the source's whole status, and only its
         * subscribed bits made it reportable: the bit groups tell queue,
         * device and process sources apart (queue_id 0 is a valid id). */
        if (status & KFD_EC_MASK(EC_QUEUE_NEW)) {
                target->queues_stale = true;
                target_emit(target, &(struct gp_event){ .type = GP_EVENT_QUEUE_NEW,
                                                        .gpu_id = gpu_id,
                                                        .queue_id = queue_id });
        }
        if (status & KFD_EC_MASK(EC_DEVICE_QUEUE_DELETE)) {
                target->queues_stale = true;
                target_emit(target, &(struct gp_event){ .type = GP_EVENT_QUEUE_DELETED,
                                                        .gpu_id = gpu_id });
        }
        if (status & KFD_EC_MASK(EC_PROCESS_RUNTIME))
                return handle_runtime_event(target);
        return 0;
}

int target_handle_events(struct gp_target *target)
{
        uint64_t status;
        uint32_t gpu_id, queue_id;
        int r, n;

        /* Drain first, then query until EAGAIN: an event raised after the
         * drain writes a new byte, so none is lost (kfdtest's order). */
        r = eventfifo_drain(target->event_fd);
        if (r <= 0)
                return r;

        for (n = 0; n < GP_MAX_EVENTS_PER_ROUND; n++) {
                r = dbgtrap_query_debug_event(target->context->kfd_fd, target->pid,
                                              GP_EVENT_CLEAR_MASK, &status, &gpu_id, &queue_id);
                if (r == -EAGAIN)
                        return n;
                if (r == -ESRCH) {
                        target_mark_gone(target);
                        return n;
                }
                if (r < 0)
                        return r;
                r = handle_one_event(target, status, gpu_id, queue_id);
                if (r < 0)
                        return r;
        }
        return -EPROTO;
}

GP_EXPORT int gp_target_process_events(struct gp_target *target)
{
        int r;

        if (!target)
                return -EINVAL;
        r = target_check_usable(target);
        if (r < 0)
                return r;
        return target_handle_events(target);
}

static void report_stop(struct gp_target *target, const struct ptrace_stop *stop)
{
        const struct gp_logger *logger = &target->context->logger;

        switch (stop->kind) {
        case PTRACE_STOP_SIGNAL_DELIVERY:
                log_debug(logger, "pid %d: passing on signal %d", target->pid, stop->signal);
                break;
        case PTRACE_STOP_GROUP:
                log_debug(logger, "pid %d: group-stop by signal %d", target->pid, stop->signal);
                target->group_stopped = true;
                target_emit(target, &(struct gp_event){ .type = GP_EVENT_STOPPED,
                                                        .stop_signal = stop->signal });
                break;
        case PTRACE_STOP_EXITING:
                /* The kfd session dies with the mm, just after this stop. */
                log_info(logger, "pid %d: exiting", target->pid);
                target_mark_gone(target);
                target_emit(target, &(struct gp_event){ .type = GP_EVENT_EXITED,
                                                        .exit_status = -1 });
                break;
        case PTRACE_STOP_TERMINATED:
                log_info(logger, "pid %d: exited (status 0x%x)", target->pid, stop->status);
                target_mark_gone(target);
                target->seized = false;
                target_emit(target, &(struct gp_event){ .type = GP_EVENT_EXITED,
                                                        .exit_status = stop->status });
                break;
        case PTRACE_STOP_EXECED:
                /* exec releases the old mm: kfd_process_notifier_release
                 * disabled the session and resumed the queues. */
                log_info(logger, "pid %d: exec'd; its GPU debug session ended", target->pid);
                target_mark_gone(target);
                target_emit(target, &(struct gp_event){ .type = GP_EVENT_EXECED });
                break;
        case PTRACE_STOP_INTERRUPT:
                /* A tracee left in PTRACE_LISTEN traps with PTRACE_EVENT_STOP
                 * and SIGTRAP once SIGCONT has ended its group-stop
                 * (kernel/signal.c: prepare_signal -> ptrace_trap_notify,
                 * do_jobctl_trap); SIGCONT itself is delivered after it. */
                if (target->group_stopped) {
                        target->group_stopped = false;
                        log_debug(logger, "pid %d: continued", target->pid);
                        target_emit(target, &(struct gp_event){ .type = GP_EVENT_CONTINUED });
                }
                break;
        case PTRACE_STOP_OTHER_EVENT:
                break;
        }
}

GP_EXPORT int gp_target_service_ptrace(struct gp_target *target)
{
        struct ptrace_stop stop;
        int r, n = 0;

        if (!target)
                return -EINVAL;
        if (!target_on_tracer_thread(target))
                return -GP_ERR_WRONG_THREAD;

        while (target->seized) {
                r = ptrace_wait_stop(target->pid, false, &stop);
                if (r == -ECHILD) {
                        /* Reaped elsewhere, or the tracee was never ours to
                         * wait for any more. */
                        target_mark_gone(target);
                        target->seized = false;
                        break;
                }
                if (r < 0)
                        return r;
                if (r == 0)
                        break;
                n++;
                report_stop(target, &stop);
                r = ptrace_restart(target->pid, &stop);
                if (r < 0) {
                        log_err(&target->context->logger,
                                "pid %d: restarting it from a stop (kind %d, signal %d) failed: %s",
                                target->pid, (int)stop.kind, stop.signal, strerror(-r));
                        return r;
                }
        }
        return n;
}
