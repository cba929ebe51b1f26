/* SPDX-License-Identifier: MIT */
/*
 * A process that takes down what a --system-wide run mounted once the run
 * is gone, however it went: normally, by a signal it does not handle,
 * an abort, or SIGKILL, which no handler of the run's own could see.
 */
#pragma once

/* Starts the undoer, in the caller's mount namespace. Call it while the
 * process has one thread, before it becomes a subreaper: the undoer is not
 * its child, so it is neither reaped nor signalled with COMMAND's
 * leftovers. Returns the caller's end of a connection (close-on-exec, so
 * COMMAND never holds it), or -errno. */
int mount_undoer_start(void);

/* Tells the undoer that `path` has a mount of the run's on top. 0 or -errno. */
int mount_undoer_record(int fd, const char *path);

/* Has the undoer unmount what was recorded, newest first, waits until it
 * has, and closes `fd`. The same happens, without the wait, when every
 * copy of `fd` closes: when the run dies. */
void mount_undoer_finish(int fd);
