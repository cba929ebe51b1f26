/* SPDX-License-Identifier: MIT */
/*
 * The node's files presented with bind mounts, so that every reader sees
 * them as it would see the kernel's: programs that read sysfs through
 * libc's own internal calls (glob, nftw, scandir), statically linked
 * programs, raw system calls, other languages' runtimes.
 *
 * A bind mount needs a mount point, and on a machine without amdgpu the
 * paths do not exist: sysfs and debugfs refuse new entries (kernfs's
 * kernfs_iop_mkdir without the syscall ops sysfs never sets; debugfs's
 * directories have no mkdir at all), and one made in the real /dev would
 * outlast the run. So a
 * directory that lacks an entry is covered, in the mount namespace only,
 * by a tmpfs holding the same entries (each directory, file or device
 * node a bind mount of the original, with the mounts below it; each
 * symlink a copy) and the new one, made read-only once complete. The
 * originals are reached through an fd opened before the tmpfs covers them
 * (/proc/self/fd/N/NAME), so no staging mount point is needed.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cleanup.h"
#include "mount-undoer.h"
#include "node-mounts.h"
#include "protocol.h"

/* What the kernel shows when amdgpu is loaded, each a tree the server
 * renders under its private directory at the same path; then the device. */
static const char *const node_mounts_paths[] = {
        "/sys/class/kfd",
        "/sys/devices/virtual/kfd",
        "/sys/kernel/debug/kfd",
        "/sys/module/amdgpu/parameters",
        "/dev/dri",
        KFD_DEVICE,
};

/* The source name of the covering tmpfs instances in mountinfo, so that
 * they can be told from others. */
#define COVER_SOURCE "kfdemu"
/* Where libdrm looks up a character device's sysfs entry (drmNodeIsDRM):
 * the server renders one per render node, 226:<minor>. */
#define CHAR_DEVICES "/sys/dev/char"

/* A mount over the original tree: one the undoer knows of, or none at all. */
static int mount_recorded(const struct node_mounts *m, const char *source, const char *target, const char *fstype,
                          unsigned long flags, const char *options)
{
        if (mount(source, target, fstype, flags, options) < 0)
                return NEG_ERRNO();
        if (m->undo_fd < 0)
                return 0;
        int r = mount_undoer_record(m->undo_fd, target);
        if (r < 0)
                umount2(target, MNT_DETACH | UMOUNT_NOFOLLOW);
        return r;
}

static int fail_at(struct node_mounts *m, const char *path, int r)
{
        snprintf(m->failed_at, sizeof(m->failed_at), "%s", path);
        return r;
}

/* Whether `dir` is in a tmpfs this run made, where entries may be added. */
static bool in_own_fs(const struct node_mounts *m, const char *dir)
{
        struct stat st;

        if (stat(dir, &st) < 0)
                return false;
        for (size_t i = 0; i < m->n_covers; i++)
                if (m->cover_devs[i] == st.st_dev)
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
static int copy_entry(const struct node_mounts *m, int dir_fd, const char *dir, const char *name)
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
                ssize_t n = readlinkat(dir_fd, name, link, sizeof(link));

                if (n < 0)
                        return NEG_ERRNO();
                if ((size_t)n == sizeof(link))
                        return -ENAMETOOLONG; /* readlinkat(2) cuts without saying */
                link[n] = '\0';
                return symlink(link, target) < 0 ? NEG_ERRNO() : 0;
        }
        r = make_mount_point(target, S_ISDIR(st.st_mode));
        if (r < 0)
                return r;
        snprintf(source, sizeof(source), "/proc/self/fd/%d/%s", dir_fd, name);
        /* Inside the cover: it goes with it, nothing to record. */
        return mount(source, target, NULL, MS_BIND | MS_REC, NULL) < 0 ? NEG_ERRNO() : 0;
}

/* Covers `dir` with a tmpfs holding what it held. A directory the caller
 * may not list (debugfs is root's only) is covered empty: its entries were
 * out of the caller's reach anyway. */
