/* SPDX-License-Identifier: MIT */
#include "doctor-parse.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "scan.h"

/* Decimal digits in [*p, end), at most max; advances *p past them. Returns false when there are none or too many. */
static bool scan_dec(const char **p, const char *end, uint64_t max, unsigned long long *ret)
{
        struct qf_scan s = qf_scan_init(*p, (size_t)(end - *p));
        uint64_t v;

        if (!qf_scan_dec(&s, max, &v))
                return false;
        *p = s.p;
        *ret = v;
        return true;
}

int doctor_parse_lockdown(const char *text, char *ret_mode, size_t size)
{
        const char *open = strchr(text, '['), *close = open ? strchr(open, ']') : NULL;

        if (!close || close == open + 1 || size == 0)
                return -EINVAL;
        snprintf(ret_mode, size, "%.*s", (int)(close - open - 1), open + 1);
        return 0;
}

/* The ROCm libraries whose file names can tell a version. */
enum rocm_library {
        ROCM_HIP,      /* libamdhip64.so.MAJOR.MINOR.PATCH */
        ROCM_RUNTIME,  /* libhsa-runtime64.so.1.N.PATCH */
        ROCM_THUNK,    /* libhsakmt.so.1.0.N: no ROCm version in it */
        ROCM_NONE,
};

static enum rocm_library library_of(const char *base, size_t len, const char **ret_suffix)
{
        static const struct {
                const char *prefix;
                enum rocm_library library;
        } names[] = {
                { "libamdhip64.so", ROCM_HIP },
                { "libhsa-runtime64.so", ROCM_RUNTIME },
                { "libhsakmt.so", ROCM_THUNK },
        };

        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
                size_t n = strlen(names[i].prefix);

                if (len >= n && memcmp(base, names[i].prefix, n) == 0 && (len == n || base[n] == '.')) {
                        *ret_suffix = base + n;
                        return names[i].library;
                }
        }
        return ROCM_NONE;
}

/* "MAJOR.MINOR" at the start of s (which ends at end). */
static bool scan_version(const char *s, const char *end, unsigned long long *ret_major,
                         unsigned long long *ret_minor)
{
        if (s >= end || !scan_dec(&s, end, 1000, ret_major) || s >= end || *s != '.')
                return false;
        s++;
        return s < end && scan_dec(&s, end, 1000, ret_minor);
}

/* ".MAJOR.MINOR" at the start of s. */
static bool scan_two(const char *s, const char *end, unsigned long long *ret_major, unsigned long long *ret_minor)
{
        return s < end && *s == '.' && scan_version(s + 1, end, ret_major, ret_minor);
}

/* The version a library's file name or directory tells, or false. */
static bool version_of(const char *path, size_t len, unsigned *ret_major, unsigned *ret_minor)
{
        const char *end = path + len, *slash = memrchr(path, '/', len), *base = slash ? slash + 1 : path;
        const char *suffix = NULL, *dir;
        enum rocm_library library = library_of(base, (size_t)(end - base), &suffix);
        unsigned long long major, minor, n, patch;

        /* HIP's library version is HIP's, which is ROCm's: MAJOR.MINOR.PATCH */
        if (library == ROCM_HIP && scan_two(suffix, end, &major, &minor)) {
                *ret_major = (unsigned)major;
                *ret_minor = (unsigned)minor;
                return true;
        }
        /* AMD's builds end ROCr's name in ROCM_LIBPATCH_VERSION: 1.14.60200 is ROCm 6.2.0 */
        if (library == ROCM_RUNTIME && scan_two(suffix, end, &major, &n)) {
                const char *p = suffix + 1;

                p += strspn(p, "0123456789");
                p += strspn(p, ".");
                p += strspn(p, "0123456789");
                if (major == 1 && p < end && *p == '.') {
                        p++;
                        if (scan_dec(&p, end, 999999, &patch) && patch >= 10000) {
                                *ret_major = (unsigned)(patch / 10000);
                                *ret_minor = (unsigned)(patch / 100 % 100);
                                return true;
                        }
                }
        }
        /* AMD's installer: /opt/rocm-6.2.0/lib/... */
        for (dir = path; dir < base; dir++) {
                static const char prefix[] = "/rocm-";

                if ((size_t)(base - dir) > strlen(prefix) && memcmp(dir, prefix, strlen(prefix)) == 0 &&
                    scan_version(dir + strlen(prefix), base, &major, &minor)) {
                        *ret_major = (unsigned)major;
                        *ret_minor = (unsigned)minor;
                        return true;
                }
        }
        return false;
}

void doctor_parse_rocm(const char *maps, struct doctor_rocm *ret)
{
        struct doctor_rocm r = { 0 };

        for (const char *line = maps; line && *line;) {
                const char *nl = strchr(line, '\n'), *end = nl ? nl : line + strlen(line), *path = line;
                const char *deleted, *slash, *suffix;
                unsigned major, minor;
                size_t len;

                /* address perms offset dev inode, then the path after spaces */
                for (int field = 0; field < 5 && path < end; field++) {
                        while (path < end && *path != ' ')
                                path++;
                        while (path < end && *path == ' ')
                                path++;
                }
                len = (size_t)(end - path);
                deleted = len >= 10 && memcmp(end - 10, " (deleted)", 10) == 0 ? end - 10 : NULL;
                if (deleted)
                        len -= 10;
                slash = len ? memrchr(path, '/', len) : NULL;
                if (slash && library_of(slash + 1, (size_t)(path + len - slash - 1), &suffix) != ROCM_NONE) {
                        bool known = version_of(path, len, &major, &minor);

                        if (!r.mapped || (known && (!r.version_known || major < r.major ||
                                                    (major == r.major && minor < r.minor)))) {
                                snprintf(r.library, sizeof(r.library), "%.*s", (int)len, path);
                                if (known) {
                                        r.version_known = true;
                                        r.major = major;
                                        r.minor = minor;
                                }
                        }
                        r.mapped = true;
                }
                line = nl ? nl + 1 : NULL;
        }
        *ret = r;
}
