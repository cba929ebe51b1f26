/* SPDX-License-Identifier: MIT */
/*
 * KFD SMI event records as the kernel writes them (kfd_smi_events.c with the
 * KFD_EVENT_FMT_* formats of kfd_ioctl.h, in their 5.9 and current forms),
 * broken ones, records split across reads, and the loop's source on a
 * stand-in fd; and the subscription on an emulated node (kfdemu-run), with
 * the errors a kernel the daemon runs on can give: a GPU the caller's KFD
 * process lacks, no fd number left (kfd-interface.md §16.8). The daemon
 * goes on without the GPU's events then, seeing resets in its calls'
 * results (gpu-faults-* test those).
 */
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#include <cmocka.h>

#include "smi-events.h"
#include "smi-record.h"

static struct smi_record parse_ok(const char *line, size_t len)
{
        struct smi_record r;
        const char *why = NULL;

        if (smi_record_parse(line, len, &r, &why) != 0)
                fail_msg("\"%.*s\" did not parse: %s", (int)len, line, why);
        return r;
}

#define PARSE_OK(s) parse_ok((s), sizeof(s) - 1)

static void test_reset_records_of_each_kernel(void **state)
{
        struct smi_record r;

        /* 5.9 to 6.x: "%x %x\n" event, sequence number */
        r = PARSE_OK("3 1");
        assert_int_equal(r.event, SMI_EVENT_GPU_PRE_RESET);
        assert_true(r.parsed);
        assert_int_equal(r.reset_seq, 1);
        assert_string_equal(r.reset_cause, "");
        r = PARSE_OK("4 ff");
        assert_int_equal(r.event, SMI_EVENT_GPU_POST_RESET);
        assert_int_equal(r.reset_seq, 255);
        /* later: "%x %s\n" with the cause, which may hold spaces */
        r = PARSE_OK("3 2 HWS hang");
        assert_int_equal(r.reset_seq, 2);
        assert_string_equal(r.reset_cause, "HWS hang");
}

static void test_queue_records(void **state)
{
        struct smi_record r;

        r = PARSE_OK("9 1234567890123 -4242 1a2b 2");
        assert_int_equal(r.event, SMI_EVENT_QUEUE_EVICTION);
        assert_int_equal(r.timestamp_ns, 1234567890123);
        assert_int_equal(r.pid, 4242);
        assert_int_equal(r.gpu_id, 0x1a2b);
        assert_int_equal(r.trigger, 2);

        /* event 10 is written "a"; 'R' when the restore was rescheduled */
        r = PARSE_OK("a 77 -9 1a2b R");
        assert_int_equal(r.event, SMI_EVENT_QUEUE_RESTORE);
        assert_true(r.rescheduled);
        /* otherwise the kernel formats 0 with %c: a NUL before the newline */
        r = PARSE_OK("a 77 -9 1a2b \0");
        assert_false(r.rescheduled);
        assert_int_equal(r.pid, 9);
        /* and where the field was dropped */
        r = PARSE_OK("a 77 -9 1a2b");
        assert_false(r.rescheduled);
        assert_int_equal(r.gpu_id, 0x1a2b);
}

static void test_vmfault_and_passed_over_events(void **state)
{
        struct smi_record r;

        r = PARSE_OK("1 10a2:python3");
        assert_int_equal(r.event, SMI_EVENT_VMFAULT);
        assert_int_equal(r.pid, 0x10a2);
        assert_string_equal(r.task_name, "python3");
        r = PARSE_OK("1 5:");
        assert_string_equal(r.task_name, "");

        r = PARSE_OK("2 1:5");
        assert_int_equal(r.event, SMI_EVENT_THERMAL_THROTTLE);
        assert_false(r.parsed);
        r = PARSE_OK("7 100 -5 @7f0000(1a2b) W");
        assert_false(r.parsed);
        r = PARSE_OK("d 5 python3");
        assert_int_equal(r.event, SMI_EVENT_PROCESS_END);
}

