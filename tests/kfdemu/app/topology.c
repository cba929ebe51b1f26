/* SPDX-License-Identifier: MIT */
/*
 * GPU discovery from the KFD topology, as libhsakmt's topology.c does it:
 * nodes/<n>/gpu_id (0 = CPU node) and the "key value" lines of
 * nodes/<n>/properties (kfd-interface.md §8.2).
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "runtime-internal.h"

/* Node directories are small integers; a bound keeps a broken tree from
 * making us read forever. */
#define MAX_TOPOLOGY_NODES 1024u
#define MAX_PROPERTY_LINE 256

static int read_u32_file(const char *path, uint32_t *ret)
{
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        unsigned long v;

        if (!f)
                return NEG_ERRNO();
        if (fscanf(f, "%lu", &v) != 1 || v > UINT32_MAX)
                return -EBADMSG;
        *ret = (uint32_t)v;
        return 0;
}

/* Fills the fields of `gpu` that come from nodes/<n>/properties. */
static int read_properties(const char *path, struct emu_gpu_info *gpu)
{
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        char line[MAX_PROPERTY_LINE];
        uint64_t simd_count = 0, simd_per_cu = 0, waves_per_simd = 0, num_xcc = 1, render_minor = 0,
                 gfx_target_version = 0;

        if (!f)
                return NEG_ERRNO();
        while (fgets(line, sizeof(line), f)) {
                char key[64];
                uint64_t value;

                if (sscanf(line, "%63s %" SCNu64, key, &value) != 2)
                        continue;
                if (strcmp(key, "simd_count") == 0)
                        simd_count = value;
                else if (strcmp(key, "simd_per_cu") == 0)
                        simd_per_cu = value;
                else if (strcmp(key, "max_waves_per_simd") == 0)
                        waves_per_simd = value;
                else if (strcmp(key, "num_xcc") == 0)
                        num_xcc = value;
                else if (strcmp(key, "drm_render_minor") == 0)
                        render_minor = value;
                else if (strcmp(key, "gfx_target_version") == 0)
                        gfx_target_version = value;
        }
        if (simd_per_cu == 0 || simd_count == 0 || simd_count > UINT32_MAX ||
            waves_per_simd > 64 || num_xcc == 0 || num_xcc > 64 || render_minor > UINT32_MAX ||
            gfx_target_version > UINT32_MAX)
                return -EBADMSG;
        gpu->drm_render_minor = (uint32_t)render_minor;
        gpu->gfx_target_version = (uint32_t)gfx_target_version;
        gpu->cu_count = (uint32_t)(simd_count / simd_per_cu);
        gpu->waves_per_cu = (uint32_t)(simd_per_cu * waves_per_simd);
        gpu->num_xcc = (uint32_t)num_xcc;
        return 0;
}

static int compare_node(const void *a, const void *b)
{
        const struct emu_gpu_info *x = a, *y = b;

        return (x->node > y->node) - (x->node < y->node);
}

int emu_topology_read(const char *topology_path, struct emu_gpu_info *gpus, unsigned max_gpus,
                      unsigned *ret_count)
{
        _cleanup_free_ char *nodes_path = NULL;
        _cleanup_closedir_ DIR *dir = NULL;
        unsigned n = 0, seen = 0;
        struct dirent *de;

        if (asprintf(&nodes_path, "%s/nodes", topology_path) < 0)
                return -ENOMEM;
        dir = opendir(nodes_path);
        if (!dir)
                return NEG_ERRNO();
        while ((de = readdir(dir))) {
                char path[4096];
                char *end;
                unsigned long node = strtoul(de->d_name, &end, 10);
                uint32_t gpu_id;
                int r;

                if (de->d_name[0] < '0' || de->d_name[0] > '9' || *end)
                        continue;
                if (++seen > MAX_TOPOLOGY_NODES)
                        return -E2BIG;
                snprintf(path, sizeof(path), "%s/%lu/gpu_id", nodes_path, node);
                r = read_u32_file(path, &gpu_id);
                if (r < 0)
                        return r;
                if (gpu_id == 0)
                        continue;
                if (n == max_gpus)
                        return -E2BIG;
                gpus[n] = (struct emu_gpu_info){.gpu_id = gpu_id, .node = (uint32_t)node};
                snprintf(path, sizeof(path), "%s/%lu/properties", nodes_path, node);
                r = read_properties(path, &gpus[n]);
                if (r < 0)
                        return r;
                n++;
        }
        /* readdir order is arbitrary; GPU indices follow the node numbers. */
        qsort(gpus, n, sizeof(*gpus), compare_node);
        *ret_count = n;
        return 0;
}
