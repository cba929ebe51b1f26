/* SPDX-License-Identifier: MIT */
/*
 * The line splitter on both of its paths -- a regular file (read ahead by a
 * thread in chunks) and a pipe (read in place) -- with lines of every length
 * around the chunk and truncation limits, so every line crosses a chunk
 * boundary somewhere: each line must come back with its number, its bytes,
 * and the truncation flags.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "line-reader.h"
#include "test-util.h"

#define N_LINES 2000

struct corpus {
        char *data;
        size_t len;
        size_t line_len[N_LINES];
        bool last_unterminated;
};

/* Deterministic lengths: mostly log-sized, some around QF_LINE_MAX, some
 * empty; the byte at each position encodes line and offset. */
static void make_corpus(struct corpus *c, bool unterminated)
{
        uint64_t x = 12345;
        size_t total = 0;
        for (int i = 0; i < N_LINES; i++) {
                x = x * 6364136223846793005ULL + 1442695040888963407ULL;
                size_t len;
                switch ((x >> 33) % 20) {
                case 0:
                        len = QF_LINE_MAX - 1 + (x >> 40) % 3; /* just under, at, over */
                        break;
                case 1:
                        len = QF_LINE_MAX + 5000 + (x >> 40) % 70000;
                        break;
                case 2:
                        len = 0;
                        break;
                default:
                        len = (x >> 40) % 600;
                }
                c->line_len[i] = len;
                total += len + 1;
        }
        c->data = malloc(total);
        assert_non_null(c->data);
        size_t at = 0;
        for (int i = 0; i < N_LINES; i++) {
                for (size_t k = 0; k < c->line_len[i]; k++)
                        c->data[at++] = (char) ('a' + (i + k) % 26);
                c->data[at++] = '\n';
        }
        c->len = total;
        c->last_unterminated = unterminated;
        if (unterminated)
                c->len--; /* drop the final newline */
}

/* Lines one by one, or split by the caller from blocks as the log parser
 * does. */
enum split { BY_LINE, BY_BLOCK };

struct splitter {
        struct qf_line_reader *r;
        enum split how;
        struct qf_line_block block;
};

static int next_line(struct splitter *s, struct qf_line *l)
{
        if (s->how == BY_LINE)
                return qf_line_reader_next(s->r, l);
        while (!qf_line_block_next(&s->block, l)) {
                int k = qf_line_reader_next_block(s->r, &s->block);
                if (k <= 0)
                        return k;
        }
        return 1;
}

static void check(int fd, const struct corpus *c, enum split how)
{
        struct splitter s = { .how = how };
        assert_int_equal(qf_line_reader_new(fd, &s.r), 0);
        struct qf_line l;
        for (int i = 0; i < N_LINES; i++) {
                assert_int_equal(next_line(&s, &l), 1);
                assert_int_equal(l.lineno, i + 1);
                size_t want = c->line_len[i];
                assert_int_equal(l.truncated, want > QF_LINE_MAX);
                assert_int_equal(l.len, want > QF_LINE_MAX ? QF_LINE_MAX : want);
                assert_int_equal(l.unterminated, c->last_unterminated && i == N_LINES - 1);
                for (size_t k = 0; k < l.len; k++)
                        if (l.p[k] != (char) ('a' + (i + k) % 26))
                                fail_msg("line %d byte %zu differs", i + 1, k);
        }
        assert_int_equal(next_line(&s, &l), 0);
        qf_line_reader_free(s.r);
}

static void test_regular_file(void **state)
{
        for (int unterminated = 0; unterminated < 2; unterminated++) {
                struct corpus c;
                make_corpus(&c, unterminated);
                for (enum split how = BY_LINE; how <= BY_BLOCK; how++) {
                        int fd = test_fd_from_bytes(c.data, c.len);
                        check(fd, &c, how);
                        close(fd);
                }
                free(c.data);
        }
}

static void check_pipe(enum split how)
{
        struct corpus c;
        make_corpus(&c, true);
        int p[2];
        assert_int_equal(pipe(p), 0);
        pid_t child = fork();
        assert_true(child >= 0);
        if (child == 0) {
                close(p[0]);
                for (size_t done = 0; done < c.len;) {
                        /* uneven writes, so reads end anywhere */
                        size_t n = c.len - done < 7777 ? c.len - done : 7777;
                        ssize_t w = write(p[1], c.data + done, n);
                        if (w <= 0)
                                _exit(1);
                        done += (size_t) w;
                }
                _exit(0);
        }
        close(p[1]);
        check(p[0], &c, how);
        close(p[0]);
        int status;
        assert_int_equal(waitpid(child, &status, 0), child);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        free(c.data);
}

static void test_pipe(void **state)
{
        check_pipe(BY_LINE);
        check_pipe(BY_BLOCK);
}

/* The last line is longer than the limit and has no newline: cut, with
 * nothing after it. */
static void test_long_unterminated_last_line(void **state)
{
        size_t len = 3 * (size_t) QF_LINE_MAX;
        char *data = malloc(len + 3);
        assert_non_null(data);
        memcpy(data, "a\n", 2);
        memset(data + 2, 'x', len);
        for (enum split how = BY_LINE; how <= BY_BLOCK; how++) {
                int fd = test_fd_from_bytes(data, len + 2);
                struct splitter s = { .how = how };
                assert_int_equal(qf_line_reader_new(fd, &s.r), 0);
                struct qf_line l;
                assert_int_equal(next_line(&s, &l), 1);
                assert_int_equal(l.len, 1);
                assert_int_equal(next_line(&s, &l), 1);
                assert_int_equal(l.lineno, 2);
                assert_int_equal(l.len, QF_LINE_MAX);
                assert_true(l.truncated);
                assert_false(l.unterminated);
                assert_int_equal(next_line(&s, &l), 0);
                qf_line_reader_free(s.r);
                close(fd);
        }
        free(data);
}

/* Freeing a reader before the end stops its thread. */
static void test_early_free(void **state)
{
        struct corpus c;
        make_corpus(&c, false);
        int fd = test_fd_from_bytes(c.data, c.len);
        struct qf_line_reader *r;
        assert_int_equal(qf_line_reader_new(fd, &r), 0);
        struct qf_line l;
        assert_int_equal(qf_line_reader_next(r, &l), 1);
        qf_line_reader_free(r);
        close(fd);
        free(c.data);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_regular_file),
                cmocka_unit_test(test_pipe),
                cmocka_unit_test(test_early_free),
                cmocka_unit_test(test_long_unterminated_last_line),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
