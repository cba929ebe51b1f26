/* SPDX-License-Identifier: MIT */
/*
 * Diagnostics collected while checking a configuration: every problem is kept
 * as one "file:line: sentence" so an operator sees all of them at once instead
 * of fixing one error per restart.
 */
#pragma once

#include <stddef.h>

/* A broken file can produce an error per line; past this many, only count. */
#define DIAG_MAX_MESSAGES 200

struct diag {
        char **messages;
        size_t n_messages;
        size_t n_dropped;
        /* the first file or directory the caller may not read (EACCES, EPERM), also in messages; NULL when none */
        char *unreadable;
};

/* file may be NULL (message about no file in particular); line 0 means "the whole file". */
void diag_add(struct diag *d, const char *file, unsigned line, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));
/* Records the failure to read path with -errno r; one for lack of permission is also kept in d->unreadable. */
void diag_add_unreadable(struct diag *d, const char *path, const char *what, int r);
size_t diag_count(const struct diag *d);
void diag_clear(struct diag *d);
