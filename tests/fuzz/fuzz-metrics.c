/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the metric families gpreempt-exporter gets from the
 * daemon's socket, written in Prometheus's text format
 * (metrics-exposition.c). Whatever JSON arrives, the writer either refuses
 * it and writes nothing, or writes only lines Prometheus can take: a
 * "# HELP" or "# TYPE" line, or a sample line that starts with a metric
 * name, whose label values cannot break out of their quotes or line; and
 * all of it UTF-8, whatever bytes the strings held (Prometheus refuses a
 * scrape with a label value that is not).
 */
#include <errno.h>
#include <json.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics-exposition.h"
#include "utf8.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int is_name_start(char c)
{
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
}

/* A sample line: NAME[{...}] VALUE, every quote in the label part closed before the space. */
static void check_sample_line(const char *line, size_t len)
{
        int quoted = 0;
        size_t i;

        if (!is_name_start(line[0]))
                abort();
        for (i = 0; i < len; i++) {
                if (quoted && line[i] == '\\')
                        i++; /* an escaped character: \\, \" or \n */
                else if (line[i] == '"')
                        quoted = !quoted;
                else if (!quoted && line[i] == ' ')
                        break;
        }
        if (quoted || i >= len - 1)
                abort(); /* no value after the series */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct json_tokener *tok = json_tokener_new();
        struct json_object *families;
        char *text = NULL;
        size_t text_size = 0;
        FILE *out;
        int r;

        if (!tok)
                return 0;
        families = json_tokener_parse_ex(tok, (const char *)data, (int)(size > INT32_MAX ? INT32_MAX : size));
        json_tokener_free(tok);
        out = open_memstream(&text, &text_size);
        if (!out)
                abort();
        r = metrics_exposition_write(out, families, NULL);
        fclose(out);
        json_object_put(families);
        if (r == -EBADMSG && text_size != 0)
                abort();
        if (r != 0 && r != -EBADMSG)
                abort();
        if (strlen(text) != text_size)
                abort(); /* a NUL got into the text */
        if (!utf8_is_valid(text, text_size))
                abort();
        for (char *line = text, *end; *line; line = end + 1) {
                end = strchr(line, '\n');
                if (!end)
                        abort(); /* every line ends */
                if (strncmp(line, "# HELP ", 7) != 0 && strncmp(line, "# TYPE ", 7) != 0)
                        check_sample_line(line, (size_t)(end - line));
        }
        free(text);
        return 0;
}
