/* SPDX-License-Identifier: MIT */
/*
 * gpreemptctl is a table of verbs; each verb group lives in its own
 * verb-*.c file and adds its entries to verbs[] in gpreemptctl.c.
 */
#pragma once

#include <stdbool.h>

/* Exit codes scripts can rely on (documented in gpreemptctl.1.scd). */
enum ctl_exit {
        CTL_EXIT_OK = 0,
        CTL_EXIT_USAGE = 1,        /* bad command line */
        CTL_EXIT_PRECONDITION = 2, /* nothing done: KFD, permissions, the target */
        CTL_EXIT_PARTIAL = 3,      /* some processes or queues were not handled */
        CTL_EXIT_FAILURE = 4,      /* an operation failed after it started */
};

struct ctl_globals {
        /* 0: errors only; 1: -v (info); 2: -vv (debug). */
        int verbosity;
};

struct verb {
        const char *name;
        const char *synopsis;
        const char *summary;
        /* argv[0] is the verb's name as typed. Returns an enum ctl_exit. */
        int (*run)(const struct ctl_globals *globals, int argc, char **argv);
};

int verb_hold(const struct ctl_globals *globals, int argc, char **argv);
int verb_bench(const struct ctl_globals *globals, int argc, char **argv);
int verb_queues(const struct ctl_globals *globals, int argc, char **argv);
int verb_status(const struct ctl_globals *globals, int argc, char **argv);
int verb_reload(const struct ctl_globals *globals, int argc, char **argv);
/* suspend, resume, register, unregister: told apart by argv[0]. */
int verb_daemon_pid(const struct ctl_globals *globals, int argc, char **argv);
int verb_top(const struct ctl_globals *globals, int argc, char **argv);
int verb_verify_config(const struct ctl_globals *globals, int argc, char **argv);
int verb_doctor(const struct ctl_globals *globals, int argc, char **argv);
