/* SPDX-License-Identifier: MIT */
#include "manager.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "detector.h"
#include "discovery.h"
#include "explain-sentence.h"
#include "gpu-backoff.h"
#include "held-session.h"
#include "preemption-worker.h"
#include "log.h"
#include "monotonic-clock.h"
#include "online-queues.h"
#include "process-facts.h"
#include "smi-events.h"
#include "sources.h"
#include "workload-match.h"

/* An attach that may work later is tried again after this, doubling up to the most. */
#define ATTACH_RETRY_FIRST_US 500000u
#define ATTACH_RETRY_MAX_US 30000000u
#define MIN(a, b) ((a) < (b) ? (a) : (b))
/* Real cgroups, also on an emulated node (whose sysfs is the emulator's). */
#define CGROUP_ROOT "/sys/fs/cgroup"

_Static_assert(MANAGER_MAX_GPUS <= WORKER_TRAP_SLOTS, "a GPU's suspend-on-trap mark is in the slot of its index");

uint64_t manager_now(const struct manager *m)
{
        uint64_t now = 0;

        sd_event_now(m->event, CLOCK_MONOTONIC, &now);
        return now;
}

bool manager_kfd_present(const struct manager *m)
{
        return discovery_kfd_present(m->discovery);
}

struct tracked_process *manager_find_process(struct manager *m, pid_t pid)
{
        for (size_t i = 0; i < m->n_processes; i++)
                if (m->processes[i]->pid == pid)
                        return m->processes[i];
        return NULL;
}

int manager_gpu_index(const struct manager *m, uint32_t gpu_id)
{
        for (size_t i = 0; i < m->n_gpus; i++)
                if (m->gpus[i].gpu_id == gpu_id)
                        return (int)i;
        return -ENOENT;
}

static bool is_offline_managed(const struct tracked_process *p)
{
        return p->managed && p->class == WORKLOAD_CLASS_OFFLINE;
}

static bool is_offline_attached(const struct tracked_process *p)
{
        return is_offline_managed(p) && p->session;
}

static void rearm_policy(struct manager *m);
static void update_trap_marks(struct manager *m);

/* ---- the per-GPU policies ---- */

static struct gpu_backoff_settings backoff_settings(const struct config *c)
{
        return (struct gpu_backoff_settings){
                .base_us = c->daemon.fault_backoff_us,
                .max_us = c->daemon.fault_backoff_max_us,
                .max_preemptions_per_second = c->daemon.max_preemptions_per_second,
        };
}

static struct policy_params gpu_params(struct manager *m, uint32_t gpu_id)
{
        struct policy_params_mix mix;

        policy_params_mix_init(&mix, &m->config->class_defaults[WORKLOAD_CLASS_ONLINE],
                               &m->config->class_defaults[WORKLOAD_CLASS_OFFLINE]);
        for (size_t i = 0; i < m->n_processes; i++) {
                const struct tracked_process *p = m->processes[i];

                if (p->managed && process_queues_on_gpu(&p->queues, gpu_id))
                        policy_params_mix_add(&mix, p->class, &p->policy);
        }
        return policy_params_mix_result(&mix);
}

static struct gpu *find_gpu(struct manager *m, uint32_t gpu_id)
{
        for (size_t i = 0; i < m->n_gpus; i++)
                if (m->gpus[i].gpu_id == gpu_id)
                        return &m->gpus[i];
        return NULL;
}

/*
 * The GPU's name for the metrics' gpu_name label, and whether its
 * suspensions preempt the whole device: gfx11 and later run MES, which
 * removes the suspended queues alone; gfx9 and gfx10 run HWS, whose
 * suspend and resume unmap every process's queues (kfd-interface.md §4.1,
 * §9.5). A GPU the topology does not show is taken to be HWS, the case
 * with the cost.
 */
static void describe_gpu(struct manager *m, struct gpu *g)
{
        _cleanup_free_ char *kfd_root = NULL;
        _cleanup_free_ struct qf_gpu *gpus = NULL;
        struct qf_diags diags = { 0 };
        size_t n = 0;

        g->metrics.device_wide_preemption = true;
        if (asprintf(&kfd_root, "%s/class/kfd/kfd", m->paths.sysfs_root) < 0) {
                kfd_root = NULL;
                return;
        }
        if (qf_topology_read(kfd_root, &diags, &gpus, &n) >= 0)
                for (size_t i = 0; i < n; i++)
                        if (gpus[i].gpu_id == g->gpu_id) {
                                qf_gpu_name_resolve(&gpus[i]);
                                snprintf(g->metrics.name, sizeof(g->metrics.name), "%s", gpus[i].marketing_name);
                                g->metrics.device_wide_preemption = gpus[i].gfx_target_version < 110000;
                        }
        qf_diags_clear(&diags);
}

static void gpu_back_off(struct manager *m, struct gpu *g, enum gpu_fault_kind kind, int error);

static void on_smi_gpu_reset(uint32_t gpu_id, bool post, uint32_t seq, const char *cause, void *userdata)
{
        struct manager *m = userdata;
        struct gpu *g = find_gpu(m, gpu_id);

        log_warning("GPU %u: the kernel reports a GPU %s (reset %u%s%s)", gpu_id, post ? "reset done" : "reset",
                    seq, *cause ? ": " : "", cause);
        if (g)
                gpu_back_off(m, g, GPU_FAULT_RESET, 0);
}

static void on_smi_bad_record(uint32_t gpu_id, const char *why, const char *line, void *userdata)
{
        log_debug("GPU %u: an SMI event record passed over (%s): %s", gpu_id, why, line);
}

static void on_smi_ended(uint32_t gpu_id, int error, void *userdata)
{
        struct manager *m = userdata;
        struct gpu *g = find_gpu(m, gpu_id);

        log_warning("GPU %u: its KFD SMI event stream ended (%s); a GPU reset is seen from now on only by its "
                    "effect on preemption (restart gpreemptd to subscribe again)",
                    gpu_id, error ? strerror(-error) : "closed by the kernel");
        if (g)
                g->smi = smi_events_free(g->smi);
}

/*
 * Subscribes to g's KFD SMI events, so that a GPU reset stops preemption
 * there (GPU_PRE_RESET and GPU_POST_RESET reach every subscriber:
 * kfd_smi_events.c, kfd-interface.md §16.8) even when no call of the
 * daemon's met it. On the daemon's own /dev/kfd, opened for the first
 * GPU; the kernel gives that KFD process every GPU its device cgroup
 * allows. The ioctl is older (5.9) than the debugger calls (6.5), so on a
 * kernel the daemon works with it fails only for a GPU the device cgroup
 * denies (-EINVAL) or with no fd number left (-EMFILE): said once for the
 * GPU, shown in Status (reset_events), and the GPU's faults are then seen
 * from the calls' results alone, since a reset fails the calls it meets
 * (-ETIME, ERROR, -EIO).
 */
static void subscribe_gpu_events(struct manager *m, struct gpu *g)
{
        static const struct smi_events_callbacks callbacks = {
                .gpu_reset = on_smi_gpu_reset,
                .bad_record = on_smi_bad_record,
                .ended = on_smi_ended,
        };
        int fd, r;

        if (m->smi_unavailable)
                return;
        if (m->kfd_fd < 0) {
                m->kfd_fd = open(m->paths.kfd_device, O_RDWR | O_CLOEXEC);
                if (m->kfd_fd < 0) {
                        m->smi_unavailable = true;
                        log_warning_errno(-errno, "Cannot open %s for the GPUs' SMI events; a GPU reset is seen "
                                                  "only by its effect on preemption", m->paths.kfd_device);
                        return;
                }
        }
        fd = smi_events_subscribe(m->kfd_fd, g->gpu_id, SMI_EVENTS_DAEMON_MASK);
        r = fd < 0 ? fd : smi_events_new(m->event, 0, fd, g->gpu_id, &callbacks, m, &g->smi);
        if (r < 0)
                log_warning("GPU %u: no KFD SMI events: %s; a reset of this GPU is seen only by the suspensions and "
                            "resumes it fails (restart gpreemptd once this is fixed)",
                            g->gpu_id, smi_events_strerror(r));
}

/*
 * The GPU's policy, made when a process first has queues there (discovery
 * reads them, off the reaction path). NULL past MANAGER_MAX_GPUS.
 */
static struct gpu *get_gpu(struct manager *m, uint32_t gpu_id)
{
        struct gpu *g = find_gpu(m, gpu_id);
        struct gpu_backoff_settings backoff = backoff_settings(m->config);
        struct policy_params params;

        if (g || m->n_gpus >= MANAGER_MAX_GPUS)
                return g;
        params = gpu_params(m, gpu_id);
        g = &m->gpus[m->n_gpus++];
        g->gpu_id = gpu_id;
        policy_gpu_init(&g->policy, &params, manager_now(m));
        gpu_backoff_init(&g->backoff, &backoff, manager_now(m));
        describe_gpu(m, g);
        subscribe_gpu_events(m, g);
        return g;
}

static bool gpu_suspended(struct manager *m, uint32_t gpu_id)
{
        const struct gpu *g = find_gpu(m, gpu_id);

        return g && g->policy.suspended;
}

/* How many online queues each GPU has watched: what a device-wide preemption there takes with it. */
static void count_online_queues(struct manager *m)
{
        struct detector_queue_status queues[DETECTOR_MAX_QUEUES_PER_PROCESS];

        for (size_t i = 0; i < m->n_gpus; i++)
                m->gpus[i].metrics.online_queues = 0;
        for (size_t i = 0; i < m->n_processes; i++) {
                const struct tracked_process *p = m->processes[i];
                size_t n = p->n_watched_queues ? detector_process_queues(m->detector, p->pid, queues,
                                                                         ELEMENTSOF(queues))
                                               : 0;

                for (size_t q = 0; q < n; q++) {
                        struct gpu *g = find_gpu(m, queues[q].gpu_id);

                        if (g)
                                g->metrics.online_queues++;
                }
        }
}

/* Who is on which GPU changed: the GPUs' parameters, and their online queues for the metrics. */
static void refresh_gpu_params(struct manager *m)
{
        uint64_t now = manager_now(m);

        for (size_t i = 0; i < m->n_gpus; i++) {
                struct policy_params params = gpu_params(m, m->gpus[i].gpu_id);
                policy_gpu_set_params(&m->gpus[i].policy, &params, now);
        }
        count_online_queues(m);
        update_trap_marks(m);
}

/* ---- carrying out suspensions on the sessions ---- */

/* Counts a transition of p on one GPU: its own counts, and the online queues a device-wide preemption took. */
static void count_transition(struct manager *m, struct tracked_process *p, uint32_t gpu_id, bool suspend,
                             uint64_t now_us)
{
        int i = manager_gpu_index(m, gpu_id);

        if (i < 0)
                return;
        if (suspend)
                metrics_process_suspended(&p->metrics, (size_t)i, now_us);
        else
                metrics_process_resumed(&p->metrics, (size_t)i, now_us);
        if (m->gpus[i].metrics.device_wide_preemption)
                m->gpus[i].metrics.collateral_preemptions += m->gpus[i].metrics.online_queues;
}

/*
 * What a call on the worker was for (struct worker_call's purpose): the kind
 * in the low byte, above it the policy batch's number or the new queue's id.
 */
enum call_purpose {
        CALL_FOR_PROCESS,   /* the process's own: a hold, a stop, a termination, an attach */
        CALL_FOR_POLICY,    /* one of a GPU's batch (gpu_apply()) */
        CALL_FOR_NEW_QUEUE, /* a queue created on a suspended GPU */
};
#define CALL_PURPOSE(kind, value) ((uint64_t)(value) << 8 | (uint64_t)(kind))
#define CALL_PURPOSE_KIND(purpose) ((enum call_purpose)((purpose) & 0xff))
#define CALL_PURPOSE_VALUE(purpose) ((purpose) >> 8)