static void test_broken_records_say_why(void **state)
{
        static const struct {
                const char *line;
                size_t len;
                int error;
                const char *why;
        } cases[] = {
#define CASE(s, e, w) { (s), sizeof(s) - 1, (e), (w) }
                CASE("", -EINVAL, "expected an event number"),
                CASE("zz", -EINVAL, "expected an event number"),
                CASE("0 1", -EINVAL, "expected an event number"),
                CASE("40 1", -EINVAL, "expected an event number"),
                CASE("A 1 -2 3", -EINVAL, "expected an event number"),
                CASE("3\t1", -EINVAL, "expected a space"),
                CASE("3", -EINVAL, "expected a space"),
                CASE("3 ", -EINVAL, "sequence number"),
                CASE("3 x", -EINVAL, "sequence number"),
                CASE("3 100000000", -EINVAL, "sequence number"),
                CASE("3 1 ", -EINVAL, "cause"),
                CASE("3 1x", -EINVAL, "cause"),
                CASE("3 1 a\0b", -EINVAL, "holds a NUL"),
                CASE("14 1", -EOPNOTSUPP, "unknown event number"),
                CASE("9 12 4242 1 2", -EINVAL, "-PID"),
                CASE("9 12 -0 1 2", -EINVAL, "-PID"),
                CASE("9 12 -99999999999 1 2", -EINVAL, "-PID"),
                CASE("9 99999999999999999999 -1 1 2", -EINVAL, "timestamp"),
                CASE("9 12 -42 zz 2", -EINVAL, "GPU id"),
                CASE("9 12 -42 1", -EINVAL, "trigger"),
                CASE("9 12 -42 1 2 3", -EINVAL, "trigger"),
                CASE("a 12 -42 1 RR", -EINVAL, "after the rescheduled flag"),
                CASE("a 12 -42 1 ", -EINVAL, "rescheduled flag"),
                CASE("1 python3", -EINVAL, "PID:TASK"),
                CASE("1 0:x", -EINVAL, "PID:TASK"),
                CASE("1 5:a-task-name-longer-than-16", -EINVAL, "task name"),
#undef CASE
        };

        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                struct smi_record r;
                const char *why = NULL;
                int got = smi_record_parse(cases[i].line, cases[i].len, &r, &why);

                if (got != cases[i].error || !why || !strstr(why, cases[i].why))
                        fail_msg("case %zu \"%.*s\": got %d \"%s\", want %d \"...%s...\"", i, (int)cases[i].len,
                                 cases[i].line, got, why ? why : "(none)", cases[i].error, cases[i].why);
        }
}

/* What a stream or a source delivered, as text, one entry per callback. */
struct seen {
        char log[4096];
};

static void seen_add(struct seen *s, const char *fmt, ...)
{
        size_t len = strlen(s->log);
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(s->log + len, sizeof(s->log) - len, fmt, ap);
        va_end(ap);
}

static void stream_record(const struct smi_record *r, void *userdata)
{
        seen_add(userdata, "[%d]", r->event);
}

static void stream_bad(const char *why, const char *line, size_t len, void *userdata)
{
        seen_add(userdata, "[bad %zu]", len);
}

static const struct smi_stream_callbacks stream_cb = { .record = stream_record, .bad_record = stream_bad };

static void test_stream_reassembles_records_read_in_pieces(void **state)
{
        static const char records[] = "3 1\n9 100 -42 1a2b 1\na 101 -42 1a2b \0\n4 1\n";
        struct smi_stream stream = { 0 };
        struct seen seen = { "" };

        /* Linux 5.9 returned at most 8 bytes a read */
        for (size_t i = 0; i < sizeof(records) - 1; i += 8)
                smi_stream_feed(&stream, records + i, sizeof(records) - 1 - i < 8 ? sizeof(records) - 1 - i : 8,
                                &stream_cb, &seen);
        assert_string_equal(seen.log, "[3][9][10][4]");

        /* and byte by byte, with an unfinished record held back */
        memset(&seen, 0, sizeof(seen));
        for (size_t i = 0; i < sizeof(records) - 1; i++)
                smi_stream_feed(&stream, records + i, 1, &stream_cb, &seen);
        smi_stream_feed(&stream, "3 2", 3, &stream_cb, &seen);
        assert_string_equal(seen.log, "[3][9][10][4]");
        smi_stream_feed(&stream, "\n", 1, &stream_cb, &seen);
        assert_string_equal(seen.log, "[3][9][10][4][3]");
}

static void test_stream_skips_garbage_and_overlong_lines(void **state)
{
        char overlong[3 * SMI_RECORD_MAX];
        struct smi_stream stream = { 0 };
        struct seen seen = { "" };

        memset(overlong, 'x', sizeof(overlong));
        smi_stream_feed(&stream, "garbage\n\n3 1\n", 13, &stream_cb, &seen);
        /* an overlong line reported once, however it arrives, and the stream goes on after it */
        smi_stream_feed(&stream, overlong, 100, &stream_cb, &seen);
        smi_stream_feed(&stream, overlong, sizeof(overlong), &stream_cb, &seen);
        smi_stream_feed(&stream, "\n4 1\n", 5, &stream_cb, &seen);
        smi_stream_feed(&stream, overlong, SMI_RECORD_MAX, &stream_cb, &seen);
        smi_stream_feed(&stream, "\n", 1, &stream_cb, &seen);
        smi_stream_feed(&stream, overlong, SMI_RECORD_MAX + 1, &stream_cb, &seen);
        smi_stream_feed(&stream, "\n3 5\n", 5, &stream_cb, &seen);
        assert_string_equal(seen.log, "[bad 7][bad 0][3][bad 255][4][bad 255][bad 255][3]");
}

