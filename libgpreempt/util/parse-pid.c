/* SPDX-License-Identifier: MIT */
#include "parse-pid.h"

#include <errno.h>
#include <stdlib.h>

bool pid_in_range(long long v)
{
        return v >= 1 && v <= GP_PID_MAX_LIMIT;
}

int parse_pid(const char *s, pid_t *ret_pid)
{
        unsigned long long v;
        char *end;

        /* strtoull accepts "-1", "+1" and leading spaces: refuse anything but digits. */
        if (!s || *s < '0' || *s > '9')
                return -EINVAL;
        errno = 0;
        v = strtoull(s, &end, 10);
        if (*end != '\0')
                return -EINVAL;
        if (errno == ERANGE || v > GP_PID_MAX_LIMIT || v == 0)
                return -ERANGE;
        *ret_pid = (pid_t)v;
        return 0;
}
