/* SPDX-License-Identifier: MIT */
/*
 * The daemon's own counters for io.gpreempt.Metrics (api-metrics.c): what
 * the loop observed, kept as plain integers in memory that already exists
 * when the observation is made, on the loop's thread alone (the preemption
 * worker's stamps come back in its reports): no lock, no allocation, no
 * I/O. Everything that allocates (retiring a finished
 * process's counts, naming a GPU) happens off that path.
 *
 * Which process counts under which labels is its struct metrics_identity,
 * made in one place (manager.c: process_metrics_identity()).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cluster-identity.h"
#include "policy-params.h"

/* The most GPUs a daemon tracks (manager.h checks that they agree). */
#define METRICS_MAX_GPUS 64
/* Histogram bounds: 1 µs to 1 s, roughly ×2.5 a step (metrics.c). */
#define METRICS_HISTOGRAM_BUCKETS 17

/* Observations in nanoseconds; each bucket counts those up to its bound (not cumulative). */
struct metrics_histogram {
        uint64_t in_bucket[METRICS_HISTOGRAM_BUCKETS]; /* past the last bound: count minus their sum */
        uint64_t count;
        uint64_t sum_ns;
};

/* Each bucket's upper bound in ns, in increasing order. */
extern const uint64_t metrics_histogram_bounds_ns[METRICS_HISTOGRAM_BUCKETS];

void metrics_histogram_observe(struct metrics_histogram *h, uint64_t ns);

/* The stages of a reaction to online work, each its own histogram. */
enum metrics_reaction_stage {
        METRICS_REACTION_SEEN_TO_ISSUED,     /* the detector saw the store → the worker entered the first SUSPEND_QUEUES */
        METRICS_REACTION_ISSUED_TO_RETURNED, /* entered → that call returned */
        _METRICS_REACTION_STAGE_MAX,
};

enum metrics_call {
        METRICS_CALL_SUSPEND,
        METRICS_CALL_RESUME,
        _METRICS_CALL_MAX,
};

/* What went wrong, by kind (gpreempt_errors_total{kind}). */
enum metrics_error {
        METRICS_ERROR_ATTACH,            /* a session could not be started */
        METRICS_ERROR_SUSPEND,           /* SUSPEND_QUEUES failed */
        METRICS_ERROR_RESUME,            /* RESUME_QUEUES failed (the session is then ended) */
        METRICS_ERROR_QUEUE_SCHEDULER,   /* queues the hardware scheduler flagged with ERROR */
        METRICS_ERROR_SESSION,           /* the session's own work: debug events, ptrace stops, new queues */
        METRICS_ERROR_WATCH,             /* an online process's queues could not be read or watched */
        _METRICS_ERROR_MAX,
};

const char *metrics_error_to_string(enum metrics_error e);

/* A GPU's own counters, beside its policy (struct gpu in manager.h). */
struct metrics_gpu {
        struct metrics_histogram reaction[_METRICS_REACTION_STAGE_MAX];
        struct metrics_histogram call[_METRICS_CALL_MAX];
        /* online queues unmapped and mapped again by a device-wide suspend or resume */
        uint64_t collateral_preemptions;
        /* online queues watched there now; what a device-wide preemption takes with it */
        uint32_t online_queues;
        /* false on a GPU the kernel runs with MES: its suspensions preempt no one else (kfd-interface.md §9.5) */
        bool device_wide_preemption;
        char name[128];
};

/* What one process's suspensions on one GPU amounted to. */
struct metrics_transitions {
        uint64_t suspensions;
        uint64_t resumptions;
        uint64_t suspended_us; /* closed suspensions; the one in progress is in suspended_since */
};

/*
 * The labels a process's counts are kept under. No PID: a series per
 * process would grow without bound on a busy node (Metrics can add one on
 * request). The process's cluster job (Slurm job, Kubernetes pod) is one:
 * a series per job that ran, which metrics_retired_expire() bounds.
 */
struct metrics_identity {
        char *workload; /* NULL: registered by hand (gpreemptctl register) */
        enum workload_class class;
        enum cluster_kind cluster_kind;
        char *cluster_id;   /* NULL for CLUSTER_KIND_NONE */
        char *cluster_name; /* NULL when the job has none */
};

