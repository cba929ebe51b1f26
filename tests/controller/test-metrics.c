/* SPDX-License-Identifier: MIT */
/* The daemon's counters (gpreemptd/metrics.c): histogram buckets, a process's suspended time, retiring it. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "metrics.h"
#include "utf8.h"

static void test_histogram_buckets(void **state)
{
        struct metrics_histogram h = { 0 };

        metrics_histogram_observe(&h, 0);
        metrics_histogram_observe(&h, 1000);        /* on the first bound: in it */
        metrics_histogram_observe(&h, 1001);        /* just past it: the next */
        metrics_histogram_observe(&h, 2000000000);  /* past the last bound: +Inf only */
        assert_int_equal(h.in_bucket[0], 2);
        assert_int_equal(h.in_bucket[1], 1);
        assert_int_equal(h.count, 4);
        assert_int_equal(h.sum_ns, 2000002001);
        for (size_t i = 1; i < METRICS_HISTOGRAM_BUCKETS; i++)
                assert_true(metrics_histogram_bounds_ns[i] > metrics_histogram_bounds_ns[i - 1]);
}

static void test_process_suspended_time(void **state)
{
        struct metrics_process mp = { 0 };

        metrics_process_suspended(&mp, 3, 100);
        /* a second suspension of a suspended GPU (a hold over the policy's) continues the first */
        metrics_process_suspended(&mp, 3, 150);
        assert_int_equal(metrics_process_suspended_us(&mp, 3, 200), 100);
        metrics_process_resumed(&mp, 3, 300);
        assert_int_equal(metrics_process_suspended_us(&mp, 3, 1000), 200);
        metrics_process_suspended(&mp, 3, 1000);
        metrics_process_end(&mp, 1050);
        assert_int_equal(metrics_process_suspended_us(&mp, 3, 5000), 250);
        assert_int_equal(mp.gpu[3].suspensions, 3);
        assert_int_equal(mp.gpu[3].resumptions, 1);
        assert_int_equal(metrics_process_suspended_us(&mp, 2, 5000), 0);
}

static void test_retired_counts_add_up_per_identity(void **state)
{
        struct metrics_retired r = { 0 };
        struct metrics_process a = { 0 }, b = { 0 };
        struct metrics_identity train = { .workload = "train", .class = WORKLOAD_CLASS_OFFLINE },
                                serve = { .workload = "serve", .class = WORKLOAD_CLASS_ONLINE },
                                registered = { .class = WORKLOAD_CLASS_OFFLINE };

        a.gpu[0] = (struct metrics_transitions){ .suspensions = 2, .resumptions = 2, .suspended_us = 40 };
        a.on_gpu[0] = true;
        b.gpu[0] = (struct metrics_transitions){ .suspensions = 1, .resumptions = 1, .suspended_us = 5 };
        b.on_gpu[1] = true;
        assert_int_equal(metrics_retire(&r, &train, &a, 2, 10), 0);
        assert_int_equal(metrics_retire(&r, &train, &b, 2, 20), 0);
        assert_int_equal(metrics_retire(&r, &serve, &(struct metrics_process){ .on_gpu = { true } }, 2, 30), 0);
        assert_int_equal(metrics_retire(&r, &registered, &b, 2, 40), 0);
        assert_int_equal(r.n_entries, 3);
        assert_string_equal(r.entries[0].id.workload, "train");
        assert_int_equal(r.entries[0].gpu[0].suspensions, 3);
        assert_int_equal(r.entries[0].gpu[0].suspended_us, 45);
        assert_int_equal(r.entries[0].retired_at_us, 20);
        assert_true(r.entries[0].on_gpu[0] && r.entries[0].on_gpu[1]);
        assert_int_equal(r.entries[1].gpu[0].suspensions, 0);
        assert_true(r.entries[1].on_gpu[0]);
        assert_null(r.entries[2].id.workload);
        assert_false(metrics_identity_equal(&train, &registered));
        assert_false(metrics_identity_equal(&train, &(struct metrics_identity){ .workload = "train",
                                                                                .class = WORKLOAD_CLASS_ONLINE }));
        metrics_retired_done(&r);
}

