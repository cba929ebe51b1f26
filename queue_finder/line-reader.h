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
#include <string.h>

/* Real CLR log lines are at most ~4.2 KiB (the message buffer is 4096 bytes);
 * debugfs lines are under 100 bytes. Anything longer is junk. */
#define QF_LINE_MAX (64 * 1024)

struct qf_line {
        const char *p;
        size_t len;          /* without the newline */
        unsigned long lineno;
        bool truncated;      /* longer than QF_LINE_MAX; only the start is in p */
        bool unterminated;   /* the last line of the input had no newline; not
                                * said of a truncated line, whose end is skipped */
};

struct qf_line_reader;

/* Takes no ownership of fd. */
int qf_line_reader_new(int fd, struct qf_line_reader **ret);
void qf_line_reader_free(struct qf_line_reader *r);

/* A run of lines as they lie in the buffer, for a caller that splits them
 * itself (qf_line_block_next, inlined, or the log parser's window scan,
 * which finds the newlines on its own and hands the lines it wants to
 * qf_line_block_take). Every line in [p, end) ends with a newline except possibly
 * the last, which is then the input's unterminated last line (at_eof) or
 * the first QF_LINE_MAX bytes of a longer line (cut). Lines inside the run
 * may be longer than QF_LINE_MAX: the splitter truncates them. */
struct qf_line_block {
        const char *p, *end;
        unsigned long lineno;   /* of the line before p; carried from block to block */
        bool cut;
        bool at_eof;
};

/* 1 and *b set to the next run, 0 at end of input, -errno on a read error.
 * *b must be zeroed before the first call and fully split before the next;
 * its lineno goes on counting. A reader is used either through blocks or
 * through qf_line_reader_next, not both. */
int qf_line_reader_next_block(struct qf_line_reader *r, struct qf_line_block *b);

/* The line from b->p to nl, its newline, or to b->end when nl is NULL (the
 * run's last line); b->p moves past it. For a caller that found the
 * newline itself. */
static inline void qf_line_block_take(struct qf_line_block *b, const char *nl, struct qf_line *ret)
{
        const char *line = b->p;
        size_t len = nl ? (size_t) (nl - line) : (size_t) (b->end - line);
        b->p = nl ? nl + 1 : b->end;
        *ret = (struct qf_line){
                .p = line,
                .len = len > QF_LINE_MAX ? QF_LINE_MAX : len,
                .lineno = ++b->lineno,
                .truncated = len > QF_LINE_MAX || (!nl && b->cut),
                .unterminated = !nl && b->at_eof && !b->cut,
        };
}

static inline bool qf_line_block_next(struct qf_line_block *b, struct qf_line *ret)
{
        if (b->p == b->end)
                return false;
        qf_line_block_take(b, memchr(b->p, '\n', (size_t) (b->end - b->p)), ret);
        return true;
}

/* 1 and *ret filled for a line, 0 at end of input, -errno on a read error.
 * A carriage return before the newline is left out: a dump copied through
 * Windows ends its lines with CRLF, and the parsers match line ends. */
int qf_line_reader_next(struct qf_line_reader *r, struct qf_line *ret);

static inline void qf_line_reader_freep(struct qf_line_reader **r)
{
        if (*r)
                qf_line_reader_free(*r);
}
#define _cleanup_line_reader_ __attribute__((cleanup(qf_line_reader_freep)))
