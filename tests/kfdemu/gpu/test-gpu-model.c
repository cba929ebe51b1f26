/* SPDX-License-Identifier: MIT */
/* The GPU time model on a fake clock: durations, sharing, admission behind
 * long workgroups, suspension with saved progress, preemption stalls. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "gpu-model.h"

#define US 1000ull
#define MS 1000000ull
/* The default MI308X: 80 CUs, 8 workgroups each. */
#define CAPACITY 640u

static void model_setup(struct emu_model *m)
{
        struct emu_model_params p = { .capacity = CAPACITY, .wg_slots_per_cu = 8, .cu_count = 80 };

        emu_model_init(m, &p, 0);
}

/* Run the model event by event until `q` is done; return when it finished. */
static uint64_t finish_time(struct emu_model *m, struct emu_model_queue *q)
{
        while (!q->done) {
                uint64_t next = emu_model_next_event(m);

                assert_true(next != EMU_MODEL_NEVER);
                emu_model_advance(m, next);
        }
        return m->now;
}

static void test_alone_runs_its_duration(void **state)
{
        struct emu_model m;
        struct emu_model_queue q = { .owner = 1 };

        model_setup(&m);
        emu_model_add_queue(&m, &q);
        emu_model_start(&m, &q, 1 * MS, CAPACITY);
        assert_int_equal(emu_model_next_event(&m), 1 * MS);
        emu_model_advance(&m, 1 * MS - 1);
        assert_false(q.done);
        emu_model_advance(&m, 1 * MS);
        assert_true(q.done);
        emu_model_retire(&m, &q);
        assert_int_equal(emu_model_cu_occupancy(&m, 1), 0);
        assert_int_equal(emu_model_next_event(&m), EMU_MODEL_NEVER);
}

static void test_small_kernels_overlap(void **state)
{
        struct emu_model m;
        struct emu_model_queue a = { .owner = 1 }, b = { .owner = 2 };

        model_setup(&m);
        emu_model_add_queue(&m, &a);
        emu_model_add_queue(&m, &b);
        emu_model_start(&m, &a, 1 * MS, 100);
        emu_model_start(&m, &b, 1 * MS, 100);
        /* 100 workgroups on 8 per CU: 13 CUs each. */
        assert_int_equal(emu_model_cu_occupancy(&m, 1), 13);
        assert_int_equal(emu_model_cu_occupancy(&m, 2), 13);
        /* 200 of 640 slots: both run at full speed side by side. */
        assert_int_equal(finish_time(&m, &a), 1 * MS);
        assert_true(b.done);
}

static void test_big_kernels_share_the_device(void **state)
{
        struct emu_model m;
        struct emu_model_queue a = { .owner = 1 }, b = { .owner = 2 };

        model_setup(&m);
        emu_model_add_queue(&m, &a);
        emu_model_add_queue(&m, &b);
        /* a: ten rounds of 100 us; b arrives on a full device and gets in
         * at a's first round boundary, then they split the slots. */
        emu_model_start(&m, &a, 1 * MS, 10 * CAPACITY);
        emu_model_start(&m, &b, 1 * MS, CAPACITY);
        assert_int_equal(b.admit_at, 100 * US);
        assert_int_equal(emu_model_cu_occupancy(&m, 1), 80);
        emu_model_advance(&m, 200 * US);
        assert_int_equal(emu_model_cu_occupancy(&m, 1), 40);
        assert_int_equal(emu_model_cu_occupancy(&m, 2), 40);
        /* 900 us of a at half speed ends at 1.9 ms; b has 100 us left alone. */
        assert_int_equal(finish_time(&m, &a), 1900 * US);
        assert_int_equal(finish_time(&m, &b), 2000 * US);
}

static void test_small_kernel_waits_behind_big_one(void **state)
{
        struct emu_model m;
        struct emu_model_queue offline = { .owner = 1 }, online = { .owner = 2 };

        model_setup(&m);
        emu_model_add_queue(&m, &offline);
        emu_model_add_queue(&m, &online);
        emu_model_start(&m, &offline, 20 * MS, CAPACITY);
        emu_model_advance(&m, 5 * MS);
        emu_model_start(&m, &online, 1 * MS, 10);
        /* Every CU is held by one 20 ms round of workgroups. */
        assert_int_equal(online.admit_at, 20 * MS);
        assert_int_equal(finish_time(&m, &offline), 20 * MS);
        assert_int_equal(finish_time(&m, &online), 21 * MS);
}