/* After the call: what it cost, what it did, what failed. */
static void count_session_call(struct manager *m, struct tracked_process *p, const struct worker_call *call)
{
        uint64_t now = manager_now(m);
        struct gpu *g = call->gpu_id ? find_gpu(m, call->gpu_id) : NULL;

        if (g)
                metrics_histogram_observe(
                        &g->metrics.call[call->suspend ? METRICS_CALL_SUSPEND : METRICS_CALL_RESUME],
                        call->returned_ns - call->entered_ns);
        if (call->result < 0 && call->result != -EIO) {
                m->errors[call->suspend ? METRICS_ERROR_SUSPEND : METRICS_ERROR_RESUME]++;
                return;
        }
        m->errors[METRICS_ERROR_QUEUE_SCHEDULER] += call->n_error;
        if (call->n_done == 0)
                return; /* no queues there: nothing was preempted */
        if (call->gpu_id) {
                count_transition(m, p, call->gpu_id, call->suspend, now);
                return;
        }
        for (size_t i = 0; i < p->queues.n_gpu_ids; i++)
                count_transition(m, p, p->queues.gpu_ids[i], call->suspend, now);
}

/*
 * Asks the worker to suspend or resume p's queues on gpu_id (0: every GPU).
 * seen_ns: when the online work this answers was seen, 0 if none. What
 * comes of it is in on_session_call_done(). Returns 0 or -ENOMEM.
 */
static int session_call(struct manager *m, struct tracked_process *p, uint32_t gpu_id, bool suspend,
                        uint64_t purpose, uint64_t seen_ns)
{
        int r = worker_session_set_suspended(p->session, gpu_id, suspend, purpose, seen_ns);

        if (r < 0)
                log_error_errno(r, "Process %d: cannot ask for its queues to be %s", (int)p->pid,
                                suspend ? "suspended" : "resumed");
        return r;
}

static int session_suspend(struct manager *m, struct tracked_process *p, uint32_t gpu_id, bool suspend)
{
        return session_call(m, p, gpu_id, suspend, CALL_PURPOSE(CALL_FOR_PROCESS, ++p->process_calls), 0);
}

/* Answers the waiters for call (0: every waiter) with result. */
static void hold_waiters_done(struct tracked_process *p, uint64_t call, int result, const char *why)
{
        struct hold_waiter **link = &p->hold_waiters;

        while (*link) {
                struct hold_waiter *w = *link;

                if (call && w->call != call) {
                        link = &w->next;
                        continue;
                }
                *link = w->next;
                w->process = NULL;
                w->done(w, result, why);
        }
}

/* A call of p's own came back: its waiters, if any, learn how it went. */
static void process_call_done(struct tracked_process *p, const struct worker_call *call, int result, const char *why)
{
        if (CALL_PURPOSE_KIND(call->purpose) == CALL_FOR_PROCESS)
                hold_waiters_done(p, CALL_PURPOSE_VALUE(call->purpose), result, why);
}

void manager_hold_wait(struct tracked_process *p, uint64_t call, struct hold_waiter *w)
{
        w->process = p;
        w->call = call;
        w->next = p->hold_waiters;
        p->hold_waiters = w;
}

void manager_hold_unwait(struct hold_waiter *w)
{
        for (struct hold_waiter **link = &w->process->hold_waiters; *link; link = &(*link)->next)
                if (*link == w) {
                        *link = w->next;
                        break;
                }
        w->process = NULL;
}

static void end_session(struct tracked_process *p)
{
        if (!p->session)
                return;
        /* the calls not yet made never will be */
        hold_waiters_done(p, 0, -ENOTCONN, p->session_error ? p->session_error : "the daemon let the process go");
        /* the kernel resumes whatever the session held suspended */
        metrics_process_end(&p->metrics, manager_now(p->manager));
        worker_session_end(p->session);
        p->session = NULL;
        /* its stops and freezes are no longer seen, nor its queues held for them */
        p->stop_signal = 0;
        p->frozen = false;
        /* an operator's hold is of this session: a process managed again later (registered offline again, a
         * reload) starts unheld, as one that runs another program does */
        if (p->held)
                log_notice("Process %d: its hold ends with its session", (int)p->pid);
        p->held = false;
        p->hold_retry_us = 0;
        update_trap_marks(p->manager);
}

/* How a faulted call went wrong, for its log line. */
static const char *call_fault_to_string(enum gpu_fault_kind kind)
{
        switch (kind) {
        case GPU_FAULT_TIMEOUT:
                return "timed out in the kernel";
        case GPU_FAULT_QUEUE_ERROR:
                return "left queues in ERROR in the hardware scheduler";
        default:
                return "failed";
        }
}

/*
 * Whether a faulted call says the GPU is in trouble, not the process: a
 * timeout or ERROR bits, or a resume the kernel failed with EIO (as while
 * its queue manager is marked hung for a reset, kfd-hazards.md §1). A
 * resume refused for the process's own reason (its runtime never enabled
 * debugging: EPERM) must not stop preemption of every other process there.
 */
static bool fault_is_the_gpus(enum gpu_fault_kind kind, int error)
{
        return kind != GPU_FAULT_CALL_ERROR || error == -EIO;
}

/*
 * A call on p's queues on gpu_id (0: every GPU) faulted. Nothing may stay
 * suspended past every bound: p is let go, which makes the kernel resume
 * all its queues (DISABLE, kfd-interface.md §6), and one line says so.
 * When the fault is its GPUs' (fault_is_the_gpus()), each backs off
 * (gpu_back_off()), and p is attached again once the latest of their
 * back-offs is over (discovery's next pass after it: on_pid_seen()), when
 * preempting there is trusted again; otherwise p runs unmanaged until a
 * reload.
 */
static void gpu_faulted(struct manager *m, struct tracked_process *p, uint32_t gpu_id, bool suspend,
                        enum gpu_fault_kind kind, int error, const char *why)
{
        bool gpus_fault = fault_is_the_gpus(kind, error);
        char where[32] = "every GPU";
        uint32_t faulted[PROCESS_QUEUES_MAX_GPUS];
        size_t n_faulted = 0;
        uint64_t attach_again = manager_now(m);

        if (gpu_id)
                snprintf(where, sizeof(where), "GPU %u", gpu_id);
        log_error("Process %d: a %s on %s %s%s%s; detached it so that its queues run (%s)", (int)p->pid,
                  suspend ? "suspension" : "resumption", where, call_fault_to_string(kind), why ? ": " : "",
                  why ? why : "",
                  gpus_fault ? "see the kernel log for a queue or GPU reset; it is managed again after the GPU's "
                               "back-off"
                             : "reload to manage it again");
        /* its GPUs, read before they go with its session: the fault is theirs */
        if (!gpu_id)
                for (size_t i = 0; i < p->queues.n_gpu_ids && n_faulted < ELEMENTSOF(faulted); i++)
                        faulted[n_faulted++] = p->queues.gpu_ids[i];
        else
                faulted[n_faulted++] = gpu_id;
        end_session(p);
        free(p->session_error);
        p->session_error = strdup(!gpus_fault ? "a resume failed; detached so that its queues run (reload to manage "
                                                "it again)"
                                  : suspend   ? "a suspension faulted; detached so that its queues run until its "
                                                "GPU's back-off ends"
                                              : "a resume faulted; detached so that its queues run until its GPU's "
                                                "back-off ends");
        refresh_gpu_params(m);
        if (!gpus_fault)
                return;
        for (size_t i = 0; i < n_faulted; i++) {
                struct gpu *g = find_gpu(m, faulted[i]);

                if (!g)
                        continue;
                gpu_back_off(m, g, kind, error);
                if (gpu_backoff_deadline(&g->backoff) > attach_again)
                        attach_again = gpu_backoff_deadline(&g->backoff);
        }
        p->attach_retry_us = ATTACH_RETRY_FIRST_US;
        p->attach_retry_at = attach_again;
}

/* Whether the session still holds queues suspended where call was for (0: any GPU). */
static bool call_left_suspended(const struct worker_session *ws, const struct worker_call *call)
{
        const struct held_session_state *state = worker_session_state(ws);

        return call->gpu_id ? held_session_state_is_suspended(state, call->gpu_id)
                            : state->all_suspended || state->n_suspended_gpus > 0;
}

/*
 * Whether a call's outcome is a fault (gpu_faulted()); *ret_kind says which.
 * A failed resume is one only while it leaves queues suspended: with the
 * calls on the worker, a resume can follow a suspension that the kernel
 * refused the same way (a runtime that never enabled debugging), and
 * nothing is then held.
 */
static bool call_faulted(const struct worker_session *ws, const struct worker_call *call,
                         enum gpu_fault_kind *ret_kind)
{
        if (call->result == -ETIME)
                *ret_kind = GPU_FAULT_TIMEOUT;
        else if (call->n_error)
                *ret_kind = GPU_FAULT_QUEUE_ERROR;
        else if (!call->suspend && call->result < 0 && call_left_suspended(ws, call))
                *ret_kind = GPU_FAULT_CALL_ERROR;
        else
                return false;
        return true;
}

/* A resume of p on gpu_id (0: every GPU); one that fails lets p go (gpu_faulted()). */
static int resume_or_let_go(struct manager *m, struct tracked_process *p, uint32_t gpu_id)
{
        return session_suspend(m, p, gpu_id, false);
}

/* Suspends a newly attached p on every GPU of its whose policy has offline work suspended. */
static void suspend_where_suspended(struct manager *m, struct tracked_process *p)
{
        for (size_t i = 0; i < p->queues.n_gpu_ids; i++)
                if (gpu_suspended(m, p->queues.gpu_ids[i]))
                        session_suspend(m, p, p->queues.gpu_ids[i], true);
}

/*
 * Stopped by a signal or frozen by its cgroup: its CPU threads do not run,
 * and its GPU queues are kept suspended while that lasts, whatever the
 * online side does.
 */
static bool is_still(const struct tracked_process *p)
{
        return p->stop_signal || p->frozen;
}

/*
 * Puts p's queues where its hold, or else its GPUs' policies, want them now:
 * after a hold or a group-stop ends. A terminating process is only resumed.
 * The worker runs the calls in this order; a resume that fails lets p go,
 * and the detach after them resumes everything.
 */
static int follow_policy(struct manager *m, struct tracked_process *p)
{
        int r;

        if (p->held && !p->terminating)
                return p->hold_policy.suspended ? 0 : resume_or_let_go(m, p, 0);
        r = resume_or_let_go(m, p, 0);
        for (size_t i = 0; r >= 0 && !p->terminating && i < p->queues.n_gpu_ids; i++)
                if (gpu_suspended(m, p->queues.gpu_ids[i]))
                        r = session_suspend(m, p, p->queues.gpu_ids[i], true);
        return r < 0 ? r : 0;
}

/* The back-off's deadline passed: said once. */
static void gpu_check_backoff_end(struct manager *m, struct gpu *g, uint64_t now)
{
        char line[512];

        if (!gpu_backoff_expire(&g->backoff, now))
                return;
        gpu_backoff_describe(&g->backoff, g->gpu_id, now, line, sizeof(line));
        log_notice("%s", line);
}

/*
 * A rate-limit token for g's next suspension (gpu-backoff.h): the one kept
 * for its suspend-on-trap mark, or the bucket's. Returns 0, -EBUSY during a
 * back-off, -EAGAIN past MaxPreemptionsPerSecond=, with *ret_retry_us.
 */
static int gpu_take_token(struct manager *m, struct gpu *g, uint64_t now, uint64_t *ret_retry_us)
{
        gpu_check_backoff_end(m, g, now);
        if (!gpu_backoff_deadline(&g->backoff) && gpu_backoff_spend_kept_token(&g->backoff))
                return 0;
        return gpu_backoff_claim_suspend(&g->backoff, now, ret_retry_us);
}

