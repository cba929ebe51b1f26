/* SPDX-License-Identifier: MIT */
/*
 * CLR log lines, byte for byte: the 6.2 generation against the real ROCm
 * 7.0.2 log in tests/data/real/ (the same four streams replayed with the
 * same addresses, pids, tids and timestamps), the older generations against
 * the printf formats of rocm-userspace.md §6.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cleanup.h"
#include "clr-log.h"

#define REAL_LOG "hip-rocm7-amd-log-level4.log"
#define REAL_PID 459769
#define REAL_TID 0x7f8edc1c4400ull
#define MAX_LINES 4096

struct real_log {
        char *lines[MAX_LINES];
        size_t n;
};

/* The timestamps the logger is given, one per line it writes. */
struct scripted_clock {
        uint64_t usec[64];
        size_t n, next;
        uint64_t tid;
};

static uint64_t scripted_usec(void *userdata)
{
        struct scripted_clock *c = userdata;

        assert_true(c->next < c->n);
        return c->usec[c->next++];
}

static uint64_t scripted_tid(void *userdata)
{
        return ((struct scripted_clock *)userdata)->tid;
}

static void real_log_load(struct real_log *log)
{
        const char *dir = getenv("GPREEMPT_REAL_DATA");
        _cleanup_free_ char *path = NULL;
        _cleanup_fclose_ FILE *f = NULL;
        char *line = NULL;
        size_t cap = 0;
        ssize_t len;

        assert_non_null(dir);
        assert_true(asprintf(&path, "%s/%s", dir, REAL_LOG) > 0);
        f = fopen(path, "re");
        if (!f)
                fail_msg("cannot open the real log %s (from GPREEMPT_REAL_DATA): %s", path, strerror(errno));
        while ((len = getline(&line, &cap, f)) >= 0 && log->n < MAX_LINES) {
                if (len > 0 && line[len - 1] == '\n')
                        line[len - 1] = 0;
                log->lines[log->n++] = strdup(line);
        }
        free(line);
}

static void real_log_free(struct real_log *log)
{
        for (size_t i = 0; i < log->n; i++)
                free(log->lines[i]);
}

/* Index of the first line at or after `from` containing `needle`. */
static size_t find_line(const struct real_log *log, size_t from, const char *needle)
{
        for (size_t i = from; i < log->n; i++)
                if (strstr(log->lines[i], needle))
                        return i;
        fail_msg("no line with \"%s\" in the real log after line %zu", needle, from + 1);
        return 0;
}

/* The "%010lu us" field of a real line. */
static uint64_t line_usec(const char *line)
{
        const char *us = strstr(line, " us: ");

        assert_non_null(us);
        while (us > line && us[-1] >= '0' && us[-1] <= '9')
                us--;
        return strtoull(us, NULL, 10);
}

struct capture {
        char *buf;
        size_t size;
        FILE *f;
        char *lines[64];
        size_t n;
};

static void capture_open(struct capture *c)
{
        memset(c, 0, sizeof(*c));
        c->f = open_memstream(&c->buf, &c->size);
        assert_non_null(c->f);
}

static void capture_split(struct capture *c)
{
        char *save = NULL;

        fclose(c->f);
        c->f = NULL;
        for (char *l = strtok_r(c->buf, "\n", &save); l && c->n < 64; l = strtok_r(NULL, "\n", &save))
                c->lines[c->n++] = l;
}

/* Replaces the first "( 0x<hex>" by "( ADDR": the stack address a HIP API
 * trace prints for an out-parameter differs from run to run. */
static void mask_out_param(char *s)
{
        char *p = strstr(s, "( 0x");

        if (!p)
                return;
        p += 2;
        char *end = p + 2;
        while ((*end >= '0' && *end <= '9') || (*end >= 'a' && *end <= 'f'))
                end++;
        memmove(p + 4, end, strlen(end) + 1);
        memcpy(p, "ADDR", 4);
}

struct real_stream {
        uintptr_t amd_queue, ring, stream;
        uint32_t kfd_priority;   /* one that maps to the CLR priority of the log */
        uint64_t hsa_queue_id;
};

/* The four streams of the real log, in creation order. */
static const struct real_stream real_streams[] = {
        {0x7f8edc1a8000, 0x7f8acd200000, 0x1952020, 15, 1},
        {0x7f8edc1a2000, 0x7f8acc600000, 0x20a2490, 0, 2},
        {0x7f8edc19c000, 0x7f8acc400000, 0x2099db0, 15, 3},
        {0x7f8ed23fe000, 0x7f8acc200000, 0x208cd70, 7, 4},
};

