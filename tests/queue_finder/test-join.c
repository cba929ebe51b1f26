/* SPDX-License-Identifier: MIT */
/*
 * Joining sources: the real mqds/hqds pair (captured at the same moment),
 * and constructed inputs for the keys the real files cannot show together
 * (sysfs queue ids, the snapshot, older log generations) and for conflicts.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "join.h"
#include "test-util.h"

struct real_inputs {
        struct qf_diags d;
        struct qf_mqds mqds;
        struct qf_hqds hqds;
        struct qf_log log;
};

static void load_real(struct real_inputs *r)
{
        *r = (struct real_inputs){ 0 };
        int fd = test_open_shared("mi308x-mqds-5queues.txt");
        assert_int_equal(qf_mqds_parse(fd, "mqds", &r->d, &r->mqds), 0);
        close(fd);
        fd = test_open_shared("mi308x-hqds-5queues.txt");
        assert_int_equal(qf_hqds_parse(fd, "hqds", &r->d, &r->hqds), 0);
        close(fd);
        fd = test_open_shared("hip-rocm7-amd-log-level4.log");
        assert_int_equal(qf_log_parse(fd, "hip.log", NULL, &r->d, &r->log), 0);
        close(fd);
        assert_int_equal(r->d.n, 0);
}

static void free_real(struct real_inputs *r)
{
        qf_mqds_clear(&r->mqds);
        qf_hqds_clear(&r->hqds);
        qf_log_clear(&r->log);
        qf_diags_clear(&r->d);
}

static void test_real_mqds_hqds_log(void **state)
{
        struct real_inputs in;
        load_real(&in);
        struct qf_result res;
        const struct qf_inputs inputs = {
                .mqds = &in.mqds, .mqds_name = "mqds", .hqds = &in.hqds, .log = &in.log, .log_name = "hip.log",
        };
        assert_int_equal(qf_join(&inputs, &res), 0);

        /* The log is another process (459769) than the dumps (94314). */
        assert_int_equal(res.n_processes, 2);
        /* The 7 enabled SDMA rings match no queue: the MQDs are all compute. */
        assert_int_equal(res.n_enabled_sdma_hqds, 7);
        const struct qf_process *p = &res.processes[0];
        assert_int_equal(p->pid, 94314);
        assert_int_equal(p->n_queues, 5);
        assert_int_equal(p->conflicts.n, 0);
        for (size_t i = 0; i < p->n_queues; i++) {
                const struct qf_queue *q = &p->queues[i];
                assert_int_equal(q->sources, QF_SOURCE_MQDS | QF_SOURCE_HQDS);
                assert_int_equal(q->gpu_id.v, 0xf7bc);
                assert_int_equal(q->n_hqds, 4);
                unsigned xcc_seen = 0;
                for (size_t k = 0; k < q->n_hqds; k++) {
                        assert_true(q->hqds[k]->active);
                        xcc_seen |= 1U << q->hqds[k]->inst;
                }
                assert_int_equal(xcc_seen, 0xf);
                assert_int_equal(q->ring_base.sources, QF_SOURCE_MQDS | QF_SOURCE_HQDS);
                assert_int_equal(q->amd_queue.v, q->rptr_addr.v - 0x80);
        }
        assert_int_equal(res.n_unowned_hqds, 0);

        const struct qf_process *logp = &res.processes[1];
        assert_int_equal(logp->pid, 459769);
        assert_int_equal(logp->n_queues, 4);
        for (size_t i = 0; i < logp->n_queues; i++) {
                assert_int_equal(logp->queues[i].sources, QF_SOURCE_LOG);
                assert_int_equal(logp->queues[i].ring_size.v, 16384 * 64);
        }
        qf_result_clear(&res);
        free_real(&in);
}

/* Without the mqds, the busy hqds file shows 20 active slots nobody explains. */
static void test_unowned_hqds(void **state)
{
        struct real_inputs in;
        load_real(&in);
        struct qf_result res;
        const struct qf_inputs inputs = { .hqds = &in.hqds };
        assert_int_equal(qf_join(&inputs, &res), 0);
        assert_int_equal(res.n_processes, 0);
        assert_int_equal(res.n_unowned_hqds, 20);
        qf_result_clear(&res);
        free_real(&in);
}

