/* SPDX-License-Identifier: MIT */
/* The standard descriptors of a program started without some of them (PROGRAM >&-). */
#pragma once

/*
 * A closed fd 0, 1 or 2 would be taken by the next file the program opens
 * (a socket, /dev/kfd, a pidfd), and what the program writes to its
 * standard output or error would go into that file. Each closed one gets
 * /dev/null, read-only, so that writing to it fails and the program can
 * tell. Call it first thing in main(). Returns 0, or -errno when one could
 * not be filled: it stays closed.
 */
int standard_fds_fill(void);
