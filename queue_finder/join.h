/* SPDX-License-Identifier: MIT */
/*
 * Joining the sources into one view per process and per queue.
 *
 * Join keys (tests/data/real/README.md, kfd-interface.md §7-8,
 * rocm-userspace.md §5-6):
 *   sysfs ↔ snapshot           queue id
 *   snapshot/mqds ↔ mqds/hqds  ring base (CP: PQ_BASE << 8, SDMA: RB_BASE << 8)
 *                              and the read-pointer address (CP: rptr report,
 *                              SDMA: rptr write-back); wptr-poll addresses
 *   log ↔ the rest             ">= 6.2 HWq" = ring base; SWq and "<= 6.1
 *                              created hardware queue" = amd_queue_t VA =
 *                              rptr address - 0x80 = wptr address - 0x38
 *   sysfs ↔ mqds without a snapshot: only gpu id and ring size, used when
 *                              exactly one candidate is left
 * Every value remembers which sources reported it; a source that disagrees
 * with an earlier one is recorded as a conflict, never silently dropped.
 */
#pragma once

#include "qf-diag.h"
#include "nspid.h"
#include "sources.h"

enum qf_source {
        QF_SOURCE_SYSFS = 1 << 0,
        QF_SOURCE_SNAPSHOT = 1 << 1,
        QF_SOURCE_MQDS = 1 << 2,
        QF_SOURCE_HQDS = 1 << 3,
        QF_SOURCE_LOG = 1 << 4,
};
#define QF_SOURCE_COUNT 5

/* Stable names used in the table and the JSON output. */
const char *qf_source_name(enum qf_source s);
/* "sysfs<sep>mqds<sep>..." for a set of enum qf_source bits. */
void qf_sources_format(unsigned sources, const char *sep, char *buf, size_t size);

/* ROCr's amd_queue_t: read_dispatch_id at 0x80, write_dispatch_id at 0x38
 * (amd_hsa_queue.h; rocm-userspace.md §5). */
#define QF_AMD_QUEUE_READ_DISPATCH_ID 0x80
#define QF_AMD_QUEUE_WRITE_DISPATCH_ID 0x38

struct qf_value {
        uint64_t v;
        unsigned sources;    /* enum qf_source bits; 0 = nobody said */
};

struct qf_queue {
        unsigned sources;
        struct qf_value queue_id, gpu_id, ring_base, rptr_addr, wptr_addr, ring_size, amd_queue, doorbell_offset;
        bool has_sysfs_type;
        uint32_t sysfs_type;
        const struct qf_snapshot_queue *snapshot;
        const struct qf_mqd_queue *mqd;
        const struct qf_log_queue *log;
        const struct qf_hqd **hqds;  /* slots holding this queue, one per XCC */
        size_t n_hqds;
        bool paired_by_size;         /* sysfs and mqds joined on gpu id + size only */
};

struct qf_process {
        bool has_pid;                /* false: log queues no line tied to a process */
        pid_t pid;                   /* host pid, when has_pid */
        bool has_pasid;
        uint32_t pasid;
        const struct qf_sysfs_process *sysfs;
        struct qf_queue *queues;
        size_t n_queues;
        struct qf_diags conflicts;   /* file:line of the source that disagreed */
        /* filled by the caller, for output */
        pid_t nspid[QF_NSPID_MAX_LEVELS];
        size_t n_nspid;
        bool has_pid_ns;
        struct qf_pid_ns pid_ns;
        bool has_exe;
        char exe[256];
};

struct qf_inputs {
        const struct qf_sysfs_process *sysfs;
        size_t n_sysfs;
        const struct qf_snapshot *snapshots;
        size_t n_snapshots;
        const struct qf_mqds *mqds;
        const char *mqds_name;
        const struct qf_hqds *hqds;
        const struct qf_log *log;
        const char *log_name;
        const pid_t *pids;           /* only these processes; all when n_pids is 0 */
        size_t n_pids;
};

struct qf_result {
        struct qf_process *processes;
        size_t n_processes;
        const struct qf_hqd **unowned_hqds; /* active CP slots no known queue explains */
        size_t n_unowned_hqds;
        /* SDMA slots with RB_ENABLE set, whether a known queue explains them
         * or not: the bit outlives the queue */
        const struct qf_hqd **enabled_sdma_hqds;
        size_t n_enabled_sdma_hqds;
};

/* The result points into the inputs, which must outlive it. */
int qf_join(const struct qf_inputs *in, struct qf_result *ret);
void qf_result_clear(struct qf_result *r);
