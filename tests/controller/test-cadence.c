/* SPDX-License-Identifier: MIT */
/*
 * The detector's cadence against fakes: GPUs whose state the test sets, a
 * clock that advances as looks cost time, and a thread CPU clock.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "cadence.h"

#define MS 1000u
#define IDLE_US (1 * MS)
#define BUSY_US 20u

struct fake_gpu {
        struct cadence_gpu gpu;
        struct cadence_gpu_state state;
        unsigned quick_looks, idle_looks;
};

struct world {
        struct fake_gpu gpus[4];
        size_t n_gpus;
        uint64_t clock_us;       /* advanced by each look */
        uint64_t look_cost_us;
        uint64_t cpu_ns;         /* the loop thread's CPU time */
        uint64_t cpu_per_look_ns;
        unsigned cpu_reads;
        char order[16];          /* 'q'/'i' and the GPU's index, per look */
        size_t n_order;
};

static struct fake_gpu *find(struct world *w, uint32_t gpu_id)
{
        for (size_t i = 0; i < w->n_gpus; i++)
                if (w->gpus[i].gpu.gpu_id == gpu_id)
                        return &w->gpus[i];
        fail_msg("no GPU %u", gpu_id);
        return NULL;
}

static size_t fake_gpus(struct cadence_gpu *out, size_t max, void *userdata)
{
        struct world *w = userdata;
        size_t n = w->n_gpus < max ? w->n_gpus : max;

        for (size_t i = 0; i < n; i++)
                out[i] = w->gpus[i].gpu;
        return n;
}

static void fake_gpu_state(uint32_t gpu_id, uint64_t now_us, struct cadence_gpu_state *ret, void *userdata)
{
        *ret = find(userdata, gpu_id)->state;
}

static void record(struct world *w, char kind, uint32_t gpu_id, uint64_t now_us)
{
        struct fake_gpu *g = find(w, gpu_id);

        if (w->n_order + 2 < sizeof(w->order)) {
                w->order[w->n_order++] = kind;
                w->order[w->n_order++] = (char)('0' + (g - w->gpus));
        }
        g->gpu.last_poll_us = now_us;
        w->clock_us += w->look_cost_us;
        w->cpu_ns += w->cpu_per_look_ns;
}

static void fake_quick_look(uint32_t gpu_id, uint64_t now_us, void *userdata)
{
        struct world *w = userdata;

        find(w, gpu_id)->quick_looks++;
        record(w, 'q', gpu_id, now_us);
}

static bool fake_look_until(uint32_t gpu_id, uint64_t now_us, uint64_t give_way_at_us, void *userdata)
{
        struct world *w = userdata;

        find(w, gpu_id)->idle_looks++;
        record(w, 'i', gpu_id, now_us);
        return true;
}

static uint64_t fake_clock_us(void *userdata)
{
        return ((struct world *)userdata)->clock_us;
}

static uint64_t fake_daemon_cpu_ns(void *userdata)
{
        struct world *w = userdata;

        w->cpu_reads++;
        return w->cpu_ns;
}

static const struct cadence_ops ops = {
        .gpus = fake_gpus,
        .gpu_state = fake_gpu_state,
        .quick_look = fake_quick_look,
        .look_until = fake_look_until,
        .clock_us = fake_clock_us,
        .daemon_cpu_ns = fake_daemon_cpu_ns,
};

static struct cadence make(unsigned idle_cpu_percent)
{
        struct cadence c;
        struct cadence_settings s = { .idle_poll_interval_us = IDLE_US, .idle_poll_cpu_percent = idle_cpu_percent,
                                      .busy_poll_interval_us = BUSY_US };

        cadence_init(&c, &s);
        return c;
}

static void add_gpu(struct world *w, uint32_t gpu_id, bool needs_poll, uint64_t last_poll_us,
                    struct cadence_gpu_state state)
{
        w->gpus[w->n_gpus++] = (struct fake_gpu){
                .gpu = { .gpu_id = gpu_id, .needs_poll = needs_poll, .last_poll_us = last_poll_us },
                .state = state,
        };
}

