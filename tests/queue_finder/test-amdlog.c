/* SPDX-License-Identifier: MIT */
/*
 * The HIP/CLR log parser: the real ROCm 7.0.2 log from tests/data/real/, and
 * hand-written lines in the older format generations (rocm-userspace.md §6)
 * with the damage real logs carry.
 */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "line-reader.h"
#include "sources.h"
#include "test-util.h"

static const struct qf_log_queue *find_by_ring(const struct qf_log *l, uint64_t ring)
{
        for (size_t i = 0; i < l->n; i++)
                if (l->queues[i].has_ring_base && l->queues[i].ring_base == ring)
                        return &l->queues[i];
        return NULL;
}

static const struct qf_log_queue *find_by_amd_queue(const struct qf_log *l, uint64_t a)
{
        for (size_t i = 0; i < l->n; i++)
                if (l->queues[i].has_amd_queue && l->queues[i].amd_queue == a)
                        return &l->queues[i];
        return NULL;
}

static void parse_string(const char *text, struct qf_diags *d, struct qf_log *l)
{
        int fd = test_fd_from_string(text);
        assert_int_equal(qf_log_parse(fd, "test.log", NULL, d, l), 0);
        close(fd);
}

static void test_real_log(void **state)
{
        static const struct {
                uint64_t swq, hwq, id;
                int priority;
        } expected[] = {
                { 0x7f8edc1a8000, 0x7f8acd200000, 1, 2 },
                { 0x7f8edc1a2000, 0x7f8acc600000, 2, 0 },
                { 0x7f8edc19c000, 0x7f8acc400000, 3, 2 },
                { 0x7f8ed23fe000, 0x7f8acc200000, 4, 1 },
        };
        struct qf_diags d = { 0 };
        struct qf_log l;
        int fd = test_open_shared("hip-rocm7-amd-log-level4.log");
        assert_int_equal(qf_log_parse(fd, "hip.log", NULL, &d, &l), 0);
        close(fd);

        assert_int_equal(d.n, 0);
        assert_int_equal(l.lines, 769);
        assert_int_equal(l.prefix, QF_LOG_PREFIX_CLR);
        assert_int_equal(l.n, 4);
        for (size_t i = 0; i < 4; i++) {
                const struct qf_log_queue *q = find_by_ring(&l, expected[i].hwq);
                assert_non_null(q);
                assert_int_equal(q->pid, 459769);
                assert_true(q->has_amd_queue);
                assert_int_equal(q->amd_queue, expected[i].swq);
                assert_true(q->created_62);
                assert_int_equal(q->size_packets, 16384);
                assert_int_equal(q->priority, expected[i].priority);
                assert_int_equal(q->cooperative, 0);
                assert_true(q->has_rocr_id);
                assert_int_equal(q->rocr_id, expected[i].id);
                assert_true(q->dispatches >= 1);
                assert_true(q->barriers >= 1);
                assert_true(q->has_pointers);
                assert_int_equal(q->last_tid, 0x7f8edc1c4400);
                assert_string_equal(q->last_kernel, "dummy_kernel(int*, int)");
        }
        /* Line 27 creates the first queue. */
        assert_int_equal(find_by_ring(&l, 0x7f8acd200000)->created_line, 27);
        qf_log_clear(&l);
        qf_diags_clear(&d);
}

/* ROCclr 5.2.3: "<pid>: [tid:0x..]" prefix; creation and dispatch name the
 * hsa_queue_t (amd_queue_t) address. */
static void test_rocclr_523(void **state)
{
        const char *log =
                ":3:rocdevice.cpp            :1234: 0000012345 us: 4242 : [tid:0x7f12] created hardware queue 0x7f0000001000 with size 4096 with priority 1, cooperative: 0\n"
                ":3:rocdevice.cpp            :1240: 0000012346 us: 4242 : [tid:0x7f12] selected queue with least refCount: 0x7f0000001000 (1)\n"
                ":3:rocvirtual.cpp           :2000: 0000012347 us: 4242 : [tid:0x7f12] ShaderName : _Z6kernelPf\n"
                ":4:rocvirtual.cpp           :2100: 0000012348 us: 4242 : [tid:0x7f12] HWq=0x7f0000001000, Dispatch Header = 0xb02 (type=2, barrier=1, acquire=1, release=1), setup=3\n";
        struct qf_diags d = { 0 };
        struct qf_log l;
        parse_string(log, &d, &l);
        assert_int_equal(d.n, 0);
        assert_int_equal(l.prefix, QF_LOG_PREFIX_ROCCLR);
        assert_int_equal(l.n, 1);
        const struct qf_log_queue *q = &l.queues[0];
        assert_int_equal(q->pid, 4242);
        assert_true(q->has_amd_queue);
        assert_int_equal(q->amd_queue, 0x7f0000001000);
        assert_false(q->has_ring_base);
        assert_false(q->has_legacy_hwq);
        assert_int_equal(q->dispatches, 1);
        assert_int_equal(q->max_refcount, 1);
        assert_int_equal(q->created_line, 1);
        assert_string_equal(q->last_kernel, "_Z6kernelPf");
        qf_log_clear(&l);
        qf_diags_clear(&d);
}

