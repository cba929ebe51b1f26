/* SPDX-License-Identifier: MIT */
/*
 * The debugfs parsers against the real MI308X dumps in shared/data/real/
 * (README.md there lists the facts asserted here) and against small
 * hand-written dumps in the other format variants.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

#include <cmocka.h>

#include "sources.h"
#include "test-util.h"

/* The five queues of pid 94314, newest first as pqm_debugfs_mqds lists them. */
static const struct {
        uint64_t ring_base, rptr, wptr, size;
} real_queues[] = {
        { 0x7f41b5200000, 0x7f61c1576080, 0x7f61c1576038, 1048576 },
        { 0x7f41b5a00000, 0x7f61c1586080, 0x7f61c1586038, 1048576 },
        { 0x7f61c0200000, 0x7f61c1596080, 0x7f61c1596038, 1048576 },
        { 0x7f61c0400000, 0x7f61c159c080, 0x7f61c159c038, 1048576 },
        { 0x7f61c15a6000, 0x7f61c15a8080, 0x7f61c15a8038, 4096 },
};

static void test_real_mqds(void **state)
{
        struct qf_diags d = { 0 };
        struct qf_mqds m;
        int fd = test_open_shared("mi308x-mqds-5queues.txt");
        assert_int_equal(qf_mqds_parse(fd, "mqds", &d, &m), 0);
        close(fd);

        assert_int_equal(d.n, 0);
        assert_int_equal(m.n, 5);
        for (size_t i = 0; i < m.n; i++) {
                const struct qf_mqd_queue *q = &m.queues[i];
                assert_int_equal(q->pid, 94314);
                assert_int_equal(q->kind, QF_MQD_COMPUTE);
                assert_int_equal(q->gpu_id, 0xf7bc);
                assert_int_equal(q->n_xcc, 4);
                assert_int_equal(q->active_mask, 0xf);
                assert_true(q->has_addresses);
                assert_int_equal(q->ring_base, real_queues[i].ring_base);
                assert_int_equal(q->rptr_addr, real_queues[i].rptr);
                assert_int_equal(q->wptr_addr, real_queues[i].wptr);
                assert_int_equal(q->ring_size, real_queues[i].size);
        }
        assert_int_equal(m.queues[0].line, 2);
        assert_int_equal(m.queues[0].doorbell_offset, 0x4022 >> 2);
        qf_mqds_clear(&m);
        qf_diags_clear(&d);
}

/* Upstream prints "PASID 0x<hex>"; SDMA MQDs keep the rptr address hi
 * before lo; a DIQ has no layout we decode. */
static void test_mqds_upstream_variants(void **state)
{
        const char *dump = "Process 77 PASID 0x8001:\n"
                           "  SDMA queue on device 1a2b\n"
                           "    00000000: 00000023 12345600 00000000 00000000 00000000 00000000 00000000 00000000\n"
                           "    00000020: 00007fff 00001000 00000000 00000000 00000000 00000000 00000000 00000000\n"
                           "    00000040: 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000\n"
                           "    00000060: 00000000 00000000 00000000 00000000 00007fff 00002000 00000000 00000000\n"
                           "  DIQ on device 1a2b\n"
                           "    00000000: 00000000 00000000\n";
        struct qf_diags d = { 0 };
        struct qf_mqds m;
        int fd = test_fd_from_string(dump);
        assert_int_equal(qf_mqds_parse(fd, "upstream", &d, &m), 0);
        close(fd);

        assert_int_equal(d.n, 0);
        assert_int_equal(m.n, 2);
        assert_int_equal(m.queues[0].pid, 77);
        assert_int_equal(m.queues[0].kind, QF_MQD_SDMA);
        assert_int_equal(m.queues[0].gpu_id, 0x1a2b);
        assert_int_equal(m.queues[0].ring_base, 0x1234560000ULL);
        assert_int_equal(m.queues[0].rptr_addr, 0x7fff00001000ULL);
        assert_int_equal(m.queues[0].wptr_addr, 0x7fff00002000ULL);
        assert_int_equal(m.queues[0].active_mask, 1);
        assert_int_equal(m.queues[0].ring_size, 4 << 17);
        assert_int_equal(m.queues[1].kind, QF_MQD_DIQ);
        assert_false(m.queues[1].has_addresses);
        qf_mqds_clear(&m);
        qf_diags_clear(&d);
}

static void count_slots(const struct qf_hqds *h, uint32_t gpu_id, enum qf_hqd_kind kind, unsigned *ret_all,
                        unsigned *ret_active)
{
        *ret_all = *ret_active = 0;
        for (size_t i = 0; i < h->n; i++)
                if (h->hqds[i].gpu_id == gpu_id && h->hqds[i].kind == kind) {
                        (*ret_all)++;
                        *ret_active += h->hqds[i].active;
                }
}