static void test_suspending_the_big_one_lets_the_small_one_in(void **state)
{
        struct emu_model m;
        struct emu_model_queue offline = { .owner = 1 }, online = { .owner = 2 };

        model_setup(&m);
        emu_model_add_queue(&m, &offline);
        emu_model_add_queue(&m, &online);
        emu_model_start(&m, &offline, 20 * MS, CAPACITY);
        emu_model_advance(&m, 5 * MS);
        emu_model_start(&m, &online, 1 * MS, 10);
        emu_model_advance(&m, 6 * MS);
        emu_model_set_suspended(&m, &offline, true, 0);
        /* Its waves hold the CUs until the unmap saves them. */
        assert_int_equal(online.alloc, 0);
        emu_model_unmap_queue(&m, &offline);
        assert_int_equal(online.admit_at, 6 * MS);
        assert_int_equal(finish_time(&m, &online), 7 * MS);
        assert_int_equal(emu_model_cu_occupancy(&m, 1), 0);
}

static void test_suspension_keeps_progress(void **state)
{
        struct emu_model m;
        struct emu_model_queue q = { .owner = 1 };

        model_setup(&m);
        emu_model_add_queue(&m, &q);
        emu_model_start(&m, &q, 1 * MS, CAPACITY);
        emu_model_advance(&m, 400 * US);
        emu_model_set_suspended(&m, &q, true, 0);
        emu_model_unmap_queue(&m, &q);
        assert_int_equal(emu_model_next_event(&m), EMU_MODEL_NEVER);
        emu_model_advance(&m, 10 * MS);
        assert_false(q.done);
        assert_int_equal(emu_model_cu_occupancy(&m, 1), 0);
        /* Resume: 100 us of CWSR restore, then the 600 us left. */
        emu_model_set_suspended(&m, &q, false, 100 * US);
        assert_int_equal(emu_model_next_event(&m), 10 * MS + 100 * US);
        assert_int_equal(finish_time(&m, &q), 10 * MS + 700 * US);
}

static void test_device_preemption_stalls_every_queue(void **state)
{
        struct emu_model m;
        struct emu_model_queue a = { .owner = 1 }, b = { .owner = 2 };

        model_setup(&m);
        emu_model_add_queue(&m, &a);
        emu_model_add_queue(&m, &b);
        emu_model_start(&m, &a, 1 * MS, 100);
        emu_model_start(&m, &b, 2 * MS, 100);
        emu_model_advance(&m, 200 * US);
        emu_model_stall_device(&m, 700 * US);
        assert_int_equal(finish_time(&m, &a), 1500 * US);
        assert_int_equal(finish_time(&m, &b), 2500 * US);
}

static void test_queue_preemption_stalls_only_that_queue(void **state)
{
        struct emu_model m;
        struct emu_model_queue a = { .owner = 1 }, b = { .owner = 2 };

        model_setup(&m);
        emu_model_add_queue(&m, &a);
        emu_model_add_queue(&m, &b);
        emu_model_start(&m, &a, 1 * MS, 100);
        emu_model_start(&m, &b, 1 * MS, 100);
        emu_model_stall_queue(&m, &a, 300 * US);
        assert_int_equal(finish_time(&m, &b), 1 * MS);
        assert_int_equal(finish_time(&m, &a), 1300 * US);
}

static void test_removed_queue_frees_the_device(void **state)
{
        struct emu_model m;
        struct emu_model_queue big = { .owner = 1 }, small = { .owner = 2 };

        model_setup(&m);
        emu_model_add_queue(&m, &big);
        emu_model_add_queue(&m, &small);
        emu_model_start(&m, &big, 20 * MS, CAPACITY);
        emu_model_start(&m, &small, 1 * MS, 1);
        emu_model_advance(&m, 2 * MS);
        emu_model_remove_queue(&m, &big);
        assert_int_equal(finish_time(&m, &small), 3 * MS);
}

static void test_next_kernel_of_a_queue_keeps_its_slots(void **state)
{
        struct emu_model m;
        struct emu_model_queue offline = { .owner = 1 }, online = { .owner = 2 };

        model_setup(&m);
        emu_model_add_queue(&m, &offline);
        emu_model_add_queue(&m, &online);
        /* Two 10 ms rounds of workgroups fill the device. */
        emu_model_start(&m, &offline, 20 * MS, 2 * CAPACITY);
        emu_model_advance(&m, 1 * MS);
        emu_model_start(&m, &online, 1 * MS, 64);
        assert_int_equal(online.admit_at, 10 * MS);
        assert_int_equal(finish_time(&m, &online), 11 * MS);
        /* The request's second kernel takes the slots the first freed at
         * once instead of waiting for the offline round in progress. */
        emu_model_retire(&m, &online);
        emu_model_start(&m, &online, 1 * MS, 64);
        assert_int_equal(online.admit_at, 11 * MS);
        assert_int_equal(finish_time(&m, &online), 12 * MS);
        /* A kernel submitted later finds the slots taken again. */
        emu_model_retire(&m, &online);
        emu_model_advance(&m, 12 * MS + 1);
        emu_model_start(&m, &online, 1 * MS, 64);
        assert_true(online.admit_at > 12 * MS + 1);
}

