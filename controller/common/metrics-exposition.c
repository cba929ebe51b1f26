/* SPDX-License-Identifier: MIT */
#include "metrics-exposition.h"

#include <errno.h>
#include <json.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "utf8.h"

/* Longer names, help texts or label values than these are not the daemon's. */
#define NAME_MAX_LENGTH 200
#define HELP_MAX_LENGTH 1000
#define LABEL_VALUE_MAX_LENGTH 1000

/* [a-zA-Z_:][a-zA-Z0-9_:]* for metric names; without ':' for label names. */
static bool valid_name(const char *s, bool colon_allowed)
{
        size_t n = strlen(s);

        if (n == 0 || n > NAME_MAX_LENGTH)
                return false;
        for (size_t i = 0; i < n; i++) {
                char c = s[i];
                bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
                              (colon_allowed && c == ':');

                if (!letter && !(i > 0 && c >= '0' && c <= '9'))
                        return false;
        }
        return true;
}

static const char *string_member(struct json_object *o, const char *key)
{
        struct json_object *v;

        if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
                return NULL;
        return json_object_get_string(v);
}

static bool number_member(struct json_object *o, const char *key, double *ret)
{
        struct json_object *v;

        if (!json_object_object_get_ex(o, key, &v) ||
            !(json_object_is_type(v, json_type_double) || json_object_is_type(v, json_type_int)))
                return false;
        *ret = json_object_get_double(v);
        return true;
}

static struct json_object *array_member(struct json_object *o, const char *key)
{
        struct json_object *v;

        if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_array))
                return NULL;
        return v;
}

/* Whether labels is an object of valid label names with string values; le is the histogram's own. */
static bool valid_labels(struct json_object *labels)
{
        if (!labels || !json_object_is_type(labels, json_type_object))
                return false;
        json_object_object_foreach(labels, key, value)
        {
                if (!valid_name(key, false) || strcmp(key, "le") == 0 || !json_object_is_type(value, json_type_string) ||
                    json_object_get_string_len(value) > LABEL_VALUE_MAX_LENGTH)
                        return false;
        }
        return true;
}

/*
 * The exposition format has buckets in increasing order of le, each count
 * cumulative, all of them finite bounds (the writer adds +Inf, which is
 * count): Prometheus refuses a histogram that is not so.
 */
static const char *check_buckets(struct json_object *buckets, double count)
{
        double previous_le = -INFINITY, previous_count = 0, le, n;

        for (size_t i = 0; i < json_object_array_length(buckets); i++) {
                struct json_object *b = json_object_array_get_idx(buckets, i);

                if (!json_object_is_type(b, json_type_object) || !number_member(b, "le", &le) ||
                    !number_member(b, "count", &n))
                        return "a histogram bucket lacks its le or count";
                if (!isfinite(le) || le <= previous_le)
                        return "a histogram's bucket bounds are not finite and increasing";
                if (!(n >= previous_count) || n > count)
                        return "a histogram's bucket counts are not cumulative up to its count";
                previous_le = le;
                previous_count = n;
        }
        return NULL;
}

static const char *check_sample(struct json_object *s, bool histogram)
{
        struct json_object *labels = NULL, *buckets;
        double x, sum;

        if (!json_object_is_type(s, json_type_object))
                return "a sample is not an object";
        json_object_object_get_ex(s, "labels", &labels);
        if (!valid_labels(labels))
                return "a sample's labels are not label names with string values";
        if (!histogram)
                return number_member(s, "value", &x) ? NULL : "a sample has no numeric value";
        buckets = array_member(s, "buckets");
        if (!buckets || !number_member(s, "count", &x) || !number_member(s, "sum", &sum))
                return "a histogram sample lacks its buckets, count or sum";
        return check_buckets(buckets, x);
}

static const char *check_family(struct json_object *f)
{
        const char *name, *type, *help;
        struct json_object *samples;

        if (!json_object_is_type(f, json_type_object))
                return "a family is not an object";
        name = string_member(f, "name");
        type = string_member(f, "type");
        help = string_member(f, "help");
        samples = array_member(f, "samples");
        if (!name || !valid_name(name, true))
                return "a family's name is not a metric name";
        if (!type || (strcmp(type, "counter") && strcmp(type, "gauge") && strcmp(type, "histogram")))
                return "a family's type is not counter, gauge or histogram";
        if (!help || strlen(help) > HELP_MAX_LENGTH)
                return "a family has no help text, or one too long";
        if (!samples)
                return "a family has no samples array";
        for (size_t i = 0; i < json_object_array_length(samples); i++) {
                const char *problem = check_sample(json_object_array_get_idx(samples, i),
                                                   strcmp(type, "histogram") == 0);

                if (problem)
                        return problem;
        }
        return NULL;
}