/* A suspension made (by the loop or on a trap): no idle resume before the next could come. */
static void gpu_suspension_made(struct manager *m, struct gpu *g, uint64_t now)
{
        g->suspend_retry_us = 0;
        /* resuming sooner would leave the next burst unprotected */
        policy_resume_not_before(&g->policy, gpu_backoff_next_suspend_us(&g->backoff, now));
}

/*
 * Clears g's mark. Returns whether a trap took it, now or before: its
 * suspension is made or under way (on_worker_trapped() comes), with the
 * token the mark held, so no other suspension may start on that token.
 */
static bool gpu_unmark(struct manager *m, struct gpu *g)
{
        if (g->trap.active) {
                g->trap.active = false;
                g->trap.watch_until_us = 0;
                if (worker_unmark_suspend_on_trap(m->worker, (size_t)(g - m->gpus)) == WORKER_UNMARK_TOO_LATE)
                        g->trap.taken = true;
        }
        return g->trap.taken;
}

enum suspend_claim {
        SUSPEND_REFUSED,   /* given back to the policy: asked again later */
        SUSPEND_CLAIMED,   /* the loop makes it */
        SUSPEND_ON_A_TRAP, /* a trap took the GPU's mark: the worker makes it, on_worker_trapped() records it */
};

/*
 * Whether a suspension the policy decided may start (gpu-backoff.h): not
 * during a back-off, nor past MaxPreemptionsPerSecond=. A refused one is
 * given back to the policy, so that it stays in step with the hardware, and
 * asked again when the back-off ends or a token comes (on_policy_timer()).
 * The GPU's mark is cleared first: a trap must not suspend a second time,
 * and one that took it already is making this very suspension.
 */
static enum suspend_claim gpu_claim_suspend(struct manager *m, struct gpu *g)
{
        uint64_t now = manager_now(m), retry_us = 0;
        int r;

        if (gpu_unmark(m, g))
                return SUSPEND_ON_A_TRAP;
        r = gpu_take_token(m, g, now, &retry_us);
        if (r >= 0) {
                gpu_suspension_made(m, g, now);
                return SUSPEND_CLAIMED;
        }
        policy_action_failed(&g->policy, POLICY_ACTION_SUSPEND, now);
        g->suspend_retry_us = retry_us;
        log_debug("GPU %u: suspension refused (%s) until %.3f ms", g->gpu_id,
                  r == -EBUSY ? "backing off" : "MaxPreemptionsPerSecond=", retry_us / 1000.0);
        return SUSPEND_REFUSED;
}

/*
 * Whether p follows g's policy: offline and attached there, and neither
 * terminating, held (its hold's policy alone: were it also suspended by the
 * GPU's, a suspension begun in a hold's slice would last until the hold's
 * next resume, past MaxSuspendMs), nor stopped or frozen (its queues stay
 * suspended until it runs again: on_session_stop_changed()).
 */
static bool follows_gpu_policy(const struct tracked_process *p, uint32_t gpu_id)
{
        return is_offline_attached(p) && process_queues_on_gpu(&p->queues, gpu_id) && !p->terminating && !p->held &&
               !is_still(p);
}

/* Whether the sessions following g's policy are, in order, those marked. */
static bool trap_mark_current(const struct manager *m, const struct gpu *g)
{
        size_t n = 0;

        for (size_t i = 0; i < m->n_processes; i++) {
                const struct tracked_process *p = m->processes[i];

                if (!follows_gpu_policy(p, g->gpu_id))
                        continue;
                if (n >= g->trap.n_sessions || g->trap.sessions[n] != p->session)
                        return false;
                n++;
        }
        return n == g->trap.n_sessions;
}

/*
 * The watch of g's polled queues that a mark carries (preemption-worker.h),
 * or NULL: while its online side is idle and they moved lately, the worker
 * polls them at the busy cadence in the loop's stead.
 */
static struct poll_watch *gpu_poll_watch(struct manager *m, const struct gpu *g, uint64_t now)
{
        struct poll_watch *watch = NULL;

        if (detector_poll_watch(m->detector, g->gpu_id, now, CADENCE_RECENT_BUSY_US,
                                m->cadence.settings.busy_poll_interval_us, &watch) < 0)
                log_debug("GPU %u: out of memory; its polled queues are looked at by the loop", g->gpu_id);
        return watch;
}

/*
 * Whether g's standing mark still fits the detector: nothing a watch rests
 * on changed since it was made, or it had no watch and would have none now
 * (*ret_watch: the one it would have, made here).
 */
static bool trap_mark_watch_current(struct manager *m, struct gpu *g, uint64_t now, struct poll_watch **ret_watch)
{
        uint64_t serial = detector_gpu_watch_serial(m->detector, g->gpu_id);

        *ret_watch = NULL;
        if (serial == g->trap.watch_serial)
                return true;
        g->trap.watch_serial = serial;
        *ret_watch = gpu_poll_watch(m, g, now);
        return !*ret_watch && g->trap.watch_until_us <= now;
}

/*
 * When a store on g would have its policy suspend now, and may (no back-off,
 * a token: taken here, where the suspension is decided, and kept in the
 * bucket's reckoning until a suspension uses it, gpu_backoff_keep_token()), the worker is told to make that suspension on
 * a trap, or on its poll of g's polled queues, itself (preemption-worker.h),
 * with the sessions gpu_apply() would call. Otherwise, or when those
 * sessions or what the watch rests on change, the mark is cleared at once
 * (and made again). When a token or the offline slice is what is missing,
 * the policy timer comes back for it (suspend_retry_us).
 */
static void update_trap_mark(struct manager *m, struct gpu *g, uint64_t now)
{
        size_t slot = (size_t)(g - m->gpus), n = 0;
        struct policy_gpu probe = g->policy;
        _cleanup_free_ struct worker_session **sessions = NULL;
        _cleanup_(poll_watch_freep) struct poll_watch *watch = NULL;
        uint64_t retry_us = 0, serial;
        bool want, kept, watch_made = false;
        int r;

        if (g->trap.taken)
                return; /* a trap's report is on its way: on_worker_trapped() */
        gpu_check_backoff_end(m, g, now);
        want = !g->policy.suspended && !gpu_backoff_deadline(&g->backoff);
        if (want && policy_online_busy(&probe, now) != POLICY_ACTION_SUSPEND) {
                /* the offline slice after a bound, or the share's window: the mark waits for its end */
                retry_us = now < g->policy.offline_run_until ? g->policy.offline_run_until
                                                            : g->policy.window_start + g->policy.params.share_window_us;
                want = false;
        }
        if (want && g->trap.active && trap_mark_current(m, g)) {
                if (trap_mark_watch_current(m, g, now, &watch))
                        return;
                watch_made = true;
        }
        if (gpu_unmark(m, g))
                return;
        if (want) {
                sessions = malloc((m->n_processes ? m->n_processes : 1) * sizeof(*sessions));
                for (size_t i = 0; sessions && i < m->n_processes; i++)
                        if (follows_gpu_policy(m->processes[i], g->gpu_id))
                                sessions[n++] = m->processes[i]->session;
                want = n > 0; /* no offline work here, or no memory: the loop suspends on the trap's report */
        }
        kept = gpu_backoff_token_kept(&g->backoff);
        if (want && !kept && g->suspend_retry_us > now)
                return; /* the bucket said when its next token comes: asking sooner only counts refusals */
        if (want && !kept && gpu_backoff_next_suspend_us(&g->backoff, now) > now) {
                /* no store asked for it: an empty bucket here is no refusal of a suspension (Status) */
                retry_us = gpu_backoff_next_suspend_us(&g->backoff, now);
                want = false;
        } else if (want && !kept) {
                want = gpu_backoff_keep_token(&g->backoff, now, &retry_us) >= 0;
        }
        if (!want) {
                if (retry_us && (!g->suspend_retry_us || retry_us < g->suspend_retry_us))
                        g->suspend_retry_us = retry_us;
                return;
        }
        serial = detector_gpu_watch_serial(m->detector, g->gpu_id);
        if (!watch_made)
                watch = gpu_poll_watch(m, g, now);
        g->trap.watch_serial = serial;
        g->trap.watch_until_us = watch ? poll_watch_until(watch) / 1000 : 0;
        /* the batch number gpu_apply() would give it: no batch is issued while the mark stands */
        r = worker_mark_suspend_on_trap(m->worker, slot, g->gpu_id, CALL_PURPOSE(CALL_FOR_POLICY, g->batch.number + 1),
                                        sessions, n, TAKE_PTR(watch));
        if (r < 0) {
                g->trap.watch_until_us = 0;
                log_debug("GPU %u: cannot mark it to suspend on a trap: %s", g->gpu_id, strerror(-r));
                return;
        }
        free(g->trap.sessions);
        g->trap.sessions = TAKE_PTR(sessions);
        g->trap.n_sessions = n;
        g->trap.active = true;
        log_debug("GPU %u: marked to suspend on a trap%s", g->gpu_id,
                  g->trap.watch_until_us ? " or on the preemption thread's poll" : "");
}

/* A GPU whose mark's watch no longer fits what the detector watches gets a new mark (discovery, arming, a look). */
static void refresh_trap_mark_watches(struct manager *m)
{
        uint64_t now = manager_now(m);

        for (size_t i = 0; i < m->n_gpus; i++) {
                struct gpu *g = &m->gpus[i];

                if (g->trap.active && g->trap.watch_serial != detector_gpu_watch_serial(m->detector, g->gpu_id))
                        update_trap_mark(m, g, now);
        }
}

static void update_trap_marks(struct manager *m)
{
        uint64_t now = manager_now(m);

        for (size_t i = 0; i < m->n_gpus; i++)
                update_trap_mark(m, &m->gpus[i], now);
}

const struct gpu *manager_gpu_backing_off(struct manager *m, const struct tracked_process *p)
{
        uint64_t now = manager_now(m);
        const struct gpu *latest = NULL;

        for (size_t i = 0; i < p->queues.n_gpu_ids; i++) {
                struct gpu *g = find_gpu(m, p->queues.gpu_ids[i]);

                if (!g)
                        continue;
                gpu_check_backoff_end(m, g, now);
                if (gpu_backoff_deadline(&g->backoff) &&
                    (!latest || gpu_backoff_deadline(&g->backoff) > gpu_backoff_deadline(&latest->backoff)))
                        latest = g;
        }
        return latest;
}

/*
 * Whether a hold's suspension may start: gpu_claim_suspend() for a hold. It
 * suspends p on every GPU of its, on an HWS GPU as much a device-wide
 * preemption as one of the GPU's policy, so it takes a token of
 * MaxPreemptionsPerSecond= on each of them, all or none. Returns 0; -EAGAIN
 * when a bucket is empty (*ret_retry_us: when all have a token again);
 * -EBUSY when one of the GPUs backs off.
 */
static int hold_claim_suspend(struct manager *m, const struct tracked_process *p, uint64_t now,
                              uint64_t *ret_retry_us)
{
        uint64_t retry_us = now;
        int verdict = 0;

        for (size_t i = 0; i < p->queues.n_gpu_ids; i++) {
                struct gpu *g = find_gpu(m, p->queues.gpu_ids[i]);
                uint64_t at = 0;
                int r;

                if (!g)
                        continue;
                gpu_check_backoff_end(m, g, now);
                r = gpu_backoff_check_suspend(&g->backoff, now, &at);
                if (r == -EBUSY)
                        return r;
                if (r < 0) {
                        verdict = r;
                        retry_us = at > retry_us ? at : retry_us;
                }
        }
        if (verdict < 0) {
                *ret_retry_us = retry_us;
                return verdict;
        }
        for (size_t i = 0; i < p->queues.n_gpu_ids; i++) {
                struct gpu *g = find_gpu(m, p->queues.gpu_ids[i]);

                if (g)
                        gpu_backoff_take_token(&g->backoff);
        }
        return 0;
}