static struct emu_queue_identity identity_of(const struct real_stream *s)
{
        return (struct emu_queue_identity){
                .amd_queue = s->amd_queue,
                .ring = s->ring,
                .priority = s->kfd_priority,
                .ring_packets = 16384,
                .hsa_queue_id = s->hsa_queue_id,
        };
}

static void assert_lines_equal(const char *expected, const char *actual)
{
        if (strcmp(expected, actual) != 0)
                fail_msg("line differs\nexpected: %s\nactual:   %s", expected, actual);
}

static void test_v62_queue_creation_matches_real_log(void **state)
{
        struct real_log real = {0};
        size_t cursor[5] = {0};
        static const char *const kinds[5] = {
                "hipStreamCreateWithPriority (", "Number of allocated", "Created SWq",
                "acquireQueue refCount", "hipStreamCreateWithPriority: Returned",
        };

        real_log_load(&real);
        struct clr_log *log;
        struct scripted_clock clock = {.tid = REAL_TID};
        struct clr_log_clock c = {scripted_usec, scripted_tid, &clock};
        struct capture cap;
        size_t expected_index[4][5];

        /* Script the clock with the timestamps of the lines we expect. */
        for (size_t q = 0; q < 4; q++)
                for (size_t k = 0; k < 5; k++) {
                        size_t i = find_line(&real, cursor[k], kinds[k]);

                        expected_index[q][k] = i;
                        cursor[k] = i + 1;
                        clock.usec[clock.n++] = line_usec(real.lines[i]);
                }

        capture_open(&cap);
        assert_int_equal(clr_log_new(cap.f, 4, CLR_LOG_FORMAT_6_2, REAL_PID, &c, &log), 0);
        for (size_t q = 0; q < 4; q++) {
                struct emu_queue_identity id = identity_of(&real_streams[q]);

                clr_log_queue_created(log, &id, real_streams[q].stream);
        }
        clr_log_free(log);
        capture_split(&cap);

        assert_int_equal(cap.n, 20);
        for (size_t q = 0; q < 4; q++)
                for (size_t k = 0; k < 5; k++) {
                        _cleanup_free_ char *expected = strdup(real.lines[expected_index[q][k]]);
                        _cleanup_free_ char *actual = strdup(cap.lines[q * 5 + k]);

                        mask_out_param(expected);
                        mask_out_param(actual);
                        assert_lines_equal(expected, actual);
                }
        free(cap.buf);
        real_log_free(&real);
}

static void replay_dispatch(const struct real_log *real, const char *dispatch_needle,
                            const struct emu_dispatch_record *rec)
{
        size_t d = find_line(real, 0, dispatch_needle);
        /* The ShaderName line of this launch is the last one before it. */
        size_t s = d;
        struct clr_log *log;
        struct scripted_clock clock = {.tid = REAL_TID};
        struct clr_log_clock c = {scripted_usec, scripted_tid, &clock};
        struct emu_queue_identity id = identity_of(&real_streams[0]);
        struct capture cap;

        while (s > 0 && !strstr(real->lines[s], "ShaderName : "))
                s--;
        clock.usec[clock.n++] = line_usec(real->lines[s]);
        clock.usec[clock.n++] = line_usec(real->lines[d]);

        capture_open(&cap);
        assert_int_equal(clr_log_new(cap.f, 4, CLR_LOG_FORMAT_6_2, REAL_PID, &c, &log), 0);
        clr_log_kernel_dispatch(log, &id, rec, "dummy_kernel(int*, int)");
        clr_log_free(log);
        capture_split(&cap);
        assert_int_equal(cap.n, 2);
        assert_lines_equal(real->lines[s], cap.lines[0]);
        assert_lines_equal(real->lines[d], cap.lines[1]);
        free(cap.buf);
}

static void test_v62_dispatch_matches_real_log(void **state)
{
        struct real_log real = {0};
        struct emu_dispatch_record rec = {
                .index = 0,
                .read_index = 0,
                .header = 0xb02,
                .setup = 3,
                .kernel_object = 0x7f8ed23d8800,
                .kernarg_address = 0x7f8acce00000,
                .grid = {1024, 1, 1},
                .workgroup = {32, 1, 1},
        };

        real_log_load(&real);
        replay_dispatch(&real, "HWq=0x7f8acd200000, id=1, Dispatch Header", &rec);
        /* The same queue two packets later: rptr and wptr move. */
        rec.index = 2;
        rec.read_index = 2;
        replay_dispatch(&real, "id=1, Dispatch Header = 0xb02 (type=2, barrier=1, acquire=1, release=1), setup=3, "
                               "grid=[1024, 1, 1], workgroup=[32, 1, 1], private_seg_size=0, group_seg_size=0, "
                               "kernel_obj=0x7f8ed23d8800, kernarg_address=0x7f8acce00000, completion_signal=0x0, "
                               "correlation_id=0, rptr=2, wptr=2",
                        &rec);
        real_log_free(&real);
}