/* clr 5.6-6.1: creation names the amd_queue_t, dispatch the ring base, and
 * nothing in the log ties the two: the dispatch address stays "legacy". */
static void test_clr_60(void **state)
{
        const char *log =
                ":3:rocdevice.cpp            :2800: 0000012345 us: [pid:99 tid: 0x10] created hardware queue 0x7f0000002000 with size 16384 with priority 1, cooperative: 0\n"
                ":3:rocdevice.cpp            :2810: 0000012346 us: [pid:99 tid: 0x10] acquireQueue refCount: 0x7f0000002000 (2)\n"
                ":4:rocvirtual.cpp           :1000: 0000012347 us: [pid:99 tid: 0x10] HWq=0x7f1000000000, Dispatch Header = 0xb02 (type=2), setup=3\n"
                ":4:rocvirtual.cpp           :1000: 0000012348 us: [pid:99 tid: 0x10] HWq=0x7f1000000000, BarrierAND Header = 0x1503 (type=3)\n";
        struct qf_diags d = { 0 };
        struct qf_log l;
        parse_string(log, &d, &l);
        assert_int_equal(d.n, 0);
        assert_int_equal(l.n, 2);
        const struct qf_log_queue *created = find_by_amd_queue(&l, 0x7f0000002000);
        assert_non_null(created);
        assert_int_equal(created->max_refcount, 2);
        assert_int_equal(created->size_packets, 16384);
        const struct qf_log_queue *dispatched = created == &l.queues[0] ? &l.queues[1] : &l.queues[0];
        assert_true(dispatched->has_legacy_hwq);
        assert_int_equal(dispatched->legacy_hwq, 0x7f1000000000);
        assert_int_equal(dispatched->dispatches, 1);
        assert_int_equal(dispatched->barriers, 1);
        assert_int_equal(dispatched->pid, 99);
        qf_log_clear(&l);
        qf_diags_clear(&d);
}

/* clr at level 3 prints no pid/tid; logs also come without file/line. */
static void test_no_pid_no_location(void **state)
{
        const char *log = ":3: 0000012345 us: Created SWq=0x7f0000003000 to map on HWq=0x7f2000000000 with size 256 with priority 2, cooperative: 1\n"
                          ":3:rocdevice.cpp            :3141: 0000012346 us: Selected queue refCount: 0x7f2000000000 (3)\n";
        struct qf_diags d = { 0 };
        struct qf_log l;
        parse_string(log, &d, &l);
        assert_int_equal(d.n, 0);
        assert_int_equal(l.prefix, QF_LOG_PREFIX_NONE);
        assert_int_equal(l.n, 1);
        assert_false(l.queues[0].has_pid);
        assert_int_equal(l.queues[0].ring_base, 0x7f2000000000);
        assert_int_equal(l.queues[0].amd_queue, 0x7f0000003000);
        assert_int_equal(l.queues[0].cooperative, 1);
        assert_int_equal(l.queues[0].max_refcount, 3);
        qf_log_clear(&l);
        qf_diags_clear(&d);
}

/* Every ids form of the prefix grammar (amdlog.c), each taken from a real
 * line (tests/data/real/logs/README.md and queue_finder.1.scd name the
 * threads), followed by a dispatch line of its own address. */