/*
 * Carries out what the policy decided for one GPU on every offline process
 * there. seen_ns: when the detector saw the online work this answers
 * (CLOCK_MONOTONIC), 0 for a decision of the clock (a bound, the hold-off).
 */
static void gpu_apply(struct manager *m, struct gpu *g, enum policy_action action, uint64_t seen_ns)
{
        bool suspend = action == POLICY_ACTION_SUSPEND;
        size_t issued = 0;
        /* the loop's time at this wake-up (sd_event_now()), before the first call: bench-reaction pairs the
         * line with the call that enters next */
        uint64_t decided_us = manager_now(m);

        if (action == POLICY_ACTION_NONE || (suspend && gpu_claim_suspend(m, g) != SUSPEND_CLAIMED))
                return;
        /* the results come back in on_session_call_done(); those of an earlier batch no longer count */
        g->batch.number++;
        for (size_t i = 0; i < m->n_processes; i++) {
                struct tracked_process *p = m->processes[i];

                if (!follows_gpu_policy(p, g->gpu_id))
                        continue;
                /* the reaction is timed by the first call of the batch: the worker runs them in order */
                if (session_call(m, p, g->gpu_id, suspend, CALL_PURPOSE(CALL_FOR_POLICY, g->batch.number),
                                 issued ? 0 : seen_ns) >= 0)
                        issued++;
        }
        g->batch = (struct gpu_batch){ .number = g->batch.number, .suspend = suspend, .pending = issued };
        if (suspend && issued == 0) {
                /* nothing offline here to stop: stay in step with the hardware */
                policy_action_failed(&g->policy, action, manager_now(m));
                return;
        }
        /* a suspension of the policy's clock answers online work that waited for it (the offline slice after
         * a bound, the share's window, the rate limit or a back-off), not work just seen: no reaction */
        log_debug("GPU %u: offline work %s (%zu processes) %sat %.3f ms", g->gpu_id,
                  suspend ? "being suspended" : "being resumed", issued,
                  suspend && !seen_ns ? "on the policy's clock " : "", decided_us / 1000.0);
        update_trap_mark(m, g, manager_now(m));
}

/* g backs off: nothing stays suspended there, held or not. */
static void end_hold_for_backoff(struct manager *m, struct tracked_process *p, const struct gpu *g)
{
        log_warning("Process %d: its hold ends, GPU %u backs off after a fault for %.0f s more (gpreemptctl suspend "
                    "it again after that)",
                    (int)p->pid, g->gpu_id, (double)(gpu_backoff_deadline(&g->backoff) - manager_now(m)) / 1e6);
        manager_hold(m, p, false, NULL);
}

/*
 * A fault on g (gpu-backoff.h): the back-off starts, or the one under way
 * goes on. On entering it nothing may stay suspended there: the GPU's
 * offline work and any hold on it are resumed, and one line says why, until
 * when and what to do. Its end is on_policy_timer()'s.
 */
static void gpu_back_off(struct manager *m, struct gpu *g, enum gpu_fault_kind kind, int error)
{
        uint64_t now = manager_now(m);
        char line[512];

        g->faults[kind]++;
        if (!gpu_backoff_fault(&g->backoff, kind, error, now))
                return;
        gpu_backoff_describe(&g->backoff, g->gpu_id, now, line, sizeof(line));
        log_error("%s", line);
        gpu_apply(m, g, policy_resume_for_fault(&g->policy, now), 0);
        /* a mark set before the back-off began (gpu_faulted() ends the session first) must not trap now */
        update_trap_mark(m, g, now);
        for (size_t i = 0; i < m->n_processes; i++) {
                struct tracked_process *p = m->processes[i];

                if (p->held && process_queues_on_gpu(&p->queues, g->gpu_id))
                        end_hold_for_backoff(m, p, g);
        }
        rearm_policy(m);
}

/*
 * A call of a GPU's batch returned. A suspension that none of the GPU's
 * offline processes took (each call failed) leaves the policy in step with
 * the hardware: it was not suspended.
 */
static void policy_call_done(struct manager *m, const struct worker_call *call)
{
        struct gpu *g = find_gpu(m, call->gpu_id);

        if (!g || CALL_PURPOSE_VALUE(call->purpose) != g->batch.number || !g->batch.pending)
                return;
        if (call->result >= 0)
                g->batch.done++;
        if (--g->batch.pending || !g->batch.suspend || g->batch.done || !g->policy.suspended)
                return;
        policy_action_failed(&g->policy, POLICY_ACTION_SUSPEND, manager_now(m));
        rearm_policy(m);
}

/* The reaction's stages: seen → the first SUSPEND_QUEUES entered on the worker → it returned. */
static void observe_reaction(struct manager *m, const struct worker_call *call)
{
        struct gpu *g = find_gpu(m, call->gpu_id);

        if (!g || !call->seen_ns || !call->suspend || call->result < 0)
                return;
        metrics_histogram_observe(&g->metrics.reaction[METRICS_REACTION_SEEN_TO_ISSUED],
                                  call->entered_ns - call->seen_ns);
        metrics_histogram_observe(&g->metrics.reaction[METRICS_REACTION_ISSUED_TO_RETURNED],
                                  call->returned_ns - call->entered_ns);
        /* the reaction benchmark (tests/controller/bench-reaction.c) pairs this stamp with the write time */
        log_debug("GPU %u: suspend issued at %llu ns", g->gpu_id, (unsigned long long)call->entered_ns);
}

/* What the worker did on p's session, as asked by session_call(). */
static void on_session_call_done(struct worker_session *ws, const struct worker_call *call, void *userdata)
{
        struct tracked_process *p = userdata;
        struct manager *m = p->manager;
        enum gpu_fault_kind fault;

        if (call->result == -GP_ERR_TARGET_GONE)
                return; /* it exited or exec'd: the session's end is reported, and p removed */
        count_session_call(m, p, call);
        observe_reaction(m, call);
        if (CALL_PURPOSE_KIND(call->purpose) == CALL_FOR_POLICY)
                policy_call_done(m, call);
        if (call_faulted(ws, call, &fault)) {
                process_call_done(p, call, call->result < 0 ? call->result : -EIO,
                                  call->why ? call->why : call_fault_to_string(fault));
                gpu_faulted(m, p, call->gpu_id, call->suspend, fault, call->result < 0 ? call->result : 0,
                            call->why);
                return;
        }
        if (call->result < 0) {
                /* The same failure comes back at every online request (a runtime that never
                 * enabled debugging, say): said once, counted in the metrics after that. */
                if (call->result != p->failed_errno)
                        log_error("Process %d: %s", (int)p->pid, call->why ? call->why : "failed");
                else
                        log_debug("Process %d: %s", (int)p->pid, call->why ? call->why : "failed");
                p->failed_errno = call->result;
                process_call_done(p, call, call->result, call->why);
                return;
        }
        p->failed_errno = 0;
        process_call_done(p, call, 0, NULL);
        /* every transition, possibly hundreds a second: counted in Status, logged only for debugging */
        if (call->gpu_id)
                log_debug("Process %d: %zu queues %s on GPU %u", (int)p->pid, call->n_done,
                          call->suspend ? "suspended" : "resumed", call->gpu_id);
        else
                log_debug("Process %d: %zu queues %s on all GPUs", (int)p->pid, call->n_done,
                          call->suspend ? "suspended" : "resumed");
        if (CALL_PURPOSE_KIND(call->purpose) == CALL_FOR_NEW_QUEUE)
                log_info("Process %d: new queue %u on suspended GPU %u suspended", (int)p->pid,
                         (unsigned)CALL_PURPOSE_VALUE(call->purpose), call->gpu_id);
}

/*
 * A held process's own bounds: its slices, and the suspension after each,
 * which waits for MaxPreemptionsPerSecond= (hold_claim_suspend()) and ends
 * the hold where a GPU of p's backs off. Returns 0, or session_call()'s
 * -errno.
 */
static int hold_apply(struct manager *m, struct tracked_process *p, enum policy_action action)
{
        uint64_t now = manager_now(m), retry_us = 0;
        int r;

        if (action == POLICY_ACTION_NONE || !p->session || is_still(p))
                return 0;
        if (action == POLICY_ACTION_RESUME) {
                r = resume_or_let_go(m, p, 0);
                /* MaxSuspendMs or the share's budget in its window ended this part of the hold */
                if (r >= 0)
                        log_info("Process %d: held, runs for its slice (MaxSuspendMs=%.0f, MinOfflineSharePercent=%u)",
                                 (int)p->pid, (double)p->policy.max_suspend_us / 1000.0,
                                 p->policy.min_offline_share_percent);
                return r;
        }
        r = hold_claim_suspend(m, p, now, &retry_us);
        if (r == -EBUSY) {
                /* queues of p's on a GPU that began backing off while p was held */
                end_hold_for_backoff(m, p, manager_gpu_backing_off(m, p));
                return 0;
        }
        if (r == -EAGAIN) {
                /* still held: the suspension is asked again when every bucket has a token */
                policy_action_failed(&p->hold_policy, POLICY_ACTION_SUSPEND, now);
                p->hold_retry_us = retry_us;
                log_debug("Process %d: held, its suspension waits for MaxPreemptionsPerSecond= until %.3f ms",
                          (int)p->pid, retry_us / 1000.0);
                return 0;
        }
        p->hold_retry_us = 0;
        return session_suspend(m, p, 0, true);
}

/* The policy timer, for the earliest deadline of the GPUs' policies, back-offs, retries and holds. */
static void rearm_policy_timer(struct manager *m)
{
        uint64_t next = POLICY_NEVER;

        for (size_t i = 0; i < m->n_gpus; i++) {
                const struct gpu *g = &m->gpus[i];
                uint64_t d = policy_next_deadline(&g->policy);
                uint64_t backoff_end = gpu_backoff_deadline(&g->backoff);

                if (d < next)
                        next = d;
                if (backoff_end && backoff_end < next)
                        next = backoff_end;
                if (g->suspend_retry_us && g->suspend_retry_us < next)
                        next = g->suspend_retry_us;
        }
        for (size_t i = 0; i < m->n_processes; i++)
                if (m->processes[i]->held) {
                        uint64_t d = policy_next_deadline(&m->processes[i]->hold_policy);
                        uint64_t retry = m->processes[i]->hold_retry_us;

                        if (d < next)
                                next = d;
                        if (retry && retry < next)
                                next = retry;
                }
        if (next == POLICY_NEVER) {
                sd_event_source_set_enabled(m->policy_timer, SD_EVENT_OFF);
                return;
        }
        sd_event_source_set_time(m->policy_timer, next);
        sd_event_source_set_enabled(m->policy_timer, SD_EVENT_ONESHOT);
}

/* After a change of the policies' or the processes' state: the marks (which may set a retry), then the timer. */
static void rearm_policy(struct manager *m)
{
        update_trap_marks(m);
        rearm_policy_timer(m);
}

static void arm_detector(struct manager *m, uint64_t now);

/*
 * A suspended GPU whose online side went idle is looked at on the idle
 * cadence only, and not at all where its queues have breakpoints, which
 * are not armed while it is suspended (cadence.h, on_arming_held()):
 * before its resume comes due, one more look, so that online work started
 * during the hold-off keeps offline work suspended. That look arms the
 * breakpoints, and reads once more after arming: a store from then on traps.
 */
static void look_before_resume(struct manager *m, const struct gpu *g, uint64_t now)
{
        struct policy_gpu probe = g->policy; /* a deadline may be the share window's end, which resumes nothing */

        if (g->policy.suspended && !g->policy.online_busy && policy_tick(&probe, now) == POLICY_ACTION_RESUME)
                detector_fresh_look_gpu(m->detector, g->gpu_id, now);
}

