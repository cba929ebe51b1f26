/* SPDX-License-Identifier: MIT */
#include "metrics.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/*
 * From the fastest reaction worth telling apart (a wake-up on an idle
 * core is a few µs) to the slowest anyone should see (an HWS preemption
 * is bounded by queue_preemption_timeout_ms, kfd-interface.md §9.5; past a
 * second the node has a problem to page on, not a latency to plot).
 */
const uint64_t metrics_histogram_bounds_ns[METRICS_HISTOGRAM_BUCKETS] = {
        1000,     2500,     5000,      10000,     25000,     50000,     100000,     250000,    500000,
        1000000,  2500000,  5000000,   10000000,  25000000,  100000000, 250000000,  1000000000,
};

void metrics_histogram_observe(struct metrics_histogram *h, uint64_t ns)
{
        /* a linear scan: 17 compares, and the common case ends in the first few */
        for (size_t i = 0; i < METRICS_HISTOGRAM_BUCKETS; i++)
                if (ns <= metrics_histogram_bounds_ns[i]) {
                        h->in_bucket[i]++;
                        break;
                }
        h->count++;
        h->sum_ns += ns;
}

const char *metrics_error_to_string(enum metrics_error e)
{
        static const char *const names[_METRICS_ERROR_MAX] = {
                [METRICS_ERROR_ATTACH] = "attach",
                [METRICS_ERROR_SUSPEND] = "suspend",
                [METRICS_ERROR_RESUME] = "resume",
                [METRICS_ERROR_QUEUE_SCHEDULER] = "queue_scheduler",
                [METRICS_ERROR_SESSION] = "session",
                [METRICS_ERROR_WATCH] = "watch",
        };

        return (unsigned)e < _METRICS_ERROR_MAX ? names[e] : NULL;
}

bool metrics_identity_equal(const struct metrics_identity *a, const struct metrics_identity *b)
{
        if (a->class != b->class || !a->workload != !b->workload)
                return false;
        return !a->workload || strcmp(a->workload, b->workload) == 0;
}

void metrics_process_suspended(struct metrics_process *mp, size_t gpu_index, uint64_t now_us)
{
        mp->gpu[gpu_index].suspensions++;
        /* a suspension of a GPU already suspended (a hold over the policy's) continues the one in progress */
        if (!mp->suspended_since[gpu_index])
                mp->suspended_since[gpu_index] = now_us ? now_us : 1;
}

void metrics_process_resumed(struct metrics_process *mp, size_t gpu_index, uint64_t now_us)
{
        mp->gpu[gpu_index].resumptions++;
        mp->gpu[gpu_index].suspended_us = metrics_process_suspended_us(mp, gpu_index, now_us);
        mp->suspended_since[gpu_index] = 0;
}

void metrics_process_end(struct metrics_process *mp, uint64_t now_us)
{
        for (size_t i = 0; i < METRICS_MAX_GPUS; i++) {
                mp->gpu[i].suspended_us = metrics_process_suspended_us(mp, i, now_us);
                mp->suspended_since[i] = 0;
        }
}

uint64_t metrics_process_suspended_us(const struct metrics_process *mp, size_t gpu_index, uint64_t now_us)
{
        uint64_t since = mp->suspended_since[gpu_index];

        return mp->gpu[gpu_index].suspended_us + (since && now_us > since ? now_us - since : 0);
}

static struct metrics_retired_entry *find_entry(struct metrics_retired *r, const struct metrics_identity *id)
{
        for (size_t i = 0; i < r->n_entries; i++) {
                struct metrics_identity e = { r->entries[i].workload, r->entries[i].class };

                if (metrics_identity_equal(&e, id))
                        return &r->entries[i];
        }
        return NULL;
}

int metrics_retire(struct metrics_retired *r, const struct metrics_identity *id, const struct metrics_process *mp,
                   size_t n_gpus)
{
        struct metrics_retired_entry *e = find_entry(r, id);

        if (!e) {
                struct metrics_retired_entry *grown = realloc(r->entries, (r->n_entries + 1) * sizeof(*grown));
                char *workload = NULL;

                if (!grown)
                        return -ENOMEM;
                r->entries = grown;
                if (id->workload && !(workload = strdup(id->workload)))
                        return -ENOMEM;
                e = &r->entries[r->n_entries++];
                *e = (struct metrics_retired_entry){ .workload = workload, .class = id->class };
        }
        for (size_t i = 0; i < n_gpus && i < METRICS_MAX_GPUS; i++) {
                e->gpu[i].suspensions += mp->gpu[i].suspensions;
                e->gpu[i].resumptions += mp->gpu[i].resumptions;
                e->gpu[i].suspended_us += mp->gpu[i].suspended_us;
                e->on_gpu[i] = e->on_gpu[i] || mp->on_gpu[i];
        }
        return 0;
}

void metrics_retired_done(struct metrics_retired *r)
{
        for (size_t i = 0; i < r->n_entries; i++)
                free(r->entries[i].workload);
        free(r->entries);
        *r = (struct metrics_retired){ 0 };
}