static void test_prefix_forms(void **state)
{
        static const struct {
                const char *prefix;
                pid_t pid;  /* 0: the line names none */
                enum qf_log_prefix form;
        } forms[] = {
                /* clr 7.0.2 (tests/data/real/hip-rocm7-amd-log-level4.log) */
                { ":4:rocvirtual.cpp           :1177: 20159562004 us: [pid:459769 tid: 0x7f8edc1c4400] ", 459769,
                  QF_LOG_PREFIX_CLR },
                /* clr 6.x, pid padded to five, no space after "tid:" */
                { ":3:rocdevice.cpp            :3104: 3326522300 us: [pid:2539  tid:0x7fffd49786c0] ", 2539,
                  QF_LOG_PREFIX_CLR },
                /* a 6.3.2 build: bare hex after "tid: ", "%lldd us:" (ROCm/ROCm#4394) */
                { ":4:rocvirtual.cpp           :930 : 7270505900d us: [pid:21983 tid: 7f316f4006c0] ", 21983,
                  QF_LOG_PREFIX_CLR },
                /* Windows builds pad the thread id after "0x" */
                { ":5:commandqueue.cpp         :266 : 47462248663 us: [pid:18812 tid: 0x 3564] ", 18812,
                  QF_LOG_PREFIX_CLR },
                /* clr at level 5 (lamikr/rocm_sdk_builder#246) */
                { ":3:hip_memory.cpp           :599 : 3169393290 us: [pid:9111  tid:0x79a41865cb80] ", 9111,
                  QF_LOG_PREFIX_CLR },
                /* ROCclr 5.4.2 (ROCm/hip#3161) */
                { ":3:rocdevice.cpp            :426 : 75799966442 us: 202289: [tid:0x7f674bedd880] ", 202289,
                  QF_LOG_PREFIX_ROCCLR },
                /* ROCclr 5.x, pid padded to five */
                { ":4:rocvirtual.cpp           :862 : 5697037855 us: 9174 : [tid:0x7f6309ffb6c0] ", 9174,
                  QF_LOG_PREFIX_ROCCLR },
                { ":3:rocdevice.cpp            :2896: 221750546130 us: 1255284: [tid:0x7fc9d35ff640] ", 1255284,
                  QF_LOG_PREFIX_ROCCLR },
                /* ROCm 4.5: bare hex thread id, with and without the pid */
                { ":3:hip_module.cpp           :495 : 266505887448 us: 120148: [7fb360ad23c0] ", 120148,
                  QF_LOG_PREFIX_ROCCLR },
                { ":4:rocvirtual.cpp           :843 : 266505887439 us: [7fb360ad23c0] ", 0, QF_LOG_PREFIX_TID },
                /* clr 6.x at level 3: "%lldd us:", two spaces, no ids */
                { ":3:rocdevice.cpp            :3140: 1917470247183d us:  ", 0, QF_LOG_PREFIX_NONE },
                /* journald in front of a clr line (ollama/ollama#7187) */
                { "Oct 12 20:46:11 kamala ollama0.3.13[64422]: :4:command.cpp              :177 : 69460772155 us: "
                  "[pid:64447 tid:0x7e47be4006c0] ",
                  64447, QF_LOG_PREFIX_CLR },
        };
        for (size_t i = 0; i < sizeof(forms) / sizeof(*forms); i++) {
                char line[512];
                uint64_t hwq = 0x7f0000100000 + i * 0x1000;
                snprintf(line, sizeof(line), "%sHWq=0x%" PRIx64 ", Dispatch Header = 0xb02 (type=2), setup=3\n",
                         forms[i].prefix, hwq);
                struct qf_diags d = { 0 };
                struct qf_log l;
                parse_string(line, &d, &l);
                if (l.n != 1)
                        fail_msg("form %zu: %zu queues", i, l.n);
                if (d.n != 0)
                        fail_msg("form %zu: warning \"%s\"", i, d.items[0].message);
                assert_int_equal(l.prefix, forms[i].form);
                assert_int_equal(l.queues[0].legacy_hwq, hwq);
                assert_int_equal(l.queues[0].dispatches, 1);
                assert_int_equal(l.queues[0].has_pid, forms[i].pid != 0);
                assert_int_equal(l.queues[0].pid, forms[i].pid);
                qf_log_clear(&l);
                qf_diags_clear(&d);
        }
}

/* A log several processes wrote (AMD_LOG_LEVEL_FILE shared, or logs
 * concatenated): the same address in two processes is two queues, and
 * lines that name no process are a third, not process 0's. */
static void test_several_processes(void **state)
{
        const char *log = ":3:rocdevice.cpp :3104: 1 us: [pid:100 tid:0x1] Created SWq=0x7f0000004000 to map on HWq=0x7f3000000000 with size 64 with priority 1, cooperative: 0\n"
                          ":3:rocdevice.cpp :3104: 2 us: [pid:200 tid:0x2] Created SWq=0x7f0000004000 to map on HWq=0x7f3000000000 with size 64 with priority 1, cooperative: 0\n"
                          ":4:rocvirtual.cpp :1177: 3 us: [pid:200 tid:0x2] SWq=0x7f0000004000, HWq=0x7f3000000000, id=1, Dispatch Header = 0xb02 (type=2), rptr=0, wptr=1\n"
                          ":3:rocdevice.cpp :3140: 4d us:  Created SWq=0x7f0000004000 to map on HWq=0x7f3000000000 with size 64 with priority 1, cooperative: 0\n";
        struct qf_diags d = { 0 };
        struct qf_log l;
        parse_string(log, &d, &l);
        assert_int_equal(d.n, 0);
        assert_int_equal(l.n, 3);
        bool seen[3] = { false };
        for (size_t i = 0; i < l.n; i++) {
                const struct qf_log_queue *q = &l.queues[i];
                assert_int_equal(q->ring_base, 0x7f3000000000);
                size_t who = !q->has_pid ? 2 : q->pid == 100 ? 0 : 1;
                assert_false(seen[who]);
                seen[who] = true;
                assert_int_equal(q->dispatches, who == 1 ? 1 : 0);
                if (!q->has_pid)
                        assert_int_equal(q->pid, 0);
                else
                        assert_int_equal(q->pid, who == 0 ? 100 : 200);
        }
        qf_log_clear(&l);
        qf_diags_clear(&d);
}

