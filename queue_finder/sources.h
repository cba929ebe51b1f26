/* SPDX-License-Identifier: MIT */
/*
 * What each source of queue information yields, before joining.
 *
 * Each reader fills one of these plain structures from one source; none of
 * them knows about the others. join.h combines them per process and queue.
 * Facts about the formats: docs/reference/kfd-interface.md §8 and
 * docs/reference/rocm-userspace.md §6-8.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "qf-diag.h"

/* Limits on what one input may make us allocate. KFD caps a process at 1024
 * queues (KFD_MAX_NUM_OF_QUEUES_PER_PROCESS); a node has at most a few
 * hundred HQD slots per GPU. Beyond these an input is junk and is cut with a
 * warning. */
#define QF_MAX_PROCESSES 4096
#define QF_MAX_QUEUES_PER_PROCESS 1024
#define QF_MAX_XCC 16
#define QF_MAX_GPUS 256
#define QF_MAX_HQDS (QF_MAX_GPUS * 256)
#define QF_MAX_LOG_QUEUES 65536

/* ---- /sys/class/kfd/kfd/proc/<pid>/ (sysfs.c) ---- */

/* The kernel's internal enum kfd_queue_type as `queues/<id>/type` prints it,
 * not the ioctl enum. Values above HIQ moved when DIQ was removed (2025),
 * so they are reported as numbers. */
enum qf_sysfs_queue_type {
        QF_SYSFS_QUEUE_COMPUTE = 0,
        QF_SYSFS_QUEUE_SDMA = 1,
        QF_SYSFS_QUEUE_HIQ = 2,
};

struct qf_sysfs_queue {
        uint32_t queue_id;
        uint32_t gpu_id;
        uint64_t size;       /* ring size in bytes */
        uint32_t type;       /* enum qf_sysfs_queue_type or a newer value */
};

struct qf_cu_occupancy {
        uint32_t gpu_id;
        int64_t cus;
};

struct qf_sysfs_process {
        pid_t pid;           /* host (initial namespace) pid */
        bool has_pasid;
        uint32_t pasid;
        struct qf_sysfs_queue *queues;
        size_t n_queues;
        struct qf_cu_occupancy *occupancy;
        size_t n_occupancy;
};

/* kfd_root is the directory holding proc/ and topology/, normally
 * /sys/class/kfd/kfd. -ENOENT when the process has no KFD directory. */
int qf_sysfs_read_process(const char *kfd_root, pid_t pid, struct qf_diags *diags,
                          struct qf_sysfs_process *ret);
/* A directory under proc/ as the listing names it. */
struct qf_sysfs_listed_process {
        pid_t pid;
        /* The inode number of proc/<pid>/ (d_ino; stat's st_ino on sysfs):
         * which KFD process it is, since an exec'd process that opens
         * /dev/kfd again gets a new directory under the same pid. */
        uint64_t dir_ino;
};

/* Every directory under proc/, sorted by pid. */
int qf_sysfs_list_processes(const char *kfd_root, struct qf_sysfs_listed_process **ret_listed, size_t *ret_n);
/* Every pid with a directory under proc/, sorted. */
int qf_sysfs_list_pids(const char *kfd_root, pid_t **ret_pids, size_t *ret_n);
void qf_sysfs_process_clear(struct qf_sysfs_process *p);

/* ---- /sys/class/kfd/kfd/topology/nodes/<n>/ (topology.c, gpu-name.c) ---- */

struct qf_gpu {
        unsigned node;               /* topology node number, not the gpu_id */
        uint32_t gpu_id;
        char name[64];               /* nodes/<n>/name */
        char gfx[16];                /* "gfx942", from gfx_target_version */
        uint32_t gfx_target_version;
        uint32_t vendor_id, device_id;
        uint32_t domain;
        uint8_t bus, dev, fn;
        bool has_location;
        int drm_render_minor;        /* -1 when the node has none */
        uint32_t num_xcc;            /* 0 when the kernel does not say */
        uint32_t capability;         /* HSA_CAP_* bits (kfd-interface.md §8.2) */
        bool has_capability;
        char marketing_name[128];
        bool marketing_name_from_libdrm;
};

