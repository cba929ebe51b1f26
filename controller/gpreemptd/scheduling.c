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

        s->wanted = wanted;
        if (!changed && wanted == s->priority && s->error == 0)
                return;
        if (sched_setscheduler(0, policy, &param) < 0) {
                int r = -errno;

                if (s->priority)
                        snprintf(now, sizeof(now), "SCHED_FIFO priority %u", s->priority);
                else
                        snprintf(now, sizeof(now), "normal priority");
                /* EPERM: no LimitRTPRIO=/CAP_SYS_NICE, or an RT group scheduling
                 * kernel without real-time runtime for the daemon's cgroup */
                if (changed || s->error != r)
                        log_warning_errno(r, "RealtimePriority=%u refused, the loop stays at %s (give the daemon "
                                             "LimitRTPRIO=, as the shipped unit does, or CAP_SYS_NICE; a kernel "
                                             "with CONFIG_RT_GROUP_SCHED also needs real-time runtime for its "
                                             "cgroup)", wanted, now);
                s->error = r;
                return;
        }
        s->priority = wanted;
        s->error = 0;
        if (wanted)
                log_info("The loop runs at SCHED_FIFO priority %u (RealtimePriority=)", wanted);
        else
                log_info("The loop runs at normal priority (RealtimePriority=0)");
}
