/* SPDX-License-Identifier: MIT */
/*
 * copy_from_user / copy_to_user for kfdemu: process_vm_readv/writev on the
 * process that made the call. Both return 0 or -EFAULT (a short or failed
 * transfer, as the kernel's copy helpers report any fault).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

int emu_copy_from_user(pid_t tgid, void *dst, uint64_t uaddr, size_t len);
int emu_copy_to_user(pid_t tgid, uint64_t uaddr, const void *src, size_t len);

/* Whether every page of [uaddr, uaddr + len) is mapped readable (and
 * writable if `write`) in the process, as faulting the range in with
 * hmm_range_fault would find: 0, -EFAULT for a hole or a mapping that
 * cannot be read, -EPERM for one that cannot be written. */
int emu_user_range_accessible(pid_t tgid, uint64_t uaddr, uint64_t len, bool write);