static const struct cadence_gpu_state idle_gpu = { 0 };
static const struct cadence_gpu_state busy_gpu = { .offline_running = true, .recently_busy = true };

static void test_intervals_follow_what_a_late_look_costs(void **state)
{
        struct cadence c = make(0);

        assert_int_equal(cadence_gpu_interval(&c, &idle_gpu), IDLE_US);
        /* online work beside running offline work: the busy cadence */
        assert_int_equal(cadence_gpu_interval(&c, &busy_gpu), BUSY_US);
        /* recently busy, but nothing offline to stop there: no reason to hurry */
        assert_int_equal(cadence_gpu_interval(&c, &(struct cadence_gpu_state){ .recently_busy = true }), IDLE_US);
        /* offline running, online quiet for long: idle */
        assert_int_equal(cadence_gpu_interval(&c, &(struct cadence_gpu_state){ .offline_running = true }), IDLE_US);
        /* suspended, online busy: looks per hold-off, within [busy, idle] */
        assert_int_equal(cadence_gpu_interval(&c, &(struct cadence_gpu_state){ .offline_running = true,
                                                                                 .suspended = true,
                                                                                 .online_busy = true,
                                                                                 .hold_off_us = 2 * MS }),
                         2 * MS / CADENCE_HOLD_OFF_LOOKS);
        assert_int_equal(cadence_gpu_interval(&c, &(struct cadence_gpu_state){ .offline_running = true,
                                                                                 .suspended = true,
                                                                                 .online_busy = true,
                                                                                 .hold_off_us = 50 }),
                         BUSY_US);
        assert_int_equal(cadence_gpu_interval(&c, &(struct cadence_gpu_state){ .offline_running = true,
                                                                                 .suspended = true,
                                                                                 .online_busy = true,
                                                                                 .hold_off_us = 60 * MS }),
                         IDLE_US);
        /* suspended, online idle (the hold-off): idle, also when polled queues moved lately */
        assert_int_equal(cadence_gpu_interval(&c, &(struct cadence_gpu_state){ .offline_running = true,
                                                                                 .suspended = true,
                                                                                 .recently_busy = true,
                                                                                 .hold_off_us = 2 * MS }),
                         IDLE_US);
}

static void test_idle_budget_stretches_the_idle_interval(void **state)
{
        struct cadence c = make(1);

        /* no estimate yet: the interval as configured */
        assert_int_equal(cadence_idle_interval(&c), IDLE_US);
        /* 20 µs a look at 1 % of a core: a look every 2 ms */
        c.idle_look_cpu_ns = 20000;
        assert_int_equal(cadence_idle_interval(&c), 2 * MS);
        /* cheap looks never make it shorter than configured */
        c.idle_look_cpu_ns = 1000;
        assert_int_equal(cadence_idle_interval(&c), IDLE_US);
        /* and dear ones stretch it CADENCE_IDLE_STRETCH_MAX times at most */
        c.idle_look_cpu_ns = 10000000;
        assert_int_equal(cadence_idle_interval(&c), IDLE_US * CADENCE_IDLE_STRETCH_MAX);
        /* the busy cadence is not stretched */
        assert_int_equal(cadence_gpu_interval(&c, &busy_gpu), BUSY_US);
}

static void test_next_due_skips_gpus_under_breakpoints(void **state)
{
        struct cadence c = make(0);
        struct world w = { 0 };

        assert_int_equal(cadence_next_due(&c, &ops, &w, 0), UINT64_MAX);
        add_gpu(&w, 1, false, 0, busy_gpu); /* every queue armed: no look until a trap */
        assert_int_equal(cadence_next_due(&c, &ops, &w, 0), UINT64_MAX);
        add_gpu(&w, 2, true, 5 * MS, idle_gpu);
        add_gpu(&w, 3, true, 5 * MS + 100, busy_gpu);
        assert_int_equal(cadence_next_due(&c, &ops, &w, 5 * MS), 5 * MS + 100 + BUSY_US);
        w.gpus[2].state = idle_gpu;
        assert_int_equal(cadence_next_due(&c, &ops, &w, 5 * MS), 6 * MS);
}

