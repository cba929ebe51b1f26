/* SPDX-License-Identifier: MIT */
#include "printable.h"

#include <json.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "utf8.h"

static bool is_control(uint32_t cp)
{
        return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f);
}

/* Whether the len bytes at s are as wanted: UTF-8, and without control characters unless allowed. */
static bool check(const char *s, size_t len, bool controls_allowed)
{
        for (size_t i = 0, n; i < len; i += n) {
                uint32_t cp;

                n = utf8_sequence(s + i, len - i, &cp);
                if (n == 0 || (!controls_allowed && is_control(cp)))
                        return false;
        }
        return true;
}

bool printable_is(const char *s)
{
        return check(s, strlen(s), false);
}

size_t printable_escape(char *out, const char *s, size_t len)
{
        char *o = out;

        for (size_t i = 0, n; i < len; i += n ? n : 1) {
                uint32_t cp;

                n = utf8_sequence(s + i, len - i, &cp);
                if (n > 0 && !is_control(cp)) {
                        memcpy(o, s + i, n);
                        o += n;
                        continue;
                }
                /* a control character whole (a C1 one is two bytes), or one stray byte */
                for (size_t k = 0; k < (n ? n : 1); k++)
                        o += sprintf(o, "\\x%02x", (unsigned char)s[i + k]);
        }
        *o = '\0';
        return (size_t)(o - out);
}

char *printable_dup(const char *s)
{
        size_t len = strlen(s);
        char *out = malloc(PRINTABLE_SIZE(len));

        if (out)
                printable_escape(out, s, len);
        return out;
}

void printable_json(struct json_object *o, bool text)
{
        switch (json_object_get_type(o)) {
        case json_type_string: {
                /* by length: a string may hold a NUL (JSON's \u0000), and json-c writes what follows it too */
                const char *s = json_object_get_string(o);
                size_t len = (size_t)json_object_get_string_len(o);
                char *p;

                if (check(s, len, !text))
                        return;
                p = malloc(PRINTABLE_SIZE(len));
                /* out of memory: an empty string rather than bytes that break the output */
                if (p)
                        json_object_set_string_len(o, p, (int)printable_escape(p, s, len));
                else
                        json_object_set_string(o, "");
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