static int on_policy_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
        struct manager *m = userdata;
        uint64_t now = manager_now(m);

        for (size_t i = 0; i < m->n_gpus; i++) {
                struct gpu *g = &m->gpus[i];

                gpu_check_backoff_end(m, g, now);
                if (g->suspend_retry_us <= now)
                        g->suspend_retry_us = 0;
                look_before_resume(m, g, now);
                gpu_apply(m, g, policy_tick(&g->policy, now), 0);
        }
        for (size_t i = 0; i < m->n_processes; i++) {
                struct tracked_process *p = m->processes[i];

                if (!p->held)
                        continue;
                if (p->hold_retry_us <= now)
                        p->hold_retry_us = 0;
                hold_apply(m, p, policy_tick(&p->hold_policy, now));
        }
        rearm_policy(m);
        /* a resume puts its GPU back on the busy cadence: the look due may be an idle interval away */
        arm_detector(m, now);
        return 0;
}

/* ---- the detector and its cadence ---- */

static size_t cadence_gpus(struct cadence_gpu *out, size_t max, void *userdata)
{
        struct manager *m = userdata;
        struct detector_gpu_status gpus[DETECTOR_MAX_GPUS];
        size_t n = detector_gpus(m->detector, gpus, max < DETECTOR_MAX_GPUS ? max : DETECTOR_MAX_GPUS);

        for (size_t i = 0; i < n; i++)
                out[i] = (struct cadence_gpu){ .gpu_id = gpus[i].gpu_id, .needs_poll = gpus[i].needs_poll,
                                               .last_poll_us = gpus[i].last_poll_us };
        return n;
}

static bool gpu_has_offline_work(const struct manager *m, uint32_t gpu_id)
{
        for (size_t i = 0; i < m->n_processes; i++) {
                const struct tracked_process *p = m->processes[i];

                if (is_offline_attached(p) && !p->terminating && process_queues_on_gpu(&p->queues, gpu_id))
                        return true;
        }
        return false;
}

static void cadence_gpu_state(uint32_t gpu_id, uint64_t now, struct cadence_gpu_state *ret, void *userdata)
{
        struct manager *m = userdata;
        const struct gpu *g = find_gpu(m, gpu_id);

        *ret = (struct cadence_gpu_state){ .offline_running = g && gpu_has_offline_work(m, gpu_id) };
        if (!ret->offline_running)
                return;
        ret->suspended = g->policy.suspended;
        ret->online_busy = g->policy.online_busy;
        ret->hold_off_us = g->policy.params.hold_off_us;
        ret->recently_busy = detector_gpu_polled_recently_busy(m->detector, gpu_id, now, CADENCE_RECENT_BUSY_US);
        /* the worker polls a marked GPU's polled queues at the busy cadence itself, while the watch lasts */
        ret->watched_elsewhere = g->trap.active && g->trap.watch_until_us > now;
}

static void cadence_quick_look(uint32_t gpu_id, uint64_t now, void *userdata)
{
        struct manager *m = userdata;

        detector_quick_look_gpu(m->detector, gpu_id, now);
}

static bool cadence_look_until(uint32_t gpu_id, uint64_t now, uint64_t give_way_at, void *userdata)
{
        struct manager *m = userdata;

        return detector_poll_gpu_until(m->detector, gpu_id, now, give_way_at);
}

static uint64_t cadence_clock_us(void *userdata)
{
        return monotonic_clock_us();
}

static uint64_t cadence_daemon_cpu_ns(void *userdata)
{
        return clock_ns(CLOCK_PROCESS_CPUTIME_ID);
}

static const struct cadence_ops cadence_ops = {
        .gpus = cadence_gpus,
        .gpu_state = cadence_gpu_state,
        .quick_look = cadence_quick_look,
        .look_until = cadence_look_until,
        .clock_us = cadence_clock_us,
        .daemon_cpu_ns = cadence_daemon_cpu_ns,
};

/* One timer, set for the earliest look due; no wakeups at all when no GPU needs looking at. */
static void arm_detector(struct manager *m, uint64_t now)
{
        uint64_t next = cadence_next_due(&m->cadence, &cadence_ops, m, now);

        if (next == UINT64_MAX) {
                sd_event_source_set_enabled(m->detector_timer, SD_EVENT_OFF);
                return;
        }
        sd_event_source_set_time(m->detector_timer, next);
        sd_event_source_set_enabled(m->detector_timer, SD_EVENT_ONESHOT);
}

static int on_detector_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
        struct manager *m = userdata;
        /* the time of this wakeup, not the one scheduled: on a loaded host they differ */
        uint64_t now = manager_now(m);

        cadence_wakeup(&m->cadence, &cadence_ops, m, now);
        /* the looks' decisions updated their GPUs' marks (gpu_apply()): at the busy cadence, the timer alone, and
         * the watches a look made stale */
        refresh_trap_mark_watches(m);
        rearm_policy_timer(m);
        arm_detector(m, now);
        return 0;
}

static void on_gpu_busy(uint32_t gpu_id, uint64_t now, void *userdata)
{
        /* the reaction's first stage starts here (a vDSO clock read, no system call) */
        uint64_t seen_ns = monotonic_clock_ns();
        struct manager *m = userdata;
        struct gpu *g = get_gpu(m, gpu_id);

        /* act first, log after: the suspension is what online work waits for */
        if (g)
                gpu_apply(m, g, policy_online_busy(&g->policy, now), seen_ns);
        /* a breakpoint's trap: this GPU is looked at from now on, until its queues drain */
        arm_detector(m, now);
        log_debug("GPU %u: online work seen at %.3f ms", gpu_id, now / 1000.0);
}

static void on_gpu_idle(uint32_t gpu_id, uint64_t since, uint64_t now, void *userdata)
{
        struct manager *m = userdata;
        struct gpu *g = get_gpu(m, gpu_id);

        log_debug("GPU %u: online idle since %.3f ms (now %.3f ms)", gpu_id, since / 1000.0, now / 1000.0);
        if (g)
                gpu_apply(m, g, policy_online_idle(&g->policy, since, now), 0);
}

/*
 * A suspended GPU's breakpoints are not armed again (those armed stay so): a
 * store there changes nothing before the resume, and look_before_resume()
 * arms them. Armed, each request made during a hold-off would trap for
 * nothing, and each drain arm them again.
 */
static bool on_arming_held(uint32_t gpu_id, void *userdata)
{
        const struct gpu *g = find_gpu(userdata, gpu_id);

        return g && g->policy.suspended;
}

/* The worker disarms a trap's writer itself (preemption-worker.h): it gets its own copy of each breakpoint's fds. */
static void on_breakpoint_opened(uint64_t key, pid_t pid, const int *fds, size_t n_fds, void *userdata)
{
        struct manager *m = userdata;
        int r = worker_watch_breakpoint(m->worker, key, pid, fds, n_fds);

        if (r < 0)
                log_warning_errno(r, "Process %d: its breakpoint is disarmed by the loop, not the worker", (int)pid);
}

static void on_breakpoint_closed(uint64_t key, void *userdata)
{
        struct manager *m = userdata;

        if (worker_forget_breakpoint(m->worker, key) < 0)
                log_warning("Out of memory; a closed breakpoint's copy stays open until gpreemptd exits");
}

static void on_online_gone(pid_t pid, void *userdata)
{
        struct manager *m = userdata;
        struct tracked_process *p = manager_find_process(m, pid);

        if (p)
                p->n_watched_queues = 0;
        count_online_queues(m);
}

/* What a read of p's queue addresses found: the detector watches them. */
static void watch_queues(struct manager *m, struct tracked_process *p, int error, const struct online_queues *q)
{
        size_t n = error < 0 ? 0 : q->n_queues;
        int r;

        if (error < 0) {
                m->errors[METRICS_ERROR_WATCH]++;
                log_warning_errno(error, "Process %d: cannot read its queue addresses from debugfs mqds; "
                                         "its GPU work goes unnoticed until this works (is debugfs mounted, "
                                         "and gpreemptd root?)", (int)p->pid);
        }
        r = detector_watch(m->detector, p->pid, error < 0 ? NULL : q->queues, n);
        if (r < 0) {
                m->errors[METRICS_ERROR_WATCH]++;
                log_warning_errno(r, "Process %d: cannot watch its %zu queues", (int)p->pid, n);
                return;
        }
        if (n != p->n_watched_queues)
                log_info("Process %d: watching %zu online queues", (int)p->pid, n);
        p->n_watched_queues = n;
        count_online_queues(m);
        refresh_trap_mark_watches(m);
        arm_detector(m, manager_now(m));
}

static void watch_online(struct manager *m, struct tracked_process *p);

/* On the loop: a read of watch_online() is done (result: struct online_queues, NULL after a failure). */
static void on_online_queues_read(uint64_t key, int error, void *result, void *userdata)
{
        struct manager *m = userdata;
        struct tracked_process *p = manager_find_process(m, (pid_t)key);

        if (!p || !p->managed || p->class != WORKLOAD_CLASS_ONLINE) {
                /* no longer watched: the read is of no use */
        } else if (p->watch_again) {
                /* its queues changed after this read began: read them again */
                p->watch_again = false;
                watch_online(m, p);
        } else
                watch_queues(m, p, error, result);
        online_queues_free(result);
}

/*
 * Reads p's queue addresses from debugfs mqds on the helper thread
 * (background-read.h): the read takes every KFD process's mutex, and must
 * not hold the loop for as long as any of their ioctls holds one
 * (kfd-hazards.md §4). on_online_queues_read() goes on.
 */
static void watch_online(struct manager *m, struct tracked_process *p)
{
        struct background_read_job job;
        int r = online_queues_job(m->paths.sysfs_root, p->pid, on_online_queues_read, m, &job);

        if (r >= 0) {
                r = background_read_submit(m->reads, &job);
                if (r < 0)
                        job.free_arg(job.arg);
        }
        if (r == -EBUSY) {
                p->watch_again = true; /* a read under way may have begun before the change */
                return;
        }
        if (r < 0) {
                m->errors[METRICS_ERROR_WATCH]++;
                log_warning_errno(r, "Process %d: cannot read its queue addresses", (int)p->pid);
        }
}

/* ---- processes ---- */

static void remove_process(struct manager *m, struct tracked_process *p);

/* The GPUs p has queues on now have its series (a process that ends has destroyed them first). */
static void note_process_gpus(struct manager *m, struct tracked_process *p)
{
        for (size_t i = 0; p->counted && i < m->n_gpus; i++)
                if (process_queues_on_gpu(&p->queues, m->gpus[i].gpu_id))
                        p->metrics.on_gpu[i] = true;
}

/* Re-reads p's queues from sysfs; makes the policies of GPUs it is new on. */
static void read_queues(struct manager *m, struct tracked_process *p)
{
        if (process_queues_read(m->paths.sysfs_root, p->pid, &p->queues) < 0)
                return;
        for (size_t i = 0; i < p->queues.n_gpu_ids; i++)
                get_gpu(m, p->queues.gpu_ids[i]);
        note_process_gpus(m, p);
}

/* p's queues (read afresh) changed: what the detector watches, the GPUs' parameters. */
static void queues_changed(struct manager *m, struct tracked_process *p)
{
        if (p->managed && p->class == WORKLOAD_CLASS_ONLINE)
                watch_online(m, p);
        refresh_gpu_params(m);
}

/*
 * A queue created on a suspended GPU runs until suspended (kfd-interface.md
 * §4.4). The session suspended it already where it holds the GPU; where it
 * does not (the process's first queue there, or a suspension sent and not
 * yet run when the queue came), the GPU's policy decides, or the hold for a
 * held process. A terminating process is never suspended again.
 */