static struct cluster_identity slurm_job(const char *id, const char *name)
{
        struct cluster_identity c = { .kind = CLUSTER_KIND_SLURM };

        snprintf(c.id, sizeof(c.id), "%s", id);
        snprintf(c.name, sizeof(c.name), "%s", name);
        return c;
}

static void test_identity_of_a_cluster_job(void **state)
{
        struct cluster_identity job = slurm_job("42", "train \"big\"\nmodel"), other = slurm_job("43", "train");
        struct cluster_identity none = { 0 };
        struct metrics_identity a, b, c, copy;

        assert_int_equal(metrics_identity_make("train", WORKLOAD_CLASS_OFFLINE, &job, &a), 0);
        assert_int_equal(metrics_identity_make("train", WORKLOAD_CLASS_OFFLINE, &other, &b), 0);
        assert_int_equal(metrics_identity_make("train", WORKLOAD_CLASS_OFFLINE, &none, &c), 0);
        assert_int_equal(a.cluster_kind, CLUSTER_KIND_SLURM);
        assert_string_equal(a.cluster_id, "42");
        /* quotes and newlines stay as they are: the exposition escapes them */
        assert_string_equal(a.cluster_name, "train \"big\"\nmodel");
        assert_null(c.cluster_id);
        assert_null(c.cluster_name);
        /* another job of the same workload is another series */
        assert_false(metrics_identity_equal(&a, &b));
        assert_false(metrics_identity_equal(&a, &c));
        assert_int_equal(metrics_identity_copy(&a, &copy), 0);
        assert_true(metrics_identity_equal(&a, &copy));
        metrics_identity_done(&copy);
        assert_null(copy.workload);
        metrics_identity_done(&a);
        metrics_identity_done(&b);
        metrics_identity_done(&c);
}

/* A job's name is its user's bytes: a label value must still be UTF-8 Prometheus takes, and bounded. */
static void test_identity_label_values_are_utf8_and_bounded(void **state)
{
        struct cluster_identity job = slurm_job("7", "a\xff\xc3(b\xe2\x82\xac");
        struct metrics_identity id;
        char long_name[CLUSTER_NAME_MAX + 1];

        assert_int_equal(metrics_identity_make(NULL, WORKLOAD_CLASS_OFFLINE, &job, &id), 0);
        /* a stray byte and a cut sequence each become U+FFFD; the euro sign stays */
        assert_string_equal(id.cluster_name, "a\xef\xbf\xbd\xef\xbf\xbd(b\xe2\x82\xac");
        assert_true(utf8_is_valid(id.cluster_name, strlen(id.cluster_name)));
        metrics_identity_done(&id);

        /* 'x' and then euro signs (3 bytes): the cut falls on a character's boundary */
        long_name[0] = 'x';
        for (size_t i = 1; i + 3 <= CLUSTER_NAME_MAX; i += 3)
                memcpy(long_name + i, "\xe2\x82\xac", 3);
        long_name[1 + (CLUSTER_NAME_MAX - 1) / 3 * 3] = 0;
        job = slurm_job("7", long_name);
        assert_int_equal(metrics_identity_make(NULL, WORKLOAD_CLASS_OFFLINE, &job, &id), 0);
        assert_int_equal(strlen(id.cluster_name), 1 + (METRICS_LABEL_VALUE_MAX - 1) / 3 * 3);
        assert_true(strlen(id.cluster_name) <= METRICS_LABEL_VALUE_MAX);
        assert_true(utf8_is_valid(id.cluster_name, strlen(id.cluster_name)));
        metrics_identity_done(&id);
}

static bool live_if_named_live(const struct metrics_identity *id, void *userdata)
{
        return id->cluster_name && strcmp(id->cluster_name, "live") == 0;
}

static void retire_job(struct metrics_retired *r, const char *job_id, const char *name, uint64_t now_us)
{
        struct cluster_identity job = slurm_job(job_id, name);
        struct metrics_identity id;

        assert_int_equal(metrics_identity_make("train", WORKLOAD_CLASS_OFFLINE, &job, &id), 0);
        assert_int_equal(metrics_retire(r, &id, &(struct metrics_process){ .on_gpu = { true } }, 1, now_us), 0);
        metrics_identity_done(&id);
}