static void test_v62_queue_teardown_matches_real_log(void **state)
{
        struct real_log real = {0};
        const struct real_stream *s = &real_streams[3];
        struct emu_queue_identity id = identity_of(s);
        struct scripted_clock clock = {.tid = REAL_TID};
        struct clr_log_clock c = {scripted_usec, scripted_tid, &clock};
        struct clr_log *log;
        struct capture cap;
        size_t idx[4];

        real_log_load(&real);
        idx[0] = find_line(&real, 0, "hipStreamDestroy ( stream:0x208cd70 )");
        idx[1] = find_line(&real, idx[0], "releaseQueue refCount:0x7f8acc200000 (0)");
        idx[2] = find_line(&real, idx[1], "hipStreamDestroy: Returned hipSuccess");
        idx[3] = find_line(&real, 0, "Deleting hardware queue 0x7f8acc200000 with refCount 0");
        for (size_t i = 0; i < 4; i++)
                clock.usec[clock.n++] = line_usec(real.lines[idx[i]]);

        capture_open(&cap);
        assert_int_equal(clr_log_new(cap.f, 4, CLR_LOG_FORMAT_6_2, REAL_PID, &c, &log), 0);
        clr_log_queue_destroyed(log, &id, s->stream);
        clr_log_free(log);
        capture_split(&cap);
        assert_int_equal(cap.n, 4);
        for (size_t i = 0; i < 4; i++)
                assert_lines_equal(real.lines[idx[i]], cap.lines[i]);
        free(cap.buf);
        real_log_free(&real);
}

static struct clr_log *fixed_log(FILE *out, int level, enum clr_log_format format,
                                 struct scripted_clock *clock, struct clr_log_clock *c)
{
        struct clr_log *log;

        for (size_t i = 0; i < 16; i++)
                clock->usec[clock->n++] = 12345;
        clock->tid = 0x7f00aa;
        *c = (struct clr_log_clock){scripted_usec, scripted_tid, clock};
        assert_int_equal(clr_log_new(out, level, format, 4242, c, &log), 0);
        return log;
}

static void test_v52_lines(void **state)
{
        struct scripted_clock clock = {0};
        struct clr_log_clock c;
        struct capture cap;
        struct emu_queue_identity id = {.amd_queue = 0x7f0010000000, .ring = 0x7f0020000000,
                                        .priority = 7, .ring_packets = 1024, .hsa_queue_id = 1};
        struct emu_dispatch_record rec = {.index = 5, .read_index = 4, .header = 0xb02, .setup = 1,
                                          .kernel_object = 1000000, .kernarg_address = 0x7f0030000000,
                                          .grid = {64, 1, 1}, .workgroup = {256, 1, 1}};
        struct clr_log *log;

        capture_open(&cap);
        log = fixed_log(cap.f, 4, CLR_LOG_FORMAT_5_2, &clock, &c);
        clr_log_queue_created(log, &id, 0x1234);
        clr_log_kernel_dispatch(log, &id, &rec, "k(int)");
        clr_log_queue_destroyed(log, &id, 0x1234);
        clr_log_free(log);
        capture_split(&cap);
        assert_int_equal(cap.n, 4);
        /* ":%d:%-25s:%-4d: %010lld us: %-5d: [tid:0x%s] " (ROCclr 5.2.3 log_printf) */
        assert_lines_equal(":3:rocdevice.cpp            :2491: 0000012345 us: 4242 : [tid:0x7f00aa] "
                           "number of allocated hardware queues with low priority: 0, with normal priority: 0, "
                           "with high priority: 0, maximum per priority is: 4",
                           cap.lines[0]);
        assert_lines_equal(":3:rocdevice.cpp            :2557: 0000012345 us: 4242 : [tid:0x7f00aa] "
                           "created hardware queue 0x7f0010000000 with size 1024 with priority 1, cooperative: 0",
                           cap.lines[1]);
        assert_lines_equal(":3:rocvirtual.cpp           :2745: 0000012345 us: 4242 : [tid:0x7f00aa] ShaderName : k(int)",
                           cap.lines[2]);
        /* 5.2.3 dispatch: HWq is the hsa_queue_t* (amd_queue_t address). */
        assert_lines_equal(":4:rocvirtual.cpp           :858 : 0000012345 us: 4242 : [tid:0x7f00aa] "
                           "HWq=0x7f0010000000, Dispatch Header = 0xb02 (type=2, barrier=1, acquire=1, release=1), "
                           "setup=1, grid=[64, 1, 1], workgroup=[256, 1, 1], private_seg_size=0, group_seg_size=0, "
                           "kernel_obj=0xf4240, kernarg_address=0x7f0030000000, completion_signal=0x0",
                           cap.lines[3]);
        free(cap.buf);
}

