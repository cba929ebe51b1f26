/* SPDX-License-Identifier: MIT */
/*
 * Diagnostics collected by the parsers: every warning names the file and the
 * line it is about, so an operator can look at the offending input. Library
 * code never prints; the program decides what to do with the list.
 */
#pragma once

#include <stdarg.h>
#include <stddef.h>

/* A bad input file must not make the list grow without bound: after this many
 * entries further ones are only counted. */
#define QF_DIAG_MAX 200

struct qf_diag {
        char *file;          /* input name as the user gave it, "-" for stdin */
        unsigned long line;  /* 1-based; 0 when the problem is not about a line */
        char *message;       /* one sentence, no trailing newline */
};

struct qf_diags {
        struct qf_diag *items;
        size_t n;
        size_t dropped; /* warnings beyond QF_DIAG_MAX */
};

/* Records a warning. Allocation failure drops the warning and counts it: a
 * diagnostic must never turn into an error of its own. */
void qf_diag_add(struct qf_diags *d, const char *file, unsigned long line, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));

void qf_diags_clear(struct qf_diags *d);
