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

static inline bool qf_scan_lit(struct qf_scan *s, const char *lit, size_t len)
{
        /* The first byte rejects almost every mismatch without a call. */
        if (qf_scan_left(s) < len || s->p[0] != lit[0] || memcmp(s->p, lit, len) != 0)
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

/* 1 to max_digits hex digits, no prefix. */
static inline bool qf_scan_hex(struct qf_scan *s, unsigned max_digits, uint64_t *ret)
{
        const char *p = s->p;
        uint64_t v = 0;
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
static inline bool qf_scan_hex_ptr(struct qf_scan *s, uint64_t *ret)
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
        for (; p < s->end && *p >= '0' && *p <= '9'; p++)
                if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, (uint64_t) (*p - '0'), &v))
                        return false;
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