static int cover_directory(struct node_mounts *m, const char *dir)
{
        _cleanup_closedir_ DIR *entries = NULL;
        struct dirent *de;
        struct stat st;
        char options[32];
        int fd, r;

        if (m->n_covers == NODE_MOUNTS_MAX_COVERS)
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
        r = mount_recorded(m, COVER_SOURCE, dir, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, options);
        if (r < 0)
                return r;
        /* The original owner; in a user namespace that does not map it,
         * chown fails with EINVAL and the directory stays the caller's
         * (read-only once complete, so COMMAND cannot change it). */
        if (chown(dir, st.st_uid, st.st_gid) < 0 && errno != EINVAL)
                return NEG_ERRNO();
        if (stat(dir, &st) < 0)
                return NEG_ERRNO();
        snprintf(m->covers[m->n_covers], PATH_MAX, "%s", dir);
        m->cover_devs[m->n_covers++] = st.st_dev;

        while (entries && (errno = 0, de = readdir(entries))) {
                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                        continue;
                r = copy_entry(m, dirfd(entries), dir, de->d_name);
                if (r < 0)
                        return r;
        }
        return entries && errno ? NEG_ERRNO() : 0;
}

/* Makes `path` exist as a directory (or, not `directory`, a file) to
 * mount on, adding it (and its missing parents) to a covering tmpfs where
 * the original tree lacks it. */
static int ensure_mount_point(struct node_mounts *m, const char *path, bool directory)
{
        char parent[PATH_MAX];
        struct stat st;
        int r;

        if (lstat(path, &st) == 0) {
                if (!S_ISDIR(st.st_mode) != !directory)
                        return fail_at(m, path, directory ? -ENOTDIR : -EISDIR);
                return 0;
        }
        /* EACCES: a parent the caller may not search, covered below. */
        if (errno != ENOENT && errno != EACCES)
                return fail_at(m, path, NEG_ERRNO());

        snprintf(parent, sizeof(parent), "%s", path);
        char *slash = strrchr(parent, '/');
        if (slash == parent)
                slash[1] = '\0';
        else
                *slash = '\0';
        r = ensure_mount_point(m, parent, true);
        if (r < 0)
                return r;
        if (!in_own_fs(m, parent)) {
                r = cover_directory(m, parent);
                if (r < 0)
                        return fail_at(m, parent, r);
        }
        r = make_mount_point(path, directory);
        return r < 0 ? fail_at(m, path, r) : 0;
}

static int set_read_only(const char *path)
{
        /* mount_setattr(2) adds read-only without clearing the nosuid,
         * nodev... a user namespace may not clear. */
        struct mount_attr attr = { .attr_set = MOUNT_ATTR_RDONLY };

        return mount_setattr(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW, &attr, sizeof(attr)) < 0 ? NEG_ERRNO() : 0;
}

/* `relpath` below `root_fd`, its symlinks and `..` refused: whoever could
 * put one there could have kfdemu-run mount what it points to. */
static int open_source(int root_fd, const char *relpath)
{
        struct open_how how = {
                .flags = O_PATH | O_CLOEXEC,
                .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
        };
        long fd = syscall(SYS_openat2, root_fd, relpath, &how, sizeof(how));

        return fd < 0 ? NEG_ERRNO() : (int)fd;
}

static int present(struct node_mounts *m, int root_fd, const char *relpath, const char *target, bool read_only)
{
        _cleanup_close_ int fd = open_source(root_fd, relpath);
        char source[64];
        struct stat st;
        int r;

        if (fd < 0 || fstat(fd, &st) < 0)
                return fail_at(m, relpath, fd < 0 ? fd : NEG_ERRNO());
        r = ensure_mount_point(m, target, S_ISDIR(st.st_mode));
        if (r < 0)
                return r;
        snprintf(source, sizeof(source), "/proc/self/fd/%d", fd);
        if (!read_only && m->device_mode && chmod(source, m->device_mode) < 0)
                return fail_at(m, relpath, NEG_ERRNO());
        r = mount_recorded(m, source, target, NULL, MS_BIND, NULL);
        /* Nobody writes the kernel's files (sysfs refuses even root): what
         * a reader may change is only ever the server's to write. */
        if (r >= 0 && read_only)
                r = set_read_only(target);
        return r < 0 ? fail_at(m, target, r) : 0;
}

/* `path` below `root_fd` (without its leading '/'), made if the server has
 * not rendered it (yet): a tree the node has nothing in is presented empty. */
static int make_rendered_tree(int root_fd, const char *path)
{
        char dir[PATH_MAX];

        snprintf(dir, sizeof(dir), "%s", path + 1);
        for (char *slash = dir;; slash++) {
                slash = strchr(slash, '/');
                if (slash)
                        *slash = '\0';
                if (mkdirat(root_fd, dir, 0755) < 0 && errno != EEXIST)
                        return NEG_ERRNO();
                if (!slash)
                        return 0;
                *slash = '/';
        }
}