static void on_session_queue_created(struct worker_session *ws, uint32_t gpu_id, uint32_t queue_id, bool suspended,
                                     void *userdata)
{
        struct tracked_process *p = userdata;
        struct manager *m = p->manager;
        bool wanted = p->held ? p->hold_policy.suspended : gpu_suspended(m, gpu_id);

        if (!suspended && wanted && !p->terminating &&
            !held_session_state_is_suspended(worker_session_state(ws), gpu_id)) {
                /* logged when done, as the session's own catch is below */
                session_call(m, p, gpu_id, true, CALL_PURPOSE(CALL_FOR_NEW_QUEUE, queue_id), 0);
                return;
        }
        if (suspended)
                log_info("Process %d: new queue %u on suspended GPU %u suspended", (int)p->pid, queue_id, gpu_id);
}

static void on_session_queues_changed(struct worker_session *ws, size_t caught, void *userdata)
{
        struct tracked_process *p = userdata;

        read_queues(p->manager, p);
        queues_changed(p->manager, p);
}

static void on_session_runtime_changed(struct worker_session *ws, enum gp_runtime_state state, void *userdata)
{
        struct tracked_process *p = userdata;

        log_notice("Process %d: GPU runtime now %s", (int)p->pid, gp_runtime_state_to_string(state));
}

static void on_session_ended(struct worker_session *ws, enum held_session_end how, void *userdata)
{
        struct tracked_process *p = userdata;

        remove_process(p->manager, p);
}

/*
 * A stop or a freeze began or ended: p's queues are suspended while either
 * lasts. A process asked to terminate keeps its queues running, stopped or
 * not, so that it can exit once continued.
 */
static void stillness_changed(struct manager *m, struct tracked_process *p, bool was_still)
{
        if (is_still(p) == was_still)
                return;
        if (!is_still(p))
                follow_policy(m, p);
        else if (!p->terminating)
                session_suspend(m, p, 0, true);
        update_trap_marks(m);
}

/*
 * A group-stop (kill -STOP, Ctrl-Z's SIGTSTP, scontrol suspend) stops a
 * process's CPU threads, but the work it queued goes on using the GPU. The
 * stop of an offline process suspends its queues too, whatever the online
 * side does, until SIGCONT ends it. The signals reach the process as sent:
 * the library, its tracer, restarts each signal-delivery stop with the
 * signal and keeps a group-stop stopped (PTRACE_LISTEN) until SIGCONT. Only
 * the main thread is traced (amdkfd checks the leader's tracer alone), so
 * a process whose main thread has exited (pthread_exit) reports no stop
 * and its queues are not suspended for one.
 */
static void on_session_stop_changed(struct worker_session *ws, int stop_signal, void *userdata)
{
        struct tracked_process *p = userdata;
        bool was_still = is_still(p);

        p->stop_signal = stop_signal;
        if (stop_signal)
                log_notice("Process %d: stopped by SIG%s; its GPU queues are suspended until SIGCONT", (int)p->pid,
                           sigabbrev_np(stop_signal));
        else
                log_notice("Process %d: continued", (int)p->pid);
        stillness_changed(p->manager, p, was_still);
}

/*
 * A cgroup freezer stops a process's threads with no signal, so its tracer
 * sees nothing: Slurm's proctrack/cgroup suspends jobs so. Its state is
 * read at each discovery pass instead (a file read per offline process).
 */
static void check_freezer(struct manager *m, struct tracked_process *p)
{
        bool was_still = is_still(p);
        int r;

        if (!p->freezer_state || !p->session)
                return;
        r = cgroup_freezer_is_frozen(p->freezer, p->freezer_state);
        if (r < 0 || (r > 0) == p->frozen)
                return; /* a cgroup removed under it: not frozen either way, and exits are seen elsewhere */
        p->frozen = r > 0;
        if (p->frozen)
                log_notice("Process %d: frozen by its cgroup (%s); its GPU queues are suspended until it is thawed",
                           (int)p->pid, p->freezer_state);
        else
                log_notice("Process %d: thawed", (int)p->pid);
        if (!p->frozen && !is_offline_managed(p)) {
                end_session(p); /* no longer offline while it was frozen: let go now that it can be */
                return;
        }
        stillness_changed(m, p, was_still);
}

/*
 * Ends p's session, unless the cgroup v1 freezer holds p: a frozen task
 * cannot be brought to the ptrace-stop a detach needs (PTRACE_INTERRUPT
 * does not wake it), and a detach attempted anyway would leave it traced.
 * Such a session ends at the thaw instead (check_freezer).
 */
static void let_go(struct manager *m, struct tracked_process *p)
{
        if (!p->session)
                return;
        check_freezer(m, p); /* the freeze may have begun since the last discovery pass */
        if (!p->session || !p->frozen) {
                end_session(p);
                return;
        }
        log_notice("Process %d: frozen by its cgroup; it is let go when it is thawed", (int)p->pid);
}

static void on_session_error(struct worker_session *ws, int error, enum gp_op op, void *userdata)
{
        struct tracked_process *p = userdata;

        p->manager->errors[METRICS_ERROR_SESSION]++;
        if (op == GP_OP_SUSPEND)
                log_warning_errno(error, "Process %d: could not suspend its new queues", (int)p->pid);
        else
                log_warning_errno(error, "Process %d: %s failed", (int)p->pid,
                                  op == GP_OP_EVENTS ? "reading its debug events" : "servicing its ptrace stops");
}

/*
 * The target was sent a termination signal: it is about to destroy its
 * queues, and destroying a suspended queue blocks until it is resumed
 * (kfd-interface.md §4.4). Its queues run from now on.
 */
static void on_session_terminating(struct worker_session *ws, void *userdata)
{
        struct tracked_process *p = userdata;

        if (p->terminating)
                return;
        p->terminating = true;
        p->held = false;
        update_trap_marks(p->manager); /* no trap may suspend it again */
        resume_or_let_go(p->manager, p, 0);
        log_notice("Process %d: asked to terminate; its queues stay running so that it can exit", (int)p->pid);
}

static void on_session_attached(struct worker_session *ws, int error, const char *why, void *userdata);

static void on_session_detached(pid_t pid, int error, void *userdata)
{
        if (error < 0)
                log_warning_errno(error, "Process %d: detaching failed; the kernel resumes its queues when gpreemptd exits",
                                  (int)pid);
}

/*
 * After a trap's suspension: the sessions that follow g's policy now but
 * were not in the mark the trap took (a queue on g seen since, the mark
 * replaced too late) are suspended by the loop, in the trap's batch.
 */
static void suspend_unmarked(struct manager *m, struct gpu *g)
{
        for (size_t i = 0; i < m->n_processes; i++) {
                struct tracked_process *p = m->processes[i];
                bool marked = false;

                for (size_t j = 0; j < g->trap.n_sessions && !marked; j++)
                        marked = g->trap.sessions[j] == p->session;
                if (!marked && follows_gpu_policy(p, g->gpu_id) &&
                    session_call(m, p, g->gpu_id, true, CALL_PURPOSE(CALL_FOR_POLICY, g->batch.number), 0) >= 0)
                        g->batch.pending++;
        }
}

/*
 * A trap the worker took (preemption-worker.h). One that took the GPU's
 * mark suspended its offline work there already: the policy records the
 * suspension as one the loop made, from the trap's time on (the calls'
 * results follow, a batch of their own: policy_call_done() gives it back
 * if none took; a session the mark missed is added to it), unless a
 * back-off began meanwhile: then the trap's calls are resumed at once and
 * nothing more is suspended there. Then the detector
 * takes the trap as its own: the GPU is busy (the policy, suspended now,
 * has nothing more to do), its breakpoints disarmed, polling follows.
 */
static void on_worker_trapped(const struct worker_trap *trap, void *userdata)
{
        struct manager *m = userdata;
        uint64_t now = manager_now(m);
        struct gpu *g = trap->suspended ? &m->gpus[trap->slot] : NULL;
        /* the suspension began on the worker: its bounds count from then, however late the report */
        uint64_t trap_us = trap->seen_ns / 1000 < now ? trap->seen_ns / 1000 : now;

        if (g) {
                g->trap.taken = g->trap.active = false;
                gpu_backoff_spend_kept_token(&g->backoff); /* the trap's suspension took it */
                g->batch = (struct gpu_batch){ .number = CALL_PURPOSE_VALUE(trap->purpose), .suspend = true,
                                               .pending = (unsigned)trap->n_calls };
                log_debug("GPU %u: offline work suspended on a %s at %llu ns (%zu processes), seen by the loop at "
                          "%llu ns", g->gpu_id, trap->polled_pid ? "poll" : "trap", (unsigned long long)trap->seen_ns,
                          trap->n_calls, (unsigned long long)monotonic_clock_ns());
                gpu_check_backoff_end(m, g, now);
                if (!g->policy.suspended && !gpu_backoff_deadline(&g->backoff))
                        policy_online_busy(&g->policy, trap_us);
                if (!g->policy.suspended) {
                        /* it would not suspend after all, or may not during a back-off */
                        gpu_apply(m, g, POLICY_ACTION_RESUME, 0);
                } else if (gpu_backoff_deadline(&g->backoff)) {
                        gpu_apply(m, g, policy_resume_for_fault(&g->policy, now), 0);
                } else {
                        gpu_suspension_made(m, g, now);
                        suspend_unmarked(m, g);
                        if (g->batch.pending == 0) /* the marked sessions all ended: nothing here was stopped */
                                policy_action_failed(&g->policy, POLICY_ACTION_SUSPEND, now);
                }
        }
        if (trap->polled_pid && g)
                detector_work_seen(m->detector, g->gpu_id, now);
        else
                detector_trapped(m->detector, trap->key, trap->revents, now, trap->writer_disarmed);
        rearm_policy(m);
}

/* The worker's watch of g's polled queues ended before its time: the loop's cadence takes the GPU back. */
static void on_worker_watch_lost(size_t slot, void *userdata)
{
        struct manager *m = userdata;
        struct gpu *g = &m->gpus[slot];

        if (!g->trap.active)
                return;
        log_debug("GPU %u: a process's online queues could not be read by the preemption thread; the loop looks "
                  "at them", g->gpu_id);
        g->trap.watch_until_us = 0;
        arm_detector(m, manager_now(m));
}

static const struct worker_session_callbacks session_callbacks = {
        .attached = on_session_attached,
        .call_done = on_session_call_done,
        .queue_created = on_session_queue_created,
        .queues_changed = on_session_queues_changed,
        .runtime_changed = on_session_runtime_changed,
        .ended = on_session_ended,
        .stop_changed = on_session_stop_changed,
        .terminating = on_session_terminating,
        .error = on_session_error,
        .detached = on_session_detached,
        .trapped = on_worker_trapped,
        .watch_lost = on_worker_watch_lost,
};

static void log_from_library(enum gp_log_level level, const char *message, void *userdata)
{
        if (level <= GP_LOG_ERR)
                log_error("libgpreempt: %s", message);
        else if (level <= GP_LOG_WARNING)
                log_warning("libgpreempt: %s", message);
        else if (level <= GP_LOG_INFO)
                log_info("libgpreempt: %s", message);
        else
                log_debug("libgpreempt: %s", message);
}

/*
 * Whether an attach that failed so may work later: another tracer or
 * debugger had the process (EPERM from PTRACE_SEIZE, EALREADY from ENABLE),
 * or another process held the GPU's only debug VMID. Those leave; other
 * failures (an old GPU, a GWS queue, the scheduler's mode) do not, and each
 * attempt costs the GPU a runlist refresh (kfd-interface.md §9.6).
 */
static bool attach_may_work_later(int error)
{
        return error == -EPERM || error == -EALREADY || error == -GP_ERR_VMID_BUSY;
}

/*
 * An attach failed. One that may pass is tried again after
 * ATTACH_RETRY_FIRST_US, doubling up to ATTACH_RETRY_MAX_US (discovery's
 * passes give the occasions: on_pid_seen); only the first is logged as an
 * error.
 */
