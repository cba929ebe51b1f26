/* SPDX-License-Identifier: MIT */
#include "test-util.h"

#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

int test_fd_from_bytes(const void *data, size_t len)
{
        int fd = memfd_create("queue-finder-test", MFD_CLOEXEC);
        assert_true(fd >= 0);
        const char *p = data;
        while (len > 0) {
                ssize_t n = write(fd, p, len);
                assert_true(n > 0);
                p += n;
                len -= (size_t) n;
        }
        assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
        return fd;
}

int test_fd_from_string(const char *s)
{
        return test_fd_from_bytes(s, strlen(s));
}

const char *test_shared_path(const char *name)
{
        static char path[PATH_MAX];
        const char *dir = getenv("GPREEMPT_REAL_DATA");
        assert_non_null(dir);
        snprintf(path, sizeof(path), "%s/%s", dir, name);
        return path;
}

int test_open_shared(const char *name)
{
        int fd = open(test_shared_path(name), O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                fail_msg("cannot open %s", test_shared_path(name));
        return fd;
}

char *test_read_shared(const char *name)
{
        FILE *in = fopen(test_shared_path(name), "re");
        char *text = NULL;
        size_t len = 0;
        FILE *out = open_memstream(&text, &len);
        int c;

        if (!in)
                fail_msg("cannot open %s", test_shared_path(name));
        assert_non_null(out);
        while ((c = getc(in)) != EOF)
                putc(c, out);
        fclose(in);
        assert_int_equal(fclose(out), 0);
        return text;
}

int test_open_shared_crlf(const char *name)
{
        char *text = test_read_shared(name);
        char *crlf = NULL;
        size_t len = 0;
        FILE *out = open_memstream(&crlf, &len);

        assert_non_null(out);
        for (const char *p = text; *p; p++) {
                if (*p == '\n')
                        putc('\r', out);
                putc(*p, out);
        }
        free(text);
        assert_int_equal(fclose(out), 0);
        int fd = test_fd_from_bytes(crlf, len);
        free(crlf);
        return fd;
}

void test_tmpdir_create(const char *prefix, char *buf, size_t size)
{
        const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
        /* mkdtemp replaces the last six characters, which must be 'X'. */
        int len = snprintf(buf, size, "%s/%s-", tmp, prefix);
        assert_true(len > 0 && (size_t) len + 7 <= size);
        memset(buf + len, 'X', 6);
        buf[len + 6] = 0;
        assert_non_null(mkdtemp(buf));
}

int test_tmpdir_remove(const char *dir)
{
        char cmd[PATH_MAX + 16];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
        return system(cmd) == 0 ? 0 : -1;
}

bool test_has_warning(const struct qf_diags *d, unsigned long line, const char *text)
{
        for (size_t i = 0; i < d->n; i++)
                if (d->items[i].line == line && strstr(d->items[i].message, text))
                        return true;
        return false;
}
