/* SPDX-License-Identifier: MIT */
#include "manager.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cleanup.h"
#include "discovery.h"
#include <gpreempt/gpreempt.h>
#include "log.h"
#include "monotonic-clock.h"
#include "online-queues.h"
#include "process-facts.h"
#include "session.h"
#include "workload-match.h"

uint64_t manager_now(const struct manager *m)
{
        uint64_t now = 0;

        sd_event_now(m->event, CLOCK_MONOTONIC, &now);
        return now;
}

struct tracked_process *manager_find_process(struct manager *m, pid_t pid)
{
        for (size_t i = 0; i < m->n_processes; i++)
                if (m->processes[i]->pid == pid)
                        return m->processes[i];
        return NULL;
}

static bool process_uses_gpu(const struct tracked_process *p, uint32_t gpu_id)
{
        for (size_t i = 0; i < p->n_gpu_ids; i++)
                if (p->gpu_ids[i] == gpu_id)
                        return true;
        return false;
}

/*
 * A GPU's policy combines the workloads that have queues on it: the most
 * patient online hold-off and coalescing, the strictest offline bounds.
 */
static struct policy_params gpu_params(struct manager *m, uint32_t gpu_id)
{
        struct policy_params online = m->config->class_defaults[WORKLOAD_CLASS_ONLINE];
        struct policy_params offline = m->config->class_defaults[WORKLOAD_CLASS_OFFLINE];
        bool any_online = false, any_offline = false;

        for (size_t i = 0; i < m->n_processes; i++) {
                const struct tracked_process *p = m->processes[i];
                const struct policy_params *pp = &p->policy;

                if (!p->managed || !process_uses_gpu(p, gpu_id))
                        continue;
                if (p->class == WORKLOAD_CLASS_ONLINE) {
                        if (!any_online)
                                online.hold_off_us = online.coalesce_us = 0;
                        any_online = true;
                        if (pp->hold_off_us > online.hold_off_us)
                                online.hold_off_us = pp->hold_off_us;
                        if (pp->coalesce_us > online.coalesce_us)
                                online.coalesce_us = pp->coalesce_us;
                } else {
                        if (!any_offline) {
                                offline.max_suspend_us = offline.share_window_us = UINT64_MAX;
                                offline.min_offline_share_percent = 0;
                        }
                        any_offline = true;
                        if (pp->max_suspend_us < offline.max_suspend_us)
                                offline.max_suspend_us = pp->max_suspend_us;
                        if (pp->share_window_us < offline.share_window_us)
                                offline.share_window_us = pp->share_window_us;
                        if (pp->min_offline_share_percent > offline.min_offline_share_percent)
                                offline.min_offline_share_percent = pp->min_offline_share_percent;
                }
        }
        return (struct policy_params){
                .hold_off_us = online.hold_off_us,
                .coalesce_us = online.coalesce_us,
                .max_suspend_us = offline.max_suspend_us,
                .share_window_us = offline.share_window_us,
                .min_offline_share_percent = offline.min_offline_share_percent,
        };
}

struct gpu *manager_gpu(struct manager *m, uint32_t gpu_id)
{
        struct policy_params params;

        for (size_t i = 0; i < m->n_gpus; i++)
                if (m->gpus[i].gpu_id == gpu_id)
                        return &m->gpus[i];
        if (m->n_gpus >= MANAGER_MAX_GPUS)
                return NULL;
        params = gpu_params(m, gpu_id);
        m->gpus[m->n_gpus].gpu_id = gpu_id;
        policy_gpu_init(&m->gpus[m->n_gpus].policy, &params, manager_now(m));
        return &m->gpus[m->n_gpus++];
}

bool manager_gpu_suspended(struct manager *m, uint32_t gpu_id)
{
        for (size_t i = 0; i < m->n_gpus; i++)
                if (m->gpus[i].gpu_id == gpu_id)
                        return m->gpus[i].policy.suspended;
        return false;
}

static void refresh_gpu_params(struct manager *m)
{
        uint64_t now = manager_now(m);

        for (size_t i = 0; i < m->n_gpus; i++) {
                struct policy_params params = gpu_params(m, m->gpus[i].gpu_id);
                policy_gpu_set_params(&m->gpus[i].policy, &params, now);
        }
}

