/* SPDX-License-Identifier: MIT */
/*
 * A cursor over a byte range and the few token readers the parsers need.
 *
 * Inputs are views into a read buffer, not C strings: they are not
 * NUL-terminated and may contain NUL, so nothing here uses the str*()
 * functions or sscanf. Every reader either consumes a complete token and
 * returns true, or leaves the cursor where it was and returns false.
 * Numbers that do not fit the requested width are rejected, not wrapped.
 * Static inline because the log parser calls these for every line.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

struct qf_scan {
        const char *p;
        const char *end;
};

static inline struct qf_scan qf_scan_init(const char *p, size_t len)
{
        return (struct qf_scan){ .p = p, .end = p + len };
}

static inline size_t qf_scan_left(const struct qf_scan *s)
{
        return (size_t) (s->end - s->p);
}

/* Word-wise compare: with a constant len (all the parsers' literals) this
 * inlines to a few loads, where memcmp would be a call per literal on the
 * log's hot path. */
static inline bool qf_bytes_equal(const char *p, const char *lit, size_t len)
{
        for (; len >= 8; p += 8, lit += 8, len -= 8) {
                uint64_t a, b;
                memcpy(&a, p, 8);
                memcpy(&b, lit, 8);
                if (a != b)
                        return false;
        }
        if (len >= 4) {
                uint32_t a, b;
                memcpy(&a, p, 4);
                memcpy(&b, lit, 4);
                if (a != b)
                        return false;
                p += 4;
                lit += 4;
                len -= 4;
        }
        for (; len > 0; p++, lit++, len--)
                if (*p != *lit)
                        return false;
        return true;
}

static inline bool qf_scan_lit(struct qf_scan *s, const char *lit, size_t len)
{
        if (qf_scan_left(s) < len || !qf_bytes_equal(s->p, lit, len))
                return false;
        s->p += len;
        return true;
}
#define QF_SCAN_LIT(s, lit) qf_scan_lit((s), (lit), sizeof(lit) - 1)

static inline void qf_scan_spaces(struct qf_scan *s)
{
        while (s->p < s->end && *s->p == ' ')
                s->p++;
}

/* Hex digit value + 1, 0 for anything else: one load per digit on the hot
 * path instead of range compares. */
static const uint8_t qf_hex_value[256] = {
        ['0'] = 1, ['1'] = 2, ['2'] = 3, ['3'] = 4, ['4'] = 5, ['5'] = 6, ['6'] = 7, ['7'] = 8,
        ['8'] = 9, ['9'] = 10, ['a'] = 11, ['b'] = 12, ['c'] = 13, ['d'] = 14, ['e'] = 15, ['f'] = 16,
        ['A'] = 11, ['B'] = 12, ['C'] = 13, ['D'] = 14, ['E'] = 15, ['F'] = 16,
};

/* Bytes of x strictly between m and n, for bytes below 0x80: 0x80 set in
 * each such byte (the "hasbetween" bit trick). */
static inline uint64_t qf_swar_between(uint64_t x, uint8_t m, uint8_t n)
{
        const uint64_t ones = 0x0101010101010101ULL;
        uint64_t low7 = x & ones * 127;
        return (ones * (127 + n) - low7) & ~x & (low7 + ones * (127 - m)) & ones * 128;
}

/* true when the eight bytes at p are all decimal digits. */
static inline bool qf_all_digits8(const char *p)
{
        const uint64_t ones = 0x0101010101010101ULL;
        uint64_t x;
        memcpy(&x, p, 8);
        return !(x & ones * 0x80) && qf_swar_between(x, '0' - 1, '9' + 1) == ones * 0x80;
}

/* Eight hex digits at p as one 32-bit value, in a handful of word
 * operations; false if any of the eight bytes is not a hex digit. */
static inline bool qf_hex8(const char *p, uint32_t *ret)
{
        const uint64_t ones = 0x0101010101010101ULL;
        uint64_t x;
        memcpy(&x, p, 8);
        if (x & ones * 0x80)
                return false;
        uint64_t digit = qf_swar_between(x, '0' - 1, '9' + 1);
        uint64_t letter = qf_swar_between(x | ones * 0x20, 'a' - 1, 'f' + 1);
        if ((digit | letter) != ones * 0x80)
                return false;
        /* Nibble values, then pairs, quads and octets folded; the first
         * character is the lowest byte and the most significant digit. */
        uint64_t v = (x & ones * 0x0f) + (letter >> 7) * 9;
        v = ((v << 4) | (v >> 8)) & 0x00ff00ff00ff00ffULL;
        v = ((v << 8) | (v >> 16)) & 0x0000ffff0000ffffULL;
        v = ((v << 16) | (v >> 32)) & 0xffffffffULL;
        *ret = (uint32_t) v;
        return true;
}

/* 1 to max_digits hex digits, no prefix. */
static inline __attribute__((always_inline)) bool qf_scan_hex(struct qf_scan *s, unsigned max_digits,
                                                              uint64_t *ret)
{
        const char *p = s->p;
        uint64_t v = 0;
        uint32_t eight;
        /* Addresses are 12 hex digits: take the first 8 in one step. */
        if (qf_scan_left(s) >= 8 && qf_hex8(p, &eight)) {
                v = eight;
                p += 8;
        }
        for (unsigned d; p < s->end && (d = qf_hex_value[(unsigned char) *p]) != 0; p++)
                v = (v << 4) | (d - 1);
        size_t n = (size_t) (p - s->p);
        if (n == 0 || n > max_digits)
                return false;
        s->p = p;
        *ret = v;
        return true;
}

/* "0x" followed by up to 16 hex digits: how %p and 0x%zx print. */
static inline __attribute__((always_inline)) bool qf_scan_hex_ptr(struct qf_scan *s, uint64_t *ret)
{
        struct qf_scan t = *s;
        if (!QF_SCAN_LIT(&t, "0x") || !qf_scan_hex(&t, 16, ret))
                return false;
        *s = t;
        return true;
}

/* Decimal digits with a value of at most max. */
static inline bool qf_scan_dec(struct qf_scan *s, uint64_t max, uint64_t *ret)
{
        const char *p = s->p;
        uint64_t v = 0;
        /* 19 digits cannot overflow 64 bits, so their loop checks nothing
         * else; a 20th is checked, a 21st rejected. */
        const char *unchecked_end = qf_scan_left(s) > 19 ? p + 19 : s->end;
        for (; p < unchecked_end && *p >= '0' && *p <= '9'; p++)
                v = v * 10 + (uint64_t) (*p - '0');
        if (p == unchecked_end && p < s->end && *p >= '0' && *p <= '9') {
                if (v > (UINT64_MAX - (uint64_t) (*p - '0')) / 10)
                        return false;
                v = v * 10 + (uint64_t) (*p - '0');
                p++;
                if (p < s->end && *p >= '0' && *p <= '9')
                        return false;
        }
        if (v > max)
                return false;
        if (p == s->p)
                return false;
        s->p = p;
        *ret = v;
        return true;
}

static inline bool qf_scan_at_end(const struct qf_scan *s)
{
        return s->p == s->end;
}