/* The caller names the process of lines that name none; lines that name
 * one keep it. */
static void test_unmarked_pid(void **state)
{
        const char *log = ":3:rocdevice.cpp :3140: 1917470247183d us:  Created SWq=0x7fd9ee22c000 to map on HWq=0x7fd9c2800000 with size 16384 with priority 1, cooperative: 0\n"
                          ":4:rocvirtual.cpp :843 : 266505887439 us: [7fb360ad23c0] HWq=0x7fb360aa6000, Dispatch Header = 0x302 (type=2)\n"
                          ":3:rocdevice.cpp :3104: 3 us: [pid:77 tid:0x2] Created SWq=0x7f0000004000 to map on HWq=0x7f3000000000 with size 64 with priority 1, cooperative: 0\n";
        const pid_t owner = 4242;
        struct qf_diags d = { 0 };
        struct qf_log l;
        int fd = test_fd_from_string(log);
        assert_int_equal(qf_log_parse(fd, "test.log", &owner, &d, &l), 0);
        close(fd);
        assert_int_equal(d.n, 0);
        assert_int_equal(l.n, 3);
        assert_true(find_by_ring(&l, 0x7fd9c2800000)->has_pid);
        assert_int_equal(find_by_ring(&l, 0x7fd9c2800000)->pid, owner);
        assert_int_equal(find_by_ring(&l, 0x7f3000000000)->pid, 77);
        for (size_t i = 0; i < l.n; i++)
                if (l.queues[i].has_legacy_hwq) {
                        assert_true(l.queues[i].has_pid);
                        assert_int_equal(l.queues[i].pid, owner);
                }
        qf_log_clear(&l);
        qf_diags_clear(&d);
}

/* Ids that break the grammar, each on a creation line of its own ring
 * base: the line warns, and its queue is kept without a process. */
static const char *const damaged_ids[] = {
        "[pid:0 tid:0x1]",
        "[pid:99999999999 tid:0x1]",
        "[pid:4194305 tid:0x1]",     /* above PID_MAX_LIMIT */
        "[pid:-5 tid:0x1]",
        "[pid:7 tid:0x12345678901234567]",
        "[pid:7 tid: 0x]",
        "[pid:7 tid:0x1",           /* no "]" */
        "[pid:7 \033[0mtid:0x1]",
        "0 : [tid:0x1]",
        "[tid:0x1 ]",
};
#define DAMAGED_IDS_RING(i) (UINT64_C(0x7f4000000000) + (uint64_t) (i) * 0x10000)

/* What real logs contain: colour escapes, program output without a newline
 * before a log line, binary junk, damaged lines, a cut-off last line. */