/*
 * A resume that fails leaves the queues suspended past every bound; ending
 * the session makes the kernel resume them all (DISABLE,
 * kfd-interface.md §6). The process runs unmanaged until a reload.
 */
static int resume_or_let_go(struct manager *m, struct tracked_process *p, uint32_t gpu_id)
{
        int r = session_set_suspended(p->session, gpu_id, false);

        if (r >= 0 || r == -GP_ERR_TARGET_GONE)
                return r;
        log_error("Process %d: detaching, which makes the kernel resume its queues", (int)p->pid);
        session_stop(p->session);
        p->held = false;
        free(p->session_error);
        p->session_error = strdup("a resume failed; detached so that its queues run (reload to manage it again)");
        refresh_gpu_params(m);
        return r;
}

/* Carries out what the policy decided for one GPU on every offline process there. */
static void gpu_apply(struct manager *m, struct gpu *g, enum policy_action action)
{
        bool suspend = action == POLICY_ACTION_SUSPEND;
        struct timespec issued = { 0 };
        size_t done = 0;

        if (action == POLICY_ACTION_NONE)
                return;
        /* The reaction benchmark (tests/controller/bench-reaction.c) pairs this
         * stamp with the write time. It is logged after the ioctls: a write to
         * stderr before them would delay the suspension it measures. */
        if (suspend && log_get_level() >= LOG_LEVEL_DEBUG)
                clock_gettime(CLOCK_MONOTONIC, &issued);
        for (size_t i = 0; i < m->n_processes; i++) {
                struct tracked_process *p = m->processes[i];

                /*
                 * A held process follows its hold's policy alone: were it also
                 * suspended by the GPU's, a suspension begun in a hold's slice
                 * would last until the hold's next resume, past MaxSuspendMs.
                 */
                if (!p->managed || p->class != WORKLOAD_CLASS_OFFLINE || !p->session ||
                    !process_uses_gpu(p, g->gpu_id) || p->terminating || p->held)
                        continue;
                if (suspend ? session_set_suspended(p->session, g->gpu_id, true) >= 0
                            : resume_or_let_go(m, p, g->gpu_id) >= 0)
                        done++;
        }
        if (issued.tv_sec)
                log_debug("GPU %u: suspend issued at %lld ns", g->gpu_id,
                          (long long)issued.tv_sec * 1000000000LL + issued.tv_nsec);
        if (suspend && done == 0) {
                /* nothing offline here to stop: stay in step with the hardware */
                policy_action_failed(&g->policy, action, manager_now(m));
                return;
        }
        log_debug("GPU %u: offline work %s (%zu processes) at %.3f ms", g->gpu_id, suspend ? "suspended" : "resumed", done, manager_now(m) / 1000.0);
}

/* A held process's own bounds: its slices, and the suspension after each. */
static void hold_apply(struct manager *m, struct tracked_process *p, enum policy_action action)
{
        if (action == POLICY_ACTION_NONE || !p->session)
                return;
        if (action == POLICY_ACTION_SUSPEND ? session_set_suspended(p->session, 0, true) < 0
                                            : resume_or_let_go(m, p, 0) < 0)
                return;
        /* MaxSuspendMs or the share's budget in its window ended this part of the hold */
        if (action == POLICY_ACTION_RESUME)
                log_info("Process %d: held, runs for its slice (MaxSuspendMs=%.0f, MinOfflineSharePercent=%u)",
                         (int)p->pid, (double)p->policy.max_suspend_us / 1000.0, p->policy.min_offline_share_percent);
}

static int on_policy_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
        struct manager *m = userdata;
        uint64_t now = manager_now(m);

        for (size_t i = 0; i < m->n_gpus; i++)
                gpu_apply(m, &m->gpus[i], policy_tick(&m->gpus[i].policy, now));
        for (size_t i = 0; i < m->n_processes; i++)
                if (m->processes[i]->held)
                        hold_apply(m, m->processes[i], policy_tick(&m->processes[i]->hold_policy, now));
        manager_rearm_policy(m);
        return 0;
}

