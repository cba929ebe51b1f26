/* SPDX-License-Identifier: MIT */
/*
 * copy_from_user/copy_to_user on the calling process's memory. The kernel's
 * helpers return the number of bytes not copied and every KFD caller turns
 * any shortfall into -EFAULT; a partial process_vm_* transfer (a range that
 * crosses into an unmapped page) is reported the same way.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/uio.h>

#include "cleanup.h"
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

int emu_user_range_accessible(pid_t tgid, uint64_t uaddr, uint64_t len, bool write)
{
        _cleanup_fclose_ FILE *maps = NULL;
        char path[64], perms[8];
        uint64_t covered = uaddr, end, vma_start, vma_end;

        if (len == 0)
                return 0;
        if (!uaddr_range_valid(uaddr, len))
                return -EFAULT;
        end = uaddr + len;
        snprintf(path, sizeof(path), "/proc/%d/maps", (int)tgid);
        maps = fopen(path, "re");
        if (!maps)
                return -EFAULT;
        /* The mappings come in address order; each one that reaches past
         * what is covered so far must start where that ends. */
        while (fscanf(maps, "%" SCNx64 "-%" SCNx64 " %7s%*[^\n]", &vma_start, &vma_end, perms) == 3) {
                if (vma_end <= covered)
                        continue;
                if (vma_start > covered || perms[0] != 'r')
                        return -EFAULT;
                if (write && perms[1] != 'w')
                        return -EPERM;
                covered = vma_end;
                if (covered >= end)
                        return 0;
        }
        return -EFAULT;
}