/* The loop's source, fed through a pipe. */
struct source_seen {
        struct seen seen;
        int ended;
        int ended_error;
};

static void on_reset(uint32_t gpu_id, bool post, uint32_t seq, const char *cause, void *userdata)
{
        seen_add(userdata, "reset gpu=%u post=%d seq=%u cause=%s;", gpu_id, post, seq, cause);
}

static void on_eviction(uint32_t gpu_id, pid_t pid, int trigger, void *userdata)
{
        seen_add(userdata, "evict gpu=%u pid=%d trigger=%d;", gpu_id, (int)pid, trigger);
}

static void on_restore(uint32_t gpu_id, pid_t pid, bool rescheduled, void *userdata)
{
        seen_add(userdata, "restore gpu=%u pid=%d rescheduled=%d;", gpu_id, (int)pid, rescheduled);
}

static void on_vm_fault(uint32_t gpu_id, pid_t pid, const char *task, void *userdata)
{
        seen_add(userdata, "vmfault gpu=%u pid=%d task=%s;", gpu_id, (int)pid, task);
}

static void on_bad(uint32_t gpu_id, const char *why, const char *line, void *userdata)
{
        seen_add(userdata, "bad gpu=%u line=%s;", gpu_id, line);
}

static void on_ended(uint32_t gpu_id, int error, void *userdata)
{
        struct source_seen *s = userdata;

        s->ended++;
        s->ended_error = error;
}

static const struct smi_events_callbacks source_cb = {
        .gpu_reset = on_reset,
        .queue_eviction = on_eviction,
        .queue_restore = on_restore,
        .vm_fault = on_vm_fault,
        .bad_record = on_bad,
        .ended = on_ended,
};

static void run_loop(sd_event *e)
{
        for (int i = 0; i < 5; i++)
                assert_true(sd_event_run(e, 1000) >= 0);
}

static void write_all(int fd, const char *data, size_t len)
{
        assert_int_equal(write(fd, data, len), (ssize_t)len);
}

static void test_source_calls_back_per_record(void **state)
{
        static const char part1[] = "3 7\n9 100 -42 1a2b 1\na 10";
        static const char part2[] = "1 -42 1a2b R\n1 2a:bad\033[2Jname\n\001junk\n4 7 HWS hang\n";
        struct source_seen s = { 0 };
        struct smi_events *events = NULL;
        sd_event *e = NULL;
        int p[2];

        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        assert_int_equal(sd_event_new(&e), 0);
        assert_int_equal(smi_events_new(e, 0, p[0], 0x1a2b, &source_cb, &s, &events), 0);
        write_all(p[1], part1, sizeof(part1) - 1);
        run_loop(e);
        write_all(p[1], part2, sizeof(part2) - 1);
        run_loop(e);
        assert_string_equal(s.seen.log,
                            "reset gpu=6699 post=0 seq=7 cause=;"
                            "evict gpu=6699 pid=42 trigger=1;"
                            "restore gpu=6699 pid=42 rescheduled=1;"
                            "vmfault gpu=6699 pid=42 task=bad\\x1b[2Jname;"
                            "bad gpu=6699 line=\\x01junk;"
                            "reset gpu=6699 post=1 seq=7 cause=HWS hang;");
        assert_int_equal(s.ended, 0);

        /* the fd's end: once */
        close(p[1]);
        run_loop(e);
        assert_int_equal(s.ended, 1);
        assert_int_equal(s.ended_error, 0);
        smi_events_free(events);
        sd_event_unref(e);
}