void manager_rearm_policy(struct manager *m)
{
        uint64_t next = POLICY_NEVER;

        for (size_t i = 0; i < m->n_gpus; i++) {
                uint64_t d = policy_next_deadline(&m->gpus[i].policy);
                if (d < next)
                        next = d;
        }
        for (size_t i = 0; i < m->n_processes; i++)
                if (m->processes[i]->held) {
                        uint64_t d = policy_next_deadline(&m->processes[i]->hold_policy);
                        if (d < next)
                                next = d;
                }
        if (next == POLICY_NEVER) {
                sd_event_source_set_enabled(m->policy_timer, SD_EVENT_OFF);
                return;
        }
        sd_event_source_set_time(m->policy_timer, next);
        sd_event_source_set_enabled(m->policy_timer, SD_EVENT_ONESHOT);
}

static void arm_detector(struct manager *m, uint64_t now);

static void on_gpu_busy(uint32_t gpu_id, uint64_t now, void *userdata)
{
        struct manager *m = userdata;
        struct gpu *g = manager_gpu(m, gpu_id);

        /* act first, log after: the suspension is what online work waits for */
        if (g)
                gpu_apply(m, g, policy_online_busy(&g->policy, now));
        /* a breakpoint's trap: this GPU is polled from now on, until its queues drain */
        arm_detector(m, now);
        log_debug("GPU %u: online work seen at %.3f ms", gpu_id, now / 1000.0);
}

static void on_gpu_idle(uint32_t gpu_id, uint64_t since, uint64_t now, void *userdata)
{
        struct manager *m = userdata;
        struct gpu *g = manager_gpu(m, gpu_id);

        log_debug("GPU %u: online idle since %.3f ms (now %.3f ms)", gpu_id, since / 1000.0, now / 1000.0);
        if (g)
                gpu_apply(m, g, policy_online_idle(&g->policy, since, now));
}

static void on_online_gone(pid_t pid, void *userdata)
{
        struct manager *m = userdata;
        struct tracked_process *p = manager_find_process(m, pid);

        if (p)
                p->n_watched_queues = 0;
}

static bool gpu_has_offline_work(const struct manager *m, uint32_t gpu_id)
{
        for (size_t i = 0; i < m->n_processes; i++) {
                const struct tracked_process *p = m->processes[i];

                if (p->managed && p->class == WORKLOAD_CLASS_OFFLINE && p->session && !p->terminating &&
                    process_uses_gpu(p, gpu_id))
                        return true;
        }
        return false;
}

/*
 * The idle cadence: IdlePollIntervalUs, stretched so that the daemon spends
 * at most IdlePollCpuPercent of a core while every GPU is idle. Each look reads every polled
 * online process (one process_vm_readv each), so at 64 processes a 1 ms
 * cadence alone cost ~24% of a core; the budget trades that for a slower
 * first reaction on the queues that have no breakpoint, up to
 * MANAGER_IDLE_STRETCH_MAX times IdlePollIntervalUs.
 */
static uint64_t idle_poll_interval(const struct manager *m)
{
        const struct daemon_settings *d = &m->config->daemon;
        uint64_t budgeted, longest = d->idle_poll_interval_us * MANAGER_IDLE_STRETCH_MAX;

        if (d->idle_poll_cpu_percent == 0)
                return d->idle_poll_interval_us;
        budgeted = m->idle_look_cpu_ns / 10 / d->idle_poll_cpu_percent; /* ns * 100 / percent, in us */
        if (budgeted < d->idle_poll_interval_us)
                return d->idle_poll_interval_us;
        return budgeted < longest ? budgeted : longest;
}

/*
 * A GPU's poll interval is set by what a late look would cost. Fast polling
 * (BusyPollIntervalUs) only where it buys online latency: a GPU with offline
 * work running and online work seen recently. A suspended GPU only waits
 * for the end of online work, which the hold-off makes a millisecond-scale
 * question. Everything else gets IdlePollIntervalUs. A GPU whose queues are
 * all under armed write breakpoints is not polled at all (detector_gpus()).
 */