static void attach_failed(struct manager *m, struct tracked_process *p, int r, const char *why)
{
        bool retrying = p->attach_retry_us > 0;

        end_session(p);
        m->errors[METRICS_ERROR_ATTACH]++;
        if (retrying)
                log_debug("Process %d: still cannot manage it: %s", (int)p->pid, why ? why : strerror(-r));
        else
                log_error("Process %d: cannot manage it: %s%s", (int)p->pid, why ? why : strerror(-r),
                          attach_may_work_later(r) ? " (gpreemptd tries again)" : "");
        free(p->session_error);
        p->session_error = strdup(why ? why : strerror(-r));
        p->attach_retry_us = !attach_may_work_later(r) ? 0
                             : !retrying                ? ATTACH_RETRY_FIRST_US
                                                        : MIN(2 * p->attach_retry_us, ATTACH_RETRY_MAX_US);
        p->attach_retry_at = manager_now(m) + p->attach_retry_us;
}

/* Attaches to p on the worker; on_session_attached() goes on. */
static void start_session(struct manager *m, struct tracked_process *p)
{
        int r;

        free(p->session_error);
        p->session_error = NULL;
        r = worker_session_attach(m->worker, p->pid, m->config->daemon.grace_period, p, &p->session);
        if (r < 0)
                attach_failed(m, p, r, NULL);
        update_trap_marks(m);
}

static void on_session_attached(struct worker_session *ws, int error, const char *why, void *userdata)
{
        struct tracked_process *p = userdata;
        struct manager *m = p->manager;
        int r;

        if (error < 0) {
                attach_failed(m, p, error, why);
                return;
        }
        p->attach_retry_us = 0;
        free(p->freezer_state);
        r = cgroup_freezer_state_file(m->paths.proc_root, CGROUP_ROOT, p->pid, &p->freezer_state);
        p->freezer = r > 0 ? (enum cgroup_freezer_kind)r : CGROUP_FREEZER_NONE;
        if (r == -EXDEV)
                log_warning("Process %d: its cgroup is outside gpreemptd's cgroup namespace, so a freeze of it "
                            "(Slurm's proctrack/cgroup) is not seen; run gpreemptd in the host's",
                            (int)p->pid);
        log_notice("Process %d: attached (GPU runtime %s)", (int)p->pid,
                   gp_runtime_state_to_string(worker_session_state(ws)->runtime_state));
        /* its GPUs may be suspended already (a held process follows its hold alone) */
        if (!p->held)
                suspend_where_suspended(m, p);
        else if (p->hold_policy.suspended)
                session_suspend(m, p, 0, true);
}

/*
 * The labels p's counts are kept under, made into an identity of their own
 * (-ENOMEM): the one place a process's identity becomes labels.
 */
static int process_metrics_identity(const struct tracked_process *p, struct metrics_identity *ret)
{
        return metrics_identity_make(p->workload, p->class, &p->cluster, ret);
}

static bool identity_has_live_process(const struct metrics_identity *id, void *userdata)
{
        const struct manager *m = userdata;

        for (size_t i = 0; i < m->n_processes; i++)
                if (m->processes[i]->counted && metrics_identity_equal(&m->processes[i]->metrics_id, id))
                        return true;
        return false;
}

void manager_expire_metrics(struct manager *m)
{
        size_t dropped = metrics_retired_expire(&m->metrics_retired, manager_now(m), identity_has_live_process, m);

        if (dropped)
                log_debug("Metrics: the series of %zu cluster jobs gone are dropped", dropped);
}

/*
 * p's counts so far go to the identity they were made under, kept by the
 * manager past p (a counter must not go back when a process exits or is
 * classified afresh); p counts from zero under its new identity, if any.
 * A suspension in progress goes on under the new one.
 */
static void retire_process_metrics(struct manager *m, struct tracked_process *p)
{
        uint64_t now = manager_now(m);
        uint64_t ongoing[METRICS_MAX_GPUS];

        if (!p->counted)
                return;
        memcpy(ongoing, p->metrics.suspended_since, sizeof(ongoing));
        metrics_process_end(&p->metrics, now);
        if (metrics_retire(&m->metrics_retired, &p->metrics_id, &p->metrics, m->n_gpus, now) < 0)
                log_warning("Process %d: out of memory; its suspensions leave the metrics", (int)p->pid);
        memset(&p->metrics, 0, sizeof(p->metrics));
        for (size_t i = 0; i < METRICS_MAX_GPUS; i++)
                p->metrics.suspended_since[i] = ongoing[i] ? now : 0;
        metrics_identity_done(&p->metrics_id);
        p->counted = false;
        manager_expire_metrics(m);
}

/* Counts p under its identity from now on (managed processes only); a change retires the old counts. */
static void identify_process_metrics(struct manager *m, struct tracked_process *p)
{
        struct metrics_identity id;

        if (!p->managed) {
                retire_process_metrics(m, p);
                return;
        }
        if (process_metrics_identity(p, &id) < 0) {
                log_warning("Process %d: out of memory; its suspensions are not counted", (int)p->pid);
                retire_process_metrics(m, p);
                return;
        }
        if (p->counted && metrics_identity_equal(&p->metrics_id, &id)) {
                metrics_identity_done(&id);
                return;
        }
        retire_process_metrics(m, p);
        p->metrics_id = id;
        p->counted = true;
        note_process_gpus(m, p);
}

/* Puts p into effect for its class: watched if online, attached if offline, neither if unmanaged. */
static void apply_class(struct manager *m, struct tracked_process *p)
{
        bool want_watch = p->managed && p->class == WORKLOAD_CLASS_ONLINE;
        bool want_session = p->managed && p->class == WORKLOAD_CLASS_OFFLINE;

        if (!want_session)
                let_go(m, p);
        identify_process_metrics(m, p);
        if (!want_watch) {
                background_read_cancel(m->reads, (uint64_t)p->pid);
                p->watch_again = false;
        }
        if (!want_watch && p->n_watched_queues) {
                detector_unwatch(m->detector, p->pid);
                p->n_watched_queues = 0;
        }
        if (want_watch)
                watch_online(m, p);
        if (want_session && !p->session)
                start_session(m, p);
        refresh_gpu_params(m);
}

/* Reads p's cluster job and (re)classifies p: by the registration that covers it, else by the configuration. */
static void classify(struct manager *m, struct tracked_process *p)
{
        struct process_facts facts = { 0 };
        const struct workload *w = NULL;
        const struct registration *reg;
        int r;

        r = process_facts_read(m->paths.proc_root, m->paths.slurm_jobs_dir, p->pid, &facts);
        /* a process that cannot be read is in no cgroup of a step; its ancestry may still say */
        reg = registrations_find(&m->registrations, m->paths.proc_root, p->pid, &facts.cluster_cgroup);
        p->registered = reg != NULL;
        if (r >= 0) {
                p->cluster = facts.cluster;
                if (!p->registered)
                        w = workload_match_first(m->config, &facts);
                process_facts_done(&facts);
        }
        free(p->workload);
        if (reg) {
                p->workload = reg->name ? strdup(reg->name) : NULL;
                p->managed = true;
                p->class = reg->class;
                p->policy = m->config->class_defaults[reg->class];
                return;
        }
        p->workload = w ? strdup(w->name) : NULL;
        p->managed = w != NULL;
        if (w) {
                p->class = w->class;
                p->policy = w->policy;
        }
}

/* Classifies p again and puts the result into effect. */
static void reclassify(struct manager *m, struct tracked_process *p)
{
        bool was_managed = p->managed;
        enum workload_class was = p->class;

        classify(m, p);
        if (p->managed != was_managed || p->class != was)
                log_notice("Process %d: now %s", (int)p->pid,
                           p->managed ? workload_class_to_string(p->class) : "unmanaged");
        apply_class(m, p);
}

static void reclassify_all(struct manager *m)
{
        registrations_mark_unused(&m->registrations);
        for (size_t i = 0; i < m->n_processes; i++)
                reclassify(m, m->processes[i]);
        registrations_drop_unused_steps(&m->registrations);
}

int manager_register(struct manager *m, pid_t pid, enum workload_class class, const char *name)
{
        int r = registrations_set(&m->registrations, m->paths.proc_root, pid, class, name);

        if (r < 0)
                return r;
        log_notice("Process %d%s%s%s: registered as %s, with the processes it starts", (int)pid, name ? " (" : "",
                   name ? name : "", name ? ")" : "", workload_class_to_string(class));
        reclassify_all(m);
        return 0;
}

int manager_unregister(struct manager *m, pid_t pid)
{
        /* one covered through an ancestor or its step: its registration is another process's to end */
        if (!registrations_remove(&m->registrations, pid))
                return manager_find_process(m, pid) ? -ENOENT : -ESRCH;
        log_notice("Process %d: back to the configuration's classes", (int)pid);
        reclassify_all(m);
        return 0;
}

int manager_hold(struct manager *m, struct tracked_process *p, bool hold, uint64_t *ret_call)
{
        /* the first call made here is the one that does what was asked (the rest: the GPUs' policies') */
        uint64_t first_call = p->process_calls + 1;
        int r;

        if (!p->session)
                return -ENOTCONN;
        if (hold) {
                /* a GPU backing off suspends nothing, for a hold neither: it would undo the back-off's resume */
                if (manager_gpu_backing_off(m, p))
                        return -EBUSY;
                /*
                 * A hold is online work that never ends, for this process alone:
                 * the offline bounds still give it its slices, so its own
                 * watchdogs do not fire while an operator holds it.
                 */
                policy_gpu_init(&p->hold_policy, &p->policy, manager_now(m));
                p->held = true;
                p->hold_retry_us = 0;
                r = hold_apply(m, p, policy_online_busy(&p->hold_policy, manager_now(m)));
                if (r < 0) {
                        p->held = false;
                        return r;
                }
                rearm_policy(m);
                goto out;
        }
        if (!p->held) {
                /* nothing to release: its GPUs' policies decide, and a resume now would only run offline work
                 * beside online work, outside the rate limit's count */
                if (ret_call)
                        *ret_call = 0;
                return -EALREADY;
        }
        p->held = false;
        p->hold_retry_us = 0;
        rearm_policy(m);
        /* a stopped process stays suspended until SIGCONT */
        r = is_still(p) ? 0 : follow_policy(m, p);
        if (r < 0)
                return r;
out:
        if (ret_call)
                *ret_call = p->process_calls >= first_call ? first_call : 0;
        return 0;
}

static int on_process_exit(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
        struct tracked_process *p = userdata;

        remove_process(p->manager, p);
        return 0;
}

/* A process discovery found; NULL and a log line if it cannot be tracked. */
static struct tracked_process *add_process(struct manager *m, pid_t pid)
{
        struct tracked_process *p, **grown;
        int r;

        p = manager_find_process(m, pid);
        if (p)
                return p; /* discovery lost track of it (out of memory): it is tracked already */
        if (m->n_processes >= MANAGER_MAX_PROCESSES) {
                log_warning("Process %d uses the GPU, but %d processes are tracked already; ignoring it",
                            (int)pid, MANAGER_MAX_PROCESSES);
                return NULL;
        }
        p = calloc(1, sizeof(*p));
        grown = realloc(m->processes, (m->n_processes + 1) * sizeof(*grown));
        if (!p || !grown) {
                free(p);
                if (grown)
                        m->processes = grown;
                return NULL;
        }
        m->processes = grown;
        p->manager = m;
        p->pid = pid;
        /* a pidfd: exits are noticed at once, and a recycled pid can never be mistaken for this process */
        p->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
        if (p->pidfd < 0) {
                free(p);
                return NULL; /* gone already */
        }
        r = sd_event_add_io(m->event, &p->exit_source, p->pidfd, EPOLLIN, on_process_exit, p);
        if (r >= 0) /* as SIGCHLD (manager_new): an exit must not wait behind the detector */
                r = sd_event_source_set_priority(p->exit_source, SD_EVENT_PRIORITY_IMPORTANT);
        if (r < 0) {
                sd_event_source_disable_unref(p->exit_source);
                close(p->pidfd);
                free(p);
                return NULL;
        }
        m->processes[m->n_processes++] = p;
        classify(m, p);
        read_queues(m, p);
        log_notice("Process %d uses the GPU: %s%s%s", (int)pid,
                   p->managed ? workload_class_to_string(p->class) : "unmanaged",
                   p->workload ? ", workload " : "", p->workload ? p->workload : "");
        apply_class(m, p);
        return p;
}

