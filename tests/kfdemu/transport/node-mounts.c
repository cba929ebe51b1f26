/* SPDX-License-Identifier: MIT */
/*
 * The node's files presented with bind mounts, so that every reader sees
 * them as it would see the kernel's: programs that read sysfs through
 * libc's own internal calls (glob, nftw, scandir), statically linked
 * programs, raw system calls, other languages' runtimes.
 *
 * A bind mount needs a mount point, and on a machine without amdgpu the
 * paths do not exist: sysfs and debugfs refuse new entries, and one made in
 * the real /dev would outlast the run. So a directory that lacks an entry
 * is covered, in the mount namespace only, by a tmpfs holding the
 * same entries (each directory, file or device node a bind mount of the
 * original, with the mounts below it; each symlink a copy) and the new one.
 * The originals are reached through an fd opened before the tmpfs covers
 * them (/proc/self/fd/N/NAME), so no staging mount point is needed.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "node-mounts.h"

/* What the kernel shows when amdgpu is loaded, each a tree the server
 * renders under its private directory at the same path. */
static const char *const presented_trees[] = {
        "/sys/class/kfd",
        "/sys/devices/virtual/kfd",
        "/sys/kernel/debug/kfd",
        "/sys/module/amdgpu/parameters",
        "/dev/dri",
};

#define KFD_DEVICE "/dev/kfd"
/* Where libdrm looks up a character device's sysfs entry (drmNodeIsDRM):
 * the server renders one per render node, 226:<minor>. */
#define CHAR_DEVICES "/sys/dev/char"

static inline void closedirp(DIR **d)
{
        if (*d)
                closedir(*d);
}

static int record_covered(struct node_mounts *m, const char *path)
{
        if (m->n_covered == NODE_MOUNTS_MAX)
                return -E2BIG;
        snprintf(m->covered[m->n_covered++], PATH_MAX, "%s", path);
        return 0;
}

/* Whether `dir` is in a tmpfs this run made, where entries may be added. */
static bool in_own_fs(const struct node_mounts *m, const char *dir)
{
        struct stat st;

        if (stat(dir, &st) < 0)
                return false;
        for (size_t i = 0; i < m->n_own_fs; i++)
                if (m->own_fs[i] == st.st_dev)
                        return true;
        return false;
}

static int make_mount_point(const char *path, bool directory)
{
        if (directory)
                return mkdir(path, 0755) < 0 ? NEG_ERRNO() : 0;

        _cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        return fd < 0 ? NEG_ERRNO() : 0;
}

static int join(char ret[static PATH_MAX], const char *dir, const char *name)
{
        int n = snprintf(ret, PATH_MAX, "%s/%s", strcmp(dir, "/") == 0 ? "" : dir, name);

        return n < 0 || n >= PATH_MAX ? -ENAMETOOLONG : 0;
}

/* One entry of the covered directory `dir_fd` again at `dir`/`name`. */
static int copy_entry(int dir_fd, const char *dir, const char *name)
{
        char source[64 + NAME_MAX], target[PATH_MAX];
        struct stat st;
        int r;

        if (fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return errno == ENOENT ? 0 : NEG_ERRNO(); /* gone since it was listed */
        r = join(target, dir, name);
        if (r < 0)
                return r;
        if (S_ISLNK(st.st_mode)) {
                char link[PATH_MAX];
                ssize_t n = readlinkat(dir_fd, name, link, sizeof(link) - 1);

                if (n < 0)
                        return NEG_ERRNO();
                link[n] = '\0';
                return symlink(link, target) < 0 ? NEG_ERRNO() : 0;
        }
        r = make_mount_point(target, S_ISDIR(st.st_mode));
        if (r < 0)
                return r;
        snprintf(source, sizeof(source), "/proc/self/fd/%d/%s", dir_fd, name);
        return mount(source, target, NULL, MS_BIND | MS_REC, NULL) < 0 ? NEG_ERRNO() : 0;
}

/* Covers `dir` with a tmpfs holding what it held. A directory the caller
 * may not list (debugfs is root's only) is covered empty: its entries were
 * out of the caller's reach anyway. */
static int cover_directory(struct node_mounts *m, const char *dir)
{
        _cleanup_(closedirp) DIR *entries = NULL;
        struct dirent *de;
        struct stat st;
        char options[32];
        int fd, r;

        if (m->n_own_fs == NODE_MOUNTS_MAX)
                return -E2BIG;
        if (stat(dir, &st) < 0)
                return NEG_ERRNO();
        fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0 && errno != EACCES)
                return NEG_ERRNO();
        if (fd >= 0 && !(entries = fdopendir(fd))) {
                r = NEG_ERRNO();
                close(fd);
                return r;
        }
        snprintf(options, sizeof(options), "mode=%04o", (unsigned)(st.st_mode & 07777));
        if (mount("tmpfs", dir, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, options) < 0)
                return NEG_ERRNO();
        r = record_covered(m, dir);
        if (r < 0)
                return r;
        /* The original owner; in a user namespace that does not map it,
         * chown fails with EINVAL and the directory stays the caller's. */
        if (chown(dir, st.st_uid, st.st_gid) < 0 && errno != EINVAL)
                return NEG_ERRNO();
        if (stat(dir, &st) < 0)
                return NEG_ERRNO();
        m->own_fs[m->n_own_fs++] = st.st_dev;

        while (entries && (errno = 0, de = readdir(entries))) {
                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                        continue;
                r = copy_entry(dirfd(entries), dir, de->d_name);
                if (r < 0)
                        return r;
        }
        return entries && errno ? NEG_ERRNO() : 0;
}