static uint64_t gpu_poll_interval(struct manager *m, uint32_t gpu_id, uint64_t now)
{
        const struct daemon_settings *d = &m->config->daemon;
        const struct gpu *g = NULL;
        uint64_t idle = idle_poll_interval(m), want;

        for (size_t i = 0; i < m->n_gpus && !g; i++)
                if (m->gpus[i].gpu_id == gpu_id)
                        g = &m->gpus[i];
        if (!g || !gpu_has_offline_work(m, gpu_id))
                return idle;
        if (g->policy.suspended)
                want = g->policy.params.hold_off_us / MANAGER_HOLD_OFF_POLLS;
        else if (detector_gpu_recently_busy(m->detector, gpu_id, now, MANAGER_RECENT_BUSY_US))
                want = d->busy_poll_interval_us;
        else
                return idle;
        if (want < d->busy_poll_interval_us)
                want = d->busy_poll_interval_us;
        return want < d->idle_poll_interval_us ? want : d->idle_poll_interval_us;
}

bool manager_fast_cadence(struct manager *m)
{
        uint64_t now = manager_now(m), idle = idle_poll_interval(m);

        for (size_t i = 0; i < m->n_gpus; i++)
                if (gpu_poll_interval(m, m->gpus[i].gpu_id, now) < idle)
                        return true;
        return false;
}

/*
 * Each GPU is polled on its own cadence with its own queues, so a write on
 * one GPU never waits for a poll of the others. One timer, set for the
 * earliest look due; no wakeups at all when no GPU needs polling.
 */
static void arm_detector(struct manager *m, uint64_t now)
{
        struct detector_gpu_status gpus[DETECTOR_MAX_GPUS];
        size_t n = detector_gpus(m->detector, gpus, DETECTOR_MAX_GPUS);
        uint64_t next = UINT64_MAX;

        for (size_t i = 0; i < n; i++)
                if (gpus[i].needs_poll) {
                        uint64_t due = gpus[i].last_poll_us + gpu_poll_interval(m, gpus[i].gpu_id, now);

                        if (due < next)
                                next = due;
                }
        if (next == UINT64_MAX) {
                sd_event_source_set_enabled(m->detector_timer, SD_EVENT_OFF);
                return;
        }
        sd_event_source_set_time(m->detector_timer, next);
        sd_event_source_set_enabled(m->detector_timer, SD_EVENT_ONESHOT);
}

/* Longest ago first: after a series of idle looks gave way, the next wakeup goes on with the most overdue GPUs. */
static int compare_last_poll(const void *a, const void *b)
{
        const struct detector_gpu_status *x = a, *y = b;

        return x->last_poll_us < y->last_poll_us ? -1 : x->last_poll_us > y->last_poll_us;
}

