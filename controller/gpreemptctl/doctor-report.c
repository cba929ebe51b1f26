/* SPDX-License-Identifier: MIT */
/* The doctor's report: the checks in the order they ran, as text or JSON. */
#include "doctor.h"

#include <json.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "config.h"
#include "printable.h"

static const char *const status_names[] = {
        [DOCTOR_OK] = "ok",
        [DOCTOR_WARNING] = "warning",
        [DOCTOR_FAILED] = "failed",
};

const char *doctor_status_to_string(enum doctor_status status)
{
        return status <= DOCTOR_FAILED ? status_names[status] : "unknown";
}

static struct doctor_check *add(struct doctor *d, const char *name, enum doctor_status status, char *found)
{
        struct doctor_check *grown, *c;

        if (!found) {
                d->out_of_memory = true;
                return NULL;
        }
        grown = realloc(d->checks, (d->n_checks + 1) * sizeof(*d->checks));
        if (!grown) {
                free(found);
                d->out_of_memory = true;
                return NULL;
        }
        d->checks = grown;
        c = &d->checks[d->n_checks];
        *c = (struct doctor_check){ .name = strdup(name), .status = status, .found = found };
        if (!c->name) {
                free(found);
                d->out_of_memory = true;
                return NULL;
        }
        d->n_checks++;
        return c;
}

struct doctor_check *doctor_add(struct doctor *d, const char *name, enum doctor_status status, const char *format,
                                ...)
{
        char *found;
        va_list ap;

        va_start(ap, format);
        if (vasprintf(&found, format, ap) < 0)
                found = NULL;
        va_end(ap);
        return add(d, name, status, found);
}

void doctor_advise(struct doctor_check *c, const char *format, ...)
{
        char *advice;
        va_list ap;

        if (!c)
                return;
        va_start(ap, format);
        if (vasprintf(&advice, format, ap) < 0)
                advice = NULL;
        va_end(ap);
        free(c->advice);
        c->advice = advice;
}

struct doctor_check *doctor_add_sentence(struct doctor *d, const char *name, enum doctor_status status,
                                         const char *sentence)
{
        const char *split = strstr(sentence, "; ");
        struct doctor_check *c;

        if (!split)
                return doctor_add(d, name, status, "%s", sentence);
        c = doctor_add(d, name, status, "%.*s", (int)(split - sentence), sentence);
        doctor_advise(c, "%s", split + 2);
        return c;
}

enum doctor_status doctor_worst(const struct doctor *d)
{
        enum doctor_status worst = d->out_of_memory ? DOCTOR_FAILED : DOCTOR_OK;

        for (size_t i = 0; i < d->n_checks; i++)
                if (d->checks[i].status > worst)
                        worst = d->checks[i].status;
        return worst;
}

/* "gpu 63420", "process 1234", or the name alone. */
static void label(const struct doctor_check *c, char *buf, size_t size)
{
        if (c->gpu_id)
                snprintf(buf, size, "%s %u", c->name, c->gpu_id);
        else if (c->pid > 0)
                snprintf(buf, size, "%s %d", c->name, (int)c->pid);
        else
                snprintf(buf, size, "%s", c->name);
}

void doctor_print_text(const struct doctor *d)
{
        size_t counts[DOCTOR_FAILED + 1] = { 0 };

        for (size_t i = 0; i < d->n_checks; i++) {
                const struct doctor_check *c = &d->checks[i];
                /* a process's command line and a tracer's name are another user's text */
                _cleanup_free_ char *found = printable_dup(c->found);
                _cleanup_free_ char *advice = c->advice ? printable_dup(c->advice) : NULL;
                char name[48];

                label(c, name, sizeof(name));
                counts[c->status]++;
                printf("%-8s %-19s %s\n", doctor_status_to_string(c->status), name, found ? found : "(out of memory)");
                if (advice)
                        printf("%-8s %-19s -> %s\n", "", "", advice);
        }
        if (d->out_of_memory)
                printf("%-8s %-19s %s\n", "failed", "doctor", "ran out of memory: some checks are missing");
        printf("\n%zu ok, %zu warning%s, %zu failed.\n", counts[DOCTOR_OK], counts[DOCTOR_WARNING],
               counts[DOCTOR_WARNING] == 1 ? "" : "s", counts[DOCTOR_FAILED] + (d->out_of_memory ? 1 : 0));
}

static struct json_object *check_json(const struct doctor_check *c)
{
        struct json_object *o = json_object_new_object();

        json_object_object_add(o, "check", json_object_new_string(c->name));
        json_object_object_add(o, "status", json_object_new_string(doctor_status_to_string(c->status)));
        if (c->gpu_id)
                json_object_object_add(o, "gpu_id", json_object_new_int64(c->gpu_id));
        if (c->pid > 0)
                json_object_object_add(o, "pid", json_object_new_int64(c->pid));
        json_object_object_add(o, "found", json_object_new_string(c->found));
        json_object_object_add(o, "advice", c->advice ? json_object_new_string(c->advice) : NULL);
        return o;
}

void doctor_print_json(const struct doctor *d)
{
        struct json_object *a = json_object_new_array();

        for (size_t i = 0; i < d->n_checks; i++)
                json_object_array_add(a, check_json(&d->checks[i]));
        if (d->out_of_memory) {
                struct json_object *o = json_object_new_object();

                json_object_object_add(o, "check", json_object_new_string("doctor"));
                json_object_object_add(o, "status", json_object_new_string("failed"));
                json_object_object_add(o, "found", json_object_new_string("ran out of memory: some checks are missing"));
                json_object_object_add(o, "advice", NULL);
                json_object_array_add(a, o);
        }
        /* JSON must be UTF-8; a command line need not be */
        printable_json(a, false);
        puts(json_object_to_json_string_ext(a, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
        json_object_put(a);
}

void doctor_done(struct doctor *d)
{
        for (size_t i = 0; i < d->n_checks; i++) {
                free(d->checks[i].name);
                free(d->checks[i].found);
                free(d->checks[i].advice);
        }
        free(d->checks);
        config_free(d->config);
        json_object_put(d->daemon_status);
        paths_done(&d->paths);
        *d = (struct doctor){ 0 };
}