static void test_v60_lines(void **state)
{
        struct scripted_clock clock = {0};
        struct clr_log_clock c;
        struct capture cap;
        struct emu_queue_identity id = {.amd_queue = 0x7f0010000000, .ring = 0x7f0020000000,
                                        .priority = 3, .ring_packets = 1024, .hsa_queue_id = 1};
        struct emu_dispatch_record rec = {.header = 0xb02, .setup = 1, .grid = {64, 1, 1}, .workgroup = {256, 1, 1}};
        struct clr_log *log;

        capture_open(&cap);
        log = fixed_log(cap.f, 4, CLR_LOG_FORMAT_6_0, &clock, &c);
        clr_log_queue_created(log, &id, 0x1234);
        clr_log_kernel_dispatch(log, &id, &rec, "k(int)");
        clr_log_free(log);
        capture_split(&cap);
        assert_int_equal(cap.n, 5);
        assert_true(strstr(cap.lines[1], "] created hardware queue 0x7f0010000000 with size 1024 with priority 0, "
                                         "cooperative: 0") != NULL);
        assert_true(strstr(cap.lines[2], "] acquireQueue refCount: 0x7f0010000000 (1)") != NULL);
        /* 5.6-6.1 dispatch: HWq is the ring base. */
        assert_true(strstr(cap.lines[4], "] HWq=0x7f0020000000, Dispatch Header = 0xb02 (") != NULL);
        free(cap.buf);
}

static void test_v62_level3_has_no_pid_and_no_dispatch(void **state)
{
        struct scripted_clock clock = {0};
        struct clr_log_clock c;
        struct capture cap;
        struct emu_queue_identity id = {.amd_queue = 0x7f0010000000, .ring = 0x7f0020000000, .priority = 7,
                                        .ring_packets = 1024, .hsa_queue_id = 1};
        struct emu_dispatch_record rec = {.header = 0xb02, .setup = 1, .grid = {1, 1, 1}, .workgroup = {1, 1, 1}};
        struct clr_log *log;

        capture_open(&cap);
        log = fixed_log(cap.f, 3, CLR_LOG_FORMAT_6_2, &clock, &c);
        clr_log_kernel_dispatch(log, &id, &rec, "k(int)");
        clr_log_free(log);
        capture_split(&cap);
        assert_int_equal(cap.n, 1);
        /* clr keeps the space that would separate "[pid:... tid: ...]". */
        assert_lines_equal(":3:rocvirtual.cpp           :3351: 0000012345 us:  ShaderName : k(int)", cap.lines[0]);
        free(cap.buf);
}

static void test_level_zero_is_silent(void **state)
{
        struct scripted_clock clock = {0};
        struct clr_log_clock c;
        struct capture cap;
        struct emu_queue_identity id = {.priority = 7, .ring_packets = 16};
        struct clr_log *log;

        capture_open(&cap);
        log = fixed_log(cap.f, 0, CLR_LOG_FORMAT_6_2, &clock, &c);
        clr_log_queue_created(log, &id, 0);
        clr_log_free(log);
        capture_split(&cap);
        assert_int_equal(cap.n, 0);
        free(cap.buf);
}

static void test_format_names(void **state)
{
        enum clr_log_format f;

        assert_int_equal(clr_log_format_from_string("5.2", &f), 0);
        assert_int_equal(f, CLR_LOG_FORMAT_5_2);
        assert_int_equal(clr_log_format_from_string("6.2", &f), 0);
        assert_int_equal(f, CLR_LOG_FORMAT_6_2);
        assert_int_equal(clr_log_format_from_string("7.0", &f), -EINVAL);
        assert_int_equal(clr_priority_from_kfd(0), CLR_PRIORITY_LOW);
        assert_int_equal(clr_priority_from_kfd(7), CLR_PRIORITY_NORMAL);
        assert_int_equal(clr_priority_from_kfd(15), CLR_PRIORITY_HIGH);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_v62_queue_creation_matches_real_log),
                cmocka_unit_test(test_v62_dispatch_matches_real_log),
                cmocka_unit_test(test_v62_queue_teardown_matches_real_log),
                cmocka_unit_test(test_v52_lines),
                cmocka_unit_test(test_v60_lines),
                cmocka_unit_test(test_v62_level3_has_no_pid_and_no_dispatch),
                cmocka_unit_test(test_level_zero_is_silent),
                cmocka_unit_test(test_format_names),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
