/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the records of a GPU's KFD SMI event fd
 * (controller/gpreemptd/smi-record.c), which the kernel writes but whose
 * format changes between kernel versions. The first byte sets how the rest
 * arrives, as read() may split it: 0 in one piece, N in pieces of N bytes.
 * Every line must come out as a record or as a reason, and what the parser
 * gives must hold what smi-record.h promises.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "smi-record.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void on_record(const struct smi_record *r, void *userdata)
{
        if (strlen(r->task_name) > SMI_TASK_NAME_MAX || strlen(r->reset_cause) > SMI_RESET_CAUSE_MAX)
                abort();
        if ((r->event == SMI_EVENT_QUEUE_EVICTION || r->event == SMI_EVENT_QUEUE_RESTORE ||
             r->event == SMI_EVENT_VMFAULT) && r->pid <= 0)
                abort();
        ++*(size_t *)userdata;
}

static void on_bad_record(const char *why, const char *line, size_t len, void *userdata)
{
        if (!why || !*why || len > SMI_RECORD_MAX || memchr(line, '\n', len))
                abort();
        ++*(size_t *)userdata;
}

static const struct smi_stream_callbacks callbacks = { .record = on_record, .bad_record = on_bad_record };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct smi_stream stream = { 0 };
        const char *text = (const char *)data + 1;
        size_t piece, lines = 0, newlines, n;
        struct smi_record r;
        const char *why;

        if (size == 0)
                return 0;
        n = size - 1;
        piece = data[0] ? data[0] : n;
        for (size_t off = 0; off < n; off += piece)
                smi_stream_feed(&stream, text + off, n - off < piece ? n - off : piece, &callbacks, &lines);
        /* one callback per complete line, overlong ones included */
        newlines = 0;
        for (size_t i = 0; i < n; i++)
                newlines += text[i] == '\n';
        if (lines < newlines)
                abort();
        if (smi_record_parse(text, n, &r, &why) < 0 && (!why || !*why))
                abort();
        return 0;
}
