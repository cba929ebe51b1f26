/* SPDX-License-Identifier: MIT */
#include "scheduling.h"

#include <errno.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>

#include "log.h"

void loop_scheduling_apply(struct loop_scheduling *s, unsigned wanted)
{
        /* the loop's children (none today) must not inherit a real-time policy */
        int policy = (wanted ? SCHED_FIFO : SCHED_OTHER) | SCHED_RESET_ON_FORK;
        struct sched_param param = { .sched_priority = (int)wanted };
        bool changed = wanted != s->wanted;
        char now[48];

        /* set even when nothing seems to change: at start the thread may have
         * inherited a policy (a unit's CPUSchedulingPolicy=) that Status would
         * not show */
        s->wanted = wanted;
        if (sched_setscheduler(0, policy, &param) < 0) {
                int r = -errno;

                if (s->priority)
                        snprintf(now, sizeof(now), "SCHED_FIFO priority %u", s->priority);
                else
                        snprintf(now, sizeof(now), "the scheduling it started with");
                /* EPERM: no LimitRTPRIO=/CAP_SYS_NICE, a seccomp filter without
                 * sched_setscheduler, or an RT group scheduling kernel without
                 * real-time runtime for the daemon's cgroup */
                if (changed || s->error != r)
                        log_warning_errno(r, "RealtimePriority=%u refused, the loop stays at %s (the daemon needs "
                                             "LimitRTPRIO= or CAP_SYS_NICE and sched_setscheduler allowed, as the "
                                             "shipped unit has; a kernel with CONFIG_RT_GROUP_SCHED also needs "
                                             "real-time runtime for its cgroup)", wanted, now);
                s->error = r;
                return;
        }
        if (wanted && (changed || s->error || wanted != s->priority))
                log_info("The loop runs at SCHED_FIFO priority %u (RealtimePriority=)", wanted);
        else if (!wanted && (changed || s->error || s->priority))
                log_info("The loop runs at normal priority (RealtimePriority=0)");
        s->priority = wanted;
        s->error = 0;
}