/* Reads every GPU node (gpu_id != 0); CPU nodes are skipped. */
int qf_topology_read(const char *kfd_root, struct qf_diags *diags, struct qf_gpu **ret_gpus,
                     size_t *ret_n);
/* Fills gpu->marketing_name from libdrm_amdgpu through the render node, or
 * with "AMD GPU <gfx> [1002:<device>] <domain:bus:dev.fn>" when there is no
 * render node or amdgpu.ids does not know the device. */
void qf_gpu_name_resolve(struct qf_gpu *gpu);

/* ---- debugfs kfd/mqds (debugfs-mqds.c) ---- */

enum qf_mqd_kind {
        QF_MQD_COMPUTE,
        QF_MQD_SDMA,
        QF_MQD_DIQ,
};

struct qf_mqd_queue {
        pid_t pid;                   /* tgid from "Process <tgid> ..." */
        enum qf_mqd_kind kind;
        uint32_t gpu_id;
        unsigned n_xcc;              /* MQD copies: one per XCC on multi-XCC parts */
        uint32_t active_mask;        /* bit x: cp_hqd_active set in copy x */
        bool has_addresses;          /* the dump reached the address dwords */
        uint64_t ring_base;
        uint64_t rptr_addr;          /* user read-pointer VA */
        uint64_t wptr_addr;          /* user write-pointer VA */
        uint32_t doorbell_offset;    /* compute only */
        uint64_t ring_size;          /* bytes, from cp_hqd_pq_control; 0 if unknown */
        unsigned long line;          /* header line in the dump */
};

struct qf_mqds {
        struct qf_mqd_queue *queues;
        size_t n;
};

/* name is used in diagnostics only. */
int qf_mqds_parse(int fd, const char *name, struct qf_diags *diags, struct qf_mqds *ret);
void qf_mqds_clear(struct qf_mqds *m);

/* ---- debugfs kfd/hqds (debugfs-hqds.c) ---- */

enum qf_hqd_kind {
        QF_HQD_HIQ,
        QF_HQD_CP,
        QF_HQD_SDMA,
};

struct qf_hqd_reg {
        uint32_t address;            /* byte address, as dumped */
        uint32_t value;
};

struct qf_hqd {
        unsigned node;
        uint32_t gpu_id;
        enum qf_hqd_kind kind;
        unsigned inst;               /* XCC instance (HIQ, CP) */
        unsigned mec, pipe, queue;   /* mec for HIQ only */
        unsigned engine, rlc;        /* SDMA only */
        bool active;                 /* CP/HIQ: CP_HQD_ACTIVE; SDMA: RB_ENABLE (may be stale) */
        /* The registers below were decoded: CP and HIQ slots with a complete
         * dump, SDMA slots whose dump has a verified register layout. */
        bool has_addresses;
        uint64_t ring_base;
        uint64_t rptr_addr;          /* CP: rptr report address; SDMA: rptr write-back address */
        uint64_t wptr_addr;          /* wptr poll address */
        uint32_t doorbell_offset;
        /* SDMA only, with has_addresses */
        uint64_t rptr, wptr;         /* RB_RPTR, RB_WPTR: byte offsets into the ring */
        bool doorbell_enabled;
        /* SDMA slots without has_addresses: the registers as dumped */
        struct qf_hqd_reg *raw;
        size_t n_raw;
        uint32_t reg_base;           /* byte address of the first dumped register */
        unsigned long line;
};

struct qf_hqd_node {
        unsigned node;
        uint32_t gpu_id;
        bool stopped;                /* " Device is stopped" */
};

struct qf_hqds {
        struct qf_hqd *hqds;
        size_t n;
        struct qf_hqd_node *nodes;
        size_t n_nodes;
};

int qf_hqds_parse(int fd, const char *name, struct qf_diags *diags, struct qf_hqds *ret);
void qf_hqds_clear(struct qf_hqds *h);