/* Makes `path` exist as a directory (or, not `directory`, a file) to
 * mount on, adding it (and its missing parents) to a covering tmpfs where
 * the original tree lacks it. `ret_added`: it was not in the original. */
static int ensure_mount_point(struct node_mounts *m, const char *path, bool directory, bool *ret_added)
{
        char parent[PATH_MAX];
        struct stat st;
        bool parent_added;
        int r;

        if (lstat(path, &st) == 0) {
                if (!S_ISDIR(st.st_mode) != !directory)
                        return directory ? -ENOTDIR : -EISDIR;
                *ret_added = false;
                return 0;
        }
        /* EACCES: a parent the caller may not search, covered below. */
        if (errno != ENOENT && errno != EACCES)
                return NEG_ERRNO();

        snprintf(parent, sizeof(parent), "%s", path);
        char *slash = strrchr(parent, '/');
        if (slash == parent)
                slash[1] = '\0';
        else
                *slash = '\0';
        r = ensure_mount_point(m, parent, true, &parent_added);
        if (r < 0)
                return r;
        if (!in_own_fs(m, parent)) {
                r = cover_directory(m, parent);
                if (r < 0)
                        return r;
        }
        r = make_mount_point(path, directory);
        if (r < 0)
                return r;
        *ret_added = true;
        return 0;
}

static int present(struct node_mounts *m, const char *source, const char *target, bool read_only)
{
        struct stat st;
        bool added;
        int r;

        if (stat(source, &st) < 0)
                return NEG_ERRNO();
        r = ensure_mount_point(m, target, S_ISDIR(st.st_mode), &added);
        if (r < 0)
                return r;
        if (mount(source, target, NULL, MS_BIND, NULL) < 0)
                return NEG_ERRNO();
        if (!added) {
                r = record_covered(m, target);
                if (r < 0)
                        return r;
        }
        /* Nobody writes the kernel's files (sysfs refuses even root): what
         * a reader may change is only ever the server's to write.
         * mount_setattr(2) adds read-only without clearing the nosuid,
         * nodev... a user namespace may not clear. */
        if (read_only && mount_setattr(AT_FDCWD, target, 0, &(struct mount_attr){ .attr_set = MOUNT_ATTR_RDONLY },
                                       sizeof(struct mount_attr)) < 0)
                return NEG_ERRNO();
        return 0;
}

/* `relpath` under `root`, made if the server has not rendered it (yet):
 * a tree the node has nothing in is presented empty. */
static int rendered_tree(const char *root, const char *path, char ret[static PATH_MAX])
{
        int r = join(ret, root, path + 1);

        if (r < 0)
                return r;
        for (char *slash = ret + strlen(root) + 1; (slash = strchr(slash, '/')); slash++) {
                *slash = '\0';
                r = mkdir(ret, 0755) < 0 && errno != EEXIST ? NEG_ERRNO() : 0;
                *slash = '/';
                if (r < 0)
                        return r;
        }
        return mkdir(ret, 0755) < 0 && errno != EEXIST ? NEG_ERRNO() : 0;
}

/* Each character device entry the server rendered, over the machine's. */
static int present_char_devices(struct node_mounts *m, const char *root)
{
        _cleanup_(closedirp) DIR *entries = NULL;
        char dir[PATH_MAX], source[PATH_MAX], target[PATH_MAX];
        struct dirent *de;
        int r;

        r = join(dir, root, CHAR_DEVICES + 1);
        if (r < 0)
                return r;
        entries = opendir(dir);
        if (!entries)
                return errno == ENOENT ? 0 : NEG_ERRNO();
        while ((errno = 0, de = readdir(entries))) {
                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                        continue;
                r = join(source, dir, de->d_name);
                if (r >= 0)
                        r = join(target, CHAR_DEVICES, de->d_name);
                if (r >= 0)
                        r = present(m, source, target, true);
                if (r < 0)
                        return r;
        }
        return errno ? NEG_ERRNO() : 0;
}

int node_mounts_present(struct node_mounts *m, const char *root, const char *socket_path,
                        const char **ret_failed_path)
{
        char source[PATH_MAX];
        int r;

        for (size_t i = 0; i < ELEMENTSOF(presented_trees); i++) {
                *ret_failed_path = presented_trees[i];
                r = rendered_tree(root, presented_trees[i], source);
                if (r >= 0)
                        r = present(m, source, presented_trees[i], true);
                if (r < 0)
                        return r;
        }
        *ret_failed_path = CHAR_DEVICES;
        r = present_char_devices(m, root);
        if (r < 0)
                return r;
        /* The device node: stat and access of it see the socket, which
         * its users may open (connect to) as they may open /dev/kfd. */
        *ret_failed_path = KFD_DEVICE;
        return present(m, socket_path, KFD_DEVICE, false);
}

void node_mounts_remove(struct node_mounts *m)
{
        while (m->n_covered > 0)
                umount2(m->covered[--m->n_covered], MNT_DETACH);
        m->n_own_fs = 0;
}
