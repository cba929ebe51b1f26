/* SPDX-License-Identifier: MIT */
#include "loop-scheduling.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <time.h>

#include "log.h"
#include "monotonic-clock.h"

void loop_cpu_cap_reset(struct loop_cpu_cap *c, unsigned percent, uint64_t now_us, uint64_t cpu_ns)
{
        *c = (struct loop_cpu_cap){
                .percent = percent,
                .window_start_us = now_us,
                .window_start_cpu_ns = cpu_ns,
        };
}

bool loop_cpu_cap_window_elapsed(const struct loop_cpu_cap *c, uint64_t now_us)
{
        return now_us >= c->window_start_us && now_us - c->window_start_us >= LOOP_CPU_CAP_WINDOW_US;
}

enum loop_cpu_cap_verdict loop_cpu_cap_account(struct loop_cpu_cap *c, bool demoted, uint64_t now_us,
                                               uint64_t cpu_ns)
{
        uint64_t wall_us, used_ns;
        bool over;

        if (!loop_cpu_cap_window_elapsed(c, now_us))
                return LOOP_CPU_CAP_KEEP;
        wall_us = now_us - c->window_start_us;
        used_ns = cpu_ns > c->window_start_cpu_ns ? cpu_ns - c->window_start_cpu_ns : 0;
        c->window_start_us = now_us;
        c->window_start_cpu_ns = cpu_ns;
        c->last_share_permille = (unsigned)(used_ns / wall_us); /* ns * 1000 / (us * 1000) */
        /* no cap (any more): a loop it held back goes back */
        if (c->percent >= 100)
                return demoted ? LOOP_CPU_CAP_PROMOTE : LOOP_CPU_CAP_KEEP;
        over = used_ns > wall_us * 10 * c->percent;
        /*
         * One threshold both ways, no band below the cap to come back under:
         * the cap is a bound on harm, not a target, and a band would keep a
         * loop that is within its share at normal priority, slower, for
         * nobody's sake. What keeps it from flipping at every iteration is
         * that each decision takes a whole window. A loop that needs more
         * than the cap at SCHED_FIFO and gets less than it at normal priority
         * (starved by other work) alternates: at most one window in two at
         * SCHED_FIFO, one sched_setscheduler() per window.
         */
        if (!demoted && over)
                return LOOP_CPU_CAP_DEMOTE;
        if (demoted && !over)
                return LOOP_CPU_CAP_PROMOTE;
        return LOOP_CPU_CAP_KEEP;
}

uint64_t loop_thread_cpu_ns(void)
{
        return clock_ns(CLOCK_THREAD_CPUTIME_ID);
}

static int set_scheduling(unsigned priority)
{
        /* the loop's children (none today) must not inherit a real-time policy */
        int policy = (priority ? SCHED_FIFO : SCHED_OTHER) | SCHED_RESET_ON_FORK;
        struct sched_param param = { .sched_priority = (int)priority };

        return sched_setscheduler(0, policy, &param) < 0 ? -errno : 0;
}

/* Logs a refusal of SCHED_FIFO priority once per wanted value and error. */
static void refused(struct loop_scheduling *s, unsigned priority, bool changed, int r, const char *stays_at)
{
        /* EPERM: no LimitRTPRIO=/CAP_SYS_NICE, a seccomp filter without
         * sched_setscheduler, or an RT group scheduling kernel without
         * real-time runtime for the daemon's cgroup */
        if (changed || s->error != r)
                log_warning_errno(r, "RealtimePriority=%u refused, the loop stays at %s (the daemon needs "
                                     "LimitRTPRIO= or CAP_SYS_NICE and sched_setscheduler allowed, as the "
                                     "shipped unit has; a kernel with CONFIG_RT_GROUP_SCHED also needs "
                                     "real-time runtime for its cgroup)", priority, stays_at);
        s->error = r;
}

static void demote(struct loop_scheduling *s)
{
        int r = set_scheduling(0);

        if (r < 0) {
                /* lowering needs no privilege: should it fail anyway, retrying would log at every window */
                log_error_errno(r, "RealtimeCpuPercent=%u: cannot put the loop back at normal priority; the cap "
                                   "is off until a reload", s->cap.percent);
                sd_event_source_set_enabled(s->cap_check, SD_EVENT_OFF);
                return;
        }
        s->capped_priority = s->priority;
        s->priority = 0;
        s->demotions++;
        if (s->demotion_explained) {
                log_debug("The loop used %u.%u%% of a core: at normal priority (RealtimeCpuPercent=%u)",
                          s->cap.last_share_permille / 10, s->cap.last_share_permille % 10, s->cap.percent);
                return;
        }
        s->demotion_explained = true;
        log_warning("The loop used %u.%u%% of a core at SCHED_FIFO, more than RealtimeCpuPercent=%u: it runs at "
                    "normal priority until it stays within that for %u ms, so that it does not keep other "
                    "threads off its CPU; reactions to online work may be slower meanwhile. Usually the detector "
                    "cannot keep BusyPollIntervalUs= on this host (load, many online processes): a larger "
                    "BusyPollIntervalUs= or RealtimeCpuPercent= avoids it. Further changes are logged at debug "
                    "level; gpreemptctl status counts them",
                    s->cap.last_share_permille / 10, s->cap.last_share_permille % 10, s->cap.percent,
                    LOOP_CPU_CAP_WINDOW_US / 1000);
}