static void test_real_hqds_busy(void **state)
{
        struct qf_diags d = { 0 };
        struct qf_hqds h;
        int fd = test_open_shared("mi308x-hqds-5queues.txt");
        assert_int_equal(qf_hqds_parse(fd, "hqds", &d, &h), 0);
        close(fd);

        assert_int_equal(d.n, 0);
        assert_int_equal(h.n_nodes, 8);
        assert_int_equal(h.nodes[0].node, 2);
        assert_int_equal(h.nodes[0].gpu_id, 0xf7bc);
        assert_false(h.nodes[0].stopped);

        unsigned all, active;
        count_slots(&h, 0xf7bc, QF_HQD_HIQ, &all, &active);
        assert_int_equal(all, 4);
        assert_int_equal(active, 4);
        count_slots(&h, 0xf7bc, QF_HQD_CP, &all, &active);
        assert_int_equal(all, 4 * 24);
        assert_int_equal(active, 20);

        /* Each of the five rings sits in one active slot per XCC, and the
         * register block moves with the XCC instance. */
        for (size_t q = 0; q < 5; q++) {
                unsigned per_xcc[4] = { 0 };
                for (size_t i = 0; i < h.n; i++) {
                        const struct qf_hqd *s = &h.hqds[i];
                        if (s->kind != QF_HQD_CP || !s->active || s->ring_base != real_queues[q].ring_base)
                                continue;
                        assert_int_equal(s->gpu_id, 0xf7bc);
                        assert_int_equal(s->rptr_addr, real_queues[q].rptr);
                        assert_int_equal(s->wptr_addr, real_queues[q].wptr);
                        assert_true(s->inst < 4);
                        per_xcc[s->inst]++;
                }
                for (unsigned x = 0; x < 4; x++)
                        assert_int_equal(per_xcc[x], 1);
        }
        uint32_t bases[4] = { 0 };
        for (size_t i = 0; i < h.n; i++)
                if (h.hqds[i].kind == QF_HQD_HIQ && h.hqds[i].gpu_id == 0xf7bc)
                        bases[h.hqds[i].inst] = h.hqds[i].reg_base;
        assert_int_equal(bases[0], 0xc914);
        assert_int_equal(bases[1], 0xcc914);
        assert_int_equal(bases[2], 0x10c914);
        assert_int_equal(bases[3], 0x1cc914);

        /* No other GPU had work. */
        for (size_t i = 0; i < h.n; i++)
                if (h.hqds[i].gpu_id != 0xf7bc && h.hqds[i].kind == QF_HQD_CP)
                        assert_false(h.hqds[i].active);
        qf_hqds_clear(&h);
        qf_diags_clear(&d);
}

static void test_real_hqds_idle(void **state)
{
        struct qf_diags d = { 0 };
        struct qf_hqds h;
        int fd = test_open_shared("mi308x-hqds-idle.txt");
        assert_int_equal(qf_hqds_parse(fd, "hqds-idle", &d, &h), 0);
        close(fd);

        assert_int_equal(d.n, 0);
        assert_int_equal(h.n_nodes, 8);
        for (size_t n = 0; n < h.n_nodes; n++) {
                unsigned all, active;
                count_slots(&h, h.nodes[n].gpu_id, QF_HQD_HIQ, &all, &active);
                assert_int_equal(active, 4);
                count_slots(&h, h.nodes[n].gpu_id, QF_HQD_CP, &all, &active);
                assert_int_equal(all, 96);
                assert_int_equal(active, 0);
                /* RB_ENABLE is set in SDMA engine 1, RLC 0-6 of f7bc, identically
                 * in the busy capture: state left from earlier work, so an
                 * enable bit alone does not mean an SDMA queue is running. */
                count_slots(&h, h.nodes[n].gpu_id, QF_HQD_SDMA, &all, &active);
                assert_true(all > 0);
                assert_int_equal(active, h.nodes[n].gpu_id == 0xf7bc ? 7 : 0);
        }
        qf_hqds_clear(&h);
        qf_diags_clear(&d);
}

static void test_hqds_stopped(void **state)
{
        struct qf_diags d = { 0 };
        struct qf_hqds h;
        int fd = test_fd_from_string("Node 1, gpu_id 1234:\n Device is stopped\n");
        assert_int_equal(qf_hqds_parse(fd, "stopped", &d, &h), 0);
        close(fd);
        assert_int_equal(d.n, 0);
        assert_int_equal(h.n_nodes, 1);
        assert_true(h.nodes[0].stopped);
        qf_hqds_clear(&h);
        qf_diags_clear(&d);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_real_mqds),
                cmocka_unit_test(test_mqds_upstream_variants),
                cmocka_unit_test(test_real_hqds_busy),
                cmocka_unit_test(test_real_hqds_idle),
                cmocka_unit_test(test_hqds_stopped),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
