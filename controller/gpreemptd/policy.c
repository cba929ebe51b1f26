/* SPDX-License-Identifier: MIT */
#include "policy.h"

static uint64_t max_u64(uint64_t a, uint64_t b)
{
        return a > b ? a : b;
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
        return a < b ? a : b;
}

/* The most a window may be spent suspended. */
static uint64_t window_budget_us(const struct policy_params *p)
{
        return p->share_window_us * (100 - p->min_offline_share_percent) / 100;
}

/*
 * After MaxSuspendMs the offline side gets a slice s with s / (max + s) equal
 * to its minimum share, at least one coalescing period, and at least 1 ms so a
 * zero share still lets offline work make visible progress.
 */
uint64_t policy_offline_slice_us(const struct policy_params *p)
{
        uint64_t share = p->min_offline_share_percent;
        uint64_t slice = p->max_suspend_us * share / (100 - share);

        return max_u64(max_u64(slice, p->coalesce_us), 1000);
}

/* Brings the window accounting up to now: suspended time is charged to the window it fell in. */
static void account(struct policy_gpu *g, uint64_t now)
{
        uint64_t window = g->params.share_window_us;

        if (now <= g->accounted_until)
                return;
        while (now >= g->window_start + window) {
                uint64_t end = g->window_start + window;

                if (g->suspended && end > g->accounted_until)
                        g->window_suspended_us += end - g->accounted_until;
                g->accounted_until = max_u64(g->accounted_until, end);
                g->window_start = end;
                g->window_suspended_us = 0;
                /* A long quiet gap: jump straight to the window holding now. */
                if (!g->suspended && now >= g->window_start + window) {
                        g->window_start += (now - g->window_start) / window * window;
                        g->accounted_until = g->window_start;
                }
        }
        if (g->suspended)
                g->window_suspended_us += now - max_u64(g->accounted_until, g->window_start);
        g->accounted_until = now;
}

void policy_gpu_init(struct policy_gpu *g, const struct policy_params *params, uint64_t now_us)
{
        *g = (struct policy_gpu){
                .params = *params,
                .idle_since = now_us,
                .window_start = now_us,
                .accounted_until = now_us,
        };
}

void policy_gpu_set_params(struct policy_gpu *g, const struct policy_params *params, uint64_t now_us)
{
        account(g, now_us);
        g->params = *params;
}

static enum policy_action do_suspend(struct policy_gpu *g, uint64_t now)
{
        g->suspended = true;
        g->suspended_since = now;
        g->stats.suspends++;
        return POLICY_ACTION_SUSPEND;
}

static enum policy_action do_resume(struct policy_gpu *g, uint64_t now, enum policy_resume_reason why)
{
        g->suspended = false;
        g->stats.suspended_us += now - g->suspended_since;
        g->stats.resumes[why]++;
        if (why == POLICY_RESUMED_MAX_SUSPEND)
                g->offline_run_until = now + policy_offline_slice_us(&g->params);
        else if (why == POLICY_RESUMED_SHARE)
                g->offline_run_until = g->window_start + g->params.share_window_us;
        return POLICY_ACTION_RESUME;
}

/* The single place decisions are made; every input lands here after updating state. */
static enum policy_action evaluate(struct policy_gpu *g, uint64_t now)
{
        const struct policy_params *p = &g->params;

        account(g, now);
        if (g->suspended) {
                if (now - g->suspended_since >= p->max_suspend_us)
                        return do_resume(g, now, POLICY_RESUMED_MAX_SUSPEND);
                if (g->window_suspended_us >= window_budget_us(p))
                        return do_resume(g, now, POLICY_RESUMED_SHARE);
                if (!g->online_busy && now - g->idle_since >= p->hold_off_us &&
                    now - g->suspended_since >= p->coalesce_us && now >= g->resume_not_before)
                        return do_resume(g, now, POLICY_RESUMED_IDLE);
                return POLICY_ACTION_NONE;
        }
        if (g->online_busy && now >= g->offline_run_until && g->window_suspended_us < window_budget_us(p))
                return do_suspend(g, now);
        return POLICY_ACTION_NONE;
}

enum policy_action policy_online_busy(struct policy_gpu *g, uint64_t now_us)
{
        if (!g->online_busy)
                g->busy_since = now_us;
        g->online_busy = true;
        return evaluate(g, now_us);
}