static void promote(struct loop_scheduling *s)
{
        int r = set_scheduling(s->capped_priority);

        if (r < 0) {
                /* the limits changed under the daemon (prlimit): it tries again after the next window */
                refused(s, s->capped_priority, false, r, "normal priority");
                return;
        }
        log_debug("The loop used %u.%u%% of a core: back at SCHED_FIFO priority %u (RealtimeCpuPercent=%u)",
                  s->cap.last_share_permille / 10, s->cap.last_share_permille % 10, s->capped_priority,
                  s->cap.percent);
        s->priority = s->capped_priority;
        s->capped_priority = 0;
        /* a refused reload's error stays while what it wanted is not in effect */
        if (s->priority == s->wanted)
                s->error = 0;
}

static int on_cap_window(sd_event_source *source, uint64_t usec, void *userdata)
{
        struct loop_scheduling *s = userdata;
        uint64_t now = usec;

        /* usec is when the window was due; the share is of the time that really passed */
        sd_event_now(sd_event_source_get_event(source), CLOCK_MONOTONIC, &now);
        switch (loop_cpu_cap_account(&s->cap, s->capped_priority > 0, now, loop_thread_cpu_ns())) {
        case LOOP_CPU_CAP_DEMOTE:
                demote(s);
                break;
        case LOOP_CPU_CAP_PROMOTE:
                promote(s);
                break;
        case LOOP_CPU_CAP_KEEP:
                break;
        }
        sd_event_source_set_time(source, now + LOOP_CPU_CAP_WINDOW_US);
        return 0;
}

int loop_scheduling_init(struct loop_scheduling *s, sd_event *event)
{
        int r = sd_event_add_time_relative(event, &s->cap_check, CLOCK_MONOTONIC, LOOP_CPU_CAP_WINDOW_US,
                                           LOOP_CPU_CAP_ACCURACY_US, on_cap_window, s);

        if (r < 0)
                return r;
        /*
         * Above every other source: sd-event dispatches the most important
         * pending source first, and in the loop the cap is for some source is
         * pending at every iteration (the detector, traps, a flood of clients).
         */
        r = sd_event_source_set_priority(s->cap_check, SD_EVENT_PRIORITY_IMPORTANT - 2);
        if (r >= 0)
                r = sd_event_source_set_enabled(s->cap_check, SD_EVENT_OFF);
        if (r < 0)
                s->cap_check = sd_event_source_disable_unref(s->cap_check);
        return r;
}

void loop_scheduling_done(struct loop_scheduling *s)
{
        s->cap_check = sd_event_source_disable_unref(s->cap_check);
}

void loop_scheduling_apply(struct loop_scheduling *s, unsigned wanted, unsigned cpu_percent)
{
        bool changed = wanted != s->wanted;
        uint64_t now = 0;
        char stays_at[64];
        int r;

        /* set even when nothing seems to change: at start the thread may have
         * inherited a policy (a unit's CPUSchedulingPolicy=) that Status would
         * not show; a loop the cap had demoted starts afresh */
        s->wanted = wanted;
        s->demotion_explained = false;
        r = set_scheduling(wanted);
        if (r < 0) {
                /* a loop the cap holds at normal priority keeps the FIFO priority it goes back to */
                if (s->capped_priority)
                        snprintf(stays_at, sizeof(stays_at), "normal priority (capped from SCHED_FIFO %u)",
                                 s->capped_priority);
                else if (s->priority)
                        snprintf(stays_at, sizeof(stays_at), "SCHED_FIFO priority %u", s->priority);
                else
                        snprintf(stays_at, sizeof(stays_at), "the scheduling it started with");
                refused(s, wanted, changed, r, stays_at);
        } else {
                if (wanted && (changed || s->error || wanted != s->priority))
                        log_info("The loop runs at SCHED_FIFO priority %u (RealtimePriority=)", wanted);
                else if (!wanted && (changed || s->error || s->priority))
                        log_info("The loop runs at normal priority (RealtimePriority=0)");
                s->priority = wanted;
                s->capped_priority = 0;
                s->error = 0;
        }
        sd_event_now(sd_event_source_get_event(s->cap_check), CLOCK_MONOTONIC, &now);
        loop_cpu_cap_reset(&s->cap, cpu_percent, now, loop_thread_cpu_ns());
        sd_event_source_set_time(s->cap_check, now + LOOP_CPU_CAP_WINDOW_US);
        /* off where it could not act: no wake-ups for nothing; on while a demotion is to be undone */
        sd_event_source_set_enabled(s->cap_check, (s->priority && cpu_percent < 100) || s->capped_priority
                                                          ? SD_EVENT_ON
                                                          : SD_EVENT_OFF);
}
