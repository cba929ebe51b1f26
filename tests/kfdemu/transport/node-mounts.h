/* SPDX-License-Identifier: MIT */
/*
 * The node's files where programs look for them: the trees the server
 * renders under its private directory, bound over /sys/class/kfd,
 * /sys/devices/virtual/kfd, /sys/kernel/debug/kfd,
 * /sys/module/amdgpu/parameters, /dev/dri and each render node's
 * /sys/dev/char/226:<minor>, and the server's socket over /dev/kfd, in the
 * calling process's mount namespace.
 */
#pragma once

#include <limits.h>
#include <stddef.h>
#include <sys/types.h>

/* Mounts a run makes over the original tree (at most one per presented
 * path and one per directory it adds an entry to), and the tmpfs
 * instances it made, whose directories it may add entries to. */
#define NODE_MOUNTS_MAX 16

struct node_mounts {
        char covered[NODE_MOUNTS_MAX][PATH_MAX]; /* paths mounted over, in order */
        size_t n_covered;
        dev_t own_fs[NODE_MOUNTS_MAX];   /* st_dev of the tmpfs instances made */
        size_t n_own_fs;
};

/* Presents the tree rendered under `root` and the socket `socket_path`.
 * On failure, `ret_failed_path` names the path that could not be
 * presented; what was mounted before stays (node_mounts_remove()). */
int node_mounts_present(struct node_mounts *m, const char *root, const char *socket_path,
                        const char **ret_failed_path);
/* Unmounts what node_mounts_present() mounted, newest first. */
void node_mounts_remove(struct node_mounts *m);
