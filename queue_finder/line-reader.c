/* SPDX-License-Identifier: MIT */
#include "line-reader.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"

/* Large enough that syscalls cost little next to scanning (a 2.6 GB log is
 * ~10 000 reads), small enough that what the reading thread just copied is
 * still in a cache the parsing thread reaches when it splits the lines.
 * Larger and smaller chunks were both slower (docs/benchmarks/queue-finder.md,
 * "the line-by-line parser"). */
#define READ_SIZE (256 * 1024)

/* Regular files are read by a helper thread into a ring of chunks, so the
 * kernel's copy into our memory, a large part of the time even on a cached
 * log (docs/benchmarks/queue-finder.md), overlaps with parsing. Each chunk
 * has QF_LINE_MAX bytes of headroom in front, where the unfinished line of
 * the previous chunk is carried over. The thread is usually ahead; once the
 * ring is full it sleeps until REFILL_CHUNKS are free rather than until one
 * is: a wake-up per chunk cost more system time than the copies on a
 * 2-CPU VM. */
#define N_CHUNKS 4
#define REFILL_CHUNKS 2

struct chunk {
        char *mem;              /* QF_LINE_MAX headroom + READ_SIZE */
        size_t len;             /* bytes read, at mem + QF_LINE_MAX */
        bool eof;
        int error;              /* -errno of a failed read */
};

struct qf_line_reader {
        int fd;
        char *buf;              /* the bytes being split: a chunk's mem, or the pipe buffer */
        size_t start, end;      /* unconsumed bytes are buf[start, end) */
        bool eof;
        bool skipping;          /* discarding the tail of a truncated line */
        struct qf_line_block block; /* being split by qf_line_reader_next */

        /* pipes and terminals: read synchronously into buf */
        char *pipe_buf;

        /* regular files: the reading thread and its chunks */
        bool threaded;
        pthread_t thread;
        pthread_mutex_t lock;
        pthread_cond_t cond;
        struct chunk chunks[N_CHUNKS];
        unsigned long produced; /* chunks filled by the thread */
        unsigned long released; /* chunks the splitter is done with */
        unsigned long wanted;   /* produced count a starved splitter waits for */
        bool read_all;          /* the thread produced its last chunk */
        bool have_chunk;        /* buf is chunks[released % N_CHUNKS] */
        bool stop;
};

static void *read_ahead(void *userdata)
{
        struct qf_line_reader *r = userdata;
        for (;;) {
                pthread_mutex_lock(&r->lock);
                if (r->produced - r->released >= N_CHUNKS)
                        while (!r->stop && r->produced - r->released > N_CHUNKS - REFILL_CHUNKS)
                                pthread_cond_wait(&r->cond, &r->lock);
                bool stop = r->stop;
                struct chunk *c = &r->chunks[r->produced % N_CHUNKS];
                pthread_mutex_unlock(&r->lock);
                if (stop)
                        return NULL;

                size_t len = 0;
                bool eof = false;
                int error = 0;
                while (len < READ_SIZE) {
                        ssize_t n = read(r->fd, c->mem + QF_LINE_MAX + len, READ_SIZE - len);
                        if (n < 0 && errno == EINTR)
                                continue;
                        if (n <= 0) {
                                error = n < 0 ? -errno : 0;
                                eof = true;
                                break;
                        }
                        len += (size_t) n;
                }

                pthread_mutex_lock(&r->lock);
                c->len = len;
                c->eof = eof;
                c->error = error;
                r->produced++;
                r->read_all = eof;
                if (eof || r->produced >= r->wanted)
                        pthread_cond_broadcast(&r->cond);
                pthread_mutex_unlock(&r->lock);
                if (eof)
                        return NULL;
        }
}

static int start_thread(struct qf_line_reader *r)
{
        for (int i = 0; i < N_CHUNKS; i++) {
                r->chunks[i].mem = malloc(QF_LINE_MAX + READ_SIZE);
                if (!r->chunks[i].mem)
                        return -ENOMEM;
        }
        pthread_mutex_init(&r->lock, NULL);
        pthread_cond_init(&r->cond, NULL);
        int k = pthread_create(&r->thread, NULL, read_ahead, r);
        if (k != 0) {
                pthread_cond_destroy(&r->cond);
                pthread_mutex_destroy(&r->lock);
                return -k;
        }
        r->threaded = true;
        /* Nothing to split yet: an empty window in the first chunk. */
        r->buf = r->chunks[0].mem;
        r->start = r->end = QF_LINE_MAX;
        return 0;
}

