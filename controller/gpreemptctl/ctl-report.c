/* SPDX-License-Identifier: MIT */
#include "ctl-report.h"

#include <ctype.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "explain-sentence.h"
#include "printable.h"

/*
 * Whether usage errors are printed as JSON too. main() sets it once from
 * the command line before a verb parses it: the option parser can fail
 * before the verb has read its --json.
 */
static bool usage_as_json;

void ctl_report_usage_as_json(bool json)
{
        usage_as_json = json;
}

char *ctl_report_error(int error, enum gp_op op, pid_t pid, int runtime_state)
{
        return ctl_report_sentence(explain_sentence(error, op, pid, runtime_state, NULL));
}

char *ctl_report_sentence(char *sentence)
{
        char *printable = sentence ? printable_dup(sentence) : NULL;

        /* a sentence can name another user's tracer (its comm) or echo an argument */
        free(sentence);
        if (!printable) {
                fputs("gpreemptctl: out of memory.\n", stderr);
                return NULL;
        }
        fprintf(stderr, "gpreemptctl: %s.\n", printable);
        return printable;
}

int ctl_report_usage(const char *verb, const char *format, ...)
{
        _cleanup_free_ char *raw = NULL, *message = NULL;
        va_list ap;

        va_start(ap, format);
        if (vasprintf(&raw, format, ap) < 0)
                raw = NULL;
        va_end(ap);
        /* the message quotes the command line, which may hold any bytes */
        message = raw ? printable_dup(raw) : NULL;
        fprintf(stderr, "gpreemptctl: %s\nTry 'gpreemptctl %s%s--help'.\n", message ? message : "out of memory",
                verb ? verb : "", verb ? " " : "");
        if (usage_as_json)
                ctl_report_json_error(message);
        return CTL_EXIT_USAGE;
}

void ctl_report_json_error(const char *sentence)
{
        json_object *o = json_object_new_object();

        json_object_object_add(o, "error", json_object_new_string(sentence ? sentence : "out of memory"));
        puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
        json_object_put(o);
}

static const struct option *find_option(const struct option *options, const char *arg)
{
        size_t len = strcspn(arg + 2, "=");

        for (const struct option *o = options; o->name; o++)
                if (strncmp(o->name, arg + 2, len) == 0 && o->name[len] == '\0')
                        return o;
        return NULL;
}

int ctl_report_bad_option(const char *verb, int argc, char *const *argv, const struct option *options)
{
        const char *arg = optind > 0 && optind <= argc ? argv[optind - 1] : "";

        /* getopt took a negative number for options ("-42": '4', '2'): no verb has digit options */
        if (optopt >= '0' && optopt <= '9') {
                for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
                        if (argv[i][0] == '-' && isdigit((unsigned char)argv[i][1]))
                                return ctl_report_usage(verb, "'%s' is not a process id: process ids are positive.",
                                                        argv[i]);
        }
        if (strncmp(arg, "--", 2) == 0) {
                const struct option *o = find_option(options, arg);

                if (!o)
                        return ctl_report_usage(verb, "unknown option '%s'.", arg);
                return ctl_report_usage(verb, o->has_arg == no_argument ? "'%s' takes no value." : "'%s' needs a value.",
                                        arg);
        }
        for (const struct option *o = options; o->name; o++)
                if (o->val == optopt && o->has_arg == required_argument)
                        return ctl_report_usage(verb, "-%c needs a value.", optopt);
        return ctl_report_usage(verb, "unknown option '-%c'.", optopt);
}

void ctl_report_log(enum gp_log_level level, const char *message, void *userdata)
{
        fprintf(stderr, "gpreemptctl: %s%s\n", level <= GP_LOG_ERR ? "error: " : "", message);
}

struct gp_context_opts ctl_context_opts(const struct ctl_globals *globals)
{
        return (struct gp_context_opts){
                .sz = sizeof(struct gp_context_opts),
                /* Errors reach the user as explained sentences; the raw
                 * library log only with -v. */
                .log_fn = globals->verbosity > 0 ? ctl_report_log : NULL,
                .log_level = globals->verbosity > 1 ? GP_LOG_DEBUG : GP_LOG_INFO,
        };
}

int ctl_open_context(const struct ctl_globals *globals, struct gp_context **ret_context)
{
        struct gp_context_opts opts = ctl_context_opts(globals);

        return gp_context_new(&opts, ret_context);
}
