/* SPDX-License-Identifier: MIT */
/* How the verbs tell the user about errors and library messages. */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "gpreempt.h"
#include "verbs.h"

/* Prints "gpreemptctl: <sentence>" on stderr and returns the sentence
 * (malloc'd) for --json output; NULL only when out of memory. */
char *report_error(int error, enum gp_op op, pid_t pid, int runtime_state);
/* A usage error: prints the message and a pointer to --help. */
int report_usage(const char *verb, const char *format, ...) __attribute__((format(printf, 2, 3)));
/* The library's log callback: messages to stderr, by -v level. */
void report_log(enum gp_log_level level, const char *message, void *userdata);
/* Opens the KFD context with report_log installed as -v asks. */
int open_context(const struct ctl_globals *globals, struct gp_context **ret_context);
