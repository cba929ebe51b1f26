/* SPDX-License-Identifier: MIT */
#include "utf8.h"

size_t utf8_sequence(const char *s, size_t len, uint32_t *ret_cp)
{
        const unsigned char *p = (const unsigned char *)s;
        uint32_t cp, min;
        size_t n;

        if (p[0] < 0x80) {
                *ret_cp = p[0];
                return 1;
        }
        if ((p[0] & 0xe0) == 0xc0)
                n = 2, cp = p[0] & 0x1f, min = 0x80;
        else if ((p[0] & 0xf0) == 0xe0)
                n = 3, cp = p[0] & 0x0f, min = 0x800;
        else if ((p[0] & 0xf8) == 0xf0)
                n = 4, cp = p[0] & 0x07, min = 0x10000;
        else
                return 0;
        if (len < n)
                return 0;
        for (size_t k = 1; k < n; k++) {
                if ((p[k] & 0xc0) != 0x80)
                        return 0;
                cp = cp << 6 | (p[k] & 0x3f);
        }
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
                return 0;
        *ret_cp = cp;
        return n;
}

bool utf8_is_valid(const char *s, size_t len)
{
        for (size_t i = 0, n; i < len; i += n) {
                uint32_t cp;

                n = utf8_sequence(s + i, len - i, &cp);
                if (n == 0)
                        return false;
        }
        return true;
}
