/* SPDX-License-Identifier: MIT */
/*
 * The window scan that picks the log lines amdlog.c reads: every message it
 * takes facts from is marked wherever it lies in a window, and the vector
 * code agrees with the byte loop on any bytes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "log-window.h"

typedef struct qf_log_window (*window_scan)(const char *p);

/* The implementations this machine can run, the reference first. */
static size_t scanners(window_scan *ret)
{
        size_t n = 0;
        ret[n++] = qf_log_window_bytes;
        ret[n++] = QF_LOG_WINDOW_BASELINE;
#if defined(QF_LOG_WINDOW_AVX2)
        if (qf_log_window_have_avx2())
                ret[n++] = qf_log_window_avx2;
#endif
        return n;
}

/* The message starts parse_message() in amdlog.c recognizes; a message not
 * marked here would be skipped unread. */
static const char *const messages[] = {
        "SWq=0x7f8edc1a8000, HWq=0x7f8acd200000, id=1, Dispatch Header",
        "HWq=0x7f8acd200000, Dispatch Header",
        "Created SWq=0x7f8edc1a8000 to map on HWq=0x7f8acd200000",
        "created hardware queue 0x7f8edc1a8000 with size 16384",
        "ShaderName : _Z12dummy_kernelPii",
        "acquireQueue refCount: 0x7f8acd200000 (1)",
        "Selected queue refCount: 0x7f8acd200000 (2)",
        "selected queue refCount: 0x7f8acd200000 (2)",
        "selected queue with least refCount: 0x7f8acd200000 (2)",
        "releaseQueue refCount:0x7f8acd200000 (0)",
        "Deleting hardware queue 0x7f8acd200000 with refCount 0",
};

/* Each message placed at every offset of a window, after spaces. */
static void test_every_message_is_marked(void **state)
{
        window_scan scan[3];
        size_t n_scan = scanners(scan);
        char buf[3 * QF_LOG_WINDOW + 1];
        for (size_t m = 0; m < sizeof(messages) / sizeof(messages[0]); m++) {
                size_t len = strlen(messages[m]);
                for (size_t at = 0; at < QF_LOG_WINDOW; at++) {
                        memset(buf, ' ', sizeof(buf));
                        memcpy(buf + at, messages[m], len);
                        for (size_t k = 0; k < n_scan; k++) {
                                uint64_t marks = 0;
                                for (size_t w = 0; w + QF_LOG_WINDOW < sizeof(buf); w += QF_LOG_WINDOW)
                                        marks |= scan[k](buf + w).marks;
                                assert_true(marks != 0);
                        }
                }
        }
}

/* The usual API trace and command lines hold no mark. */
static void test_trace_lines_are_not_marked(void **state)
{
        static const char text[] =
                ":3:hip_module.cpp           :812 : 20159561908 us: [pid:459769 tid: 0x7f8edc1c4400] "
                "\033[32m hipLaunchKernel ( 0x200d68, {32,1,1}, {32,1,1}, 0x7fffea224e60, 0, stream:0x1952020 ) "
                "\033[0m\n:4:command.cpp              :357 : 20159561912 us: [pid:459769 tid: 0x7f8edc1c4400] "
                "Command (KernelExecution) enqueued: 0x2095b30 to queue: 0x1952020\n                      ";
        window_scan scan[3];
        size_t n_scan = scanners(scan);
        for (size_t k = 0; k < n_scan; k++)
                for (size_t w = 0; w + QF_LOG_WINDOW < sizeof(text); w += QF_LOG_WINDOW)
                        assert_int_equal(scan[k](text + w).marks, 0);
}

/* Random bytes drawn mostly from the ones the scan looks at, so that pairs,
 * near-pairs, NULs and newlines are everywhere. */
static void test_vector_matches_bytes(void **state)
{
        static const char alphabet[] = "WqrNfCdw\n\0 xQn";
        window_scan scan[3];
        size_t n_scan = scanners(scan);
        assert_true(n_scan >= 2);
        char buf[4096 + QF_LOG_WINDOW + 1];
        unsigned seed = 12345;
        for (int round = 0; round < 200; round++) {
                for (size_t i = 0; i < sizeof(buf); i++)
                        buf[i] = (rand_r(&seed) & 3) ? alphabet[rand_r(&seed) % (sizeof(alphabet) - 1)]
                                                      : (char) rand_r(&seed);
                for (size_t at = 0; at + QF_LOG_WINDOW < sizeof(buf); at += 1 + (size_t) rand_r(&seed) % 17) {
                        struct qf_log_window b = qf_log_window_bytes(buf + at);
                        for (size_t k = 1; k < n_scan; k++) {
                                struct qf_log_window v = scan[k](buf + at);
                                assert_int_equal(v.newlines, b.newlines);
                                assert_int_equal(v.marks, b.marks);
                        }
                }
        }
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_every_message_is_marked),
                cmocka_unit_test(test_trace_lines_are_not_marked),
                cmocka_unit_test(test_vector_matches_bytes),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