/* sysfs knows queue ids but no addresses: the 4096-byte MQD is the only one
 * of its size and pairs; the four 1 MiB ones stay separate. */
static void test_sysfs_pairs_by_size(void **state)
{
        struct real_inputs in;
        load_real(&in);
        struct qf_sysfs_queue queues[] = {
                { .queue_id = 0, .gpu_id = 0xf7bc, .size = 1048576, .type = QF_SYSFS_QUEUE_COMPUTE },
                { .queue_id = 7, .gpu_id = 0xf7bc, .size = 4096, .type = QF_SYSFS_QUEUE_COMPUTE },
        };
        struct qf_sysfs_process sp = { .pid = 94314, .queues = queues, .n_queues = 2, .has_pasid = true, .pasid = 5 };
        const pid_t only = 94314;
        const struct qf_inputs inputs = {
                .sysfs = &sp, .n_sysfs = 1, .mqds = &in.mqds, .mqds_name = "mqds", .pids = &only, .n_pids = 1,
        };
        struct qf_result res;
        assert_int_equal(qf_join(&inputs, &res), 0);
        assert_int_equal(res.n_processes, 1);
        const struct qf_process *p = &res.processes[0];
        assert_int_equal(p->pasid, 5);
        assert_int_equal(p->n_queues, 2 + 4);
        const struct qf_queue *q7 = NULL;
        for (size_t i = 0; i < p->n_queues; i++)
                if (p->queues[i].queue_id.sources && p->queues[i].queue_id.v == 7)
                        q7 = &p->queues[i];
        assert_non_null(q7);
        assert_true(q7->paired_by_size);
        assert_int_equal(q7->ring_base.v, 0x7f61c15a6000);
        assert_int_equal(q7->ring_size.sources, QF_SOURCE_SYSFS | QF_SOURCE_MQDS);
        assert_int_equal(p->queues[0].sources, QF_SOURCE_SYSFS);
        qf_result_clear(&res);
        free_real(&in);
}

/* The snapshot ties queue ids to addresses; an older log's amd_queue_t joins
 * through rptr - 0x80, a 5.6-6.1 dispatch address through the ring base; a
 * source that disagrees is recorded with its file and line. */
static void test_snapshot_log_and_conflict(void **state)
{
        struct qf_snapshot_queue sq[] = {
                { .queue_id = 3, .gpu_id = 0x1111, .queue_type = 2, .ring_base = 0x7f0000100000, .ring_size = 65536,
                  .rptr_addr = 0x7f0000200080, .wptr_addr = 0x7f0000200038 },
                { .queue_id = 4, .gpu_id = 0x2222, .queue_type = 2, .ring_base = 0x7f0000300000, .ring_size = 65536,
                  .rptr_addr = 0x7f0000400080, .wptr_addr = 0x7f0000400038 },
        };
        struct qf_snapshot snap = { .pid = 42, .queues = sq, .n = 2 };
        struct qf_mqd_queue mq[] = {
                { .pid = 42, .kind = QF_MQD_COMPUTE, .gpu_id = 0x9999, .n_xcc = 1, .active_mask = 1,
                  .has_addresses = true, .ring_base = 0x7f0000100000, .rptr_addr = 0x7f0000200080,
                  .wptr_addr = 0x7f0000200038, .ring_size = 65536, .line = 12 },
        };
        struct qf_mqds mqds = { .queues = mq, .n = 1 };
        struct qf_log_queue lq[] = {
                { .has_pid = true, .pid = 42, .has_amd_queue = true, .amd_queue = 0x7f0000200000, .priority = -1,
                  .cooperative = -1, .created_line = 5 },
                { .has_pid = true, .pid = 42, .has_legacy_hwq = true, .legacy_hwq = 0x7f0000300000, .priority = -1,
                  .cooperative = -1, .first_line = 9, .dispatches = 3 },
        };
        struct qf_log log = { .queues = lq, .n = 2 };
        const struct qf_inputs inputs = {
                .snapshots = &snap, .n_snapshots = 1, .mqds = &mqds, .mqds_name = "saved-mqds", .log = &log,
                .log_name = "app.log",
        };
        struct qf_result res;
        assert_int_equal(qf_join(&inputs, &res), 0);
        assert_int_equal(res.n_processes, 1);
        const struct qf_process *p = &res.processes[0];
        assert_int_equal(p->n_queues, 2);

        const struct qf_queue *q3 = &p->queues[0], *q4 = &p->queues[1];
        assert_int_equal(q3->queue_id.v, 3);
        assert_int_equal(q3->sources, QF_SOURCE_SNAPSHOT | QF_SOURCE_MQDS | QF_SOURCE_LOG);
        assert_int_equal(q3->amd_queue.v, 0x7f0000200000);
        assert_int_equal(q3->amd_queue.sources, QF_SOURCE_LOG);
        assert_int_equal(q3->gpu_id.v, 0x1111);
        assert_int_equal(q4->sources, QF_SOURCE_SNAPSHOT | QF_SOURCE_LOG);
        assert_int_equal(q4->log->dispatches, 3);

        assert_int_equal(p->conflicts.n, 1);
        assert_string_equal(p->conflicts.items[0].file, "saved-mqds");
        assert_int_equal(p->conflicts.items[0].line, 12);
        assert_non_null(strstr(p->conflicts.items[0].message, "queue 3: gpu id: mqds says 0x9999, snapshot said 0x1111"));
        qf_result_clear(&res);
}

