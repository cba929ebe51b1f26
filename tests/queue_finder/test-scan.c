/* SPDX-License-Identifier: MIT */
/*
 * The token readers under every parser, at their edges: the word-at-a-time
 * hex path against the byte loop, decimal overflow, literals.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "scan.h"

static bool hex(const char *text, unsigned max, uint64_t *v, size_t *used)
{
        struct qf_scan s = qf_scan_init(text, strlen(text));
        bool ok = qf_scan_hex(&s, max, v);
        *used = (size_t) (s.p - text);
        return ok;
}

static void test_hex(void **state)
{
        uint64_t v;
        size_t used;
        assert_true(hex("7f8edc1a8000, HWq", 16, &v, &used));
        assert_int_equal(v, 0x7f8edc1a8000);
        assert_int_equal(used, 12);
        assert_true(hex("DEADbeef01", 16, &v, &used));
        assert_int_equal(v, 0xdeadbeef01);
        assert_true(hex("0123456789abcdef", 16, &v, &used));
        assert_int_equal(v, 0x0123456789abcdef);
        assert_false(hex("0123456789abcdef0", 16, &v, &used));
        assert_false(hex("123456789", 8, &v, &used));
        assert_true(hex("1234567g", 16, &v, &used));
        assert_int_equal(v, 0x1234567);
        assert_int_equal(used, 7);
        assert_false(hex("g1234567", 16, &v, &used));
        assert_int_equal(used, 0);
        /* Bytes next to the hex ranges, and high bytes, end a number. */
        static const char edges[] = { '/', ':', '@', 'G', '`', 'g', (char) 0xb0, (char) 0xe1 };
        for (size_t i = 0; i < sizeof(edges); i++) {
                char text[16];
                memcpy(text, "abcdef1", 7);
                text[7] = edges[i];
                memcpy(text + 8, "0000000", 8);
                assert_true(hex(text, 16, &v, &used));
                assert_int_equal(v, 0xabcdef1);
                assert_int_equal(used, 7);
        }
        /* Every single byte in every position of an eight-byte group. */
        for (int c = 1; c < 256; c++)
                for (int pos = 0; pos < 8; pos++) {
                        char text[10] = "00000000";
                        text[pos] = (char) c;
                        bool is_hex = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
                        assert_true(hex(text, 16, &v, &used) == (is_hex || pos > 0));
                        assert_int_equal(used, is_hex ? 8 : (size_t) pos);
                }
}

static void test_dec(void **state)
{
        struct qf_scan s;
        uint64_t v;
        s = qf_scan_init("18446744073709551615x", 21);
        assert_true(qf_scan_dec(&s, UINT64_MAX, &v));
        assert_int_equal(v, UINT64_MAX);
        s = qf_scan_init("18446744073709551616", 20);
        assert_false(qf_scan_dec(&s, UINT64_MAX, &v));
        s = qf_scan_init("000000000000000000001", 21);
        assert_false(qf_scan_dec(&s, UINT64_MAX, &v));
        s = qf_scan_init("4294967296", 10);
        assert_false(qf_scan_dec(&s, UINT32_MAX, &v));
        s = qf_scan_init("459769 tid", 10);
        assert_true(qf_scan_dec(&s, INT32_MAX, &v));
        assert_int_equal(v, 459769);
        assert_true(QF_SCAN_LIT(&s, " tid"));
        assert_true(qf_scan_at_end(&s));
}

static void test_digits8(void **state)
{
        assert_true(qf_all_digits8("0123456789"));
        assert_true(qf_all_digits8("99999999"));
        assert_false(qf_all_digits8("1234567a"));
        assert_false(qf_all_digits8("/1234567"));
        assert_false(qf_all_digits8("1234:567"));
        assert_false(qf_all_digits8("123\xb4" "5678"));
}

static void test_literals(void **state)
{
        struct qf_scan s = qf_scan_init("Dispatch Header = 0xb02", 23);
        assert_false(QF_SCAN_LIT(&s, "Dispatch Headers"));
        assert_false(QF_SCAN_LIT(&s, "Dispatch Heade_"));
        assert_true(QF_SCAN_LIT(&s, "Dispatch Header"));
        assert_true(QF_SCAN_LIT(&s, " = "));
        assert_false(QF_SCAN_LIT(&s, "0xb02 and more"));
        uint64_t v;
        assert_true(qf_scan_hex_ptr(&s, &v));
        assert_int_equal(v, 0xb02);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_hex),
                cmocka_unit_test(test_dec),
                cmocka_unit_test(test_digits8),
                cmocka_unit_test(test_literals),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
