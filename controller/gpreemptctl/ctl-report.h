/* SPDX-License-Identifier: MIT */
/* How the verbs tell the user about errors and library messages. */
#pragma once

#include <getopt.h>
#include <stdbool.h>
#include <sys/types.h>

#include <gpreempt/gpreempt.h>
#include "verbs.h"

/* Prints "gpreemptctl: <sentence>" on stderr and returns the sentence
 * (malloc'd, made printable: printable.h) for --json output; NULL only when
 * out of memory. */
char *ctl_report_error(int error, enum gp_op op, pid_t pid, int runtime_state);
/* The same for a sentence in hand (malloc'd, taken over; NULL: out of memory). */
char *ctl_report_sentence(char *sentence);
/* Prints {"error": sentence} on stdout, what --json gives when a verb cannot
 * do its work (NULL: the sentence could not be made, out of memory). */
void ctl_report_json_error(const char *sentence);
/* A usage error: prints the message and a pointer to --help (and {"error": ...} on stdout under --json). */
int ctl_report_usage(const char *verb, const char *format, ...) __attribute__((format(printf, 2, 3)));
/* Whether the command line asked for --json: usage errors are JSON too then. */
void ctl_report_usage_as_json(bool json);
/*
 * getopt_long() returned '?' (the caller sets opterr to 0): names the
 * argument that was wrong, an unknown option, an option without its value,
 * or a negative number where a process id was meant.
 */
int ctl_report_bad_option(const char *verb, int argc, char *const *argv, const struct option *options);
/* The library's log callback: messages to stderr, by -v level. */
void ctl_report_log(enum gp_log_level level, const char *message, void *userdata);
/* The KFD context's options: ctl_report_log installed as -v asks. */
struct gp_context_opts ctl_context_opts(const struct ctl_globals *globals);
/* Opens the KFD context with those options. */
int ctl_open_context(const struct ctl_globals *globals, struct gp_context **ret_context);
