/* SPDX-License-Identifier: MIT */
/*
 * Debian's ROCt thunk (libhsakmt 5.2.3) allocates, maps and frees GPU
 * memory on the emulated node: system memory (paged: the thunk's own pages
 * registered as a userptr BO; non-paged: a GTT BO mapped through the
 * render node), VRAM mapped through the render node, and registered user
 * memory (fmm.c; kfd-interface.md §13). Runs on the MI210 node of
 * tests/kfdemu/configs/mi210.conf.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cmocka.h>
#include <hsakmt.h>

#define CPU_NODE 0
#define GPU_NODE 1
#define MI210_VRAM (64ull << 30)

static int open_node(void **state)
{
        HsaSystemProperties system;

        if (hsaKmtOpenKFD() != HSAKMT_STATUS_SUCCESS)
                return -1;
        return hsaKmtAcquireSystemProperties(&system) == HSAKMT_STATUS_SUCCESS ? 0 : -1;
}

static int close_node(void **state)
{
        hsaKmtReleaseSystemProperties();
        return hsaKmtCloseKFD() == HSAKMT_STATUS_SUCCESS ? 0 : -1;
}

/* The banks the thunk reads from the topology: the CPU node's system
 * memory, the GPU's whole VRAM, visible to the CPU. */
static void memory_banks(void **state)
{
        HsaMemoryProperties bank;

        assert_int_equal(hsaKmtGetNodeMemoryProperties(GPU_NODE, 1, &bank), HSAKMT_STATUS_SUCCESS);
        assert_int_equal(bank.HeapType, HSA_HEAPTYPE_FRAME_BUFFER_PUBLIC);
        assert_int_equal(bank.SizeInBytes, MI210_VRAM);
        assert_int_equal(hsaKmtGetNodeMemoryProperties(CPU_NODE, 1, &bank), HSAKMT_STATUS_SUCCESS);
        assert_int_equal(bank.HeapType, HSA_HEAPTYPE_SYSTEM);
        assert_true(bank.SizeInBytes > 0);
}

/* Allocates `size` bytes on `node` with `flags`, writes and reads them
 * back through the CPU mapping the thunk made, maps them into the GPU's
 * VM and out again, and frees them. */
static void round_trip(HSAuint32 node, HSAuint64 size, HsaMemFlags flags)
{
        void *mem = NULL;
        HSAuint64 gpu_va = 0;

        assert_int_equal(hsaKmtAllocMemory(node, size, flags, &mem), HSAKMT_STATUS_SUCCESS);
        assert_non_null(mem);
        memset(mem, 0xa5, size);
        assert_int_equal(((uint8_t *)mem)[size - 1], 0xa5);
        /* The thunk's own BOs have the same address for GPU and CPU: it
         * reports no alternate one. */
        assert_int_equal(hsaKmtMapMemoryToGPU(mem, size, &gpu_va), HSAKMT_STATUS_SUCCESS);
        assert_int_equal(gpu_va, 0);
        assert_int_equal(hsaKmtUnmapMemoryToGPU(mem), HSAKMT_STATUS_SUCCESS);
        assert_int_equal(hsaKmtFreeMemory(mem, size), HSAKMT_STATUS_SUCCESS);
}

static void system_memory_paged(void **state)
{
        round_trip(CPU_NODE, 3 * 4096, (HsaMemFlags){ .ui32 = { .HostAccess = 1 } });
}

static void system_memory_non_paged(void **state)
{
        round_trip(CPU_NODE, 2 * 4096, (HsaMemFlags){ .ui32 = { .HostAccess = 1, .NonPaged = 1 } });
}

static void vram_visible_to_the_cpu(void **state)
{
        round_trip(GPU_NODE, 1 << 20, (HsaMemFlags){ .ui32 = { .HostAccess = 1, .NonPaged = 1 } });
}

/* Whether process_vm_readv reads len bytes at addr (errno says why not). */
static bool readable_by_process_vm_readv(const void *addr, size_t len)
{
        char copy[64];
        struct iovec local = { .iov_base = copy, .iov_len = len };
        struct iovec remote = { .iov_base = (void *)addr, .iov_len = len };

        return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == (ssize_t)len;
}