/* ---- HIP/CLR AMD_LOG_LEVEL logs (amdlog.c) ---- */

/* Which line prefix the log uses (rocm-userspace.md §6). */
enum qf_log_prefix {
        QF_LOG_PREFIX_NONE,          /* no ids in the prefix (clr at level 3) */
        QF_LOG_PREFIX_TID,           /* 4.5, some lines: "[<tid>]" */
        QF_LOG_PREFIX_ROCCLR,        /* 4.5-5.6: "<pid>: [<tid>]", "<pid> : [tid:0x<tid>]" */
        QF_LOG_PREFIX_CLR,           /* clr: "[pid:<pid> tid: 0x<tid>]" */
};

/* What a pre-6.2 dispatch line's "HWq=" is depends on the version: the
 * hsa_queue_t* (amd_queue_t VA) in 5.2.3, the ring base in 5.6-6.1. When the
 * log does not tie it to a creation line, it is kept as "legacy_hwq" and the
 * join tries both meanings. */
struct qf_log_queue {
        bool has_pid;                /* false: no line of the queue named its process */
        pid_t pid;
        bool has_amd_queue;          /* hsa_queue_t* = amd_queue_t VA */
        uint64_t amd_queue;
        bool has_ring_base;          /* AQL ring base */
        uint64_t ring_base;
        bool has_legacy_hwq;
        uint64_t legacy_hwq;
        bool has_rocr_id;            /* ROCr's hsa_queue.id (not the KFD queue id) */
        uint64_t rocr_id;
        bool has_size;
        uint64_t size_packets;       /* "with size %d" */
        int priority;                /* -1 unknown */
        int cooperative;             /* -1 unknown */
        bool created_62;             /* "Created SWq=.. HWq=.." (ROCm >= 6.2) */
        unsigned long created_line;  /* 0 when the log does not show the creation */
        unsigned long deleted_line;  /* "Deleting hardware queue" after the last creation: gone; 0 if not */
        uint64_t dispatches;         /* kernel dispatch packets */
        uint64_t barriers;           /* barrier packets */
        unsigned long first_line, last_line;
        bool has_pointers;
        uint64_t last_rptr, last_wptr;
        uint64_t max_refcount;
        uint64_t last_tid;
        char last_kernel[96];        /* ShaderName before the last dispatch, truncated */
};

struct qf_log {
        struct qf_log_queue *queues;
        size_t n;
        unsigned long lines;
        unsigned long log_lines;     /* lines starting with a level tag, ":3:" */
        unsigned long unmarked_pid_lines; /* queue lines given to *unmarked_pid */
        enum qf_log_prefix prefix;   /* of the last prefixed line read for its message */
};

/* Streams fd once in constant memory (plus one record per queue found).
 * Lines that name no process belong to *unmarked_pid, or to no known
 * process when it is NULL; a thread id never ties a line to a process.
 * Lines whose ids are damaged belong to no known process. */
int qf_log_parse(int fd, const char *name, const pid_t *unmarked_pid, struct qf_diags *diags, struct qf_log *ret);
void qf_log_clear(struct qf_log *l);

/* ---- the debug-trap queue snapshot (snapshot.c, needs libgpreempt) ---- */

struct qf_snapshot_queue {
        uint32_t queue_id;
        uint32_t gpu_id;
        uint32_t queue_type;         /* ioctl enum: 0 PM4, 1 SDMA, 2 AQL, 3 SDMA_XGMI */
        uint64_t ring_base;
        uint64_t ring_size;
        uint64_t rptr_addr;
        uint64_t wptr_addr;
        bool has_indices;            /* read through process_vm_readv */
        uint64_t read_index, write_index;
        uint64_t exception_status;   /* KFD_EC_MASK bits raised on the queue */
};

struct qf_snapshot {
        pid_t pid;
        unsigned runtime_state;      /* enum gp_runtime_state at the attach */
        struct qf_snapshot_queue *queues;
        size_t n;
};
