/* SPDX-License-Identifier: MIT */
/*
 * The debug event channel handed to kfd as ENABLE's dbg_fd. kfd_dbg_ev_raise
 * writes one byte '.' to it per raised event with kernel_write; the bytes
 * carry nothing but "query now".
 */
#pragma once

/* A FIFO in a private directory, opened O_RDWR|O_NONBLOCK|O_CLOEXEC and
 * unlinked at once. */
int eventfifo_open(int *ret_fd);
/* Reads until empty; returns the number of bytes read. */
int eventfifo_drain(int fd);
