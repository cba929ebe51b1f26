/* SPDX-License-Identifier: MIT */
/*
 * Debian's ROCt thunk (libhsakmt 5.2.3) creates and destroys AQL queues on
 * the emulated node: it allocates each queue's EOP buffer (VRAM) and
 * context save area (control stack, workgroup data and debugger memory)
 * itself, passes them to CREATE_QUEUE and maps the doorbell page through
 * /dev/kfd (queues.c; kfd-interface.md §15). Runs on the MI210 node of
 * tests/kfdemu/configs/mi210.conf.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmocka.h>
#include <hsakmt.h>

#define CPU_NODE 0
#define GPU_NODE 1
#define RING_SIZE (64u * 1024)

static void *ring;

static int open_node(void **state)
{
        HsaSystemProperties system;
        HsaMemFlags flags = { .ui32 = { .HostAccess = 1, .NonPaged = 1, .ExecuteAccess = 1 } };

        if (hsaKmtOpenKFD() != HSAKMT_STATUS_SUCCESS ||
            hsaKmtAcquireSystemProperties(&system) != HSAKMT_STATUS_SUCCESS)
                return -1;
        /* The ring in GPU-visible system memory, as ROCr puts it. */
        if (hsaKmtAllocMemory(CPU_NODE, 2 * RING_SIZE, flags, &ring) != HSAKMT_STATUS_SUCCESS)
                return -1;
        return hsaKmtMapMemoryToGPU(ring, 2 * RING_SIZE, NULL) == HSAKMT_STATUS_SUCCESS ? 0 : -1;
}

static int close_node(void **state)
{
        hsaKmtUnmapMemoryToGPU(ring);
        hsaKmtFreeMemory(ring, 2 * RING_SIZE);
        hsaKmtReleaseSystemProperties();
        return hsaKmtCloseKFD() == HSAKMT_STATUS_SUCCESS ? 0 : -1;
}

/* A queue as ROCr asks for one: the read and write indices are its own
 * (in amd_queue_t), the thunk returns the doorbell. */
struct aql_queue {
        uint64_t read_index, write_index;
        HsaQueueResource resource;
};

static HSAKMT_STATUS create_queue(struct aql_queue *q, void *ring_base, HSAuint64 size)
{
        q->resource = (HsaQueueResource){
                .Queue_read_ptr_aql = &q->read_index,
                .Queue_write_ptr_aql = &q->write_index,
        };
        return hsaKmtCreateQueue(GPU_NODE, HSA_QUEUE_COMPUTE_AQL, 100, HSA_QUEUE_PRIORITY_NORMAL, ring_base, size,
                                 NULL, &q->resource);
}

/* The kernel's queue ids of this process, from sysfs, in a bitmask. */
static uint64_t sysfs_queue_ids(void)
{
        uint64_t ids = 0;

        for (unsigned id = 0; id < 64; id++) {
                char path[128];

                snprintf(path, sizeof(path), "/sys/class/kfd/kfd/proc/%d/queues/%u/size", (int)getpid(), id);
                if (access(path, F_OK) == 0)
                        ids |= 1ull << id;
        }
        return ids;
}

static long long sysfs_value(const char *path)
{
        char buf[64];
        FILE *f = fopen(path, "re");
        long long v = -1;

        if (!f)
                return -1;
        if (fgets(buf, sizeof(buf), f))
                v = strtoll(buf, NULL, 0);
        fclose(f);
        return v;
}

static long long sysfs_queue_value(unsigned id, const char *file)
{
        char path[128];

        snprintf(path, sizeof(path), "/sys/class/kfd/kfd/proc/%d/queues/%u/%s", (int)getpid(), id, file);
        return sysfs_value(path);
}

/* Two queues: each with its doorbell in the mapped page, each in sysfs
 * with its ring's size and GPU; destroyed, both are gone. */
static void create_and_destroy(void **state)
{
        /* The 5.2.3 thunk's node properties carry no gpu_id. */
        long long gpu_id = sysfs_value("/sys/class/kfd/kfd/topology/nodes/1/gpu_id");
        struct aql_queue q[2];

        assert_true(gpu_id > 0);
        for (int i = 0; i < 2; i++) {
                assert_int_equal(create_queue(&q[i], (char *)ring + i * RING_SIZE, RING_SIZE), HSAKMT_STATUS_SUCCESS);
                assert_non_null(q[i].resource.Queue_DoorBell_aql);
                /* An idle queue's doorbell holds no write index yet. */
                assert_int_equal(*q[i].resource.Queue_DoorBell_aql, 0);
        }
        assert_true(q[0].resource.Queue_DoorBell_aql != q[1].resource.Queue_DoorBell_aql);
        assert_int_equal(sysfs_queue_ids(), 0x3);
        for (unsigned id = 0; id < 2; id++) {
                assert_int_equal(sysfs_queue_value(id, "size"), RING_SIZE);
                assert_int_equal(sysfs_queue_value(id, "gpuid"), gpu_id);
        }
        for (int i = 0; i < 2; i++)
                assert_int_equal(hsaKmtDestroyQueue(q[i].resource.QueueId), HSAKMT_STATUS_SUCCESS);
        assert_int_equal(sysfs_queue_ids(), 0);
}

/* A ring size that is not a power of two: the kernel's -EINVAL, which the
 * thunk reports as an error after freeing what it allocated. */
static void bad_ring_size(void **state)
{
        struct aql_queue q;

        assert_int_equal(create_queue(&q, ring, RING_SIZE - 4096), HSAKMT_STATUS_ERROR);
        assert_int_equal(sysfs_queue_ids(), 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(create_and_destroy),
                cmocka_unit_test(bad_ring_size),
        };
        return cmocka_run_group_tests(tests, open_node, close_node);
}
