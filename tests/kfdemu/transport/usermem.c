/* SPDX-License-Identifier: MIT */
/*
 * copy_from_user/copy_to_user on the calling process's memory. The kernel's
 * helpers return the number of bytes not copied and every KFD caller turns
 * any shortfall into -EFAULT; a partial process_vm_* transfer (a range that
 * crosses into an unmapped page) is reported the same way.
 */
#include <errno.h>
#include <stdint.h>
#include <sys/uio.h>

#include "usermem.h"

static int uaddr_range_valid(uint64_t uaddr, size_t len)
{
        /* access_ok(): the range must not wrap around the address space. */
        return len == 0 || uaddr + len - 1 >= uaddr;
}

static int transfer_result(ssize_t n, size_t len)
{
        return n >= 0 && (size_t)n == len ? 0 : -EFAULT;
}

int emu_copy_from_user(pid_t tgid, void *dst, uint64_t uaddr, size_t len)
{
        if (len == 0)
                return 0;
        if (!uaddr_range_valid(uaddr, len))
                return -EFAULT;

        struct iovec local = { .iov_base = dst, .iov_len = len };
        struct iovec remote = { .iov_base = (void *)(uintptr_t)uaddr, .iov_len = len };
        return transfer_result(process_vm_readv(tgid, &local, 1, &remote, 1, 0), len);
}

int emu_copy_to_user(pid_t tgid, uint64_t uaddr, const void *src, size_t len)
{
        if (len == 0)
                return 0;
        if (!uaddr_range_valid(uaddr, len))
                return -EFAULT;

        struct iovec local = { .iov_base = (void *)src, .iov_len = len };
        struct iovec remote = { .iov_base = (void *)(uintptr_t)uaddr, .iov_len = len };
        return transfer_result(process_vm_writev(tgid, &local, 1, &remote, 1, 0), len);
}
