/* SPDX-License-Identifier: MIT */
/*
 * Damaged debugfs dumps: every kind of bad line yields a warning naming its
 * line, and the good parts around it are still read.
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

#include "hexdump.h"
#include "line-reader.h"
#include "sources.h"
#include "test-util.h"

static const char row0[] = "    00000000: 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000\n";

static void test_mqds_garbage(void **state)
{
        const char *dump =
                "    00000000: 00000001\n"                                   /* 1: row before any header */
                "Process abc PASID 1:\n"                                       /* 2: bad pid */
                "  Compute queue on device f7bc\n"                             /* 3: outside a process */
                "Process 5 PASID 0x5:\n"                                       /* 4 */
                "  Compute queue on device zzzz\n"                             /* 5: bad gpu id */
                "  Compute queue on device 12\n"                               /* 6 */
                "    00000000: 1 2 3 4 5 6 7 8 9\n"                            /* 7: nine values */
                "    00000000: 00000001 xyz\n"                                 /* 8: not hex */
                "    00000040: 00000001\n"                                     /* 9: gap, kept */
                "    00000000: 123456789\n"                                    /* 10: wider than 32 bits */
                "something else entirely\n"                                    /* 11 */
                "  SDMA queue on device 12\n"                                  /* 12 */
                "    00001000: 00000000\n";                                    /* 13: offset jump */
        struct qf_diags d = { 0 };
        struct qf_mqds m;
        int fd = test_fd_from_string(dump);
        assert_int_equal(qf_mqds_parse(fd, "bad-mqds", &d, &m), 0);
        close(fd);
        for (unsigned long line = 1; line <= 13; line++) {
                if (line == 4 || line == 6 || line == 12)
                        continue;
                bool found = false;
                for (size_t i = 0; i < d.n; i++)
                        found |= d.items[i].line == line && strcmp(d.items[i].file, "bad-mqds") == 0;
                if (!found)
                        fail_msg("no warning for line %lu", line);
        }
        /* queues at lines 6 and 12 exist, without addresses */
        assert_int_equal(m.n, 2);
        assert_false(m.queues[0].has_addresses);
        assert_true(test_has_warning(&d, 9, "the dwords between are missing"));
        assert_true(test_has_warning(&d, 11, "MQD copy 0 of the queue at line 6 lacks its ring and pointer addresses"));
        qf_mqds_clear(&m);
        qf_diags_clear(&d);
}

/* Rows as both debugfs files print them (%08x values), and rows cut short. */
/* A CP_HQD_PQ_CONTROL whose QUEUE_SIZE field is all ones (a damaged dump) gives no ring size, not an overflow. */
static void test_queue_size_field_all_ones(void **state)
{
        char dump[4096];
        int n = snprintf(dump, sizeof(dump), "Process 5 PASID 5:\n  Compute queue on device f7bc\n");
        /* rows up to dword 151; dword 145, CP_HQD_PQ_CONTROL, is the second of the row at 0x240 */
        for (unsigned off = 0; off <= 0x240; off += 0x20)
                n += snprintf(dump + n, sizeof(dump) - (size_t) n,
                              "    %08x: 00000000 %s 00000000 00000000 00000000 00000000 00000000 00000000\n", off,
                              off == 0x240 ? "0000003f" : "00000000");
        struct qf_diags d = { 0 };
        struct qf_mqds m;
        int fd = test_fd_from_string(dump);
        assert_int_equal(qf_mqds_parse(fd, "mqds", &d, &m), 0);
        close(fd);
        assert_int_equal(m.n, 1);
        assert_int_equal(m.queues[0].ring_size, 0);
        qf_mqds_clear(&m);
        qf_diags_clear(&d);
}

static void test_hexdump_rows(void **state)
{
        struct qf_hexdump_row row;
        static const char *const good[] = { "    00000220: 0000c000 00000007 ", "    0000c914: 00000001" };
        static const char *const cut[] = {
                "    00000220: 0000c000 00",     /* the last line of a truncated file */
                "    00000220: 0000c000 0000007", /* a digit lost */
                "    00000220: ",
        };
        for (size_t i = 0; i < sizeof(good) / sizeof(*good); i++)
                assert_true(qf_hexdump_parse_row(good[i], strlen(good[i]), &row));
        assert_int_equal(row.address, 0xc914);
        assert_int_equal(row.n_values, 1);
        for (size_t i = 0; i < sizeof(cut) / sizeof(*cut); i++)
                if (qf_hexdump_parse_row(cut[i], strlen(cut[i]), &row))
                        fail_msg("\"%s\" read as a row", cut[i]);
}

