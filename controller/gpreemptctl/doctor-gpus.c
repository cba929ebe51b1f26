/* SPDX-License-Identifier: MIT */
/*
 * doctor: each GPU of the KFD topology (queue_finder's reader): whether the
 * kernel can debug it at all, whether it debugs per VMID or one process at
 * a time, whether its firmware lets ROCm enable debugging, and the RDNA3
 * CU limit while a session lasts.
 */
#include "doctor.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "fileio.h"
#include "kfd-abi.h"
#include "sources.h"


enum debug_scope {
        SCOPE_NONE,     /* GC before 9.0.1: ENABLE fails with ENODEV (kfd-interface.md §9.2) */
        SCOPE_PER_VMID, /* kfd_dbg_is_per_vmid_supported() */
        SCOPE_ONE_VMID, /* one debug VMID per GPU (§9.3) */
        SCOPE_UNKNOWN,
};

/*
 * The topology gives the ISA's gfx_target_version, the kernel decides by
 * the GC IP version; kfd-interface.md §9.3 lists which gfx_target_version
 * debugs per VMID (kfd_dbg_is_per_vmid_supported) and which has one debug
 * VMID.
 */
static enum debug_scope debug_scope(uint32_t gfx_target_version)
{
        if (gfx_target_version < 90000)
                return SCOPE_NONE;
        if (gfx_target_version == 90010 || (gfx_target_version >= 90400 && gfx_target_version <= 90402) ||
            gfx_target_version == 90500 || gfx_target_version >= 110000)
                return SCOPE_PER_VMID;
        if (gfx_target_version <= 90012 || (gfx_target_version >= 100000 && gfx_target_version < 110000))
                return SCOPE_ONE_VMID;
        return SCOPE_UNKNOWN;
}

/* kfd_dbg_has_cwsr_workaround: GC 11.0.0-11.0.3, i.e. gfx1100-gfx1102, and gfx1103 when it is GC 11.0.1
 * rather than 11.0.4, which the topology does not tell apart (kfd-interface.md §9.4). */
static bool has_cwsr_workaround(uint32_t gfx_target_version)
{
        return gfx_target_version >= 110000 && gfx_target_version <= 110003;
}

static void check_gpu(struct doctor *d, const struct qf_gpu *g)
{
        enum debug_scope scope = debug_scope(g->gfx_target_version);
        bool firmware = g->has_capability && (g->capability & GP_KFD_CAP_TRAP_DEBUG_FIRMWARE_SUPPORTED);
        struct doctor_check *c;
        char what[160];

        /* "gfx942 (topology node 1)", or with the node's own name when it says more */
        if (g->name[0] && strcmp(g->name, g->gfx) != 0)
                snprintf(what, sizeof(what), "%.63s (%s, topology node %u)", g->name, g->gfx, g->node);
        else
                snprintf(what, sizeof(what), "%s (topology node %u)", g->gfx, g->node);
        if (scope == SCOPE_NONE) {
                c = doctor_add(d, "gpu", DOCTOR_FAILED,
                               "%s, gfx_target_version %u, is older than GC 9, which the kernel cannot debug: no queue "
                               "on it can be suspended",
                               what, g->gfx_target_version);
                doctor_advise(c, "run offline work on GPUs from gfx9 (Vega, MI50) on");
        } else if (g->has_capability && !firmware) {
                d->debug_firmware_missing = true;
                c = doctor_add(d, "gpu", DOCTOR_FAILED,
                               "%s: its firmware lacks debugger support (capability bit "
                               "TRAP_DEBUG_FIRMWARE_SUPPORTED), so ROCm's runtime enables debugging in no process on "
                               "this node and none can be suspended",
                               what);
                doctor_advise(c, "install GPU firmware with debugger support (a newer linux-firmware or amdgpu "
                                 "driver release)");
        } else if (scope == SCOPE_ONE_VMID) {
                c = doctor_add(d, "gpu", DOCTOR_WARNING,
                               "%s has one debug VMID: one process on it can be suspended at a "
                               "time; a second one gets the state enabled-busy and cannot be",
                               what);
                doctor_advise(c, "run at most one offline process on this GPU (per-VMID debugging needs MI200, "
                                 "MI300 or RDNA3 and later)");
        } else if (scope == SCOPE_UNKNOWN) {
                c = doctor_add(d, "gpu", DOCTOR_WARNING,
                               "%s, gfx_target_version %u: gpreempt does not know whether this GPU debugs per VMID",
                               what, g->gfx_target_version);
                doctor_advise(c, "if it has one debug VMID, run at most one offline process on it");
        } else if (has_cwsr_workaround(g->gfx_target_version)) {
                c = doctor_add(d, "gpu", DOCTOR_WARNING,
                               "%s debugs per VMID, but on GC 11.0.0-11.0.3 (gfx1103 may be 11.0.4, "
                               "which is spared) the kernel limits the queues of a process under a debug "
                               "session to about half the CUs",
                               what);
                doctor_advise(c, "expect offline processes to run slower while gpreemptd manages them");
        } else {
                c = doctor_add(d, "gpu", DOCTOR_OK,
                               "%s debugs per VMID: every process on it can be suspended%s",
                               what,
                               firmware ? "; its firmware supports debugging" : "");
        }
        if (c)
                c->gpu_id = g->gpu_id;
}

void doctor_check_gpus(struct doctor *d)
{
        char kfd_root[PATH_MAX];
        struct qf_diags diags = { 0 };
        _cleanup_free_ struct qf_gpu *gpus = NULL;
        struct doctor_check *c;
        size_t n = 0;
        int r;

        r = qf_pathf(kfd_root, sizeof(kfd_root), "%s/class/kfd/kfd", d->paths.sysfs_root);
        if (r >= 0)
                r = qf_topology_read(kfd_root, &diags, &gpus, &n);
        if (r < 0) {
                c = doctor_add(d, "gpus", DOCTOR_FAILED, "cannot read the KFD topology in %s/topology: %s", kfd_root,
                               strerror(-r));
                doctor_advise(c, r == -ENOENT ? "load the amdgpu driver on a node with an AMD GPU"
                                              : "check the permissions of /sys/class/kfd");
        } else if (n == 0) {
                /* node_show answers EPERM for a GPU the device cgroup denies (kfd-interface.md §8.2) */
                c = doctor_add(d, "gpus", DOCTOR_FAILED, "the KFD topology lists no GPU%s",
                               diags.n ? " this process may see (its device cgroup may hide them)" : "");
                doctor_advise(c, "check that amdgpu drives an AMD GPU (dmesg | grep amdgpu), and that the device "
                                 "cgroup allows the render nodes (DeviceAllow=char-drm)");
        }
        for (size_t i = 0; i < n; i++)
                check_gpu(d, &gpus[i]);
        qf_diags_clear(&diags);
}
