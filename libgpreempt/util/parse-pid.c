/* SPDX-License-Identifier: MIT */
#include "parse-pid.h"

#include <errno.h>

#include "parse-decimal.h"

bool pid_in_range(long long v)
{
        return v >= 1 && v <= GP_PID_MAX_LIMIT;
}

int parse_pid(const char *s, pid_t *ret_pid)
{
        uint64_t v;
        int r = parse_decimal(s, GP_PID_MAX_LIMIT, &v);

        if (r < 0)
                return r;
        if (v == 0)
                return -ERANGE;
        *ret_pid = (pid_t)v;
        return 0;
}