/*
 * The longest label value made from a process's cluster identity, in bytes.
 * A Slurm job's name is its user's to choose; past this it is cut (at a
 * character's boundary), as Prometheus's label_value_length_limit would
 * otherwise refuse the whole scrape.
 */
#define METRICS_LABEL_VALUE_MAX 128

/*
 * An identity of its own (the strings copied) from the given parts: the
 * cluster's strings made label values, valid UTF-8 (a byte that is not
 * becomes U+FFFD) of at most METRICS_LABEL_VALUE_MAX bytes. Returns 0 or
 * -ENOMEM.
 */
int metrics_identity_make(const char *workload, enum workload_class class, const struct cluster_identity *cluster,
                          struct metrics_identity *ret);
/* A copy of an identity metrics_identity_make() made. Returns 0 or -ENOMEM. */
int metrics_identity_copy(const struct metrics_identity *id, struct metrics_identity *ret);
void metrics_identity_done(struct metrics_identity *id);
bool metrics_identity_equal(const struct metrics_identity *a, const struct metrics_identity *b);

/* A tracked process's counts, per GPU by the manager's index of the GPU. */
struct metrics_process {
        struct metrics_transitions gpu[METRICS_MAX_GPUS];
        bool on_gpu[METRICS_MAX_GPUS]; /* it had queues there: its series exist, zeros too */
        uint64_t suspended_since[METRICS_MAX_GPUS]; /* 0: not suspended there */
};

void metrics_process_suspended(struct metrics_process *mp, size_t gpu_index, uint64_t now_us);
void metrics_process_resumed(struct metrics_process *mp, size_t gpu_index, uint64_t now_us);
/* Ends every suspension in progress (the session ended: the kernel resumed them). */
void metrics_process_end(struct metrics_process *mp, uint64_t now_us);
/* Time suspended on a GPU, the suspension in progress included. */
uint64_t metrics_process_suspended_us(const struct metrics_process *mp, size_t gpu_index, uint64_t now_us);

/*
 * The counts of processes that are gone, added up per identity, so that a
 * counter does not go back when a process exits. Identities without a
 * cluster job are kept for the daemon's life: workloads are few, and a
 * reload that renames them adds a few. A cluster job's entry is dropped
 * once the job has had no process for METRICS_RETIRED_JOB_KEEP_US (its
 * series then end, after Prometheus scraped their last values), and the
 * oldest job's first while ended jobs have more than
 * METRICS_RETIRED_JOB_SERIES_MAX series (a job's on each GPU it used): the
 * whole Metrics reply must fit in one Varlink message (256 KiB), and a
 * job's three series on a GPU take up to ~950 bytes of it with a name of
 * METRICS_LABEL_VALUE_MAX bytes, so these take at most ~120 KiB.
 */
#define METRICS_RETIRED_JOB_KEEP_US (15ULL * 60 * 1000000)
#define METRICS_RETIRED_JOB_SERIES_MAX 128

struct metrics_retired_entry {
        struct metrics_identity id; /* owned */
        struct metrics_transitions gpu[METRICS_MAX_GPUS];
        bool on_gpu[METRICS_MAX_GPUS]; /* a process of it had queues there: its series exist, zeros too */
        uint64_t retired_at_us;         /* when its last process was retired into it */
};

struct metrics_retired {
        struct metrics_retired_entry *entries;
        size_t n_entries;
};

/* Adds a finished process's counts under its identity at now_us. Returns 0 or -ENOMEM (the counts are then lost). */
int metrics_retire(struct metrics_retired *r, const struct metrics_identity *id, const struct metrics_process *mp,
                   size_t n_gpus, uint64_t now_us);

/* Whether a live process counts under id: its job's entry must stay, or its series would go back. */
typedef bool (*metrics_identity_live_fn)(const struct metrics_identity *id, void *userdata);

/*
 * Drops the entries of cluster jobs that no live process counts under and
 * that were retired into more than METRICS_RETIRED_JOB_KEEP_US before now_us,
 * then the oldest such jobs' while the jobs' series number more than
 * METRICS_RETIRED_JOB_SERIES_MAX. Returns how many entries were dropped.
 */
size_t metrics_retired_expire(struct metrics_retired *r, uint64_t now_us, metrics_identity_live_fn live,
                              void *userdata);
void metrics_retired_done(struct metrics_retired *r);