/*
 * A GPU whose online side went idle has its breakpoints armed at once: the
 * busy cadence is kept, through the recently busy window, only for a GPU
 * with a polled queue; the one whose queues are all under breakpoints is not
 * looked at, however recently busy.
 */
static void test_busy_cadence_only_for_polled_queues(void **state)
{
        struct cadence c = make(0);
        struct world w = { .clock_us = 10 * MS };

        add_gpu(&w, 1, false, 10 * MS - BUSY_US, busy_gpu); /* every queue armed */
        add_gpu(&w, 2, true, 10 * MS - BUSY_US, busy_gpu);  /* a polled queue */
        for (unsigned i = 0; i < 10; i++) {
                cadence_wakeup(&c, &ops, &w, w.clock_us);
                w.clock_us += BUSY_US;
        }
        assert_int_equal(w.gpus[0].quick_looks + w.gpus[0].idle_looks, 0);
        assert_int_equal(w.gpus[1].quick_looks, 10);
        w.gpus[1].gpu.needs_poll = false; /* its polled process left */
        assert_int_equal(cadence_next_due(&c, &ops, &w, w.clock_us), UINT64_MAX);
}

static void test_fast_gpus_first_and_idle_ones_in_step(void **state)
{
        struct cadence c = make(0);
        struct world w = { .clock_us = 10 * MS };

        add_gpu(&w, 1, true, 9 * MS, idle_gpu);            /* due at 10 ms: looked at */
        add_gpu(&w, 2, true, 10 * MS - 10, busy_gpu);      /* due at 10.01 ms, within half its interval */
        add_gpu(&w, 3, true, 9 * MS + 400, idle_gpu);      /* due at 10.4 ms: within half, falls into step */
        add_gpu(&w, 4, true, 9 * MS + 900 + 500, idle_gpu); /* due at 11.4 ms: not yet */
        cadence_wakeup(&c, &ops, &w, 10 * MS);
        /* the busy GPU first, then the idle ones longest-waiting first */
        assert_string_equal(w.order, "q1i0i2");
        assert_int_equal(w.gpus[3].idle_looks, 0);
}

static void test_idle_series_gives_way_to_a_busy_gpu(void **state)
{
        struct cadence c = make(0);
        struct world w = { .clock_us = 10 * MS, .look_cost_us = 30 };

        add_gpu(&w, 1, true, 10 * MS - BUSY_US, busy_gpu);
        add_gpu(&w, 2, true, 8 * MS, idle_gpu);
        add_gpu(&w, 3, true, 8 * MS + 1, idle_gpu);
        cadence_wakeup(&c, &ops, &w, 10 * MS);
        /* the quick look and one idle look took 60 µs: the busy GPU is due again before the second */
        assert_string_equal(w.order, "q0i1");
        assert_int_equal(w.gpus[2].idle_looks, 0);
        /* what gave way stays due and goes first at the next wakeup */
        w.gpus[0].state = idle_gpu;
        w.order[0] = '\0';
        w.n_order = 0;
        cadence_wakeup(&c, &ops, &w, w.clock_us);
        assert_int_equal(w.gpus[2].idle_looks, 1);
        assert_int_equal(w.order[0], 'i');
        assert_int_equal(w.order[1], '2');
}

