/* SPDX-License-Identifier: MIT */
#include "cadence.h"

#include <stdlib.h>

void cadence_init(struct cadence *c, const struct cadence_settings *settings)
{
        *c = (struct cadence){ .settings = *settings };
}

void cadence_set(struct cadence *c, const struct cadence_settings *settings)
{
        c->settings = *settings;
}

uint64_t cadence_idle_interval(const struct cadence *c)
{
        const struct cadence_settings *s = &c->settings;
        uint64_t budgeted, longest = s->idle_poll_interval_us * CADENCE_IDLE_STRETCH_MAX;

        if (s->idle_poll_cpu_percent == 0)
                return s->idle_poll_interval_us;
        budgeted = c->idle_look_cpu_ns / 10 / s->idle_poll_cpu_percent; /* ns * 100 / percent, in us */
        if (budgeted < s->idle_poll_interval_us)
                return s->idle_poll_interval_us;
        return budgeted < longest ? budgeted : longest;
}

uint64_t cadence_gpu_interval(const struct cadence *c, const struct cadence_gpu_state *g)
{
        const struct cadence_settings *s = &c->settings;
        uint64_t want;

        if (!g->offline_running)
                return cadence_idle_interval(c);
        if (g->suspended && !g->online_busy)
                return cadence_idle_interval(c);
        if (g->suspended)
                want = g->hold_off_us / CADENCE_HOLD_OFF_LOOKS;
        else if (g->recently_busy && !g->watched_elsewhere)
                want = s->busy_poll_interval_us;
        else
                return cadence_idle_interval(c);
        if (want < s->busy_poll_interval_us)
                want = s->busy_poll_interval_us;
        return want < s->idle_poll_interval_us ? want : s->idle_poll_interval_us;
}

/* gpu_id's interval; *ret_watched_elsewhere (may be NULL): whether the worker polls it. */
static uint64_t gpu_interval(const struct cadence *c, const struct cadence_ops *ops, void *userdata,
                             uint32_t gpu_id, uint64_t now_us, bool *ret_watched_elsewhere)
{
        struct cadence_gpu_state state = { 0 };

        ops->gpu_state(gpu_id, now_us, &state, userdata);
        if (ret_watched_elsewhere)
                *ret_watched_elsewhere = state.watched_elsewhere;
        return cadence_gpu_interval(c, &state);
}

uint64_t cadence_next_due(const struct cadence *c, const struct cadence_ops *ops, void *userdata, uint64_t now_us)
{
        struct cadence_gpu gpus[CADENCE_MAX_GPUS];
        size_t n = ops->gpus(gpus, CADENCE_MAX_GPUS, userdata);
        uint64_t next = UINT64_MAX;

        for (size_t i = 0; i < n; i++)
                if (gpus[i].needs_poll) {
                        uint64_t interval = gpu_interval(c, ops, userdata, gpus[i].gpu_id, now_us, NULL);
                        uint64_t due = gpus[i].last_poll_us + interval;

                        /* an idle series that gave way to the worker's polls: not before its resumption */
                        if (interval >= cadence_idle_interval(c) && due < c->idle_resume_us)
                                due = c->idle_resume_us;
                        if (due < next)
                                next = due;
                }
        return next;
}

/* Longest ago first: after a series of idle looks gave way, the next wakeup goes on with the most overdue GPUs. */
static int compare_last_poll(const void *a, const void *b)
{
        const struct cadence_gpu *x = a, *y = b;

        return x->last_poll_us < y->last_poll_us ? -1 : x->last_poll_us > y->last_poll_us;
}

/*
 * The budget is for idle looks (a busy GPU's looks buy online latency): what
 * the daemon spent, all its threads, from the end of the last idle look to
 * the end of this one, the look itself, the wakeup and whatever else ran
 * between, so that it bounds the daemon's idle CPU, not only the reads. A series that gave way
 * is one look: it is sampled where it ends, unless a busy GPU was looked at
 * on the way, which makes the next sample start afresh (the busy looks' CPU
 * is not the idle looks' cost). The daemon's CPU clock is a system call: not
 * read at the busy cadence, where nothing uses it.
 */
static void account_idle_looks(struct cadence *c, const struct cadence_ops *ops, void *userdata, bool polled,
                               bool cut, bool only_idle)
{
        if (polled && !cut) {
                if (only_idle) {
                        uint64_t cpu_now = ops->daemon_cpu_ns(userdata);

                        if (c->last_look_idle) {
                                uint64_t cost = cpu_now - c->last_look_cpu_ns;

                                c->idle_look_cpu_ns = c->idle_look_cpu_ns ? (7 * c->idle_look_cpu_ns + cost) / 8 : cost;
                        }
                        c->last_look_cpu_ns = cpu_now;
                }
                c->last_look_idle = only_idle;
        } else if (cut && !only_idle) {
                c->last_look_idle = false;
        }
}

void cadence_wakeup(struct cadence *c, const struct cadence_ops *ops, void *userdata, uint64_t now_us)
{
        struct cadence_gpu gpus[CADENCE_MAX_GPUS];
        size_t n = ops->gpus(gpus, CADENCE_MAX_GPUS, userdata);
        uint64_t idle = cadence_idle_interval(c), fast_due = UINT64_MAX;
        uint64_t interval[CADENCE_MAX_GPUS];
        bool only_idle = true, polled = false, idle_looked = false, cut = false, watched = false;

        qsort(gpus, n, sizeof(*gpus), compare_last_poll);
        /* each GPU's cadence as this wakeup found it: a GPU that a fast look
         * turns idle is not looked at again as an idle one */
        for (size_t i = 0; i < n; i++) {
                bool watched_elsewhere;

                interval[i] = gpu_interval(c, ops, userdata, gpus[i].gpu_id, now_us, &watched_elsewhere);
                watched = watched || watched_elsewhere;
        }
        only_idle = !watched;
        if (watched)
                fast_due = now_us + c->settings.busy_poll_interval_us;
        /* GPUs on the fast cadence first, with a quick look: they are what online work waits for */
        for (size_t i = 0; i < n; i++) {
                uint64_t due = gpus[i].last_poll_us + interval[i];

                if (interval[i] >= idle || !gpus[i].needs_poll)
                        continue;
                if (due <= now_us + interval[i] / 2) {
                        ops->quick_look(gpus[i].gpu_id, now_us, userdata);
                        polled = true;
                        only_idle = false;
                        due = now_us + interval[i];
                }
                if (due < fast_due)
                        fast_due = due;
        }
        /* then the idle GPUs due within half their interval, giving way once a fast GPU is due */
        for (size_t i = 0; i < n && now_us >= c->idle_resume_us; i++) {
                if (interval[i] < idle || !gpus[i].needs_poll ||
                    gpus[i].last_poll_us + interval[i] > now_us + interval[i] / 2)
                        continue;
                if (idle_looked && ops->clock_us(userdata) >= fast_due) {
                        cut = true;
                        break;
                }
                idle_looked = true;
                polled = true;
                if (!ops->look_until(gpus[i].gpu_id, now_us, fast_due, userdata)) {
                        cut = true;
                        break;
                }
                /* idle after the look too: a look that found work also paid for the suspend */
                only_idle = only_idle && gpu_interval(c, ops, userdata, gpus[i].gpu_id, now_us, NULL) >= idle;
        }
        if (cut && watched)
                c->idle_resume_us = ops->clock_us(userdata) + c->settings.busy_poll_interval_us;
        account_idle_looks(c, ops, userdata, polled, cut, only_idle);
}