static void test_damaged_log(void **state)
{
        char *log = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&log, &len);
        assert_non_null(f);
        fprintf(f, "\033[32m:3:rocdevice.cpp            :3048: 0000000001 us: [pid:7 tid: 0x1] Created SWq=0x7f0000004000 to map on HWq=0x7f3000000000 with size 64 with priority 1, cooperative: 0\033[0m\n"); /* 1 */
        fprintf(f, "countdown 3...2...1...:4:rocvirtual.cpp :1083: 0000000002 us: [pid:7 tid: 0x1] SWq=0x7f0000004000, HWq=0x7f3000000000, id=9, Dispatch Header = 0xb02, rptr=5, wptr=6\n"); /* 2 */
        static const char junk[] = "junk\0with NUL\xff\xfe bytes\n";
        fwrite(junk, 1, sizeof(junk) - 1, f); /* 3 */
        fwrite("\0\xff\n", 1, 3, f); /* 4 */
        fprintf(f, ":4:rocvirtual.cpp           :1083: 0000000003 us: [pid:7 tid: 0x1] SWq=0x7f0000004000, HWq=zzzz\n"); /* 5 */
        fprintf(f, ":3:rocdevice.cpp            :3048: 0000000004 us: [pid:7 tid: 0x1] Created SWq=(nil) to map on HWq=0x1\n"); /* 6 */
        fputc(':', f); /* 7: a line longer than the reader keeps */
        for (int i = 0; i < QF_LINE_MAX + 100; i++)
                fputc('x', f);
        fputc('\n', f);
        fprintf(f, ":4:rocvirtual.cpp           :1083: 0000000005 us: [pid:7 tid: 0x1] SWq=0x7f0000004000, HWq=0x7f3000000000, id=9, Dispatch Header = 0xb02, rptr=6, wptr=7\n"); /* 8 */
        enum { N_DAMAGED = sizeof(damaged_ids) / sizeof(*damaged_ids) };
        for (size_t i = 0; i < N_DAMAGED; i++) /* 9 .. 8 + N_DAMAGED */
                fprintf(f, ":3:rocdevice.cpp            :3104: 0000000007 us: %s Created SWq=0x%" PRIx64 " to map on HWq=0x%" PRIx64 " with size 64 with priority 1, cooperative: 0\n",
                        damaged_ids[i], DAMAGED_IDS_RING(i) - 0x1000000000, DAMAGED_IDS_RING(i));
        /* 9 + N_DAMAGED: good ids, no space after "us:" */
        fprintf(f, ":3:rocdevice.cpp            :3104: 0000000008 us:[pid:7 tid:0x1] Created SWq=0x7f0000006000 to map on HWq=0x7f5000000000 with size 64 with priority 1, cooperative: 0\n");
        fprintf(f, ":4:rocvirtual.cpp           :1083: 0000000006 us: [pid:7 tid: 0x1] SWq=0x7f0000004000, HWq=0x7f300"); /* 10 + N_DAMAGED, cut */
        assert_int_equal(fclose(f), 0);

        struct qf_diags d = { 0 };
        struct qf_log l;
        int fd = test_fd_from_bytes(log, len);
        assert_int_equal(qf_log_parse(fd, "damaged.log", NULL, &d, &l), 0);
        close(fd);
        free(log);

        assert_int_equal(l.lines, 10 + N_DAMAGED);
        /* Lines starting with a level tag, colour escapes aside: not line 2,
         * whose log line follows program output, nor line 7. */
        assert_int_equal(l.log_lines, 6 + N_DAMAGED);
        assert_true(test_has_warning(&d, 3, "binary data"));
        assert_true(test_has_warning(&d, 4, "binary data"));
        assert_true(test_has_warning(&d, 5, "malformed AQL packet"));
        assert_true(test_has_warning(&d, 6, "malformed \"Created SWq\""));
        assert_true(test_has_warning(&d, 7, "longer than"));
        for (size_t i = 0; i < N_DAMAGED; i++) {
                if (!test_has_warning(&d, 9 + i, "malformed pid/tid prefix"))
                        fail_msg("ids \"%s\": no warning", damaged_ids[i]);
                const struct qf_log_queue *damaged = find_by_ring(&l, DAMAGED_IDS_RING(i));
                if (!damaged || damaged->has_pid || damaged->created_line != 9 + i)
                        fail_msg("ids \"%s\": queue lost or given a process", damaged_ids[i]);
        }
        assert_true(test_has_warning(&d, 9 + N_DAMAGED, "malformed log prefix"));
        assert_int_equal(find_by_ring(&l, 0x7f5000000000)->pid, 7);
        assert_true(test_has_warning(&d, 10 + N_DAMAGED, "malformed AQL packet"));
        /* The queue itself survived all of it. */
        const struct qf_log_queue *q = find_by_ring(&l, 0x7f3000000000);
        assert_non_null(q);
        assert_int_equal(q->amd_queue, 0x7f0000004000);
        assert_int_equal(q->dispatches, 2);
        assert_int_equal(q->last_rptr, 6);
        assert_int_equal(q->last_wptr, 7);
        assert_int_equal(q->rocr_id, 9);
        qf_log_clear(&l);
        qf_diags_clear(&d);
}

/*
 * A creation line cut right after its address, run into the next line or
 * the last of a truncated file, takes no queue: the address may be cut
 * ("HWq=0x7f1654" of "HWq=0x7f1654e00000"). The whole line names it.
 */
static void test_creation_line_cut_after_its_address(void **state)
{
        struct qf_diags d = { 0 };
        struct qf_log l;
        parse_string(/* 1: run into the next line (a paste) */
                     ":3:rocdevice.cpp :3140: 1d us:  Created SWq=0x7f1650000000 to map on HWq=0x7f1654"
                     ":3:rocdevice.cpp :3140: 2d us:  Selected queue refCount: 0x7f1654e00000 (2)\n"
                     /* 2: whole; 3: its tail cut, its address whole */
                     ":3:rocdevice.cpp :3140: 3d us:  Created SWq=0x7f1650000000 to map on HWq=0x7f1654e00000 "
                     "with size 16384 with priority 1, cooperative: 0\n"
                     ":3:rocdevice.cpp :3140: 4d us:  Created SWq=0x7f1660000000 to map on HWq=0x7f1664e00000 with s\n"
                     /* 4: the old form, whole; 5: cut, the last line */
                     ":3:rocdevice.cpp :2927: 5 us: 7: [tid:0x1] created hardware queue 0x7f1670000000 with size 64 "
                     "with priority 1, cooperative: 0\n"
                     ":3:rocdevice.cpp :2927: 6 us: 7: [tid:0x1] created hardware queue 0x7f16800",
                     &d, &l);
        assert_true(test_has_warning(&d, 1, "cut or run together after its address"));
        assert_true(test_has_warning(&d, 3, "malformed \"Created SWq\""));
        assert_true(test_has_warning(&d, 5, "cut or run together after its address"));
        assert_int_equal(l.n, 3);
        assert_non_null(find_by_ring(&l, 0x7f1654e00000));
        assert_non_null(find_by_ring(&l, 0x7f1664e00000));
        assert_null(find_by_ring(&l, 0x7f1654));
        qf_log_clear(&l);
        qf_diags_clear(&d);
}

