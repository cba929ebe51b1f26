/* SPDX-License-Identifier: MIT */
/*
 * What 'gpreemptctl status' prints under a GPU's row about its faults: a
 * back-off with its reason and time left, and a GPU whose reset events the
 * daemon could not subscribe to (Status reset_events: false). A daemon that
 * does not send reset_events is taken to have them.
 */
#include <json.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "status-view.h"

#define GPU_ROW(id, extra)                                                                                     \
        "{\"gpu_id\":" #id ",\"online_busy\":false,\"offline_suspended\":false,\"suspends\":3,"                 \
        "\"resumes_idle\":3,\"resumes_max_suspend\":0,\"resumes_share\":0,\"resumes_fault\":0,"                 \
        "\"suspended_usec\":1000" extra "}"

static const char status_text[] =
        "{\"processes\":[],\"kfd_present\":true,\"workloads\":1,\"reloads\":0,\"uptime_usec\":1000000,"
        "\"realtime_priority\":1,\"realtime_wanted\":1,\"realtime_cpu_percent\":75,\"realtime_demotions\":0,"
        "\"gpus\":["
        GPU_ROW(1111, ",\"backoff\":{\"active\":true,\"reason\":\"timeout\",\"error\":\"ETIME\",\"until_usec\":9,"
                      "\"remaining_usec\":4000000,\"faults\":1,\"rate_limited\":0},\"reset_events\":false") ","
        GPU_ROW(2222, ",\"backoff\":{\"active\":false,\"reason\":null,\"error\":null,\"until_usec\":0,"
                      "\"remaining_usec\":0,\"faults\":0,\"rate_limited\":0},\"reset_events\":true") ","
        GPU_ROW(3333, "")
        "]}";

/* The status as gpreemptctl status prints it. */
static char *printed(void)
{
        struct json_object *status = json_tokener_parse(status_text);
        char *text = NULL;
        size_t size = 0;
        FILE *out = open_memstream(&text, &size);

        assert_non_null(status);
        assert_non_null(out);
        status_view_print(out, status, NULL);
        fclose(out);
        json_object_put(status);
        return text;
}

/* The text from the row of GPU id to the next GPU's row (or the end). */
static char *gpu_block(const char *text, const char *id, const char *next_id)
{
        const char *start = strstr(text, id), *end = next_id ? strstr(text, next_id) : NULL;

        if (!start)
                fail_msg("no row for GPU %s in:\n%s", id, text);
        return strndup(start, end && end > start ? (size_t)(end - start) : strlen(start));
}

static void test_faults_under_each_gpu(void **state)
{
        char *text = printed();
        char *first = gpu_block(text, "1111", "2222"), *second = gpu_block(text, "2222", "3333"),
             *third = gpu_block(text, "3333", NULL);

        if (!strstr(first, "backing off after a fault (timeout, ETIME)") || !strstr(first, "no GPU reset events"))
                fail_msg("GPU 1111 should show its back-off and its missing reset events:\n%s", text);
        if (strstr(second, "backing off") || strstr(second, "no GPU reset events"))
                fail_msg("GPU 2222 has neither a back-off nor missing reset events:\n%s", text);
        /* an older daemon's reply without the field */
        if (strstr(third, "no GPU reset events"))
                fail_msg("GPU 3333 does not say, and is taken to have reset events:\n%s", text);
        free(first);
        free(second);
        free(third);
        free(text);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_faults_under_each_gpu),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