static void test_partial_last_round_leaves_room(void **state)
{
        struct emu_model m;
        struct emu_model_queue offline = { .owner = 1 }, online = { .owner = 2 };

        model_setup(&m);
        emu_model_add_queue(&m, &offline);
        emu_model_add_queue(&m, &online);
        /* 1.5 device-fulls of workgroups: a full 10 ms round, then a 10 ms
         * round of 320 workgroups that leaves half the device free. */
        emu_model_start(&m, &offline, 20 * MS, CAPACITY + CAPACITY / 2);
        emu_model_advance(&m, 1 * MS);
        assert_int_equal(emu_model_cu_occupancy(&m, 1), 80);
        emu_model_start(&m, &online, 1 * MS, 64);
        assert_int_equal(online.admit_at, 10 * MS);
        assert_int_equal(finish_time(&m, &online), 11 * MS);
        assert_int_equal(emu_model_cu_occupancy(&m, 1), 40);
        emu_model_retire(&m, &online);
        emu_model_advance(&m, 15 * MS);
        emu_model_start(&m, &online, 1 * MS, 64);
        assert_int_equal(online.admit_at, 15 * MS);
        assert_int_equal(finish_time(&m, &online), 16 * MS);
        assert_int_equal(finish_time(&m, &offline), 20 * MS);
}

/* SUSPEND flips the flag before the unmap: the unmap still saves the
 * waves the queue held (and only once); the online queue beside it, idle,
 * adds nothing. RESUME: the queue waits for the remap and brings its
 * saved waves back then, with nothing resident to save. */
static void test_unmap_saves_the_leaving_waves_and_restores_them_on_return(void **state)
{
        struct emu_model m;
        struct emu_model_queue offline = { .owner = 1 }, online = { .owner = 2 };
        double saved, restored;
        unsigned mapped;

        model_setup(&m);
        emu_model_add_queue(&m, &offline);
        emu_model_add_queue(&m, &online);
        emu_model_start(&m, &offline, 10 * MS, CAPACITY / 2);
        emu_model_advance(&m, 1 * MS);
        emu_model_set_suspended(&m, &offline, true, 0);
        emu_model_unmap_all(&m, &saved, &restored, &mapped);
        assert_true(saved == CAPACITY / 2);
        assert_true(restored == 0);
        assert_int_equal(mapped, 1);
        emu_model_unmap_all(&m, &saved, &restored, &mapped);
        assert_true(saved == 0);

        emu_model_advance(&m, 2 * MS);
        emu_model_set_suspended(&m, &offline, false, EMU_MODEL_NEVER);
        emu_model_advance(&m, 3 * MS);
        assert_int_equal(emu_model_cu_occupancy(&m, 1), 0);
        emu_model_unmap_all(&m, &saved, &restored, &mapped);
        assert_true(saved == 0);
        assert_true(restored == CAPACITY / 2);
        assert_int_equal(mapped, 2);
        emu_model_stall_device(&m, 3 * MS + 100 * US);
        /* 1 ms done before, 9 ms left after the stall. */
        assert_int_equal(finish_time(&m, &offline), 3 * MS + 100 * US + 9 * MS);
        assert_true(offline.saved_slots == 0);
}

/* The read index moves read_index_lead of the dispatch's time early. */
static void test_read_index_is_due_early_by_the_lead(void **state)
{
        struct emu_model m;
        struct emu_model_queue q = { .owner = 1 };
        struct emu_model_params p = { .capacity = CAPACITY, .wg_slots_per_cu = 8, .cu_count = 80,
                                      .read_index_lead = 0.25 };

        emu_model_init(&m, &p, 0);
        emu_model_add_queue(&m, &q);
        emu_model_start(&m, &q, 4 * MS, CAPACITY);
        assert_int_equal(emu_model_next_event(&m), 3 * MS);
        emu_model_advance(&m, 3 * MS);
        assert_true(q.index_due);
        assert_false(q.done);
        assert_int_equal(finish_time(&m, &q), 4 * MS);
}

