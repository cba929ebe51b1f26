/* SPDX-License-Identifier: MIT */
/*
 * The debugfs parsers against the real MI308X dumps in tests/data/real/
 * (README.md there lists the facts asserted here) and against small
 * hand-written dumps in the other format variants.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* How a test of a real dump opens it (its prestate): as it is, or with CRLF line endings. */
struct opening {
        int (*open)(const char *name);
};
static struct opening as_is = { test_open_shared }, with_crlf = { test_open_shared_crlf };

static int open_dump(void **state, const char *name)
{
        return ((const struct opening *) *state)->open(name);
}

static void test_real_mqds(void **state)
{
        struct qf_diags d = { 0 };
        struct qf_mqds m;
        int fd = open_dump(state, "mi308x-mqds-5queues.txt");
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

/* Parses dump (freed here), a damaged copy of the real one: every queue keeps its real addresses. */
static void parse_damaged_real_mqds(char *dump, struct qf_diags *d, struct qf_mqds *m)
{
        int fd = test_fd_from_string(dump);

        free(dump);
        assert_int_equal(qf_mqds_parse(fd, "mqds", d, m), 0);
        close(fd);
        assert_int_equal(m->n, 5);
        for (size_t i = 0; i < m->n; i++) {
                assert_true(m->queues[i].has_addresses);
                assert_int_equal(m->queues[i].ring_base, real_queues[i].ring_base);
                assert_int_equal(m->queues[i].rptr_addr, real_queues[i].rptr);
                assert_int_equal(m->queues[i].wptr_addr, real_queues[i].wptr);
                assert_int_equal(m->queues[i].n_xcc, 4);
        }
}

/*
 * Copy 0's row with the ring base and pointer addresses (offset 0x220) cut
 * short costs that copy its addresses only: the queue takes them from copy
 * 1, and the rows after the cut one are still read.
 */
static void test_real_mqds_damaged_row(void **state)
{
        char *dump = test_read_shared("mi308x-mqds-5queues.txt");
        char *row = strstr(dump, "    00000220: ");
        assert_non_null(row);
        char *end = strchr(row, '\n');
        memmove(row + strlen("    00000220: 01234567"), end, strlen(end) + 1);

        struct qf_diags d = { 0 };
        struct qf_mqds m;
        parse_damaged_real_mqds(dump, &d, &m);
        /* the gap after the cut row, copy 0 without addresses, and copy 1's */
        assert_int_equal(d.n, 3);
        assert_true(strstr(d.items[0].message, "the dwords between are missing"));
        assert_true(strstr(d.items[1].message, "MQD copy 0 of the queue at line 2 lacks its ring and pointer addresses"));
        assert_true(strstr(d.items[2].message, "the queue at line 2 takes its addresses from MQD copy 1"));
        qf_mqds_clear(&m);
        qf_diags_clear(&d);
}

/*
 * A row of copy 0 whose offset was damaged into another row's (0x200 read
 * as 0x220, the address row) puts its values at the address dwords, and
 * the real address row after it is refused: that copy's addresses are
 * wrong, and the first intact copy's replace them.
 */
static void test_real_mqds_damaged_offset(void **state)
{
        char *dump = test_read_shared("mi308x-mqds-5queues.txt");
        char *row = strstr(dump, "    00000200: ");
        assert_non_null(row);
        memcpy(row, "    00000220: ", strlen("    00000220: "));

        struct qf_diags d = { 0 };
        struct qf_mqds m;
        parse_damaged_real_mqds(dump, &d, &m);
        bool replaced = false;
        for (size_t i = 0; i < d.n; i++)
                replaced |= strstr(d.items[i].message, "takes its addresses from MQD copy 1, the first intact one") != NULL;
        assert_true(replaced);
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
        int fd = open_dump(state, "mi308x-hqds-5queues.txt");
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

static const struct qf_hqd *find_sdma(const struct qf_hqds *h, uint32_t gpu_id, unsigned engine, unsigned rlc)
{
        for (size_t i = 0; i < h->n; i++)
                if (h->hqds[i].kind == QF_HQD_SDMA && h->hqds[i].gpu_id == gpu_id && h->hqds[i].engine == engine &&
                    h->hqds[i].rlc == rlc)
                        return &h->hqds[i];
        return NULL;
}

/* Every SDMA slot of the MI308X dump is in the verified GC 9.4.3 layout.
 * The 7 enabled rings of f7bc (engine 1, RLC 0-6) hold two ring bases,
 * identical in the idle capture: no SDMA queue of the traced process, whose
 * MQDs are all compute. */
static void test_real_hqds_sdma(void **state)
{
        static const char *const files[] = { "mi308x-hqds-5queues.txt", "mi308x-hqds-idle.txt" };
        for (size_t f = 0; f < 2; f++) {
                struct qf_diags d = { 0 };
                struct qf_hqds h;
                int fd = test_open_shared(files[f]);
                assert_int_equal(qf_hqds_parse(fd, files[f], &d, &h), 0);
                close(fd);
                assert_int_equal(d.n, 0);

                unsigned all = 0, enabled = 0;
                for (size_t i = 0; i < h.n; i++) {
                        const struct qf_hqd *s = &h.hqds[i];
                        if (s->kind != QF_HQD_SDMA)
                                continue;
                        all++;
                        assert_true(s->has_addresses);
                        assert_int_equal(s->n_raw, 0);
                        assert_false(s->doorbell_enabled);
                        assert_int_equal(s->doorbell_offset, 0);
                        assert_int_equal(s->rptr, 0);
                        assert_int_equal(s->wptr, 0);
                        assert_int_equal(s->wptr_addr, 0);
                        if (!s->active) {
                                assert_int_equal(s->ring_base, 0);
                                assert_int_equal(s->rptr_addr, 0);
                                continue;
                        }
                        enabled++;
                        assert_int_equal(s->gpu_id, 0xf7bc);
                        assert_int_equal(s->engine, 1);
                        assert_true(s->rlc <= 6);
                        assert_int_equal(s->ring_base, s->rlc <= 3 ? 0x7f558c200000 : 0x7f1dec800000);
                        /* RB_RPTR_ADDR_LO reads ...4011: bit 0 is RPTR_WB_IDLE. */
                        assert_int_equal(s->rptr_addr, s->rlc <= 3 ? 0x7f5731304010 : 0x7f1f7cfca010);
                }
                /* 8 engines of 8 RLC queues on each of the 8 GPUs. */
                assert_int_equal(all, 8 * 8 * 8);
                assert_int_equal(enabled, 7);

                const struct qf_hqd *s = find_sdma(&h, 0xf7bc, 1, 0);
                assert_non_null(s);
                assert_int_equal(s->reg_base, 0x6640);
                assert_int_equal(s->line, 866);
                assert_int_equal(find_sdma(&h, 0xf7bc, 1, 1)->reg_base, 0x6640 + 0x160);
                assert_false(find_sdma(&h, 0xf7bc, 1, 7)->active);
                qf_hqds_clear(&h);
                qf_diags_clear(&d);
        }
}

/* An SDMA slot printed as seq_reg_dump does: ranges of {first, count}
 * registers counted from RB_CNTL at byte address base, 8 values a row. */
struct reg_range {
        unsigned first, count;
};

static const struct reg_range gc_9_4_3_ranges[] = { { 0, 19 }, { 40, 6 }, { 47, 7 }, { 64, 12 } };

static void append_sdma_slot(char *buf, size_t size, unsigned rlc, uint32_t base, const struct reg_range *ranges,
                             size_t n_ranges, const uint32_t *regs)
{
        size_t len = strlen(buf);
        len += (size_t) snprintf(buf + len, size - len, "  SDMA Engine 0, RLC %u\n", rlc);
        for (size_t r = 0; r < n_ranges; r++) {
                for (unsigned i = 0; i < ranges[r].count; i++) {
                        unsigned reg = ranges[r].first + i;
                        if (i % 8 == 0)
                                len += (size_t) snprintf(buf + len, size - len, "%s    %08x: %08x", i ? "\n" : "",
                                                         base + 4 * reg, regs[reg]);
                        else
                                len += (size_t) snprintf(buf + len, size - len, " %08x", regs[reg]);
                }
                len += (size_t) snprintf(buf + len, size - len, "\n");
        }
        assert_true(len < size);
}

static void parse_string(const char *dump, struct qf_diags *d, struct qf_hqds *h)
{
        int fd = test_fd_from_string(dump);
        assert_int_equal(qf_hqds_parse(fd, "sdma", d, h), 0);
        close(fd);
}

/* Each field takes only its bits: RB_BASE_HI is 24 bits wide, the address
 * registers' low two bits and DOORBELL_OFFSET's bits outside 2..27 are
 * something else (sdma_4_4_2_sh_mask.h). */
static void test_sdma_fields(void **state)
{
        uint32_t regs[128] = { 0 };
        regs[0] = 0x03060025;      /* RB_CNTL: RB_ENABLE */
        regs[1] = 0x89abcd00;      /* RB_BASE */
        regs[2] = 0xff00007f;      /* RB_BASE_HI */
        regs[3] = 0x100;           /* RB_RPTR, RB_RPTR_HI */
        regs[4] = 0x1;
        regs[5] = 0x200;           /* RB_WPTR, RB_WPTR_HI */
        regs[6] = 0x2;
        regs[8] = 0x7fff;          /* RB_RPTR_ADDR_HI, then LO */
        regs[9] = 0x12345673;
        regs[18] = 0x10000000;     /* DOORBELL: ENABLE */
        regs[43] = 0xf0000000 | 0x1234 << 2 | 0x3; /* DOORBELL_OFFSET */
        regs[50] = 0x7ffe;         /* RB_WPTR_POLL_ADDR_HI, then LO */
        regs[51] = 0x00abc002;
        char dump[4096] = "Node 1, gpu_id 1a2b:\n";
        append_sdma_slot(dump, sizeof(dump), 3, 0x4e40, gc_9_4_3_ranges, 4, regs);

        struct qf_diags d = { 0 };
        struct qf_hqds h;
        parse_string(dump, &d, &h);
        assert_int_equal(d.n, 0);
        assert_int_equal(h.n, 1);
        const struct qf_hqd *s = &h.hqds[0];
        assert_int_equal(s->kind, QF_HQD_SDMA);
        assert_int_equal(s->rlc, 3);
        assert_true(s->active);
        assert_true(s->has_addresses);
        assert_int_equal(s->ring_base, 0x7f89abcd0000);
        assert_int_equal(s->rptr, 0x100000100);
        assert_int_equal(s->wptr, 0x200000200);
        assert_int_equal(s->rptr_addr, 0x7fff12345670);
        assert_int_equal(s->wptr_addr, 0x7ffe00abc000);
        assert_true(s->doorbell_enabled);
        assert_int_equal(s->doorbell_offset, 0x1234);
        assert_null(s->raw);
        qf_hqds_clear(&h);
        qf_diags_clear(&d);
}

/* Slots whose rows are not exactly the verified ranges keep their raw
 * registers and only the enable bit: the 19+6+7+10 layout of the GC 9.0-9.4.2
 * and 10.1 functions, a verified layout with a row missing or one register
 * too many, and a row past what a slot can hold. */
static void test_sdma_unverified_layouts(void **state)
{
        static const struct reg_range v9_ranges[] = { { 0, 19 }, { 40, 6 }, { 47, 7 }, { 64, 10 } };
        static const struct reg_range short_ranges[] = { { 0, 19 }, { 40, 6 }, { 47, 7 }, { 64, 8 } };
        static const struct reg_range extra_ranges[] = { { 0, 19 }, { 40, 6 }, { 47, 7 }, { 64, 12 }, { 100, 1 } };
        uint32_t regs[128] = { 0 };
        for (unsigned i = 0; i < 128; i++)
                regs[i] = 0x1000 + i;
        regs[0] = 0x00040001;
        char dump[16384] = "Node 1, gpu_id 1a2b:\n";
        append_sdma_slot(dump, sizeof(dump), 0, 0x4e40, v9_ranges, 4, regs);
        append_sdma_slot(dump, sizeof(dump), 1, 0x4fa0, short_ranges, 4, regs);
        append_sdma_slot(dump, sizeof(dump), 2, 0x5100, extra_ranges, 5, regs);
        append_sdma_slot(dump, sizeof(dump), 3, 0x5260, gc_9_4_3_ranges, 4, regs);
        strcat(dump, "    00005560: 00000000\n"); /* register 192 of the slot */
        unsigned long far_line = 0;
        for (const char *c = dump; *c; c++)
                far_line += *c == '\n';

        struct qf_diags d = { 0 };
        struct qf_hqds h;
        parse_string(dump, &d, &h);
        assert_int_equal(h.n, 4);
        static const size_t n_raw[] = { 42, 40, 45, 44 };
        for (size_t i = 0; i < h.n; i++) {
                const struct qf_hqd *s = &h.hqds[i];
                assert_true(s->active);
                assert_false(s->has_addresses);
                assert_int_equal(s->n_raw, n_raw[i]);
                assert_int_equal(s->raw[0].address, s->reg_base);
                assert_int_equal(s->raw[0].value, 0x00040001);
                /* The second range starts at STATUS, 40 registers on. */
                assert_int_equal(s->raw[19].address, s->reg_base + 40 * 4);
                assert_int_equal(s->raw[19].value, 0x1000 + 40);
        }
        assert_int_equal(h.hqds[2].raw[44].address, 0x5100 + 100 * 4);
        /* Only the last slot's far row is a warning. */
        assert_int_equal(d.n, 1);
        assert_true(test_has_warning(&d, far_line, "more than 128 registers after the slot's first"));
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
                cmocka_unit_test_prestate(test_real_mqds, &as_is),
                cmocka_unit_test_prestate(test_real_mqds, &with_crlf),
                cmocka_unit_test(test_real_mqds_damaged_row),
                cmocka_unit_test(test_real_mqds_damaged_offset),
                cmocka_unit_test(test_mqds_upstream_variants),
                cmocka_unit_test_prestate(test_real_hqds_busy, &as_is),
                cmocka_unit_test_prestate(test_real_hqds_busy, &with_crlf),
                cmocka_unit_test(test_real_hqds_idle),
                cmocka_unit_test(test_real_hqds_sdma),
                cmocka_unit_test(test_sdma_fields),
                cmocka_unit_test(test_sdma_unverified_layouts),
                cmocka_unit_test(test_hqds_stopped),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
