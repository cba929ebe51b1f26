/* SPDX-License-Identifier: MIT */
#include "metrics.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "utf8.h"

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

/* s as a label value of its own (see metrics_identity_make()); NULL for NULL, and when out of memory. */
static char *label_value_dup(const char *s)
{
        static const char replacement[] = "\xef\xbf\xbd"; /* U+FFFD */
        size_t len = strlen(s), n = 0;
        char *out = malloc(METRICS_LABEL_VALUE_MAX + 1);

        if (!out)
                return NULL;
        for (size_t i = 0; i < len;) {
                uint32_t cp;
                size_t seq = utf8_sequence(s + i, len - i, &cp);
                const char *bytes = seq ? s + i : replacement;
                size_t bytes_len = seq ? seq : sizeof(replacement) - 1;

                if (n + bytes_len > METRICS_LABEL_VALUE_MAX)
                        break;
                memcpy(out + n, bytes, bytes_len);
                n += bytes_len;
                i += seq ? seq : 1;
        }
        out[n] = 0;
        return out;
}

static int dup_or_null(const char *s, char *(*dup)(const char *), char **ret)
{
        *ret = NULL;
        if (s && !(*ret = dup(s)))
                return -ENOMEM;
        return 0;
}

int metrics_identity_make(const char *workload, enum workload_class class, const struct cluster_identity *cluster,
                          struct metrics_identity *ret)
{
        struct metrics_identity id = { .class = class, .cluster_kind = cluster->kind };

        if (dup_or_null(workload, strdup, &id.workload) < 0 ||
            dup_or_null(cluster->kind != CLUSTER_KIND_NONE ? cluster->id : NULL, label_value_dup, &id.cluster_id) < 0 ||
            dup_or_null(cluster->kind != CLUSTER_KIND_NONE && cluster->name[0] ? cluster->name : NULL, label_value_dup,
                        &id.cluster_name) < 0) {
                metrics_identity_done(&id);
                return -ENOMEM;
        }
        *ret = id;
        return 0;
}

int metrics_identity_copy(const struct metrics_identity *id, struct metrics_identity *ret)
{
        struct metrics_identity copy = { .class = id->class, .cluster_kind = id->cluster_kind };

        /* the values are label values already: copied as they are */
        if (dup_or_null(id->workload, strdup, &copy.workload) < 0 ||
            dup_or_null(id->cluster_id, strdup, &copy.cluster_id) < 0 ||
            dup_or_null(id->cluster_name, strdup, &copy.cluster_name) < 0) {
                metrics_identity_done(&copy);
                return -ENOMEM;
        }
        *ret = copy;
        return 0;
}

void metrics_identity_done(struct metrics_identity *id)
{
        free(id->workload);
        free(id->cluster_id);
        free(id->cluster_name);
        *id = (struct metrics_identity){ 0 };
}

static bool same_string(const char *a, const char *b)
{
        return !a == !b && (!a || strcmp(a, b) == 0);
}

bool metrics_identity_equal(const struct metrics_identity *a, const struct metrics_identity *b)
{
        return a->class == b->class && a->cluster_kind == b->cluster_kind && same_string(a->workload, b->workload) &&
               same_string(a->cluster_id, b->cluster_id) && same_string(a->cluster_name, b->cluster_name);
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
        for (size_t i = 0; i < r->n_entries; i++)
                if (metrics_identity_equal(&r->entries[i].id, id))
                        return &r->entries[i];
        return NULL;
}

int metrics_retire(struct metrics_retired *r, const struct metrics_identity *id, const struct metrics_process *mp,
                   size_t n_gpus, uint64_t now_us)
{
        struct metrics_retired_entry *e = find_entry(r, id);

        if (!e) {
                struct metrics_retired_entry *grown = realloc(r->entries, (r->n_entries + 1) * sizeof(*grown));
                struct metrics_identity copy;

                if (!grown)
                        return -ENOMEM;
                r->entries = grown;
                if (metrics_identity_copy(id, &copy) < 0)
                        return -ENOMEM;
                e = &r->entries[r->n_entries++];
                *e = (struct metrics_retired_entry){ .id = copy };
        }
        for (size_t i = 0; i < n_gpus && i < METRICS_MAX_GPUS; i++) {
                e->gpu[i].suspensions += mp->gpu[i].suspensions;
                e->gpu[i].resumptions += mp->gpu[i].resumptions;
                e->gpu[i].suspended_us += mp->gpu[i].suspended_us;
                e->on_gpu[i] = e->on_gpu[i] || mp->on_gpu[i];
        }
        e->retired_at_us = now_us;
        return 0;
}

/* A job's series: one per GPU it had queues on. */
static size_t entry_series(const struct metrics_retired_entry *e)
{
        size_t n = 0;

        if (e->id.cluster_kind == CLUSTER_KIND_NONE)
                return 0;
        for (size_t i = 0; i < METRICS_MAX_GPUS; i++)
                n += e->on_gpu[i];
        return n;
}

static void drop_entry(struct metrics_retired *r, size_t i)
{
        metrics_identity_done(&r->entries[i].id);
        memmove(&r->entries[i], &r->entries[i + 1], (r->n_entries - i - 1) * sizeof(r->entries[0]));
        r->n_entries--;
}

/* Whether entry i is a job's that may go: no live process counts under it. */
static bool job_entry_droppable(const struct metrics_retired *r, size_t i, metrics_identity_live_fn live,
                                void *userdata)
{
        return r->entries[i].id.cluster_kind != CLUSTER_KIND_NONE && !live(&r->entries[i].id, userdata);
}

size_t metrics_retired_expire(struct metrics_retired *r, uint64_t now_us, metrics_identity_live_fn live,
                              void *userdata)
{
        size_t dropped = 0, n_series = 0;

        for (size_t i = 0; i < r->n_entries;) {
                if (job_entry_droppable(r, i, live, userdata) && now_us > r->entries[i].retired_at_us &&
                    now_us - r->entries[i].retired_at_us > METRICS_RETIRED_JOB_KEEP_US) {
                        drop_entry(r, i);
                        dropped++;
                        continue;
                }
                n_series += entry_series(&r->entries[i]);
                i++;
        }
        while (n_series > METRICS_RETIRED_JOB_SERIES_MAX) {
                size_t oldest = SIZE_MAX;

                for (size_t i = 0; i < r->n_entries; i++)
                        if (job_entry_droppable(r, i, live, userdata) &&
                            (oldest == SIZE_MAX || r->entries[i].retired_at_us < r->entries[oldest].retired_at_us))
                                oldest = i;
                if (oldest == SIZE_MAX)
                        break; /* every job left has a live process */
                n_series -= entry_series(&r->entries[oldest]);
                drop_entry(r, oldest);
                dropped++;
        }
        return dropped;
}

void metrics_retired_done(struct metrics_retired *r)
{
        for (size_t i = 0; i < r->n_entries; i++)
                metrics_identity_done(&r->entries[i].id);
        free(r->entries);
        *r = (struct metrics_retired){ 0 };
}