/* Log queues no line tied to a process: one the MQDs of the process asked
 * about explain joins that process; the other stays apart, with no pid, and
 * is never taken for a process 0 (an MQD header may say "Process 0"). A
 * log queue of a process not asked about is left out. */
static void test_log_queues_without_pid(void **state)
{
        struct qf_mqd_queue mq[] = {
                { .pid = 42, .kind = QF_MQD_COMPUTE, .gpu_id = 0x1111, .n_xcc = 1, .active_mask = 1,
                  .has_addresses = true, .ring_base = 0x7f0000100000, .rptr_addr = 0x7f0000200080,
                  .wptr_addr = 0x7f0000200038, .ring_size = 65536, .line = 3 },
                { .pid = 0, .kind = QF_MQD_COMPUTE, .gpu_id = 0x1111, .n_xcc = 1, .active_mask = 1,
                  .has_addresses = true, .ring_base = 0x7f0000500000, .rptr_addr = 0x7f0000600080,
                  .wptr_addr = 0x7f0000600038, .ring_size = 65536, .line = 9 },
        };
        struct qf_mqds mqds = { .queues = mq, .n = 2 };
        struct qf_log_queue lq[] = {
                { .has_ring_base = true, .ring_base = 0x7f0000100000, .priority = -1, .cooperative = -1,
                  .created_line = 1 },
                { .has_ring_base = true, .ring_base = 0x7f0000900000, .priority = -1, .cooperative = -1,
                  .created_line = 2 },
                { .has_pid = true, .pid = 7, .has_ring_base = true, .ring_base = 0x7f0000a00000, .priority = -1,
                  .cooperative = -1, .created_line = 3 },
        };
        struct qf_log log = { .queues = lq, .n = 3 };
        const pid_t asked[] = { 42 };
        const struct qf_inputs inputs = {
                .mqds = &mqds, .mqds_name = "mqds", .log = &log, .log_name = "app.log", .pids = asked, .n_pids = 1,
        };
        struct qf_result res;
        assert_int_equal(qf_join(&inputs, &res), 0);
        assert_int_equal(res.n_processes, 2);
        const struct qf_process *known = &res.processes[0], *unknown = &res.processes[1];
        assert_true(known->has_pid);
        assert_int_equal(known->pid, 42);
        assert_int_equal(known->n_queues, 1);
        assert_int_equal(known->queues[0].sources, QF_SOURCE_MQDS | QF_SOURCE_LOG);
        assert_false(unknown->has_pid);
        assert_int_equal(unknown->pid, 0);
        assert_int_equal(unknown->n_queues, 1);
        assert_int_equal(unknown->queues[0].ring_base.v, 0x7f0000900000);
        assert_int_equal(unknown->queues[0].sources, QF_SOURCE_LOG);
        qf_result_clear(&res);

        /* Without pids asked for, the MQD of "Process 0" is a process of its
         * own, apart from the queues of no known process. */
        const struct qf_inputs all = { .mqds = &mqds, .mqds_name = "mqds", .log = &log, .log_name = "app.log" };
        assert_int_equal(qf_join(&all, &res), 0);
        assert_int_equal(res.n_processes, 4);
        assert_true(res.processes[0].has_pid && res.processes[0].pid == 0);
        assert_int_equal(res.processes[0].n_queues, 1);
        assert_int_equal(res.processes[0].queues[0].sources, QF_SOURCE_MQDS);
        assert_true(res.processes[1].has_pid && res.processes[1].pid == 7);
        assert_true(res.processes[2].has_pid && res.processes[2].pid == 42);
        assert_false(res.processes[3].has_pid);
        assert_int_equal(res.processes[3].n_queues, 1);
        qf_result_clear(&res);
}