static void test_idle_budget_learns_the_cost_of_idle_looks_only(void **state)
{
        struct cadence c = make(1);
        struct world w = { .cpu_per_look_ns = 40000 };
        uint64_t t = 0;

        add_gpu(&w, 1, true, 0, idle_gpu);
        for (int i = 0; i < 40; i++) {
                t = w.gpus[0].gpu.last_poll_us + cadence_idle_interval(&c);
                cadence_wakeup(&c, &ops, &w, t);
        }
        /* 40 µs of CPU a look at 1 %: converges on a look every 4 ms */
        assert_in_range(cadence_idle_interval(&c), 3900, 4000);
        /* busy looks are not the idle looks' cost, and do not read the CPU clock */
        w.gpus[0].state = busy_gpu;
        w.cpu_per_look_ns = 1000000;
        w.cpu_reads = 0;
        for (int i = 0; i < 10; i++) {
                t += BUSY_US;
                cadence_wakeup(&c, &ops, &w, t);
        }
        assert_int_equal(w.cpu_reads, 0);
        assert_in_range(cadence_idle_interval(&c), 3900, 4000);
        /* the first idle look after them starts a new sample rather than counting them */
        w.gpus[0].state = idle_gpu;
        w.cpu_per_look_ns = 40000;
        t += 10 * MS;
        cadence_wakeup(&c, &ops, &w, t);
        assert_in_range(cadence_idle_interval(&c), 3900, 4000);
}

/*
 * A GPU the preemption worker polls itself gets the idle interval, and the
 * daemon's CPU while it does (the worker's polls) is no idle look's cost:
 * counted, it would stretch every GPU's idle cadence.
 */
static void test_gpu_watched_elsewhere(void **state)
{
        struct cadence c = make(1);
        struct world w = { .cpu_per_look_ns = 40000 };
        struct cadence_gpu_state watched = busy_gpu;
        uint64_t t = 0;

        watched.watched_elsewhere = true;
        assert_int_equal(cadence_gpu_interval(&c, &watched), IDLE_US);
        add_gpu(&w, 1, true, 0, idle_gpu);
        add_gpu(&w, 2, true, 0, watched);
        for (int i = 0; i < 20; i++) {
                t += IDLE_US;
                w.cpu_ns += 1000000; /* the worker's polls between two looks */
                cadence_wakeup(&c, &ops, &w, t);
        }
        assert_int_equal(w.gpus[1].quick_looks, 0);
        assert_int_equal(w.gpus[1].idle_looks, 20);
        assert_int_equal(w.cpu_reads, 0);
        assert_int_equal(cadence_idle_interval(&c), IDLE_US);
}

/*
 * While the worker polls a GPU, an idle series gives way every busy interval
 * and goes on one later, so that the loop sleeps and the worker, which it
 * would keep off its CPU, polls in between.
 */
static void test_idle_series_gives_way_to_the_worker(void **state)
{
        struct cadence c = make(0);
        struct world w = { .clock_us = 10 * MS, .look_cost_us = 30 };
        struct cadence_gpu_state watched = busy_gpu;

        watched.watched_elsewhere = true;
        add_gpu(&w, 1, true, 10 * MS - BUSY_US, watched);
        add_gpu(&w, 2, true, 8 * MS, idle_gpu);
        add_gpu(&w, 3, true, 8 * MS + 1, idle_gpu);
        cadence_wakeup(&c, &ops, &w, 10 * MS);
        assert_string_equal(w.order, "i1");
        /* the rest waits a busy interval after the piece: no wakeup before */
        assert_int_equal(cadence_next_due(&c, &ops, &w, w.clock_us), 10 * MS + 30 + BUSY_US);
        cadence_wakeup(&c, &ops, &w, 10 * MS + 40);
        assert_string_equal(w.order, "i1");
        cadence_wakeup(&c, &ops, &w, 10 * MS + 30 + BUSY_US);
        assert_string_equal(w.order, "i1i2");
        assert_int_equal(w.gpus[0].quick_looks + w.gpus[0].idle_looks, 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_intervals_follow_what_a_late_look_costs),
                cmocka_unit_test(test_idle_budget_stretches_the_idle_interval),
                cmocka_unit_test(test_next_due_skips_gpus_under_breakpoints),
                cmocka_unit_test(test_busy_cadence_only_for_polled_queues),
                cmocka_unit_test(test_fast_gpus_first_and_idle_ones_in_step),
                cmocka_unit_test(test_idle_series_gives_way_to_a_busy_gpu),
                cmocka_unit_test(test_idle_budget_learns_the_cost_of_idle_looks_only),
                cmocka_unit_test(test_gpu_watched_elsewhere),
                cmocka_unit_test(test_idle_series_gives_way_to_the_worker),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