int qf_line_reader_new(int fd, struct qf_line_reader **ret)
{
        _cleanup_free_ struct qf_line_reader *r = calloc(1, sizeof(*r));
        if (!r)
                return -ENOMEM;
        r->fd = fd;
        /* Only a hint: pipes and sockets refuse it, which is fine. */
        (void) posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);

        /* A read from a regular file never blocks for long, so the thread
         * can always be stopped; a pipe could keep it in read() forever.
         * A file that fits one read gains nothing from it. */
        struct stat st;
        if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > READ_SIZE && start_thread(r) == 0) {
                *ret = TAKE_PTR(r);
                return 0;
        }
        for (int i = 0; i < N_CHUNKS; i++) {
                free(r->chunks[i].mem);
                r->chunks[i].mem = NULL;
        }
        r->pipe_buf = malloc(QF_LINE_MAX + READ_SIZE);
        if (!r->pipe_buf)
                return -ENOMEM;
        r->buf = r->pipe_buf;
        *ret = TAKE_PTR(r);
        return 0;
}

void qf_line_reader_free(struct qf_line_reader *r)
{
        if (r->threaded) {
                pthread_mutex_lock(&r->lock);
                r->stop = true;
                pthread_cond_broadcast(&r->cond);
                pthread_mutex_unlock(&r->lock);
                pthread_join(r->thread, NULL);
                pthread_cond_destroy(&r->cond);
                pthread_mutex_destroy(&r->lock);
        }
        for (int i = 0; i < N_CHUNKS; i++)
                free(r->chunks[i].mem);
        free(r->pipe_buf);
        free(r);
}

/* Moves on to the next chunk, carrying the unconsumed bytes (at most
 * QF_LINE_MAX, the callers make sure) into its headroom. The current chunk
 * is released only after the copy, so the thread cannot refill it under us. */
static int next_chunk(struct qf_line_reader *r)
{
        size_t carry = r->end - r->start;

        pthread_mutex_lock(&r->lock);
        unsigned long next = r->have_chunk ? r->released + 1 : r->released;
        if (r->produced <= next) {
                /* Starved (the thread is slower, on a busy machine): wait
                 * for REFILL_CHUNKS, or the last, rather than for one, for
                 * the same reason as the thread does. The ring holds them:
                 * only the current chunk is taken. */
                r->wanted = next + REFILL_CHUNKS;
                while (r->produced < r->wanted && !r->read_all)
                        pthread_cond_wait(&r->cond, &r->lock);
        }
        struct chunk *c = &r->chunks[next % N_CHUNKS];
        pthread_mutex_unlock(&r->lock);

        if (carry)
                memcpy(c->mem + QF_LINE_MAX - carry, r->buf + r->start, carry);

        pthread_mutex_lock(&r->lock);
        if (r->have_chunk) {
                r->released++;
                if (r->produced - r->released <= N_CHUNKS - REFILL_CHUNKS)
                        pthread_cond_broadcast(&r->cond);
        }
        pthread_mutex_unlock(&r->lock);

        r->have_chunk = true;
        r->buf = c->mem;
        r->start = QF_LINE_MAX - carry;
        r->end = QF_LINE_MAX + c->len;
        r->eof = c->eof;
        return c->error;
}

/* Moves the unconsumed bytes to the front and reads more after them. */
static int fill_from_pipe(struct qf_line_reader *r)
{
        if (r->start > 0) {
                memmove(r->buf, r->buf + r->start, r->end - r->start);
                r->end -= r->start;
                r->start = 0;
        }
        while (r->end < QF_LINE_MAX + READ_SIZE) {
                ssize_t n = read(r->fd, r->buf + r->end, QF_LINE_MAX + READ_SIZE - r->end);
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

static int fill(struct qf_line_reader *r)
{
        return r->threaded ? next_chunk(r) : fill_from_pipe(r);
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

int qf_line_reader_next_block(struct qf_line_reader *r, struct qf_line_block *b)
{
        int k = skip_rest_of_line(r);
        if (k < 0)
                return k;

        for (;;) {
                size_t avail = r->end - r->start;
                const char *p = r->buf + r->start;
                const char *nl = avail ? memrchr(p, '\n', avail) : NULL;
                size_t whole = nl ? (size_t) (nl + 1 - p) : 0;
                size_t tail = avail - whole;
                /* A line longer than the limit is handed out cut and the
                 * rest of it skipped: it cannot be carried into the next
                 * buffer's headroom. */
                bool cut = tail > QF_LINE_MAX;
                if (cut || r->eof || whole) {
                        size_t len = cut ? whole + QF_LINE_MAX : r->eof ? avail : whole;
                        if (len == 0)
                                return 0;
                        *b = (struct qf_line_block){
                                .p = p, .end = p + len, .lineno = b->lineno, .cut = cut, .at_eof = r->eof,
                        };
                        r->start += len;
                        r->skipping = cut;
                        return 1;
                }
                k = fill(r);
                if (k < 0)
                        return k;
        }
}

int qf_line_reader_next(struct qf_line_reader *r, struct qf_line *ret)
{
        while (!qf_line_block_next(&r->block, ret)) {
                int k = qf_line_reader_next_block(r, &r->block);
                if (k <= 0)
                        return k;
        }
        if (ret->len > 0 && ret->p[ret->len - 1] == '\r' && !ret->truncated)
                ret->len--;
        return 1;
}
