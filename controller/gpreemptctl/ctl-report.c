/* SPDX-License-Identifier: MIT */
#include "report.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *report_error(int error, enum gp_op op, pid_t pid, int runtime_state)
{
        struct gp_explain_opts opts = {
                .sz = sizeof(opts),
                .error = error,
                .op = op,
                .pid = pid,
                .runtime_state = runtime_state,
        };
        char *sentence = NULL;

        if (gp_explain(&opts, &sentence) < 0) {
                fprintf(stderr, "gpreemptctl: %s\n", strerror(-error));
                return NULL;
        }
        fprintf(stderr, "gpreemptctl: %s.\n", sentence);
        return sentence;
}

int report_usage(const char *verb, const char *format, ...)
{
        va_list ap;

        fputs("gpreemptctl: ", stderr);
        va_start(ap, format);
        vfprintf(stderr, format, ap);
        va_end(ap);
        if (verb)
                fprintf(stderr, "\nTry 'gpreemptctl %s --help'.\n", verb);
        else
                fputs("\nTry 'gpreemptctl --help'.\n", stderr);
        return CTL_EXIT_USAGE;
}

void report_log(enum gp_log_level level, const char *message, void *userdata)
{
        fprintf(stderr, "gpreemptctl: %s%s\n", level <= GP_LOG_ERR ? "error: " : "", message);
}

int open_context(const struct ctl_globals *globals, struct gp_context **ret_context)
{
        struct gp_context_opts opts = {
                .sz = sizeof(opts),
                /* Errors reach the user as explained sentences; the raw
                 * library log only with -v. */
                .log_fn = globals->verbosity > 0 ? report_log : NULL,
                .log_level = globals->verbosity > 1 ? GP_LOG_DEBUG : GP_LOG_INFO,
        };

        return gp_context_new(&opts, ret_context);
}