/* A job gone for longer than the keep time leaves; a workload, and a job with a live process, stay. */
static void test_retired_jobs_expire(void **state)
{
        struct metrics_retired r = { 0 };
        struct metrics_identity workload = { .workload = "train", .class = WORKLOAD_CLASS_OFFLINE };
        uint64_t later = 1000 + METRICS_RETIRED_JOB_KEEP_US + 1;

        assert_int_equal(metrics_retire(&r, &workload, &(struct metrics_process){ 0 }, 1, 1000), 0);
        retire_job(&r, "1", "gone", 1000);
        retire_job(&r, "2", "live", 1000);
        retire_job(&r, "3", "recent", later - 10);
        assert_int_equal(metrics_retired_expire(&r, 1000 + METRICS_RETIRED_JOB_KEEP_US, live_if_named_live, NULL), 0);
        assert_int_equal(metrics_retired_expire(&r, later, live_if_named_live, NULL), 1);
        assert_int_equal(r.n_entries, 3);
        assert_null(r.entries[0].id.cluster_id);
        assert_string_equal(r.entries[1].id.cluster_id, "2");
        assert_string_equal(r.entries[2].id.cluster_id, "3");
        metrics_retired_done(&r);
}

/*
 * However fast jobs come and go, ended jobs keep no more than
 * METRICS_RETIRED_JOB_SERIES_MAX series (one per GPU a job used): the oldest
 * leave first, a job with a live process never.
 */
static void test_retired_jobs_are_bounded(void **state)
{
        struct metrics_retired r = { 0 };
        char id[16];

        for (unsigned i = 0; i < METRICS_RETIRED_JOB_SERIES_MAX + 5; i++) {
                snprintf(id, sizeof(id), "%u", i);
                retire_job(&r, id, i == 0 ? "live" : "done", 100 + i);
        }
        assert_int_equal(metrics_retired_expire(&r, 200, live_if_named_live, NULL), 5);
        assert_int_equal(r.n_entries, METRICS_RETIRED_JOB_SERIES_MAX);
        /* job 0 has a live process: it stays; jobs 1 to 5 were the oldest of the rest */
        assert_string_equal(r.entries[0].id.cluster_id, "0");
        assert_string_equal(r.entries[1].id.cluster_id, "6");
        /* a job on four GPUs counts four: the next three oldest make room for it */
        {
                struct cluster_identity job = slurm_job("4gpus", "done");
                struct metrics_identity four;

                assert_int_equal(metrics_identity_make("train", WORKLOAD_CLASS_OFFLINE, &job, &four), 0);
                assert_int_equal(metrics_retire(&r, &four, &(struct metrics_process){ .on_gpu = { 1, 1, 1, 1 } }, 4,
                                                 10000),
                                 0);
                metrics_identity_done(&four);
        }
        assert_int_equal(metrics_retired_expire(&r, 10000, live_if_named_live, NULL), 4);
        assert_string_equal(r.entries[1].id.cluster_id, "10");
        assert_string_equal(r.entries[r.n_entries - 1].id.cluster_id, "4gpus");
        metrics_retired_done(&r);
}

static void test_error_names(void **state)
{
        for (int e = 0; e < _METRICS_ERROR_MAX; e++)
                assert_non_null(metrics_error_to_string(e));
        assert_null(metrics_error_to_string(_METRICS_ERROR_MAX));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_histogram_buckets),
                cmocka_unit_test(test_process_suspended_time),
                cmocka_unit_test(test_retired_counts_add_up_per_identity),
                cmocka_unit_test(test_identity_of_a_cluster_job),
                cmocka_unit_test(test_identity_label_values_are_utf8_and_bounded),
                cmocka_unit_test(test_retired_jobs_expire),
                cmocka_unit_test(test_retired_jobs_are_bounded),
                cmocka_unit_test(test_error_names),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
