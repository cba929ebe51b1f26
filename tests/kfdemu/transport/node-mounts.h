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
#include <stdio.h>
#include <sys/types.h>

/* The tmpfs instances a run makes, at most one per directory it adds an
 * entry to. */
#define NODE_MOUNTS_MAX_COVERS 16

struct node_mounts {
        int undo_fd;                     /* mount-undoer.h's, or -1: the namespace takes the mounts along */
        mode_t device_mode;              /* the socket's mode at /dev/kfd; 0: as the umask made it */
        char covers[NODE_MOUNTS_MAX_COVERS][PATH_MAX]; /* directories covered by a tmpfs */
        dev_t cover_devs[NODE_MOUNTS_MAX_COVERS];      /* and those tmpfs instances' st_dev */
        size_t n_covers;
        char failed_at[PATH_MAX];        /* where node_mounts_present() failed: the path, or the directory being covered */
};

/* Prints, newest first and each after a space, the mount points in this
 * mount namespace that a run presents (whosever run it was). 0 or -errno. */
int node_mounts_print_presented(FILE *out);

/* Presents the trees rendered under the directory `root_fd` and its
 * socket `socket_name`; what it mounts over the original tree, it records
 * with the undoer when there is one. Sources are reached only below
 * `root_fd`, never through a symlink. On failure, `ret_failed_path` names
 * the path that could not be presented and `failed_at` where that went
 * wrong. 0 or -errno. */
int node_mounts_present(struct node_mounts *m, int root_fd, const char *socket_name, const char **ret_failed_path);
