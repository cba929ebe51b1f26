/* SPDX-License-Identifier: MIT */
/*
 * The private mount namespace kfdemu-run presents the node's files in
 * (node-mounts.h), so that they are seen by everything COMMAND starts and
 * by nothing outside the run.
 */
#pragma once

/* Moves the calling process into a new mount namespace whose mounts do not
 * propagate back. Without CAP_SYS_ADMIN it first enters a new user
 * namespace that maps only the caller's uid and gid, each to itself.
 * Must be called while the process has a single thread. 0 or -errno. */
int mount_namespace_enter_private(void);