/*
 * A queue's end: "Deleting hardware queue" marks it gone; a new queue
 * created at that address later is another, live one. RefCount lines read
 * before the creation line (a log put together out of order) are of the
 * queue it creates, not a queue of their own.
 */
static void test_deleted_queues(void **state)
{
        struct qf_diags d = { 0 };
        struct qf_log l;
        parse_string(":3:rocdevice.cpp :3173: 1 us:  releaseQueue refCount:0x7f1654e00000 (0)\n"
                     ":3:rocdevice.cpp :3048: 2 us:  Created SWq=0x7f36633c4000 to map on HWq=0x7f1654e00000 "
                     "with size 16384 with priority 1, cooperative: 0\n"
                     ":3:rocdevice.cpp :286 : 3 us:  Deleting hardware queue 0x7f1654e00000 with refCount 0\n"
                     ":3:rocdevice.cpp :3048: 4 us:  Created SWq=0x7f36633a4000 to map on HWq=0x7f1649800000 "
                     "with size 16384 with priority 1, cooperative: 0\n"
                     ":3:rocdevice.cpp :286 : 5 us:  Deleting hardware queue 0x7f1649800000 with refCount 0\n"
                     ":3:rocdevice.cpp :3048: 6 us:  Created SWq=0x7f36633a4000 to map on HWq=0x7f1649800000 "
                     "with size 16384 with priority 1, cooperative: 0\n"
                     ":3:rocdevice.cpp :286 : 7 us:  Deleting hardware queue 0x7f1640000000 with\n",
                     &d, &l);
        assert_int_equal(l.n, 2);
        const struct qf_log_queue *gone = find_by_ring(&l, 0x7f1654e00000);
        assert_non_null(gone);
        assert_int_equal(gone->amd_queue, 0x7f36633c4000);
        assert_false(gone->has_legacy_hwq);
        assert_int_equal(gone->deleted_line, 3);
        assert_int_equal(find_by_ring(&l, 0x7f1649800000)->deleted_line, 0); /* created again at line 6 */
        assert_true(test_has_warning(&d, 7, "malformed \"Deleting hardware queue\""));
        qf_log_clear(&l);
        qf_diags_clear(&d);
}

static void test_not_a_log(void **state)
{
        struct qf_diags d = { 0 };
        struct qf_log l;
        parse_string("hello\nworld\n", &d, &l);
        assert_int_equal(l.n, 0);
        assert_true(test_has_warning(&d, 0, "AMD_LOG_LEVEL"));
        qf_log_clear(&l);
        qf_diags_clear(&d);
}

/* A journald log of a level-3 run that made no queue holds only HIP API
 * lines behind the journal's prefix: log lines all the same, which the
 * first lines are read in full to find. */
static void test_journald_api_lines_only(void **state)
{
        const char *api = "Oct 12 20:46:11 kamala ollama0.3.13[64422]: :3:hip_device_runtime.cpp :652 : "
                          "69460772155 us: [pid:64447 tid:0x7e47be4006c0]  hipGetDeviceCount ( 0x7ffd3c1c1b2c ) \n";
        struct qf_diags d = { 0 };
        struct qf_log l;
        parse_string(api, &d, &l);
        assert_int_equal(l.log_lines, 0);
        assert_int_equal(d.n, 0);
        qf_log_clear(&l);

        /* Found among the first lines only: after that, unmarked lines are
         * counted, not read. */
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        assert_non_null(f);
        for (int i = 0; i < 1000; i++)
                fputs("program output\n", f);
        fputs(api, f);
        assert_int_equal(fclose(f), 0);
        parse_string(text, &d, &l);
        free(text);
        assert_true(test_has_warning(&d, 0, "AMD_LOG_LEVEL"));
        qf_log_clear(&l);
        qf_diags_clear(&d);
}

