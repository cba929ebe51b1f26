/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: what workload matching reads from /proc/<pid>/cgroup,
 * a path a process's own container setup chooses: the systemd unit it names.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "workload-match.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        char *path = malloc(size + 1), *unit;

        if (!path)
                return 0;
        memcpy(path, data, size);
        path[size] = '\0';
        unit = workload_match_cgroup_unit(path);
        /* a unit is one path component of the input */
        if (unit && (!*unit || strchr(unit, '/') || !strstr(path, unit)))
                abort();
        free(unit);
        free(path);
        return 0;
}