static int on_detector_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
        struct manager *m = userdata;
        /* the time of this wakeup, not the one scheduled: after a slow suspend ioctl they differ */
        uint64_t now = manager_now(m);
        struct detector_gpu_status gpus[DETECTOR_MAX_GPUS];
        size_t n = detector_gpus(m->detector, gpus, DETECTOR_MAX_GPUS);

        uint64_t idle = idle_poll_interval(m), fast_due = UINT64_MAX;
        uint64_t interval[DETECTOR_MAX_GPUS];
        bool only_idle = true, polled = false, idle_looked = false, cut = false;

        qsort(gpus, n, sizeof(*gpus), compare_last_poll);
        /* each GPU's cadence as this wakeup found it: a GPU that a fast look
         * turns idle is not looked at again as an idle one */
        for (size_t i = 0; i < n; i++)
                interval[i] = gpu_poll_interval(m, gpus[i].gpu_id, now);
        /* GPUs on the fast cadence first, with a quick look: they are what online work waits for */
        for (size_t i = 0; i < n; i++) {
                uint64_t due = gpus[i].last_poll_us + interval[i];

                if (interval[i] >= idle || !gpus[i].needs_poll)
                        continue;
                if (due <= now + interval[i] / 2) {
                        detector_quick_look_gpu(m->detector, gpus[i].gpu_id, now);
                        polled = true;
                        only_idle = false;
                        due = now + interval[i];
                }
                if (due < fast_due)
                        fast_due = due;
        }
        /*
         * Then the idle GPUs due within half their interval: they fall into
         * step and share one wakeup, which is what idle CPU is made of. But
         * the series gives way once a fast GPU is due again, between two GPUs
         * and within a GPU's look between two processes; what is left stays
         * due and the next wakeup goes on with it. At 64 online processes on
         * 8 GPUs the whole series took ~0.3 ms, and writes on the busy GPU
         * landing in it made the scale case's reaction p99 16 times the small
         * case's; giving way between GPUs only, one GPU's look (8 processes,
         * ~40 µs) still made it twice the small case's.
         */
        for (size_t i = 0; i < n; i++) {
                if (interval[i] < idle || !gpus[i].needs_poll ||
                    gpus[i].last_poll_us + interval[i] > now + interval[i] / 2)
                        continue;
                if (idle_looked && monotonic_clock_us() >= fast_due) {
                        cut = true;
                        break;
                }
                idle_looked = true;
                polled = true;
                if (!detector_poll_gpu_until(m->detector, gpus[i].gpu_id, now, fast_due)) {
                        cut = true;
                        break;
                }
                /* idle after the look too: a look that found work also paid for the suspend */
                only_idle = only_idle && gpu_poll_interval(m, gpus[i].gpu_id, now) >= idle;
        }
        /*
         * The budget is for idle looks (a busy GPU's polls buy online
         * latency): what the thread spent from the end of the last idle look
         * to the end of this one, the look itself, the wakeup and whatever
         * else ran between, so that it bounds the daemon's idle CPU, not only
         * the reads. A series that gave way is one look: it is sampled where
         * it ends, unless a busy GPU was looked at on the way, which makes
         * the next sample start afresh (the busy looks' CPU is not the idle
         * looks' cost). The thread's CPU clock is a system call: not read at
         * the busy cadence, where nothing uses it.
         */
        if (polled && !cut) {
                if (only_idle) {
                        uint64_t cpu_now = loop_thread_cpu_ns();

                        if (m->last_look_idle) {
                                uint64_t cost = cpu_now - m->last_look_cpu_ns;

                                m->idle_look_cpu_ns = m->idle_look_cpu_ns ? (7 * m->idle_look_cpu_ns + cost) / 8 : cost;
                        }
                        m->last_look_cpu_ns = cpu_now;
                }
                m->last_look_idle = only_idle;
        } else if (cut && !only_idle)
                m->last_look_idle = false;
        manager_rearm_policy(m);
        arm_detector(m, now);
        return 0;
}

static void watch_online(struct manager *m, struct tracked_process *p)
{
        struct detector_queue_addr *queues = NULL;
        size_t n = 0;
        int r;

        r = online_queues_read(m->paths.sysfs_root, p->pid, &queues, &n);
        if (r < 0) {
                log_warning_errno(r, "Process %d: cannot read its queue addresses from debugfs mqds; "
                                     "its GPU work goes unnoticed until this works (is debugfs mounted, "
                                     "and gpreemptd root?)", (int)p->pid);
                n = 0;
        }
        r = detector_watch(m->detector, p->pid, queues, n);
        free(queues);
        if (r < 0) {
                log_warning_errno(r, "Process %d: cannot watch its %zu queues", (int)p->pid, n);
                return;
        }
        if (n != p->n_watched_queues)
                log_info("Process %d: watching %zu online queues", (int)p->pid, n);
        p->n_watched_queues = n;
        arm_detector(m, manager_now(m));
}

static void start_session(struct manager *m, struct tracked_process *p)
{
        _cleanup_free_ char *why = NULL;
        int r;

        free(p->session_error);
        p->session_error = NULL;
        r = session_start(m, p, &why);
        if (r < 0) {
                log_error("Process %d: cannot manage it: %s", (int)p->pid, why ? why : strerror(-r));
                p->session_error = TAKE_PTR(why);
                if (!p->session_error)
                        p->session_error = strdup(strerror(-r));
                return;
        }
        /* its GPUs may be suspended already (a held process follows its hold alone) */
        for (size_t i = 0; i < p->n_gpu_ids && !p->held; i++)
                if (manager_gpu_suspended(m, p->gpu_ids[i]))
                        session_set_suspended(p->session, p->gpu_ids[i], true);
        if (p->held && p->hold_policy.suspended)
                session_set_suspended(p->session, 0, true);
}

