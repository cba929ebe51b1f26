/* SPDX-License-Identifier: MIT */
/*
 * Files of the rendered sysfs/debugfs tree. Readers (the product, through
 * the preload) may open a file at any moment, so every file is replaced
 * atomically (temporary file + rename) and never seen half written.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "gpu-internal.h"

/* KFD_SYSFS_FILE_MODE; debugfs files are 0444 too (kfd_debugfs_init). */
#define RENDERED_FILE_MODE 0444
/* Files being written and trees being removed live here, outside the
 * rendered sys/ tree, so a reader listing a directory never sees a name
 * the kernel would not show. Only one thread renders at a time (under
 * node->lock), so fixed names are enough. */
#define STAGING_DIR ".staging"
#define STAGING_FILE STAGING_DIR "/file"
#define STAGING_TREE STAGING_DIR "/removed"

static int join_path(const char *root, const char *relpath, char ret_path[PATH_MAX])
{
        int n = snprintf(ret_path, PATH_MAX, "%s/%s", root, relpath);

        return n < 0 || n >= PATH_MAX ? -ENAMETOOLONG : 0;
}

static int mkdir_parents(char *path)
{
        for (char *slash = strchr(path + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
                *slash = '\0';
                if (mkdir(path, 0755) < 0 && errno != EEXIST) {
                        int r = NEG_ERRNO();
                        *slash = '/';
                        return r;
                }
                *slash = '/';
        }
        return 0;
}

int emu_render_dir(const char *root, const char *relpath)
{
        char path[PATH_MAX];
        int r = join_path(root, relpath, path);

        if (r < 0)
                return r;
        r = mkdir_parents(path);
        if (r < 0)
                return r;
        return mkdir(path, 0755) < 0 && errno != EEXIST ? NEG_ERRNO() : 0;
}

static int write_all(int fd, const char *data, size_t len)
{
        while (len > 0) {
                ssize_t n = write(fd, data, len);

                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return NEG_ERRNO();
                }
                data += n;
                len -= (size_t)n;
        }
        return 0;
}

/* Where `relpath` goes and where it is staged before the rename, with the
 * parent directories of both made. */
static int prepare_paths(const char *root, const char *relpath, char ret_path[PATH_MAX], char ret_tmp[PATH_MAX])
{
        int r;

        r = join_path(root, relpath, ret_path);
        if (r >= 0)
                r = join_path(root, STAGING_FILE, ret_tmp);
        if (r >= 0)
                r = mkdir_parents(ret_path);
        if (r >= 0)
                r = mkdir_parents(ret_tmp);
        return r;
}

int emu_render_write(const char *root, const char *relpath, const char *data, size_t len)
{
        char path[PATH_MAX], tmp[PATH_MAX];
        _cleanup_close_ int fd = -1;
        int r;

        r = prepare_paths(root, relpath, path, tmp);
        if (r < 0)
                return r;
        fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0)
                return NEG_ERRNO();
        r = write_all(fd, data, len);
        if (r >= 0 && fchmod(fd, RENDERED_FILE_MODE) < 0)
                r = NEG_ERRNO();
        if (r >= 0 && rename(tmp, path) < 0)
                r = NEG_ERRNO();
        if (r < 0)
                unlink(tmp);
        return r;
}

int emu_render_printf(const char *root, const char *relpath, const char *fmt, ...)
{
        _cleanup_free_ char *text = NULL;
        va_list ap;
        int n;

        va_start(ap, fmt);
        n = vasprintf(&text, fmt, ap);
        va_end(ap);
        if (n < 0)
                return -ENOMEM;
        return emu_render_write(root, relpath, text, (size_t)n);
}

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
        return type == FTW_DP ? rmdir(path) : unlink(path);
}

/* A directory goes away at once for readers (rename), then its files. */
int emu_render_remove_tree(const char *root, const char *relpath)
{
        char path[PATH_MAX], doomed[PATH_MAX];
        int r;

        r = join_path(root, relpath, path);
        if (r >= 0)
                r = join_path(root, STAGING_TREE, doomed);
        if (r >= 0)
                r = mkdir_parents(doomed);
        if (r < 0)
                return r;
        /* Leftovers of a removal that failed half way. */
        nftw(doomed, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
        if (rename(path, doomed) < 0)
                return errno == ENOENT ? 0 : NEG_ERRNO();
        return nftw(doomed, remove_entry, 16, FTW_DEPTH | FTW_PHYS) < 0 ? NEG_ERRNO() : 0;
}

int emu_render_symlink(const char *root, const char *relpath, const char *target)
{
        char path[PATH_MAX], tmp[PATH_MAX];
        int r;

        r = prepare_paths(root, relpath, path, tmp);
        if (r < 0)
                return r;
        unlink(tmp);
        if (symlink(target, tmp) < 0)
                return NEG_ERRNO();
        if (rename(tmp, path) < 0) {
                r = NEG_ERRNO();
                unlink(tmp);
                return r;
        }
        return 0;
}
