/* SPDX-License-Identifier: MIT */
/*
 * doctor: the one-number files of /proc and /sys it reads, under the roots
 * it was given ($GPREEMPT_PROC_ROOT, $GPREEMPT_SYSFS_ROOT), so that tests
 * can prepare them.
 */
#include "doctor.h"

#include <stdint.h>

#include "fileio.h"

int doctor_read_number(const char *root, const char *relative, char *ret_path, size_t path_size,
                       long long *ret_value)
{
        int64_t v;
        int r;

        r = qf_pathf(ret_path, path_size, "%s/%s", root, relative);
        if (r < 0)
                return r;
        r = qf_read_s64(ret_path, &v);
        if (r < 0)
                return r;
        *ret_value = v;
        return 0;
}