static void forget_process(struct manager *m, struct tracked_process *p)
{
        for (size_t i = 0; i < m->n_processes; i++)
                if (m->processes[i] == p) {
                        m->processes[i] = m->processes[--m->n_processes];
                        break;
                }
        /* seen again, it is a new process to discovery too */
        discovery_forget(m->discovery, p->pid);
        hold_waiters_done(p, 0, -ESRCH, NULL);
        end_session(p);
        retire_process_metrics(m, p);
        background_read_cancel(m->reads, (uint64_t)p->pid);
        detector_unwatch(m->detector, p->pid);
        sd_event_source_disable_unref(p->exit_source);
        close(p->pidfd);
        free(p->workload);
        free(p->session_error);
        free(p->freezer_state);
        free(p);
        refresh_gpu_params(m);
}

static void remove_process(struct manager *m, struct tracked_process *p)
{
        log_notice("Process %d no longer uses the GPU", (int)p->pid);
        forget_process(m, p);
}

/* ---- what discovery reports ---- */

static bool on_pid_appeared(pid_t pid, void *userdata)
{
        return add_process(userdata, pid) != NULL;
}

static void on_pid_replaced(pid_t pid, void *userdata)
{
        struct manager *m = userdata;
        struct tracked_process *p = manager_find_process(m, pid);

        if (!p)
                return;
        /* a registration or hold named the old program; the kernel ended its debug session too */
        log_notice("Process %d exec'd into a new GPU process: classifying it afresh", (int)pid);
        forget_process(m, p);
}

static void on_pid_vanished(pid_t pid, void *userdata)
{
        struct manager *m = userdata;
        struct tracked_process *p = manager_find_process(m, pid);

        if (p)
                remove_process(m, p);
}

static void on_pid_seen(pid_t pid, bool relisted, void *userdata)
{
        struct manager *m = userdata;
        struct tracked_process *p = manager_find_process(m, pid);
        uint64_t signature;
        size_t n_queues;

        if (!p)
                return;
        if (p->attach_retry_us && !p->session && is_offline_managed(p) && manager_now(m) >= p->attach_retry_at)
                start_session(m, p);
        check_freezer(m, p);
        signature = p->queues.signature;
        n_queues = p->queues.n_queues;
        if (relisted) {
                read_queues(m, p);
                relisted = p->queues.signature != signature || p->queues.n_queues != n_queues;
        }
        /* debugfs can lag sysfs: keep looking until every compute queue is watched */
        if (relisted ||
            (p->managed && p->class == WORKLOAD_CLASS_ONLINE && p->n_watched_queues < p->queues.n_compute_queues))
                queues_changed(m, p);
}

/* Whether any GPU is looked at faster than the idle cadence. */
static bool on_discovery_busy(void *userdata)
{
        struct manager *m = userdata;
        uint64_t now = manager_now(m), idle = cadence_idle_interval(&m->cadence);

        for (size_t i = 0; i < m->n_gpus; i++) {
                struct cadence_gpu_state state;

                cadence_gpu_state(m->gpus[i].gpu_id, now, &state, m);
                if (cadence_gpu_interval(&m->cadence, &state) < idle)
                        return true;
        }
        return false;
}

static const struct discovery_callbacks discovery_callbacks = {
        .pid_appeared = on_pid_appeared,
        .pid_replaced = on_pid_replaced,
        .pid_vanished = on_pid_vanished,
        .pid_seen = on_pid_seen,
        .busy = on_discovery_busy,
};

/* ---- the loop ---- */

/* waitid() works from any thread of the tracer's group, but PTRACE_* requests only from the tracer itself */
static int on_sigchld(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata)
{
        struct manager *m = userdata;
        int r = preemption_worker_service_ptrace(m->worker);

        if (r < 0)
                log_error_errno(r, "Cannot ask for the offline processes' ptrace stops to be serviced");
        return 0;
}

static struct cadence_settings cadence_settings(const struct config *c)
{
        return (struct cadence_settings){
                .idle_poll_interval_us = c->daemon.idle_poll_interval_us,
                .idle_poll_cpu_percent = c->daemon.idle_poll_cpu_percent,
                .busy_poll_interval_us = c->daemon.busy_poll_interval_us,
        };
}

int manager_new(sd_event *event, struct paths *paths, struct config *config, struct manager **ret_manager)
{
        static const struct detector_callbacks callbacks = {
                .gpu_busy = on_gpu_busy,
                .gpu_idle = on_gpu_idle,
                .process_gone = on_online_gone,
                .breakpoint_opened = on_breakpoint_opened,
                .breakpoint_closed = on_breakpoint_closed,
                .arming_held = on_arming_held,
        };
        struct cadence_settings settings = cadence_settings(config);
        struct gp_context_opts gp_opts = {
                .sz = sizeof(gp_opts),
                .log_fn = log_from_library,
                .log_level = log_get_level() >= LOG_LEVEL_DEBUG ? GP_LOG_DEBUG : GP_LOG_INFO,
                .kfd_path = paths->kfd_device,
        };
        struct manager *m = calloc(1, sizeof(*m));
        int r;

        if (!m)
                return -ENOMEM;
        m->event = sd_event_ref(event);
        m->kfd_fd = -1;
        m->config = config;
        m->started_us = manager_now(m);
        m->paths = *paths;
        *paths = (struct paths){ 0 };
        cadence_init(&m->cadence, &settings);
        r = detector_new(&callbacks, m, config->daemon.detector_mode, &m->detector);
        /*
         * The worker waits on the breakpoints: a trap on a GPU marked to
         * suspend is one wake-up from the store to SUSPEND_QUEUES, on the
         * worker at SCHED_OTHER, with no hand-over from the loop. Its reports
         * matter as SIGCHLD does (a failed resume lets a process go: the
         * bounds' priority, below), and a trap's goes before a look, as the
         * trap itself did when the loop waited on the breakpoints.
         */
        if (r >= 0)
                r = preemption_worker_new(event, SD_EVENT_PRIORITY_IMPORTANT - 1, detector_trap_fd(m->detector),
                                          &gp_opts, &session_callbacks, m, &m->worker);
        if (r >= 0)
                r = detector_set_proc_root(m->detector, m->paths.proc_root);
        if (r >= 0)
                r = background_read_new(event, SD_EVENT_PRIORITY_NORMAL, &m->reads);
        if (r >= 0)
                r = discovery_new(event, m->paths.sysfs_root, config->daemon.discovery_interval_us,
                                  &discovery_callbacks, m, &m->discovery);
        if (r >= 0)
                r = sd_event_add_time(event, &m->detector_timer, CLOCK_MONOTONIC, 0, 1, on_detector_timer, m);
        if (r >= 0)
                r = sd_event_add_time(event, &m->policy_timer, CLOCK_MONOTONIC, 0, 1, on_policy_timer, m);
        if (r >= 0)
                r = sd_event_add_signal(event, &m->sigchld_source, SIGCHLD, on_sigchld, m);
        if (r >= 0)
                r = loop_scheduling_init(&m->scheduling, event);
        if (r < 0) {
                m->config = NULL; /* the caller's until this succeeds */
                manager_free(m);
                return r;
        }
        /* the processes that made a GPU recently busy are the ones its quick looks read every time */
        detector_set_active_window(m->detector, CADENCE_RECENT_BUSY_US);
        /* the hot path: a detector look that sees work must not wait behind the rest */
        sd_event_source_set_priority(m->detector_timer, SD_EVENT_PRIORITY_IMPORTANT);
        /*
         * The bounds and exits are kept at the detector's priority. sd-event
         * runs one source per iteration, the most important first; when the
         * loop runs late the detector's next look is due at every iteration,
         * and a source below it would wait as long as that lasts (an offline
         * process once stayed suspended for seconds past MaxSuspendMs). At
         * equal priority the source pending longer goes first.
         */
        sd_event_source_set_priority(m->policy_timer, SD_EVENT_PRIORITY_IMPORTANT);
        sd_event_source_set_priority(m->sigchld_source, SD_EVENT_PRIORITY_IMPORTANT);
        sd_event_source_set_enabled(m->detector_timer, SD_EVENT_OFF);
        sd_event_source_set_enabled(m->policy_timer, SD_EVENT_OFF);
        *ret_manager = m;
        return 0;
}

int manager_start(struct manager *m)
{
        loop_scheduling_apply(&m->scheduling, m->config->daemon.realtime_priority,
                              m->config->daemon.realtime_cpu_percent);
        discovery_start(m->discovery);
        return 0;
}

int manager_reload(struct manager *m, struct diag *diag)
{
        struct config *fresh = NULL;
        struct cadence_settings settings;
        int r;

        r = config_load(m->paths.config_dir, &fresh, diag);
        if (r < 0) {
                for (size_t i = 0; i < diag->n_messages; i++)
                        log_error("%s", diag->messages[i]);
                return log_error_errno(r, "Reload refused: the configuration has %zu problem%s, "
                                          "the previous one stays in effect", diag_count(diag),
                                       diag_count(diag) == 1 ? "" : "s");
        }
        config_free(m->config);
        m->config = fresh;
        settings = cadence_settings(fresh);
        cadence_set(&m->cadence, &settings);
        log_set_level(fresh->daemon.log_level);
        loop_scheduling_apply(&m->scheduling, fresh->daemon.realtime_priority, fresh->daemon.realtime_cpu_percent);
        detector_set_mode(m->detector, fresh->daemon.detector_mode);
        /* a watch is polled every BusyPollIntervalUs: the marks' are made again, with the new one */
        for (size_t i = 0; i < m->n_gpus; i++)
                m->gpus[i].trap.watch_serial = UINT64_MAX;
        refresh_trap_mark_watches(m);
        for (size_t i = 0; i < m->n_gpus; i++) {
                struct gpu_backoff_settings backoff = backoff_settings(fresh);

                gpu_backoff_update_settings(&m->gpus[i].backoff, &backoff, manager_now(m));
        }
        m->reloads++;
        for (size_t i = 0; i < m->n_processes; i++) {
                struct tracked_process *p = m->processes[i];

                if (p->session)
                        worker_session_set_grace_period(p->session, fresh->daemon.grace_period);
                reclassify(m, p);
        }
        discovery_set_interval(m->discovery, fresh->daemon.discovery_interval_us);
        log_notice("Configuration reloaded: %zu workloads", fresh->n_workloads);
        return 0;
}

void manager_free(struct manager *m)
{
        if (!m)
                return;
        m->discovery = discovery_free(m->discovery);
        while (m->n_processes)
                remove_process(m, m->processes[0]);
        free(m->processes);
        /* waits for a read in progress, if any: one in the kernel cannot be interrupted */
        m->reads = background_read_free(m->reads);
        /* after the sessions' ends: it waits for them to be detached */
        preemption_worker_free(m->worker);
        registrations_done(&m->registrations);
        sd_event_source_disable_unref(m->detector_timer);
        sd_event_source_disable_unref(m->policy_timer);
        sd_event_source_disable_unref(m->sigchld_source);
        loop_scheduling_done(&m->scheduling);
        metrics_retired_done(&m->metrics_retired);
        detector_free(m->detector);
        for (size_t i = 0; i < m->n_gpus; i++) {
                smi_events_free(m->gpus[i].smi);
                free(m->gpus[i].trap.sessions);
        }
        if (m->kfd_fd >= 0)
                close(m->kfd_fd);
        config_free(m->config);
        paths_done(&m->paths);
        sd_event_unref(m->event);
        free(m);
}