/* Streaming: input arrives through a pipe in small pieces. */
static void test_pipe_input(void **state)
{
        int p[2];
        assert_int_equal(pipe(p), 0);
        pid_t child = fork();
        assert_true(child >= 0);
        if (child == 0) {
                close(p[0]);
                const char *line = ":4:x.cpp:1: 1 us: [pid:5 tid: 0x2] SWq=0x1000, HWq=0x2000, id=1, Dispatch Header = 0, rptr=1, wptr=2\n";
                for (int i = 0; i < 5000; i++)
                        for (const char *c = line; *c;) {
                                size_t n = strlen(c) < 17 ? strlen(c) : 17;
                                if (write(p[1], c, n) < 0)
                                        _exit(1);
                                c += n;
                        }
                _exit(0);
        }
        close(p[1]);
        struct qf_diags d = { 0 };
        struct qf_log l;
        assert_int_equal(qf_log_parse(p[0], "-", NULL, &d, &l), 0);
        close(p[0]);
        assert_int_equal(l.n, 1);
        assert_int_equal(l.queues[0].dispatches, 5000);
        assert_int_equal(l.lines, 5000);
        assert_int_equal(d.n, 0);
        qf_log_clear(&l);
        qf_diags_clear(&d);
}

/* A log larger than one read: lines cross the read-ahead chunks. */
static void test_large_file(void **state)
{
#define LARGE_LOG_LINE                                                                                     \
        ":4:rocvirtual.cpp           :1083: 0000000001 us: [pid:5 tid: 0x2] SWq=0x1000, HWq=0x2000, id=1, " \
        "Dispatch Header = 0xb02, setup=3, rptr=%d, wptr=%d\n"
        char *log = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&log, &len);
        assert_non_null(f);
        for (int i = 0; i < 30000; i++)
                fprintf(f, LARGE_LOG_LINE, i, i + 1);
        assert_int_equal(fclose(f), 0);
        assert_true(len > 3 * 1024 * 1024);

        struct qf_diags d = { 0 };
        struct qf_log l;
        int fd = test_fd_from_bytes(log, len);
        assert_int_equal(qf_log_parse(fd, "large.log", NULL, &d, &l), 0);
        close(fd);
        free(log);
        assert_int_equal(d.n, 0);
        assert_int_equal(l.lines, 30000);
        assert_int_equal(l.n, 1);
        assert_int_equal(l.queues[0].dispatches, 30000);
        assert_int_equal(l.queues[0].last_rptr, 29999);
        assert_int_equal(l.queues[0].last_wptr, 30000);
        assert_int_equal(l.queues[0].last_line, 30000);
        qf_log_clear(&l);
        qf_diags_clear(&d);
}

/* CRLF line ends, and a packet line that is the last line of the file
 * without a newline: both count, and the pointers at the end are read. */
static void test_crlf_and_unterminated_last_hit(void **state)
{
        struct qf_diags d = { 0 };
        struct qf_log l;
        parse_string(":3:rocvirtual.cpp           :3351: 0000000001 us: [pid:5 tid: 0x2] ShaderName : kern\r\n"
                     ":4:rocvirtual.cpp           :1083: 0000000002 us: [pid:5 tid: 0x2] SWq=0x1000, HWq=0x2000, "
                     "id=1, Dispatch Header = 0xb02, rptr=3, wptr=4\r\n"
                     ":4:rocvirtual.cpp           :1267: 0000000003 us: [pid:5 tid: 0x2] SWq=0x1000, HWq=0x2000, "
                     "id=1, BarrierAND Header = 0x1503, rptr=4, wptr=5",
                     &d, &l);
        assert_int_equal(d.n, 0);
        assert_int_equal(l.lines, 3);
        assert_int_equal(l.log_lines, 3);
        assert_int_equal(l.n, 1);
        assert_int_equal(l.queues[0].dispatches, 1);
        assert_int_equal(l.queues[0].barriers, 1);
        assert_string_equal(l.queues[0].last_kernel, "kern");
        assert_true(l.queues[0].has_pointers);
        assert_int_equal(l.queues[0].last_rptr, 4);
        assert_int_equal(l.queues[0].last_wptr, 5);
        assert_int_equal(l.queues[0].last_line, 3);
        qf_log_clear(&l);
        qf_diags_clear(&d);
}

/* The reader's chunks are 256 KiB of the file, so 1 MiB is a chunk boundary
 * (and stays one for any power-of-two chunk up to 1 MiB): a packet line
 * placed so that the boundary falls at every few bytes of it, its key
 * included, must parse the same. The filler lines are program output. */