/* Whether pread() of /proc/self/mem reads len bytes at addr. */
static bool readable_by_proc_mem(const void *addr, size_t len)
{
        char copy[64];
        int fd = open("/proc/self/mem", O_RDONLY | O_CLOEXEC);
        bool ok = fd >= 0 && pread(fd, copy, len, (off_t)(uintptr_t)addr) == (ssize_t)len;

        if (fd >= 0)
                close(fd);
        return ok;
}

/*
 * What a daemon reading another process's amd_queue_t meets, through the
 * thunk ROCr uses (kfd-hazards.md §9): non-paged system memory is a GTT BO
 * the thunk maps through the render node, which the kernel maps
 * VM_IO|VM_PFNMAP, so process_vm_readv fails with EFAULT while
 * /proc/PID/mem reads it; paged memory is plain anonymous memory.
 */
static void non_paged_memory_defeats_process_vm_readv(void **state)
{
        HsaMemFlags paged = { .ui32 = { .HostAccess = 1 } };
        HsaMemFlags non_paged = { .ui32 = { .HostAccess = 1, .NonPaged = 1 } };
        void *mem = NULL;

        assert_int_equal(hsaKmtAllocMemory(CPU_NODE, 4096, non_paged, &mem), HSAKMT_STATUS_SUCCESS);
        memset(mem, 0x5a, 64);
        assert_false(readable_by_process_vm_readv(mem, 64));
        assert_int_equal(errno, EFAULT);
        assert_true(readable_by_proc_mem(mem, 64));
        assert_int_equal(hsaKmtFreeMemory(mem, 4096), HSAKMT_STATUS_SUCCESS);

        assert_int_equal(hsaKmtAllocMemory(CPU_NODE, 4096, paged, &mem), HSAKMT_STATUS_SUCCESS);
        memset(mem, 0x5a, 64);
        assert_true(readable_by_process_vm_readv(mem, 64));
        assert_true(readable_by_proc_mem(mem, 64));
        assert_int_equal(hsaKmtFreeMemory(mem, 4096), HSAKMT_STATUS_SUCCESS);
}

/* More VRAM than the GPU has: the kernel's -ENOMEM, the thunk's
 * HSAKMT_STATUS_NO_MEMORY, and the VRAM is still whole afterwards. */
static void vram_runs_out(void **state)
{
        HsaMemFlags flags = { .ui32 = { .NonPaged = 1 } };
        void *mem = NULL;

        assert_int_equal(hsaKmtAllocMemory(GPU_NODE, MI210_VRAM + (2 << 20), flags, &mem), HSAKMT_STATUS_NO_MEMORY);
        assert_int_equal(hsaKmtAllocMemory(GPU_NODE, MI210_VRAM / 2, flags, &mem), HSAKMT_STATUS_SUCCESS);
        assert_int_equal(hsaKmtFreeMemory(mem, MI210_VRAM / 2), HSAKMT_STATUS_SUCCESS);
}

/* The application's own memory registered for the GPU: a userptr BO at a
 * GPU address of the thunk's choosing, which it reports. */
static void registered_user_memory(void **state)
{
        const size_t size = 4 * 4096;
        void *buffer = aligned_alloc(4096, size);
        HSAuint64 gpu_va = 0;

        assert_non_null(buffer);
        assert_int_equal(hsaKmtRegisterMemory(buffer, size), HSAKMT_STATUS_SUCCESS);
        assert_int_equal(hsaKmtMapMemoryToGPU(buffer, size, &gpu_va), HSAKMT_STATUS_SUCCESS);
        assert_true(gpu_va != 0 && gpu_va % 4096 == 0);
        assert_int_equal(hsaKmtUnmapMemoryToGPU(buffer), HSAKMT_STATUS_SUCCESS);
        assert_int_equal(hsaKmtDeregisterMemory(buffer), HSAKMT_STATUS_SUCCESS);
        free(buffer);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(memory_banks),
                cmocka_unit_test(system_memory_paged),
                cmocka_unit_test(system_memory_non_paged),
                cmocka_unit_test(vram_visible_to_the_cpu),
                cmocka_unit_test(non_paged_memory_defeats_process_vm_readv),
                cmocka_unit_test(vram_runs_out),
                cmocka_unit_test(registered_user_memory),
        };
        return cmocka_run_group_tests(tests, open_node, close_node);
}
