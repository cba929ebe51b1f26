/* SPDX-License-Identifier: MIT */
#include "ctl-report.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "explain-sentence.h"

char *ctl_report_error(int error, enum gp_op op, pid_t pid, int runtime_state)
{
        return ctl_report_sentence(explain_sentence(error, op, pid, runtime_state, NULL));
}

char *ctl_report_sentence(char *sentence)
{
        if (!sentence) {
                fputs("gpreemptctl: out of memory.\n", stderr);
                return NULL;
        }
        fprintf(stderr, "gpreemptctl: %s.\n", sentence);
        return sentence;
}

int ctl_report_usage(const char *verb, const char *format, ...)
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