/* Each character device entry the server rendered, over the machine's. */
static int present_char_devices(struct node_mounts *m, int root_fd)
{
        _cleanup_close_ int dir_fd = -EBADF;
        _cleanup_closedir_ DIR *entries = NULL;
        struct open_how how = {
                .flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC,
                .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
        };
        char relpath[PATH_MAX], target[PATH_MAX];
        struct dirent *de;
        int r;

        dir_fd = (int)syscall(SYS_openat2, root_fd, CHAR_DEVICES + 1, &how, sizeof(how));
        if (dir_fd < 0)
                return errno == ENOENT ? 0 : fail_at(m, CHAR_DEVICES + 1, NEG_ERRNO());
        entries = fdopendir(dir_fd);
        if (!entries)
                return fail_at(m, CHAR_DEVICES + 1, NEG_ERRNO());
        dir_fd = -EBADF; /* the DIR owns it now */
        while ((errno = 0, de = readdir(entries))) {
                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                        continue;
                r = join(relpath, CHAR_DEVICES + 1, de->d_name);
                if (r >= 0)
                        r = join(target, CHAR_DEVICES, de->d_name);
                r = r < 0 ? fail_at(m, CHAR_DEVICES, r) : present(m, root_fd, relpath, target, true);
                if (r < 0)
                        return r;
        }
        return errno ? fail_at(m, CHAR_DEVICES + 1, NEG_ERRNO()) : 0;
}

int node_mounts_present(struct node_mounts *m, int root_fd, const char *socket_name, const char **ret_failed_path)
{
        const size_t n_trees = ELEMENTSOF(node_mounts_paths) - 1;
        int r;

        for (size_t i = 0; i < n_trees; i++) {
                *ret_failed_path = node_mounts_paths[i];
                r = make_rendered_tree(root_fd, node_mounts_paths[i]);
                if (r < 0)
                        return fail_at(m, node_mounts_paths[i] + 1, r);
                r = present(m, root_fd, node_mounts_paths[i] + 1, node_mounts_paths[i], true);
                if (r < 0)
                        return r;
        }
        *ret_failed_path = CHAR_DEVICES;
        r = present_char_devices(m, root_fd);
        if (r < 0)
                return r;
        /* The device node: stat and access of it see the socket, which
         * its users may open (connect to) as they may open /dev/kfd. */
        *ret_failed_path = KFD_DEVICE;
        r = present(m, root_fd, socket_name, KFD_DEVICE, false);
        if (r < 0)
                return r;
        /* Complete: nothing is added to a cover any more, and the
         * caller, who may own one in a user namespace, may not either. */
        for (size_t i = 0; i < m->n_covers; i++) {
                *ret_failed_path = m->covers[i];
                r = set_read_only(m->covers[i]);
                if (r < 0)
                        return fail_at(m, m->covers[i], r);
        }
        return 0;
}

static bool presented_here(const char *mount_point, const char *source)
{
        if (strcmp(source, COVER_SOURCE) == 0)
                return true;
        for (size_t i = 0; i < ELEMENTSOF(node_mounts_paths); i++)
                if (strcmp(mount_point, node_mounts_paths[i]) == 0)
                        return true;
        return false;
}

int node_mounts_print_presented(FILE *out)
{
        _cleanup_fclose_ FILE *f = fopen("/proc/self/mountinfo", "re");
        _cleanup_free_ char *line = NULL, *found = NULL;
        size_t size = 0, found_len = 0;

        if (!f)
                return NEG_ERRNO();
        /* mountinfo lists the oldest first: collect, print backwards. */
        while (getline(&line, &size, f) > 0) {
                char mount_point[PATH_MAX], source[PATH_MAX];
                const char *fs = strstr(line, " - ");

                if (sscanf(line, "%*s %*s %*s %*s %4095s", mount_point) != 1 || !fs ||
                    sscanf(fs, " - %*s %4095s", source) != 1 || !presented_here(mount_point, source))
                        continue;
                size_t len = strlen(mount_point) + 1;
                char *more = realloc(found, found_len + len);
                if (!more)
                        return -ENOMEM;
                found = more;
                memcpy(found + found_len, mount_point, len);
                found_len += len;
        }
        while (found_len > 0) {
                size_t start = found_len - 1;
                while (start > 0 && found[start - 1] != '\0')
                        start--;
                fprintf(out, " %s", found + start);
                found_len = start;
        }
        return 0;
}
