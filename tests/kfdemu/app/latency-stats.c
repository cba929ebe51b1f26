/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "latency-stats.h"

#define INITIAL_CAPACITY 1024u
#define NS_PER_MS 1e6

int latency_stats_add(struct latency_stats *s, uint64_t latency_ns)
{
        if (s->count == LATENCY_STATS_MAX_SAMPLES) {
                s->dropped++;
                return 0;
        }
        if (s->count == s->capacity) {
                size_t cap = s->capacity ? s->capacity * 2 : INITIAL_CAPACITY;
                uint64_t *p;

                if (cap > LATENCY_STATS_MAX_SAMPLES)
                        cap = LATENCY_STATS_MAX_SAMPLES;
                p = realloc(s->samples_ns, cap * sizeof(*p));
                if (!p)
                        return -ENOMEM;
                s->samples_ns = p;
                s->capacity = cap;
        }
        s->samples_ns[s->count++] = latency_ns;
        return 0;
}

void latency_stats_clear(struct latency_stats *s)
{
        free(s->samples_ns);
        *s = (struct latency_stats){0};
}

uint64_t latency_percentile(const uint64_t *sorted_ns, size_t n, double p)
{
        double rank;
        size_t index;

        if (n == 0)
                return 0;
        /* Nearest rank: the smallest sample with at least p% of all samples
         * at or below it. */
        rank = ceil(p / 100.0 * (double)n);
        index = rank < 1.0 ? 0 : (size_t)rank - 1;
        if (index >= n)
                index = n - 1;
        return sorted_ns[index];
}

static int compare_u64(const void *a, const void *b)
{
        uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

        return (x > y) - (x < y);
}

int latency_summarize(const struct latency_stats *const *stats, size_t n_stats,
                      struct latency_summary *ret)
{
        _cleanup_free_ uint64_t *all = NULL;
        size_t n = 0, total = 0;
        uint64_t dropped = 0;
        double sum = 0;

        for (size_t i = 0; i < n_stats; i++) {
                total += stats[i]->count;
                dropped += stats[i]->dropped;
        }
        if (total > 0) {
                all = malloc(total * sizeof(*all));
                if (!all)
                        return -ENOMEM;
        }
        for (size_t i = 0; i < n_stats; i++) {
                if (stats[i]->count)
                        memcpy(all + n, stats[i]->samples_ns, stats[i]->count * sizeof(*all));
                n += stats[i]->count;
        }
        if (n > 0)
                qsort(all, n, sizeof(*all), compare_u64);
        for (size_t i = 0; i < n; i++)
                sum += (double)all[i];
        *ret = (struct latency_summary){
                .count = n,
                .dropped = dropped,
                .mean_ms = n ? sum / (double)n / NS_PER_MS : 0,
                .p50_ms = (double)latency_percentile(all, n, 50) / NS_PER_MS,
                .p95_ms = (double)latency_percentile(all, n, 95) / NS_PER_MS,
                .p99_ms = (double)latency_percentile(all, n, 99) / NS_PER_MS,
                .max_ms = n ? (double)all[n - 1] / NS_PER_MS : 0,
        };
        return 0;
}
