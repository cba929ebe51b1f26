/* SPDX-License-Identifier: MIT */
/* Small helpers shared by the transport's end-to-end tests, which run
 * inside kfdemu-run and talk to /dev/kfd through plain libc calls. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "kfd-abi.h"

/* ioctl() as a -errno return. */
int kfd_test_ioctl(int fd, unsigned long request, void *arg);
/* GET_VERSION on `fd`: 0 and 1.13 on success, else -errno. */
int kfd_test_get_version(int fd);
/* The gpu_id of topology node `node`, from sysfs; 0 if unreadable. */
uint32_t kfd_test_gpu_id(unsigned node);
/* /sys/class/kfd/kfd/proc/<pid> exists. */
bool kfd_test_proc_dir_exists(pid_t pid);
/* Waits up to `timeout_ms` for kfd_test_proc_dir_exists(pid) == present. */
bool kfd_test_wait_proc_dir(pid_t pid, bool present, unsigned timeout_ms);