/* More processes than the HWS runs at once: it runs them a quantum each
 * in turn (pm_calc_rlib_size's oversubscribed runlist), and at once the
 * next one when the running one has nothing left. Two kernels that would
 * overlap perfectly take turns. */
static void test_oversubscribed_runlist_is_time_sliced(void **state)
{
        struct emu_model m;
        struct emu_model_queue a = { .owner = 1 }, b = { .owner = 2 };
        struct emu_model_params p = { .capacity = CAPACITY, .wg_slots_per_cu = 8, .cu_count = 80,
                                      .max_procs_per_quantum = 1, .quantum_ns = 4 * MS };

        emu_model_init(&m, &p, 0);
        emu_model_add_queue(&m, &a);
        emu_model_add_queue(&m, &b);
        assert_int_equal(m.n_slices, 2);
        emu_model_start(&m, &a, 10 * MS, CAPACITY / 4);
        emu_model_start(&m, &b, 10 * MS, CAPACITY / 4);
        /* b was added last: it heads the runlist. */
        assert_int_equal(finish_time(&m, &b), 18 * MS);
        assert_int_equal(finish_time(&m, &a), 20 * MS);
}

/* A switch saves the outgoing slice's waves and restores the incoming
 * one's, and nothing runs meanwhile. */
static void test_slice_switch_costs_the_save_and_restore(void **state)
{
        struct emu_model m;
        struct emu_model_queue a = { .owner = 1 }, b = { .owner = 2 };
        struct emu_model_params p = { .capacity = CAPACITY, .wg_slots_per_cu = 8, .cu_count = 80,
                                      .max_procs_per_quantum = 1, .quantum_ns = 4 * MS, .cwsr_ns_per_slot = 1000 };

        emu_model_init(&m, &p, 0);
        emu_model_add_queue(&m, &a);
        emu_model_add_queue(&m, &b);
        emu_model_start(&m, &b, 10 * MS, 100);
        emu_model_start(&m, &a, 1 * MS, 100);
        /* At 4 ms b's 100 slots are saved (100 us), then a runs 1 ms. */
        assert_int_equal(finish_time(&m, &a), 4 * MS + 100 * US + 1 * MS);
        /* a idle: back to b at once, restoring its 100 slots. */
        assert_int_equal(finish_time(&m, &b), 5 * MS + 100 * US + 100 * US + 6 * MS);
}

/* A suspended queue takes no HQD slot: the runlist fits again. */
static void test_suspended_queues_free_hqd_slots(void **state)
{
        struct emu_model m;
        struct emu_model_queue a = { .owner = 1 }, b = { .owner = 2 };
        struct emu_model_params p = { .capacity = CAPACITY, .wg_slots_per_cu = 8, .cu_count = 80,
                                      .hqd_slots = 1, .quantum_ns = 4 * MS };

        emu_model_init(&m, &p, 0);
        emu_model_add_queue(&m, &a);
        emu_model_add_queue(&m, &b);
        assert_int_equal(m.n_slices, 2);
        emu_model_set_suspended(&m, &b, true, 0);
        assert_int_equal(m.n_slices, 1);
        emu_model_start(&m, &a, 2 * MS, CAPACITY / 4);
        assert_int_equal(finish_time(&m, &a), 2 * MS);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_alone_runs_its_duration),
                cmocka_unit_test(test_small_kernels_overlap),
                cmocka_unit_test(test_big_kernels_share_the_device),
                cmocka_unit_test(test_small_kernel_waits_behind_big_one),
                cmocka_unit_test(test_next_kernel_of_a_queue_keeps_its_slots),
                cmocka_unit_test(test_partial_last_round_leaves_room),
                cmocka_unit_test(test_suspending_the_big_one_lets_the_small_one_in),
                cmocka_unit_test(test_suspension_keeps_progress),
                cmocka_unit_test(test_device_preemption_stalls_every_queue),
                cmocka_unit_test(test_queue_preemption_stalls_only_that_queue),
                cmocka_unit_test(test_removed_queue_frees_the_device),
                cmocka_unit_test(test_unmap_saves_the_leaving_waves_and_restores_them_on_return),
                cmocka_unit_test(test_read_index_is_due_early_by_the_lead),
                cmocka_unit_test(test_oversubscribed_runlist_is_time_sliced),
                cmocka_unit_test(test_slice_switch_costs_the_save_and_restore),
                cmocka_unit_test(test_suspended_queues_free_hqd_slots),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
