/* SPDX-License-Identifier: MIT */
#include "printable.h"

#include <json.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * The length of the well-formed UTF-8 sequence at s (1 to 4) with its code
 * point in *ret_cp, or 0 when the byte at s does not start one.
 */
static size_t utf8_sequence(const unsigned char *s, uint32_t *ret_cp)
{
        uint32_t cp, min;
        size_t n;

        if (s[0] < 0x80) {
                *ret_cp = s[0];
                return 1;
        }
        if ((s[0] & 0xe0) == 0xc0)
                n = 2, cp = s[0] & 0x1f, min = 0x80;
        else if ((s[0] & 0xf0) == 0xe0)
                n = 3, cp = s[0] & 0x0f, min = 0x800;
        else if ((s[0] & 0xf8) == 0xf0)
                n = 4, cp = s[0] & 0x07, min = 0x10000;
        else
                return 0;
        /* the NUL that ends s is not a continuation byte: this stops there */
        for (size_t k = 1; k < n; k++) {
                if ((s[k] & 0xc0) != 0x80)
                        return 0;
                cp = cp << 6 | (s[k] & 0x3f);
        }
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
                return 0;
        *ret_cp = cp;
        return n;
}

static bool is_control(uint32_t cp)
{
        return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f);
}

/* Walks s; returns whether it is as wanted (UTF-8, and without control characters unless allowed). */
static bool check(const char *s, bool controls_allowed)
{
        const unsigned char *p = (const unsigned char *)s;

        while (*p) {
                uint32_t cp;
                size_t n = utf8_sequence(p, &cp);

                if (n == 0 || (!controls_allowed && is_control(cp)))
                        return false;
                p += n;
        }
        return true;
}

bool printable_is(const char *s)
{
        return check(s, false);
}

bool printable_is_utf8(const char *s)
{
        return check(s, true);
}

char *printable_dup(const char *s)
{
        const unsigned char *p = (const unsigned char *)s;
        /* at worst each byte becomes four */
        char *out = malloc(strlen(s) * 4 + 1), *o = out;

        if (!out)
                return NULL;
        while (*p) {
                uint32_t cp;
                size_t n = utf8_sequence(p, &cp);

                if (n > 0 && !is_control(cp)) {
                        memcpy(o, p, n);
                        o += n;
                        p += n;
                        continue;
                }
                /* a control character whole (a C1 one is two bytes), or one stray byte */
                for (size_t k = 0; k < (n ? n : 1); k++)
                        o += sprintf(o, "\\x%02x", p[k]);
                p += n ? n : 1;
        }
        *o = '\0';
        return out;
}

void printable_json(struct json_object *o, bool text)
{
        switch (json_object_get_type(o)) {
        case json_type_string: {
                const char *s = json_object_get_string(o);
                char *p;

                if (text ? printable_is(s) : printable_is_utf8(s))
                        return;
                p = printable_dup(s);
                /* out of memory: an empty string rather than bytes that break the output */
                json_object_set_string(o, p ? p : "");
                free(p);
                return;
        }
        case json_type_array:
                for (size_t i = 0; i < json_object_array_length(o); i++)
                        printable_json(json_object_array_get_idx(o, i), text);
                return;
        case json_type_object: {
                json_object_object_foreach(o, key, value) {
                        (void)key;
                        printable_json(value, text);
                }
                return;
        }
        default:
                return;
        }
}