/* The shortest text that reads back as x, as Go's ParseFloat (Prometheus) reads it. */
static void write_number(FILE *out, double x)
{
        char text[32];

        if (isnan(x)) {
                fputs("NaN", out);
                return;
        }
        if (isinf(x)) {
                fputs(x > 0 ? "+Inf" : "-Inf", out);
                return;
        }
        for (int precision = 1; precision <= 17; precision++) {
                snprintf(text, sizeof(text), "%.*g", precision, x);
                if (strtod(text, NULL) == x)
                        break;
        }
        fputs(text, out);
}

/*
 * HELP escapes backslash and newline; label values the double quote too.
 * Both must be UTF-8 (Prometheus refuses the whole scrape otherwise), and
 * what comes over the socket need not be: a byte that does not start a
 * well-formed sequence is written as U+FFFD.
 */
static void write_escaped(FILE *out, const char *s, bool quote)
{
        size_t len = strlen(s);

        for (size_t i = 0; i < len;) {
                uint32_t cp;
                size_t n = utf8_sequence(s + i, len - i, &cp);

                if (n == 0) {
                        fputs("\xef\xbf\xbd", out);
                        i++;
                        continue;
                }
                if (s[i] == '\\')
                        fputs("\\\\", out);
                else if (s[i] == '\n')
                        fputs("\\n", out);
                else if (quote && s[i] == '"')
                        fputs("\\\"", out);
                else
                        fwrite(s + i, 1, n, out);
                i += n;
        }
}

/* name{labels[,le="bound"]} */
static void write_series(FILE *out, const char *name, const char *suffix, struct json_object *labels,
                         const double *le)
{
        bool first = true;

        fprintf(out, "%s%s", name, suffix);
        json_object_object_foreach(labels, key, value)
        {
                fprintf(out, "%s%s=\"", first ? "{" : ",", key);
                write_escaped(out, json_object_get_string(value), true);
                fputc('"', out);
                first = false;
        }
        if (le) {
                fprintf(out, "%sle=\"", first ? "{" : ",");
                write_number(out, *le);
                fputc('"', out);
                first = false;
        }
        if (!first)
                fputc('}', out);
        fputc(' ', out);
}

static void write_histogram(FILE *out, const char *name, struct json_object *s, struct json_object *labels)
{
        struct json_object *buckets = array_member(s, "buckets");
        const double inf = INFINITY;
        double count = 0, sum = 0, le, n;

        number_member(s, "count", &count);
        number_member(s, "sum", &sum);
        for (size_t i = 0; i < json_object_array_length(buckets); i++) {
                struct json_object *b = json_object_array_get_idx(buckets, i);

                number_member(b, "le", &le);
                number_member(b, "count", &n);
                write_series(out, name, "_bucket", labels, &le);
                write_number(out, n);
                fputc('\n', out);
        }
        write_series(out, name, "_bucket", labels, &inf);
        write_number(out, count);
        fputc('\n', out);
        write_series(out, name, "_sum", labels, NULL);
        write_number(out, sum);
        fputc('\n', out);
        write_series(out, name, "_count", labels, NULL);
        write_number(out, count);
        fputc('\n', out);
}

static void write_family(FILE *out, struct json_object *f)
{
        const char *name = string_member(f, "name"), *type = string_member(f, "type");
        struct json_object *samples = array_member(f, "samples");
        bool histogram = strcmp(type, "histogram") == 0;

        fprintf(out, "# HELP %s ", name);
        write_escaped(out, string_member(f, "help"), false);
        fprintf(out, "\n# TYPE %s %s\n", name, type);
        for (size_t i = 0; i < json_object_array_length(samples); i++) {
                struct json_object *s = json_object_array_get_idx(samples, i), *labels;
                double value = 0;

                json_object_object_get_ex(s, "labels", &labels);
                if (histogram) {
                        write_histogram(out, name, s, labels);
                        continue;
                }
                number_member(s, "value", &value);
                write_series(out, name, "", labels, NULL);
                write_number(out, value);
                fputc('\n', out);
        }
}

/* Whether a family before the i-th has its name: HELP and TYPE come once per name. */
static bool named_before(struct json_object *families, size_t i)
{
        const char *name = string_member(json_object_array_get_idx(families, i), "name");

        for (size_t j = 0; j < i; j++)
                if (strcmp(string_member(json_object_array_get_idx(families, j), "name"), name) == 0)
                        return true;
        return false;
}

int metrics_exposition_write(FILE *out, struct json_object *families, const char **ret_problem)
{
        const char *problem = NULL;

        if (!families || !json_object_is_type(families, json_type_array))
                problem = "the families are not an array";
        for (size_t i = 0; !problem && i < json_object_array_length(families); i++) {
                problem = check_family(json_object_array_get_idx(families, i));
                if (!problem && named_before(families, i))
                        problem = "two families have the same name";
        }
        if (problem) {
                if (ret_problem)
                        *ret_problem = problem;
                return -EBADMSG;
        }
        for (size_t i = 0; i < json_object_array_length(families); i++)
                write_family(out, json_object_array_get_idx(families, i));
        return ferror(out) ? -EIO : 0;
}
