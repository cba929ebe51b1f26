/* SPDX-License-Identifier: MIT */
/* The library's own /dev/kfd file and the one ioctl helper every call uses. */
#pragma once

#include <stdint.h>

/* Opens the KFD device for the calling process and checks that it speaks the
 * debugger API (KFD 1.13 up to, not including, 2.0). */
int kfd_open(const char *path, int *ret_fd, uint32_t *ret_major, uint32_t *ret_minor);

/* AMDKFD_IOC_GET_VERSION: the compile-time interface version of the driver. */
int kfd_get_version(int fd, uint32_t *ret_major, uint32_t *ret_minor);

/* ioctl() that retries EINTR and returns the handler's non-negative result or
 * -errno. EAGAIN is returned as is: for QUERY_DEBUG_EVENT it means "no more
 * events", and retrying it would spin. */
int kfd_ioctl(int fd, unsigned long request, void *arg);
