/* SPDX-License-Identifier: MIT */
#include "parse-decimal.h"

#include <errno.h>
#include <stdlib.h>

int parse_decimal(const char *s, uint64_t max, uint64_t *ret_value)
{
        unsigned long long v;
        char *end;

        if (!s || *s < '0' || *s > '9')
                return -EINVAL;
        errno = 0;
        v = strtoull(s, &end, 10);
        if (*end != '\0')
                return -EINVAL;
        if (errno == ERANGE || v > max)
                return -ERANGE;
        *ret_value = v;
        return 0;
}