enum policy_action policy_online_idle(struct policy_gpu *g, uint64_t since_us, uint64_t now_us)
{
        if (g->online_busy) {
                g->online_busy = false;
                g->idle_since = min_u64(since_us, now_us);
                /*
                 * Up to now, not to since: the period in progress was
                 * reported (policy_online_busy_us()) up to the scrape, which
                 * may have come after since; ending it earlier would make
                 * gpreempt_online_busy_seconds_total go back, which
                 * Prometheus reads as a reset of the whole count.
                 */
                if (now_us > g->busy_since)
                        g->stats.online_busy_us += now_us - g->busy_since;
        }
        return evaluate(g, now_us);
}

enum policy_action policy_tick(struct policy_gpu *g, uint64_t now_us)
{
        return evaluate(g, now_us);
}

uint64_t policy_next_deadline(const struct policy_gpu *g)
{
        const struct policy_params *p = &g->params;
        uint64_t window_end = g->window_start + p->share_window_us;

        if (g->suspended) {
                uint64_t budget = window_budget_us(p);
                uint64_t left = budget > g->window_suspended_us ? budget - g->window_suspended_us : 0;
                uint64_t d = min_u64(g->suspended_since + p->max_suspend_us, g->accounted_until + left);

                /* the budget renews at the window's end, so accounting must run there too */
                d = min_u64(d, window_end);
                if (!g->online_busy)
                        d = min_u64(d, max_u64(max_u64(g->idle_since + p->hold_off_us,
                                                       g->suspended_since + p->coalesce_us),
                                               g->resume_not_before));
                return d;
        }
        if (!g->online_busy)
                return POLICY_NEVER;
        /* busy but held off by a bound: wake when offline's slice or the window ends */
        return g->offline_run_until > g->accounted_until ? g->offline_run_until : window_end;
}

void policy_resume_not_before(struct policy_gpu *g, uint64_t not_before_us)
{
        g->resume_not_before = not_before_us;
}

enum policy_action policy_resume_for_fault(struct policy_gpu *g, uint64_t now_us)
{
        account(g, now_us);
        return g->suspended ? do_resume(g, now_us, POLICY_RESUMED_FAULT) : POLICY_ACTION_NONE;
}

void policy_action_failed(struct policy_gpu *g, enum policy_action a, uint64_t now_us)
{
        if (a == POLICY_ACTION_SUSPEND && g->suspended) {
                g->suspended = false;
                g->stats.suspends--;
                g->window_suspended_us -= min_u64(g->window_suspended_us, now_us - g->suspended_since);
        } else if (a == POLICY_ACTION_RESUME && !g->suspended) {
                /* still suspended in truth: keep counting the time */
                g->suspended = true;
                g->suspended_since = now_us;
        }
}

uint64_t policy_suspended_us(const struct policy_gpu *g, uint64_t now_us)
{
        return g->stats.suspended_us + (g->suspended ? now_us - g->suspended_since : 0);
}

uint64_t policy_online_busy_us(const struct policy_gpu *g, uint64_t now_us)
{
        return g->stats.online_busy_us + (g->online_busy && now_us > g->busy_since ? now_us - g->busy_since : 0);
}

void policy_params_mix_init(struct policy_params_mix *mix, const struct policy_params *online_defaults,
                            const struct policy_params *offline_defaults)
{
        *mix = (struct policy_params_mix){ .online = *online_defaults, .offline = *offline_defaults };
}

void policy_params_mix_add(struct policy_params_mix *mix, enum workload_class class, const struct policy_params *p)
{
        struct policy_params *online = &mix->online, *offline = &mix->offline;

        if (class == WORKLOAD_CLASS_ONLINE) {
                if (!mix->any_online)
                        online->hold_off_us = online->coalesce_us = 0;
                mix->any_online = true;
                if (p->hold_off_us > online->hold_off_us)
                        online->hold_off_us = p->hold_off_us;
                if (p->coalesce_us > online->coalesce_us)
                        online->coalesce_us = p->coalesce_us;
                return;
        }
        if (!mix->any_offline) {
                offline->max_suspend_us = offline->share_window_us = UINT64_MAX;
                offline->min_offline_share_percent = 0;
        }
        mix->any_offline = true;
        if (p->max_suspend_us < offline->max_suspend_us)
                offline->max_suspend_us = p->max_suspend_us;
        if (p->share_window_us < offline->share_window_us)
                offline->share_window_us = p->share_window_us;
        if (p->min_offline_share_percent > offline->min_offline_share_percent)
                offline->min_offline_share_percent = p->min_offline_share_percent;
}

struct policy_params policy_params_mix_result(const struct policy_params_mix *mix)
{
        return (struct policy_params){
                .hold_off_us = mix->online.hold_off_us,
                .coalesce_us = mix->online.coalesce_us,
                .max_suspend_us = mix->offline.max_suspend_us,
                .share_window_us = mix->offline.share_window_us,
                .min_offline_share_percent = mix->offline.min_offline_share_percent,
        };
}