/* Puts p into effect for its class: watched if online, attached if offline, neither if unmanaged. */
static void apply_class(struct manager *m, struct tracked_process *p)
{
        bool want_watch = p->managed && p->class == WORKLOAD_CLASS_ONLINE;
        bool want_session = p->managed && p->class == WORKLOAD_CLASS_OFFLINE;

        if (!want_session && p->session)
                session_stop(p->session);
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

void manager_classify(struct manager *m, struct tracked_process *p)
{
        struct process_facts facts;
        const struct workload *w = NULL;
        int r;

        if (p->registered)
                return;
        r = process_facts_read(m->paths.proc_root, p->pid, &facts);
        if (r >= 0) {
                w = config_classify(m->config, &facts);
                process_facts_done(&facts);
        }
        free(p->workload);
        p->workload = w ? strdup(w->name) : NULL;
        p->managed = w != NULL;
        if (w) {
                p->class = w->class;
                p->policy = w->policy;
        }
}

int manager_register(struct manager *m, struct tracked_process *p, bool registered, enum workload_class class)
{
        p->registered = registered;
        if (registered) {
                free(p->workload);
                p->workload = NULL;
                p->managed = true;
                p->class = class;
                p->policy = m->config->class_defaults[class];
        } else {
                manager_classify(m, p);
        }
        log_notice("Process %d: %s", (int)p->pid,
                   p->managed ? workload_class_to_string(p->class) : "no longer managed");
        apply_class(m, p);
        return 0;
}

int manager_hold(struct manager *m, struct tracked_process *p, bool hold)
{
        int r;

        if (!p->session)
                return -ENOTCONN;
        if (hold) {
                /*
                 * A hold is online work that never ends, for this process alone:
                 * the offline bounds still give it its slices, so its own
                 * watchdogs do not fire while an operator holds it.
                 */
                policy_gpu_init(&p->hold_policy, &p->policy, manager_now(m));
                if (policy_online_busy(&p->hold_policy, manager_now(m)) == POLICY_ACTION_SUSPEND) {
                        r = session_set_suspended(p->session, 0, true);
                        if (r < 0)
                                return r;
                }
                p->held = true;
                manager_rearm_policy(m);
                return 0;
        }
        p->held = false;
        manager_rearm_policy(m);
        /* back under the policy: resume only where the policy does not want it suspended */
        r = resume_or_let_go(m, p, 0);
        for (size_t i = 0; r >= 0 && i < p->n_gpu_ids; i++)
                if (manager_gpu_suspended(m, p->gpu_ids[i]))
                        r = session_set_suspended(p->session, p->gpu_ids[i], true);
        return r < 0 ? r : 0;
}

static int on_process_exit(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
        struct tracked_process *p = userdata;

        manager_remove_process(p->manager, p);
        return 0;
}

struct tracked_process *manager_add_process(struct manager *m, pid_t pid)
{
        struct tracked_process *p, **grown;
        int r;

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
        manager_classify(m, p);
        discovery_refresh_process(m, p);
        log_notice("Process %d uses the GPU: %s%s%s", (int)pid,
                   p->managed ? workload_class_to_string(p->class) : "unmanaged",
                   p->workload ? ", workload " : "", p->workload ? p->workload : "");
        apply_class(m, p);
        return p;
}

void manager_process_queues_changed(struct manager *m, struct tracked_process *p)
{
        discovery_refresh_process(m, p);
        if (p->managed && p->class == WORKLOAD_CLASS_ONLINE)
                watch_online(m, p);
        refresh_gpu_params(m);
}

static void forget_process(struct manager *m, struct tracked_process *p)
{
        for (size_t i = 0; i < m->n_processes; i++)
                if (m->processes[i] == p) {
                        m->processes[i] = m->processes[--m->n_processes];
                        break;
                }
        if (p->session)
                session_stop(p->session);
        detector_unwatch(m->detector, p->pid);
        sd_event_source_disable_unref(p->exit_source);
        close(p->pidfd);
        free(p->workload);
        free(p->session_error);
        free(p);
        refresh_gpu_params(m);
}

void manager_remove_process(struct manager *m, struct tracked_process *p)
{
        log_notice("Process %d no longer uses the GPU", (int)p->pid);
        forget_process(m, p);
}

void manager_forget_exec(struct manager *m, struct tracked_process *p)
{
        /* a registration or hold named the old program; the kernel ended its debug session too */
        log_notice("Process %d exec'd into a new GPU process: classifying it afresh", (int)p->pid);
        forget_process(m, p);
}

static int on_sigchld(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata)
{
        struct manager *m = userdata;

        for (size_t i = 0; i < m->n_processes;) {
                struct tracked_process *p = m->processes[i];

                if (p->session && !session_service_ptrace(p->session)) {
                        manager_remove_process(m, p);
                        continue;
                }
                if (p->session && session_is_terminating(p->session) && !p->terminating) {
                        p->terminating = true;
                        p->held = false;
                        resume_or_let_go(m, p, 0);
                        log_notice("Process %d: asked to terminate; its queues stay running so that it can exit",
                                   (int)p->pid);
                }
                i++;
        }
        return 0;
}

int manager_new(sd_event *event, struct paths *paths, struct config *config, struct manager **ret_manager)
{
        static const struct detector_callbacks callbacks = {
                .gpu_busy = on_gpu_busy,
                .gpu_idle = on_gpu_idle,
                .process_gone = on_online_gone,
        };
        struct manager *m = calloc(1, sizeof(*m));
        int r;

        if (!m)
                return -ENOMEM;
        m->event = sd_event_ref(event);
        m->paths = *paths;
        *paths = (struct paths){ 0 };
        m->config = config;
        m->started_us = manager_now(m);
        r = detector_new(&callbacks, m, event, config->daemon.detector_mode, &m->detector);
        if (r >= 0)
                r = sd_event_add_time(event, &m->detector_timer, CLOCK_MONOTONIC, 0, 1, on_detector_timer, m);
        if (r >= 0)
                r = sd_event_add_time(event, &m->policy_timer, CLOCK_MONOTONIC, 0, 1, on_policy_timer, m);
        if (r >= 0)
                r = sd_event_add_signal(event, &m->sigchld_source, SIGCHLD, on_sigchld, m);
        if (r >= 0)
                r = loop_scheduling_init(&m->scheduling, event);
        if (r < 0) {
                manager_free(m);
                return r;
        }
        /* within the "recently busy" window the busy cadence catches work: breakpoints after it */
        detector_set_arm_delay(m->detector, MANAGER_RECENT_BUSY_US);
        /* the hot path: a detector poll that sees work must not wait behind the rest */
        sd_event_source_set_priority(m->detector_timer, SD_EVENT_PRIORITY_IMPORTANT);
        /*
         * The bounds and exits are kept at the detector's priority. sd-event
         * runs one source per iteration, the most important first; when the
         * loop runs late the detector's next look is due at every iteration,
         * and a source below it would wait as long as that lasts (an offline
         * process once stayed suspended 4.7 s under MaxSuspendMs=500). At
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
        return discovery_start(m);
}

int manager_reload(struct manager *m, struct diag *diag)
{
        struct config *fresh = NULL;
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
        log_set_level(fresh->daemon.log_level);
        loop_scheduling_apply(&m->scheduling, fresh->daemon.realtime_priority, fresh->daemon.realtime_cpu_percent);
        detector_set_mode(m->detector, fresh->daemon.detector_mode);
        m->reloads++;
        for (size_t i = 0; i < m->n_processes; i++) {
                struct tracked_process *p = m->processes[i];
                bool was_managed = p->managed;
                enum workload_class was = p->class;

                manager_classify(m, p);
                if (p->managed != was_managed || p->class != was)
                        log_notice("Process %d: now %s", (int)p->pid,
                                   p->managed ? workload_class_to_string(p->class) : "unmanaged");
                apply_class(m, p);
        }
        discovery_reconfigure(m);
        log_notice("Configuration reloaded: %zu workloads", fresh->n_workloads);
        return 0;
}

void manager_free(struct manager *m)
{
        if (!m)
                return;
        m->stopping = true;
        discovery_stop(m);
        while (m->n_processes)
                manager_remove_process(m, m->processes[0]);
        free(m->processes);
        m->gp = m->gp ? gp_context_free(m->gp) : NULL;
        sd_event_source_disable_unref(m->detector_timer);
        sd_event_source_disable_unref(m->policy_timer);
        sd_event_source_disable_unref(m->sigchld_source);
        loop_scheduling_done(&m->scheduling);
        detector_free(m->detector);
        config_free(m->config);
        paths_done(&m->paths);
        sd_event_unref(m->event);
        free(m);
}
