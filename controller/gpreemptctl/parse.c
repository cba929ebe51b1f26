/* SPDX-License-Identifier: MIT */
#include "parse.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "parse-decimal.h"
#include "parse-pid.h"

int parse_u32(const char *s, uint32_t *ret_value)
{
        uint64_t v;
        int r;

        r = parse_decimal(s, UINT32_MAX, &v);
        if (r < 0)
                return r;
        *ret_value = (uint32_t)v;
        return 0;
}

int parse_duration(const char *s, uint64_t *ret_usec)
{
        static const struct {
                const char *suffix;
                double usec;
        } units[] = {
                { "us", 1 },         { "ms", 1e3 },  { "s", 1e6 }, { "", 1e6 },
                { "min", 60e6 },     { "m", 60e6 },  { "h", 3600e6 },
        };
        /* A year is longer than anyone holds a process; beyond it, typos. */
        const double max_usec = 366.0 * 24 * 3600e6;
        double value;
        char *end;

        if (!s || !*s)
                return -EINVAL;
        if (strcmp(s, "infinity") == 0) {
                *ret_usec = UINT64_MAX;
                return 0;
        }
        if ((*s < '0' || *s > '9') && *s != '.')
                return -EINVAL;
        errno = 0;
        value = strtod(s, &end);
        if (errno == ERANGE || !isfinite(value))
                return -ERANGE;
        for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
                if (strcmp(end, units[i].suffix) != 0)
                        continue;
                value *= units[i].usec;
                if (value > max_usec)
                        return -ERANGE;
                *ret_usec = (uint64_t)value;
                return 0;
        }
        return -EINVAL;
}

int parse_pids(char *const *args, size_t n, pid_t *pids, size_t *bad_index)
{
        for (size_t i = 0; i < n; i++) {
                int r = parse_pid(args[i], &pids[i]);

                if (r < 0) {
                        *bad_index = i;
                        return r;
                }
                for (size_t k = 0; k < i; k++)
                        if (pids[k] == pids[i]) {
                                *bad_index = i;
                                return -EEXIST;
                        }
        }
        return 0;
}
