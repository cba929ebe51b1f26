/* SPDX-License-Identifier: MIT */
#include "fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "scan.h"

bool qf_parse_decimal_name(const char *name, uint64_t max, uint64_t *ret)
{
        struct qf_scan s = qf_scan_init(name, strlen(name));
        return qf_scan_dec(&s, max, ret) && qf_scan_at_end(&s);
}

bool qf_parse_entry_name(const char *name, uint64_t max, uint64_t *ret)
{
        return (name[0] != '0' || name[1] == '\0') && qf_parse_decimal_name(name, max, ret);
}

int qf_for_each_numbered_entry(const char *dir, uint64_t max, qf_numbered_entry_fn fn, void *userdata)
{
        _cleanup_closedir_ DIR *d = opendir(dir);
        if (!d)
                return -errno;

        for (struct dirent *de; (de = readdir(d));) {
                uint64_t number;
                if (!qf_parse_entry_name(de->d_name, max, &number))
                        continue;
                int r = fn(dir, number, (uint64_t) de->d_ino, userdata);
                if (r != 0)
                        return r < 0 ? r : 0;
        }
        return 0;
}

int qf_pathf(char *buf, size_t size, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(buf, size, fmt, ap);
        va_end(ap);
        if (n < 0 || (size_t) n >= size)
                return -ENAMETOOLONG;
        return 0;
}

int qf_read_file(const char *path, char *buf, size_t size, size_t *ret_len)
{
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;

        size_t len = 0;
        for (;;) {
                if (len + 1 >= size)
                        return -EFBIG;
                ssize_t n = read(fd, buf + len, size - 1 - len);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (n == 0)
                        break;
                len += (size_t) n;
        }
        buf[len] = 0;
        *ret_len = len;
        return 0;
}

int qf_read_s64(const char *path, int64_t *ret)
{
        char buf[64];
        size_t len;
        int r = qf_read_file(path, buf, sizeof(buf), &len);
        if (r < 0)
                return r;
        struct qf_scan s = qf_scan_init(buf, len);
        bool negative = QF_SCAN_LIT(&s, "-");
        uint64_t v;
        if (!qf_scan_dec(&s, negative ? (uint64_t) INT64_MAX + 1 : (uint64_t) INT64_MAX, &v))
                return -EBADMSG;
        QF_SCAN_LIT(&s, "\n");
        if (!qf_scan_at_end(&s))
                return -EBADMSG;
        /* -(INT64_MAX + 1) computed without overflowing */
        *ret = negative ? -(int64_t) (v - 1) - 1 : (int64_t) v;
        return 0;
}

int qf_read_u64(const char *path, uint64_t *ret)
{
        char buf[64];
        size_t len;
        int r = qf_read_file(path, buf, sizeof(buf), &len);
        if (r < 0)
                return r;
        struct qf_scan s = qf_scan_init(buf, len);
        uint64_t v;
        if (!qf_scan_dec(&s, UINT64_MAX, &v))
                return -EBADMSG;
        QF_SCAN_LIT(&s, "\n");
        if (!qf_scan_at_end(&s))
                return -EBADMSG;
        *ret = v;
        return 0;
}
