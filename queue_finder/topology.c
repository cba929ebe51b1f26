/* SPDX-License-Identifier: MIT */
/*
 * /sys/class/kfd/kfd/topology/nodes/<n>/ (kfd_topology.c; kfd-interface.md
 * §8.2, rocm-userspace.md §8): gpu_id ("%u\n", 0 for CPU nodes), name, and
 * properties ("<key> <decimal>" lines). The node number n is not the gpu_id.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "cleanup.h"
#include "fileio.h"
#include "scan.h"
#include "sources.h"

/* The properties file is about 1.5 KiB today. */
#define PROPERTIES_MAX 16384

/* gfx_target_version 90402 → "gfx942", 90010 → "gfx90a": major, then minor
 * and stepping as one hex digit each (decoded as ROCdbgapi does). */
static void format_gfx(uint32_t version, char *buf, size_t size)
{
        if (version == 0) {
                snprintf(buf, size, "unknown");
                return;
        }
        snprintf(buf, size, "gfx%u%x%x", version / 10000, (version / 100) % 100 & 0xf, version % 100 & 0xf);
}

static void apply_property(struct qf_gpu *g, const char *key, size_t key_len, uint64_t v)
{
#define KEY(k) (key_len == sizeof(k) - 1 && memcmp(key, k, key_len) == 0)
        if (KEY("gfx_target_version"))
                g->gfx_target_version = (uint32_t) v;
        else if (KEY("vendor_id"))
                g->vendor_id = (uint32_t) v;
        else if (KEY("device_id"))
                g->device_id = (uint32_t) v;
        else if (KEY("location_id")) {
                /* bus << 8 | devfn; newer kernels put the partition above bit 16. */
                g->bus = (uint8_t) (v >> 8);
                g->dev = (uint8_t) ((v & 0xff) >> 3);
                g->fn = (uint8_t) (v & 7);
                g->has_location = true;
        } else if (KEY("domain"))
                g->domain = (uint32_t) v;
        else if (KEY("drm_render_minor"))
                g->drm_render_minor = v <= INT_MAX ? (int) v : -1;
        else if (KEY("num_xcc"))
                g->num_xcc = (uint32_t) v;
        else if (KEY("capability")) {
                g->capability = (uint32_t) v;
                g->has_capability = true;
        }
#undef KEY
}

static void parse_properties(const char *path, const char *buf, size_t len, struct qf_diags *diags,
                             struct qf_gpu *g)
{
        unsigned long lineno = 0;
        for (const char *p = buf, *end = buf + len; p < end;) {
                const char *nl = memchr(p, '\n', (size_t) (end - p));
                const char *line_end = nl ? nl : end;
                lineno++;
                const char *sp = memchr(p, ' ', (size_t) (line_end - p));
                uint64_t v;
                struct qf_scan s = { .p = sp ? sp + 1 : line_end, .end = line_end };
                /* unique_id is hex in newer trees; not needed here. */
                if (!sp || !qf_scan_dec(&s, UINT64_MAX, &v) || !qf_scan_at_end(&s)) {
                        if (!(sp && (size_t) (sp - p) == 9 && memcmp(p, "unique_id", 9) == 0))
                                qf_diag_add(diags, path, lineno, "expected \"<name> <decimal value>\"");
                } else {
                        apply_property(g, p, (size_t) (sp - p), v);
                }
                p = line_end + 1;
        }
}

static int read_node(const char *nodes_dir, unsigned node, struct qf_diags *diags, struct qf_gpu *ret)
{
        char path[PATH_MAX];
        uint64_t gpu_id;

        int r = qf_pathf(path, sizeof(path), "%s/%u/gpu_id", nodes_dir, node);
        if (r < 0)
                return r;
        r = qf_read_u64(path, &gpu_id);
        if (r < 0) {
                /* EPERM: the device cgroup hides this GPU (node_show). */
                qf_diag_add(diags, path, 0, "cannot read the node's gpu_id: %s", strerror(-r));
                return r;
        }
        if (gpu_id == 0 || gpu_id > UINT32_MAX)
                return -ENODEV; /* a CPU node */

        struct qf_gpu g = { .node = node, .gpu_id = (uint32_t) gpu_id, .drm_render_minor = -1 };
        char name[sizeof(g.name)];
        size_t len;
        /* Read aside: a failed read leaves part of the file in the buffer,
         * and a name too long for it must be left out, not cut short. */
        r = qf_pathf(path, sizeof(path), "%s/%u/name", nodes_dir, node);
        if (r >= 0)
                r = qf_read_file(path, name, sizeof(name), &len);
        if (r >= 0) {
                while (len > 0 && (name[len - 1] == '\n' || name[len - 1] == ' '))
                        len--;
                memcpy(g.name, name, len);
        } else if (r != -ENOENT) {
                qf_diag_add(diags, path, 0, "cannot read the node's name: %s", strerror(-r));
        }

        _cleanup_free_ char *props = malloc(PROPERTIES_MAX);
        if (!props)
                return -ENOMEM;
        r = qf_pathf(path, sizeof(path), "%s/%u/properties", nodes_dir, node);
        if (r >= 0)
                r = qf_read_file(path, props, PROPERTIES_MAX, &len);
        if (r < 0)
                qf_diag_add(diags, path, 0, "cannot read the node's properties: %s", strerror(-r));
        else
                parse_properties(path, props, len, diags, &g);

        format_gfx(g.gfx_target_version, g.gfx, sizeof(g.gfx));
        *ret = g;
        return 0;
}

static int compare_nodes(const void *a, const void *b)
{
        const struct qf_gpu *x = a, *y = b;
        return (x->node > y->node) - (x->node < y->node);
}

struct gpu_list {
        struct qf_diags *diags;
        struct qf_gpu *gpus;
        size_t n;
};

static int add_node(const char *nodes_dir, uint64_t node, uint64_t ino, void *userdata)
{
        struct gpu_list *l = userdata;
        struct qf_gpu g;

        if (read_node(nodes_dir, (unsigned) node, l->diags, &g) < 0)
                return 0;
        if (l->n >= QF_MAX_GPUS)
                return 1;
        struct qf_gpu *slot = QF_APPEND(l->gpus, l->n);
        if (!slot)
                return -ENOMEM;
        *slot = g;
        return 0;
}

int qf_topology_read(const char *kfd_root, struct qf_diags *diags, struct qf_gpu **ret_gpus, size_t *ret_n)
{
        char nodes_dir[PATH_MAX];
        int r = qf_pathf(nodes_dir, sizeof(nodes_dir), "%s/topology/nodes", kfd_root);
        if (r < 0)
                return r;

        struct gpu_list l = { .diags = diags };
        r = qf_for_each_numbered_entry(nodes_dir, UINT32_MAX, add_node, &l);
        if (r < 0) {
                free(l.gpus);
                return r;
        }
        if (l.n > 1)
                qsort(l.gpus, l.n, sizeof(*l.gpus), compare_nodes);
        *ret_gpus = l.gpus;
        *ret_n = l.n;
        return 0;
}
