/* SPDX-License-Identifier: MIT */
/*
 * Streaming line splitter over a file descriptor, shared by every text parser.
 *
 * Memory is constant: one buffer allocated at open. Lines are handed out as
 * (pointer, length) views into that buffer, valid until the next call, and may
 * contain any byte including NUL (logs carry binary junk). A line longer than
 * QF_LINE_MAX is delivered truncated, flagged, and the rest of it is skipped,
 * so a multi-gigabyte file without newlines cannot exhaust memory.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* Real CLR log lines are at most ~4.2 KiB (the message buffer is 4096 bytes);
 * debugfs lines are under 100 bytes. Anything longer is junk. */
#define QF_LINE_MAX (64 * 1024)

struct qf_line {
        const char *p;
        size_t len;          /* without the newline */
        unsigned long lineno;
        bool truncated;      /* longer than QF_LINE_MAX; only the start is in p */
        bool unterminated;   /* the last line of the input had no newline */
};

struct qf_line_reader;

/* Takes no ownership of fd. */
int qf_line_reader_new(int fd, struct qf_line_reader **ret);
void qf_line_reader_free(struct qf_line_reader *r);

/* 1 and *ret filled for a line, 0 at end of input, -errno on a read error. */
int qf_line_reader_next(struct qf_line_reader *r, struct qf_line *ret);

static inline void qf_line_reader_freep(struct qf_line_reader **r)
{
        if (*r)
                qf_line_reader_free(*r);
}
#define _cleanup_line_reader_ __attribute__((cleanup(qf_line_reader_freep)))
