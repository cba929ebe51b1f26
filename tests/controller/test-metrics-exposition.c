/* SPDX-License-Identifier: MIT */
/*
 * The text exposition writer (common/metrics-exposition.c): families as
 * the daemon sends them, written as Prometheus reads them; and families it
 * must refuse, since they come over a socket.
 */
#include <errno.h>
#include <json.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "metrics-exposition.h"

/* Writes the families given as JSON text; returns the writer's result, the text in *ret_text. */
static int write_json(const char *json, char **ret_text, const char **ret_problem)
{
        struct json_object *families = json_tokener_parse(json);
        size_t size = 0;
        FILE *out = open_memstream(ret_text, &size);
        int r;

        assert_non_null(out);
        r = metrics_exposition_write(out, families, ret_problem);
        fclose(out);
        json_object_put(families);
        return r;
}

static void test_counter_and_gauge(void **state)
{
        char *text = NULL;

        assert_int_equal(write_json("[{\"name\": \"gpreempt_suspensions_total\", \"type\": \"counter\","
                                    " \"help\": \"Suspensions.\", \"samples\": ["
                                    "  {\"labels\": {\"gpu_id\": \"1\", \"workload\": \"train\"}, \"value\": 12},"
                                    "  {\"labels\": {\"gpu_id\": \"2\", \"workload\": \"train\"}, \"value\": 0.25}]},"
                                    " {\"name\": \"gpreempt_up\", \"type\": \"gauge\", \"help\": \"Up.\","
                                    "  \"samples\": [{\"labels\": {}, \"value\": 1}]}]",
                                    &text, NULL),
                         0);
        assert_string_equal(text, "# HELP gpreempt_suspensions_total Suspensions.\n"
                                  "# TYPE gpreempt_suspensions_total counter\n"
                                  "gpreempt_suspensions_total{gpu_id=\"1\",workload=\"train\"} 12\n"
                                  "gpreempt_suspensions_total{gpu_id=\"2\",workload=\"train\"} 0.25\n"
                                  "# HELP gpreempt_up Up.\n"
                                  "# TYPE gpreempt_up gauge\n"
                                  "gpreempt_up 1\n");
        free(text);
}

static void test_histogram_gets_inf_sum_and_count(void **state)
{
        char *text = NULL;

        assert_int_equal(write_json("[{\"name\": \"gpreempt_reaction_seconds\", \"type\": \"histogram\","
                                    " \"help\": \"Reaction.\", \"samples\": [{\"labels\": {\"stage\": \"a\"},"
                                    " \"buckets\": [{\"le\": 1e-06, \"count\": 1}, {\"le\": 2.5e-06, \"count\": 3}],"
                                    " \"count\": 4, \"sum\": 0.5}]}]",
                                    &text, NULL),
                         0);
        assert_string_equal(text, "# HELP gpreempt_reaction_seconds Reaction.\n"
                                  "# TYPE gpreempt_reaction_seconds histogram\n"
                                  "gpreempt_reaction_seconds_bucket{stage=\"a\",le=\"1e-06\"} 1\n"
                                  "gpreempt_reaction_seconds_bucket{stage=\"a\",le=\"2.5e-06\"} 3\n"
                                  "gpreempt_reaction_seconds_bucket{stage=\"a\",le=\"+Inf\"} 4\n"
                                  "gpreempt_reaction_seconds_sum{stage=\"a\"} 0.5\n"
                                  "gpreempt_reaction_seconds_count{stage=\"a\"} 4\n");
        free(text);
}

/* A workload's name comes from a configuration file: quotes, backslashes and newlines are escaped. */
static void test_escaping(void **state)
{
        char *text = NULL;

        assert_int_equal(write_json("[{\"name\": \"m\", \"type\": \"gauge\", \"help\": \"a \\\\ b\\nc\","
                                    " \"samples\": [{\"labels\": {\"workload\": \"x\\\"y\\\\z\\nw\"}, \"value\": 0}]}]",
                                    &text, NULL),
                         0);
        assert_string_equal(text, "# HELP m a \\\\ b\\nc\n"
                                  "# TYPE m gauge\n"
                                  "m{workload=\"x\\\"y\\\\z\\nw\"} 0\n");
        free(text);
}

/*
 * A Slurm job's name is its user's bytes. The daemon sends UTF-8, but what
 * comes over the socket is not trusted: bytes that are not UTF-8 become
 * U+FFFD, as Prometheus would refuse the whole scrape for one such value.
 */
static void test_invalid_utf8_becomes_replacement_characters(void **state)
{
        char *text = NULL;

        assert_int_equal(write_json("[{\"name\": \"m\", \"type\": \"gauge\", \"help\": \"h\\u00e9\","
                                    " \"samples\": [{\"labels\": {\"slurm_job_name\": \"a\xff\xc3\\\"\xe2\x82\xac\"},"
                                    " \"value\": 0}]}]",
                                    &text, NULL),
                         0);
        assert_string_equal(text, "# HELP m h\xc3\xa9\n"
                                  "# TYPE m gauge\n"
                                  "m{slurm_job_name=\"a\xef\xbf\xbd\xef\xbf\xbd\\\"\xe2\x82\xac\"} 0\n");
        free(text);
}

