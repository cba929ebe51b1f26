/* SPDX-License-Identifier: MIT */
/* Per-request latency samples and their percentiles. */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* One worker keeps at most this many samples (32 MiB); later ones are
 * counted in `dropped` so a report never silently hides them. */
#define LATENCY_STATS_MAX_SAMPLES (1u << 22)

struct latency_stats {
        uint64_t *samples_ns;
        size_t count;
        size_t capacity;
        uint64_t dropped;
};

struct latency_summary {
        uint64_t count;          /* samples the figures below are computed from */
        uint64_t dropped;
        double mean_ms;
        double p50_ms, p95_ms, p99_ms, max_ms;
};

/* -ENOMEM if memory runs out; a full store counts the sample as dropped. */
int latency_stats_add(struct latency_stats *stats, uint64_t latency_ns);
void latency_stats_clear(struct latency_stats *stats);

/* Nearest-rank percentile (0 < p <= 100) of sorted samples; 0 when n == 0. */
uint64_t latency_percentile(const uint64_t *sorted_ns, size_t n, double p);

/* Summarises the union of several stores (workers). */
int latency_summarize(const struct latency_stats *const *stats, size_t n_stats,
                      struct latency_summary *ret);