static void test_hqds_garbage(void **state)
{
        const char *dump =
                " Inst 0,  CP Pipe 0, Queue 2\n"                               /* 1: outside a node */
                "    0000c914: 00000001\n"                                     /* 2: row outside a slot */
                "Node x, gpu_id 12:\n"                                         /* 3 */
                "Node 1, gpu_id 12:\n"                                         /* 4 */
                " Inst 0,  CP Pipe 0, Queue\n"                                 /* 5 */
                "   Inst 0, HIQ on MEC 2 Pipe 0 Queue 999\n"                   /* 6: out of range */
                "  SDMA Engine 0, RLC\n"                                       /* 7 */
                " Inst 0,  CP Pipe 1, Queue 1\n"                               /* 8: no registers */
                " Inst 0,  CP Pipe 1, Queue 2\n"                               /* 9 */
                "    0000c914: 00000000 00000000 00000001\n"                   /* 10 */
                "    0000c910: 00000000\n"                                     /* 11: before the first */
                "what is this\n";                                              /* 12 */
        struct qf_diags d = { 0 };
        struct qf_hqds h;
        int fd = test_fd_from_string(dump);
        assert_int_equal(qf_hqds_parse(fd, "bad-hqds", &d, &h), 0);
        close(fd);
        static const unsigned long expected[] = { 1, 2, 3, 5, 6, 7, 8, 9, 11, 12 };
        for (size_t k = 0; k < sizeof(expected) / sizeof(*expected); k++) {
                bool found = false;
                for (size_t i = 0; i < d.n; i++)
                        found |= d.items[i].line == expected[k];
                if (!found)
                        fail_msg("no warning for line %lu", expected[k]);
        }
        /* The slot at line 9 has its active bit, but not its addresses. */
        assert_int_equal(h.n, 2);
        assert_true(h.hqds[1].active);
        assert_false(h.hqds[1].has_addresses);
        qf_hqds_clear(&h);
        qf_diags_clear(&d);
}

/* A file of nothing but junk must end in bounded warnings. */
static void test_endless_junk(void **state)
{
        size_t len = 4 * 1024 * 1024;
        char *junk = malloc(len);
        assert_non_null(junk);
        for (size_t i = 0; i < len; i++)
                junk[i] = (char) (i % 97 == 0 ? '\n' : "x: 0\0\033"[i % 6]);
        struct qf_diags d = { 0 };
        struct qf_mqds m;
        struct qf_hqds h;
        struct qf_log l;

        int fd = test_fd_from_bytes(junk, len);
        assert_int_equal(qf_mqds_parse(fd, "junk", &d, &m), 0);
        assert_int_equal(d.n, QF_DIAG_MAX);
        assert_true(d.dropped > 0);
        qf_mqds_clear(&m);
        qf_diags_clear(&d);

        assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
        assert_int_equal(qf_hqds_parse(fd, "junk", &d, &h), 0);
        assert_int_equal(d.n, QF_DIAG_MAX);
        qf_hqds_clear(&h);
        qf_diags_clear(&d);

        assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
        assert_int_equal(qf_log_parse(fd, "junk", NULL, &d, &l), 0);
        assert_int_equal(l.n, 0);
        qf_log_clear(&l);
        qf_diags_clear(&d);
        close(fd);
        free(junk);
}

/* The mqds row shape is shared with hqds; an empty input is fine. */
static void test_empty_inputs(void **state)
{
        struct qf_diags d = { 0 };
        struct qf_mqds m;
        int fd = test_fd_from_string("");
        assert_int_equal(qf_mqds_parse(fd, "empty", &d, &m), 0);
        close(fd);
        assert_int_equal(m.n, 0);
        assert_int_equal(d.n, 0);

        fd = test_fd_from_string(row0);
        assert_int_equal(qf_mqds_parse(fd, "row", &d, &m), 0);
        close(fd);
        assert_true(test_has_warning(&d, 1, "without a queue header"));
        qf_mqds_clear(&m);
        qf_diags_clear(&d);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_mqds_garbage),
                cmocka_unit_test(test_queue_size_field_all_ones),
                cmocka_unit_test(test_hexdump_rows),
                cmocka_unit_test(test_hqds_garbage),
                cmocka_unit_test(test_endless_junk),
                cmocka_unit_test(test_empty_inputs),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