static void test_subscription_errors_are_explained(void **state)
{
        int fd = open("/dev/null", O_RDWR | O_CLOEXEC), p[2];
        uint64_t mask = 0;

        /* a file that is not /dev/kfd */
        assert_true(fd >= 0);
        assert_int_equal(smi_events_subscribe(fd, 0x1a2b, SMI_EVENTS_DAEMON_MASK), -ENOTTY);
        assert_string_equal(smi_events_strerror(-ENOTTY), strerror(ENOTTY));
        /* what a kernel the daemon works with can answer, with what to do */
        assert_non_null(strstr(smi_events_strerror(-EINVAL), "GPU id"));
        assert_non_null(strstr(smi_events_strerror(-EINVAL), "DeviceAllow=char-drm"));
        assert_non_null(strstr(smi_events_strerror(-EMFILE), "LimitNOFILE="));
        assert_string_equal(smi_events_strerror(-EPERM), strerror(EPERM));
        close(fd);

        /* the mask is one native u64, bit N-1 for event N, ALL_PROCESS the top bit */
        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        assert_int_equal(smi_events_set_mask(p[1], SMI_EVENTS_DAEMON_MASK), 0);
        assert_int_equal(read(p[0], &mask, sizeof(mask)), sizeof(mask));
        assert_int_equal(mask, UINT64_C(0x8000000000000000) | 0x4 | 0x8 | 0x100 | 0x200 | 0x1);
        close(p[0]);
        assert_int_equal(smi_events_set_mask(p[1], 0), -EPIPE);
        close(p[1]);
}

/* The first GPU's id in the node's topology (node 0 is the CPU, whose gpu_id is 0). */
static uint32_t first_gpu_id(void)
{
        for (int node = 0; node < 64; node++) {
                char path[96], buf[32] = "";
                FILE *f;

                snprintf(path, sizeof(path), "/sys/class/kfd/kfd/topology/nodes/%d/gpu_id", node);
                f = fopen(path, "re");
                if (!f)
                        break;
                if (!fgets(buf, sizeof(buf), f))
                        buf[0] = '\0';
                fclose(f);
                if (strtoul(buf, NULL, 10) != 0)
                        return (uint32_t)strtoul(buf, NULL, 10);
        }
        fail_msg("no GPU in the node's topology");
        return 0;
}

static void test_subscription_on_a_node(void **state)
{
        static const struct smi_events_callbacks cb = { 0 };
        uint32_t gpu_id = first_gpu_id();
        int kfd = open("/dev/kfd", O_RDWR | O_CLOEXEC), fd, lowest, r;
        struct smi_events *events = NULL;
        struct rlimit saved, tight;
        sd_event *e = NULL;

        assert_true(kfd >= 0);
        fd = smi_events_subscribe(kfd, gpu_id, SMI_EVENTS_DAEMON_MASK);
        assert_true(fd >= 0);
        assert_int_equal(sd_event_new(&e), 0);
        assert_int_equal(smi_events_new(e, 0, fd, gpu_id, &cb, NULL, &events), 0);
        smi_events_free(events);

        /* a GPU this process has no device data for, as one its device cgroup denies */
        assert_int_equal(smi_events_subscribe(kfd, gpu_id + 1, SMI_EVENTS_DAEMON_MASK), -EINVAL);

        /* no fd number left under RLIMIT_NOFILE */
        lowest = dup(kfd);
        assert_true(lowest >= 0);
        close(lowest);
        assert_int_equal(getrlimit(RLIMIT_NOFILE, &saved), 0);
        tight = (struct rlimit){ .rlim_cur = (rlim_t)lowest, .rlim_max = saved.rlim_max };
        assert_int_equal(setrlimit(RLIMIT_NOFILE, &tight), 0);
        r = smi_events_subscribe(kfd, gpu_id, SMI_EVENTS_DAEMON_MASK);
        assert_int_equal(setrlimit(RLIMIT_NOFILE, &saved), 0);
        assert_int_equal(r, -EMFILE);

        /* and the next try, with a number free, works */
        fd = smi_events_subscribe(kfd, gpu_id, SMI_EVENTS_DAEMON_MASK);
        assert_int_equal(fd, lowest);
        close(fd);
        sd_event_unref(e);
        close(kfd);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_reset_records_of_each_kernel),
                cmocka_unit_test(test_queue_records),
                cmocka_unit_test(test_vmfault_and_passed_over_events),
                cmocka_unit_test(test_broken_records_say_why),
                cmocka_unit_test(test_stream_reassembles_records_read_in_pieces),
                cmocka_unit_test(test_stream_skips_garbage_and_overlong_lines),
                cmocka_unit_test(test_source_calls_back_per_record),
                cmocka_unit_test(test_subscription_errors_are_explained),
                cmocka_unit_test(test_subscription_on_a_node),
        };

        /* a write to a closed pipe must fail with EPIPE, not kill the test */
        signal(SIGPIPE, SIG_IGN);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