static void test_packet_line_across_chunks(void **state)
{
        static const char packet[] = ":4:rocvirtual.cpp           :1083: 0000000002 us: [pid:5 tid: 0x2] "
                                     "SWq=0x1000, HWq=0x2000, id=1, Dispatch Header = 0xb02, rptr=3, wptr=4\n";
        const size_t chunk = 1024 * 1024;
        for (size_t before = 1; before < sizeof(packet) + 8; before += 5) {
                /* the packet line starts `before` bytes ahead of the boundary */
                size_t filler = chunk - before;
                size_t len = filler + sizeof(packet) - 1 + chunk / 2;
                char *data = malloc(len);
                assert_non_null(data);
                memset(data, 'o', len);
                for (size_t at = 99; at < filler; at += 100)
                        data[at] = '\n';
                data[filler - 1] = '\n';
                memcpy(data + filler, packet, sizeof(packet) - 1);
                for (size_t at = filler + sizeof(packet) - 1 + 99; at < len; at += 100)
                        data[at] = '\n';
                data[len - 1] = '\n';

                unsigned long packet_lineno = 1;
                for (size_t at = 0; at < filler; at++)
                        packet_lineno += data[at] == '\n';

                struct qf_diags d = { 0 };
                struct qf_log l;
                int fd = test_fd_from_bytes(data, len);
                assert_int_equal(qf_log_parse(fd, "chunks.log", NULL, &d, &l), 0);
                close(fd);
                free(data);
                assert_int_equal(l.log_lines, 1);
                assert_int_equal(l.n, 1);
                assert_int_equal(l.queues[0].dispatches, 1);
                assert_int_equal(l.queues[0].last_wptr, 4);
                assert_int_equal(l.queues[0].last_line, packet_lineno);
                qf_log_clear(&l);
                qf_diags_clear(&d);
        }
}

/* Lines are read only when the window scan marks them (log-window.h): a
 * ShaderName and a packet line at every offset from a window's start,
 * between program output lines of every length up to two windows, parse
 * the same, and so does the last line when it has no newline. */
static void test_lines_at_every_window_offset(void **state)
{
        static const char shader[] = ":3:rocvirtual.cpp           :3351: 0000000001 us: [pid:5 tid: 0x2] "
                                     "ShaderName : kern\n";
        static const char packet[] = ":4:rocvirtual.cpp           :1083: 0000000002 us: [pid:5 tid: 0x2] "
                                     "SWq=0x1000, HWq=0x2000, id=1, Dispatch Header = 0xb02, rptr=3, wptr=4";
        for (size_t filler = 0; filler <= 2 * 64 + 1; filler++) {
                for (int trailing = 0; trailing < 2; trailing++) {
                        char text[2 * sizeof(shader) + 2 * sizeof(packet) + 4 * 130];
                        size_t len = 0;
                        memset(text + len, 'o', filler);
                        len += filler;
                        text[len++] = '\n';
                        memcpy(text + len, shader, sizeof(shader) - 1);
                        len += sizeof(shader) - 1;
                        memcpy(text + len, packet, sizeof(packet) - 1);
                        len += sizeof(packet) - 1;
                        if (trailing) { /* else the packet line is the last, unterminated */
                                text[len++] = '\n';
                                memset(text + len, 'o', filler);
                                len += filler;
                        }

                        struct qf_diags d = { 0 };
                        struct qf_log l;
                        int fd = test_fd_from_bytes(text, len);
                        assert_int_equal(qf_log_parse(fd, "offsets.log", NULL, &d, &l), 0);
                        close(fd);
                        assert_int_equal(d.n, 0);
                        assert_int_equal(l.lines, 3 + (trailing && filler > 0));
                        assert_int_equal(l.log_lines, 2);
                        assert_int_equal(l.n, 1);
                        assert_int_equal(l.queues[0].dispatches, 1);
                        assert_string_equal(l.queues[0].last_kernel, "kern");
                        assert_int_equal(l.queues[0].last_wptr, 4);
                        assert_int_equal(l.queues[0].last_line, 3);
                        qf_log_clear(&l);
                        qf_diags_clear(&d);
                }
        }
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_real_log),
                cmocka_unit_test(test_rocclr_523),
                cmocka_unit_test(test_clr_60),
                cmocka_unit_test(test_no_pid_no_location),
                cmocka_unit_test(test_prefix_forms),
                cmocka_unit_test(test_several_processes),
                cmocka_unit_test(test_unmarked_pid),
                cmocka_unit_test(test_damaged_log),
                cmocka_unit_test(test_journald_api_lines_only),
                cmocka_unit_test(test_creation_line_cut_after_its_address),
                cmocka_unit_test(test_deleted_queues),
                cmocka_unit_test(test_not_a_log),
                cmocka_unit_test(test_pipe_input),
                cmocka_unit_test(test_large_file),
                cmocka_unit_test(test_crlf_and_unterminated_last_hit),
                cmocka_unit_test(test_packet_line_across_chunks),
                cmocka_unit_test(test_lines_at_every_window_offset),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