/* An SDMA slot joins its queue on GPU, ring base and read-pointer address;
 * an enabled slot no queue explains is listed, but not as unexplained. */
static void test_sdma_slot_joins_its_queue(void **state)
{
        struct qf_mqd_queue mq[] = {
                { .pid = 42, .kind = QF_MQD_SDMA, .gpu_id = 0x1a2b, .n_xcc = 1, .active_mask = 1,
                  .has_addresses = true, .ring_base = 0x7f0000500000, .rptr_addr = 0x7f0000600000, .line = 3 },
        };
        struct qf_mqds mqds = { .queues = mq, .n = 1 };
        struct qf_hqd hq[] = {
                { .node = 1, .gpu_id = 0x1a2b, .kind = QF_HQD_SDMA, .engine = 0, .rlc = 2, .active = true,
                  .has_addresses = true, .ring_base = 0x7f0000500000, .rptr_addr = 0x7f0000600000 },
                { .node = 1, .gpu_id = 0x1a2b, .kind = QF_HQD_SDMA, .engine = 1, .rlc = 0, .active = true,
                  .has_addresses = true, .ring_base = 0x7f0000700000, .rptr_addr = 0x7f0000800000 },
                /* The same ring on another GPU is another queue's. */
                { .node = 2, .gpu_id = 0x3c4d, .kind = QF_HQD_SDMA, .engine = 0, .rlc = 0, .active = false,
                  .has_addresses = true, .ring_base = 0x7f0000500000, .rptr_addr = 0x7f0000600000 },
        };
        struct qf_hqds hqds = { .hqds = hq, .n = 3 };
        const struct qf_inputs inputs = { .mqds = &mqds, .mqds_name = "mqds", .hqds = &hqds };
        struct qf_result res;
        assert_int_equal(qf_join(&inputs, &res), 0);
        assert_int_equal(res.n_processes, 1);
        const struct qf_queue *q = &res.processes[0].queues[0];
        assert_int_equal(q->n_hqds, 1);
        assert_ptr_equal(q->hqds[0], &hq[0]);
        assert_int_equal(q->sources, QF_SOURCE_MQDS | QF_SOURCE_HQDS);
        assert_int_equal(q->ring_base.sources, QF_SOURCE_MQDS | QF_SOURCE_HQDS);
        assert_int_equal(res.n_enabled_sdma_hqds, 2);
        assert_ptr_equal(res.enabled_sdma_hqds[0], &hq[0]);
        assert_ptr_equal(res.enabled_sdma_hqds[1], &hq[1]);
        assert_int_equal(res.n_unowned_hqds, 0);
        qf_result_clear(&res);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_real_mqds_hqds_log),
                cmocka_unit_test(test_unowned_hqds),
                cmocka_unit_test(test_sysfs_pairs_by_size),
                cmocka_unit_test(test_snapshot_log_and_conflict),
                cmocka_unit_test(test_log_queues_without_pid),
                cmocka_unit_test(test_sdma_slot_joins_its_queue),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
