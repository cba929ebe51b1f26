/* SPDX-License-Identifier: MIT */
/*
 * The private mount namespace kfdemu-run presents the node's files in
 * (node-mounts.h), so that they are seen by everything COMMAND starts and
 * by nothing outside the run.
 */
#pragma once

/* What mount_namespace_enter_private() was doing when it failed. */
enum mount_namespace_step {
        MOUNT_NAMESPACE_UNSHARE,         /* a mount namespace, with CAP_SYS_ADMIN */
        MOUNT_NAMESPACE_UNSHARE_USER,    /* a user namespace with it, without */
        MOUNT_NAMESPACE_MAP_IDS,         /* the user namespace's uid_map, gid_map, setgroups */
        MOUNT_NAMESPACE_MOUNT,           /* the first mount in it: / made a slave */
};

/* Moves the calling process into a new mount namespace whose mounts do not
 * propagate back. Without CAP_SYS_ADMIN it first enters a new user
 * namespace that maps only the caller's uid and gid, each to itself.
 * Must be called while the process has a single thread. 0 or -errno, and
 * then `ret_failed_step`. */
int mount_namespace_enter_private(enum mount_namespace_step *ret_failed_step);
