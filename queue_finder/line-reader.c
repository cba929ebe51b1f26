/* SPDX-License-Identifier: MIT */
#include "line-reader.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"

/* Large enough that syscalls cost nothing next to scanning (a 2.6 GB log is
 * ~2600 reads), small enough that what read() just copied is still in the
 * cache when the lines are split and parsed. */
#define READ_BUFFER_SIZE (1024 * 1024)

struct qf_line_reader {
        int fd;
        char *buf;
        size_t start, end;      /* unconsumed bytes are buf[start, end) */
        unsigned long lineno;
        bool eof;
        bool skipping;          /* discarding the tail of a truncated line */
};

int qf_line_reader_new(int fd, struct qf_line_reader **ret)
{
        _cleanup_free_ struct qf_line_reader *r = calloc(1, sizeof(*r));
        if (!r)
                return -ENOMEM;
        r->buf = malloc(READ_BUFFER_SIZE);
        if (!r->buf)
                return -ENOMEM;
        r->fd = fd;
        /* Only a hint: pipes and sockets refuse it, which is fine. */
        (void) posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
        *ret = TAKE_PTR(r);
        return 0;
}

void qf_line_reader_free(struct qf_line_reader *r)
{
        free(r->buf);
        free(r);
}

/* Moves the unconsumed bytes to the front and reads more after them. */
static int fill(struct qf_line_reader *r)
{
        if (r->start > 0) {
                memmove(r->buf, r->buf + r->start, r->end - r->start);
                r->end -= r->start;
                r->start = 0;
        }
        while (r->end < READ_BUFFER_SIZE) {
                ssize_t n = read(r->fd, r->buf + r->end, READ_BUFFER_SIZE - r->end);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (n == 0) {
                        r->eof = true;
                        break;
                }
                r->end += (size_t) n;
                /* A pipe delivers little at a time; one full line is enough
                 * to make progress, so do not block waiting for more. */
                if (memchr(r->buf + r->end - (size_t) n, '\n', (size_t) n))
                        break;
        }
        return 0;
}

static int skip_rest_of_line(struct qf_line_reader *r)
{
        while (r->skipping) {
                char *nl = memchr(r->buf + r->start, '\n', r->end - r->start);
                if (nl) {
                        r->start = (size_t) (nl - r->buf) + 1;
                        r->skipping = false;
                        break;
                }
                r->start = r->end;
                if (r->eof) {
                        r->skipping = false;
                        break;
                }
                int k = fill(r);
                if (k < 0)
                        return k;
        }
        return 0;
}

int qf_line_reader_next(struct qf_line_reader *r, struct qf_line *ret)
{
        int k = skip_rest_of_line(r);
        if (k < 0)
                return k;

        for (;;) {
                size_t avail = r->end - r->start;
                char *line = r->buf + r->start;
                char *nl = memchr(line, '\n', avail);
                if (nl) {
                        size_t len = (size_t) (nl - line);
                        r->start += len + 1;
                        *ret = (struct qf_line){
                                .p = line,
                                .len = len > QF_LINE_MAX ? QF_LINE_MAX : len,
                                .lineno = ++r->lineno,
                                .truncated = len > QF_LINE_MAX,
                        };
                        return 1;
                }
                if (avail >= QF_LINE_MAX) {
                        r->start += QF_LINE_MAX;
                        r->skipping = true;
                        *ret = (struct qf_line){
                                .p = line, .len = QF_LINE_MAX, .lineno = ++r->lineno, .truncated = true,
                        };
                        return 1;
                }
                if (r->eof) {
                        if (avail == 0)
                                return 0;
                        r->start = r->end;
                        *ret = (struct qf_line){
                                .p = line, .len = avail, .lineno = ++r->lineno, .unterminated = true,
                        };
                        return 1;
                }
                k = fill(r);
                if (k < 0)
                        return k;
        }
}