static void test_malformed_families_write_nothing(void **state)
{
        static const struct {
                const char *json, *problem;
        } bad[] = {
                { "{}", "the families are not an array" },
                { "[1]", "a family is not an object" },
                { "[{\"name\": \"9lives\", \"type\": \"gauge\", \"help\": \"\", \"samples\": []}]",
                  "a family's name is not a metric name" },
                { "[{\"name\": \"a b\", \"type\": \"gauge\", \"help\": \"\", \"samples\": []}]",
                  "a family's name is not a metric name" },
                { "[{\"name\": \"m\", \"type\": \"summary\", \"help\": \"\", \"samples\": []}]",
                  "a family's type is not counter, gauge or histogram" },
                { "[{\"name\": \"m\", \"type\": \"gauge\", \"samples\": []}]",
                  "a family has no help text, or one too long" },
                { "[{\"name\": \"m\", \"type\": \"gauge\", \"help\": \"\"}]", "a family has no samples array" },
                { "[{\"name\": \"m\", \"type\": \"gauge\", \"help\": \"\", \"samples\": [{\"labels\": {}}]}]",
                  "a sample has no numeric value" },
                { "[{\"name\": \"m\", \"type\": \"gauge\", \"help\": \"\", \"samples\": [{\"value\": 1}]}]",
                  "a sample's labels are not label names with string values" },
                { "[{\"name\": \"m\", \"type\": \"gauge\", \"help\": \"\","
                  " \"samples\": [{\"labels\": {\"a:b\": \"1\"}, \"value\": 1}]}]",
                  "a sample's labels are not label names with string values" },
                { "[{\"name\": \"m\", \"type\": \"gauge\", \"help\": \"\","
                  " \"samples\": [{\"labels\": {\"le\": \"1\"}, \"value\": 1}]}]",
                  "a sample's labels are not label names with string values" },
                { "[{\"name\": \"m\", \"type\": \"gauge\", \"help\": \"\","
                  " \"samples\": [{\"labels\": {\"a\": 1}, \"value\": 1}]}]",
                  "a sample's labels are not label names with string values" },
                { "[{\"name\": \"m\", \"type\": \"histogram\", \"help\": \"\","
                  " \"samples\": [{\"labels\": {}, \"count\": 1, \"sum\": 1}]}]",
                  "a histogram sample lacks its buckets, count or sum" },
                { "[{\"name\": \"m\", \"type\": \"histogram\", \"help\": \"\","
                  " \"samples\": [{\"labels\": {}, \"buckets\": [{\"le\": 1}], \"count\": 1, \"sum\": 1}]}]",
                  "a histogram bucket lacks its le or count" },
                { "[{\"name\": \"m\", \"type\": \"histogram\", \"help\": \"\", \"samples\": [{\"labels\": {},"
                  " \"buckets\": [{\"le\": 2, \"count\": 0}, {\"le\": 1, \"count\": 0}], \"count\": 1, \"sum\": 1}]}]",
                  "a histogram's bucket bounds are not finite and increasing" },
                { "[{\"name\": \"m\", \"type\": \"histogram\", \"help\": \"\", \"samples\": [{\"labels\": {},"
                  " \"buckets\": [{\"le\": 1, \"count\": 0}, {\"le\": Infinity, \"count\": 1}], \"count\": 1,"
                  " \"sum\": 1}]}]",
                  "a histogram's bucket bounds are not finite and increasing" },
                { "[{\"name\": \"m\", \"type\": \"histogram\", \"help\": \"\", \"samples\": [{\"labels\": {},"
                  " \"buckets\": [{\"le\": 1, \"count\": 2}, {\"le\": 2, \"count\": 1}], \"count\": 2, \"sum\": 1}]}]",
                  "a histogram's bucket counts are not cumulative up to its count" },
                { "[{\"name\": \"m\", \"type\": \"histogram\", \"help\": \"\", \"samples\": [{\"labels\": {},"
                  " \"buckets\": [{\"le\": 1, \"count\": 3}], \"count\": 2, \"sum\": 1}]}]",
                  "a histogram's bucket counts are not cumulative up to its count" },
                { "[{\"name\": \"m\", \"type\": \"gauge\", \"help\": \"\", \"samples\": []},"
                  " {\"name\": \"m\", \"type\": \"counter\", \"help\": \"\", \"samples\": []}]",
                  "two families have the same name" },
        };

        char long_value[2048];

        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                const char *problem = NULL;
                char *text = NULL;

                assert_int_equal(write_json(bad[i].json, &text, &problem), -EBADMSG);
                assert_string_equal(problem, bad[i].problem);
                assert_string_equal(text, "");
                free(text);
        }
        /* a label value longer than any the daemon makes */
        memset(long_value, 'x', sizeof(long_value));
        snprintf(long_value + 1100, sizeof(long_value) - 1100, "\"}, \"value\": 1}]}]");
        {
                char json[4096], *text = NULL;
                const char *problem = NULL;

                snprintf(json, sizeof(json),
                         "[{\"name\": \"m\", \"type\": \"gauge\", \"help\": \"\", \"samples\": [{\"labels\": {\"a\": \"%s",
                         long_value);
                assert_int_equal(write_json(json, &text, &problem), -EBADMSG);
                assert_string_equal(problem, "a sample's labels are not label names with string values");
                free(text);
        }
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_counter_and_gauge),
                cmocka_unit_test(test_histogram_gets_inf_sum_and_count),
                cmocka_unit_test(test_escaping),
                cmocka_unit_test(test_invalid_utf8_becomes_replacement_characters),
                cmocka_unit_test(test_malformed_families_write_nothing),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
