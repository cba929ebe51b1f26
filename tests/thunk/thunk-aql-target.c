/* SPDX-License-Identifier: MIT */
/*
 * A GPU application built on Debian's ROCt thunk (libhsakmt 5.2.3) alone:
 * it opens KFD, creates AQL queues with hsaKmtCreateQueue, writes kernel
 * dispatch packets into their rings, rings their doorbells and waits for
 * each packet's completion with hsaKmtWaitOnEvent, the way ROCr does it:
 * the completion signal's event mailbox is the event's slot in the
 * thunk's event page, so the GPU's end-of-pipe interrupt sets the event.
 *
 * On kfdemu a packet's kernel_object is its duration (emu-hw.h), and a
 * doorbell write is followed by the emulator's node strobe, which a real
 * GPU does not need. The 5.2.3 thunk never enables the runtime;
 * --runtime-enable makes the upstream AMDKFD_IOC_RUNTIME_ENABLE call
 * itself, on its own /dev/kfd file (the same kfd_process).
 *
 * Prints one line per round ("round N done") and exits 0 once every
 * packet completed; any failure is a message on stderr and exit 1.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <link.h>
#include <linux/futex.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <hsakmt.h>

#include "cleanup.h"
#include "emu-hw.h"
#include "emu-signal.h"
#include "kfd-abi.h"

#define CPU_NODE 0
#define GPU_NODE 1
#define RING_PACKETS 64u
#define RING_SIZE (RING_PACKETS * EMU_AQL_PACKET_SIZE)
#define MAX_QUEUES 16
#define WAIT_MS 10000u

struct options {
        unsigned queues;
        unsigned rounds;                 /* 0: until killed */
        uint64_t kernel_ns;
        bool runtime_enable;
};

struct target_queue {
        void *ring;
        uint64_t read_index, write_index;
        HsaQueueResource resource;
        HsaEvent *event;
        struct emu_amd_signal *signal;
};

static int fail(const char *what, long status)
{
        fprintf(stderr, "thunk-aql-target: %s failed (%ld).\n", what, status);
        return -1;
}

static void usage(FILE *f)
{
        fprintf(f, "Usage: thunk-aql-target [--queues N] [--rounds N] [--kernel-us US] [--runtime-enable]\n"
                   "Runs kernel dispatches on GPU node 1 through libhsakmt, one per queue per round.\n"
                   "  --queues N        AQL queues (1 to %d, default 1)\n"
                   "  --rounds N        rounds to run (default 10; 0 runs until killed)\n"
                   "  --kernel-us US    each kernel's duration on the emulated GPU (default 1000)\n"
                   "  --runtime-enable  call AMDKFD_IOC_RUNTIME_ENABLE first (the 5.2.3 thunk never does)\n",
                MAX_QUEUES);
}

static int parse_unsigned(const char *s, unsigned long max, unsigned long *ret)
{
        char *end;

        errno = 0;
        *ret = strtoul(s, &end, 10);
        return errno || *end || end == s || *s == '-' || *ret > max ? -EINVAL : 0;
}

static int parse_options(int argc, char **argv, struct options *o)
{
        static const struct option longopts[] = {
                { "queues", required_argument, NULL, 'q' },
                { "rounds", required_argument, NULL, 'r' },
                { "kernel-us", required_argument, NULL, 'k' },
                { "runtime-enable", no_argument, NULL, 'e' },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        unsigned long v;
        int c;

        *o = (struct options){ .queues = 1, .rounds = 10, .kernel_ns = 1000000 };
        while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
                switch (c) {
                case 'q':
                        if (parse_unsigned(optarg, MAX_QUEUES, &v) < 0 || v == 0)
                                goto bad;
                        o->queues = (unsigned)v;
                        break;
                case 'r':
                        if (parse_unsigned(optarg, UINT_MAX, &v) < 0)
                                goto bad;
                        o->rounds = (unsigned)v;
                        break;
                case 'k':
                        if (parse_unsigned(optarg, 60000000, &v) < 0)
                                goto bad;
                        o->kernel_ns = (uint64_t)v * 1000;
                        break;
                case 'e':
                        o->runtime_enable = true;
                        break;
                case 'h':
                        usage(stdout);
                        exit(EXIT_SUCCESS);
                default:
                        usage(stderr);
                        return -EINVAL;
                }
        }
        if (optind == argc)
                return 0;
bad:
        fprintf(stderr, "thunk-aql-target: bad argument%s%s; see --help.\n", optarg ? " " : "", optarg ? optarg : "");
        return -EINVAL;
}

/* What ROCr's runtime does after hsaKmtOpenKFD on an upstream kernel:
 * RUNTIME_ENABLE with its r_debug. */
static int runtime_enable(void)
{
        _cleanup_close_ int kfd = open("/dev/kfd", O_RDWR | O_CLOEXEC);
        struct kfd_ioctl_runtime_enable_args args = {
                .r_debug = (uintptr_t)&_r_debug,
                .mode_mask = KFD_RUNTIME_ENABLE_MODE_ENABLE_MASK,
        };

        if (kfd < 0)
                return fail("open /dev/kfd", -errno);
        /* The kfd_process stays enabled after this file is closed. */
        return ioctl(kfd, AMDKFD_IOC_RUNTIME_ENABLE, &args) < 0 ? fail("RUNTIME_ENABLE", -errno) : 0;
}

static int queue_create(struct target_queue *q)
{
        HsaMemFlags ring_flags = { .ui32 = { .HostAccess = 1, .NonPaged = 1, .ExecuteAccess = 1 } };
        HsaEventDescriptor desc = { .EventType = HSA_EVENTTYPE_SIGNAL, .NodeId = GPU_NODE };
        HSAKMT_STATUS s;

        s = hsaKmtAllocMemory(CPU_NODE, RING_SIZE, ring_flags, &q->ring);
        if (s != HSAKMT_STATUS_SUCCESS)
                return fail("hsaKmtAllocMemory", s);
        s = hsaKmtMapMemoryToGPU(q->ring, RING_SIZE, NULL);
        if (s != HSAKMT_STATUS_SUCCESS)
                return fail("hsaKmtMapMemoryToGPU", s);
        /* Every slot starts INVALID: the CP stops at an unpublished packet. */
        for (unsigned i = 0; i < RING_PACKETS; i++)
                ((struct emu_aql_dispatch_packet *)q->ring)[i].header = EMU_AQL_PACKET_TYPE_INVALID;
        q->resource = (HsaQueueResource){
                .Queue_read_ptr_aql = &q->read_index,
                .Queue_write_ptr_aql = &q->write_index,
        };
        s = hsaKmtCreateQueue(GPU_NODE, HSA_QUEUE_COMPUTE_AQL, 100, HSA_QUEUE_PRIORITY_NORMAL, q->ring, RING_SIZE,
                              NULL, &q->resource);
        if (s != HSAKMT_STATUS_SUCCESS)
                return fail("hsaKmtCreateQueue", s);
        s = hsaKmtCreateEvent(&desc, false, false, &q->event);
        if (s != HSAKMT_STATUS_SUCCESS)
                return fail("hsaKmtCreateEvent", s);
        q->signal = aligned_alloc(EMU_AMD_SIGNAL_ALIGN, sizeof(*q->signal));
        if (!q->signal)
                return fail("allocating a signal", -ENOMEM);
        /* As ROCr's InterruptSignal: the event's slot and id. */
        *q->signal = (struct emu_amd_signal){
                .kind = EMU_AMD_SIGNAL_KIND_USER,
                .event_mailbox_ptr = q->event->EventData.HWData2,
                .event_id = (uint32_t)q->event->EventData.HWData1,
        };
        return 0;
}

static void queue_destroy(struct target_queue *q)
{
        if (q->resource.QueueId)
                hsaKmtDestroyQueue(q->resource.QueueId);
        if (q->event)
                hsaKmtDestroyEvent(q->event);
        if (q->ring) {
                hsaKmtUnmapMemoryToGPU(q->ring);
                hsaKmtFreeMemory(q->ring, RING_SIZE);
        }
        free(q->signal);
}

/* Publishes one kernel dispatch and rings the doorbell. */
static void queue_submit(struct target_queue *q, uint64_t kernel_ns)
{
        struct emu_aql_dispatch_packet *p = (struct emu_aql_dispatch_packet *)q->ring + q->write_index % RING_PACKETS;
        uint64_t *doorbell = q->resource.Queue_DoorBell_aql;
        uint32_t *strobe = (uint32_t *)(((uintptr_t)doorbell & ~(uintptr_t)(EMU_DOORBELL_FRAME_SIZE - 1)) +
                                        EMU_NODE_STROBE_OFFSET);

        __atomic_store_n(&q->signal->value, 1, __ATOMIC_RELAXED);
        memset((uint8_t *)p + sizeof(p->header), 0, sizeof(*p) - sizeof(p->header));
        p->workgroup_size_x = 64;
        p->workgroup_size_y = 1;
        p->workgroup_size_z = 1;
        p->grid_size_x = 1;
        p->grid_size_y = 1;
        p->grid_size_z = 1;
        p->kernel_object = kernel_ns;
        p->completion_signal = (uintptr_t)q->signal;
        __atomic_store_n(&p->header, EMU_AQL_PACKET_TYPE_KERNEL_DISPATCH, __ATOMIC_RELEASE);
        q->write_index++;
        __atomic_store_n(doorbell, q->write_index, __ATOMIC_RELEASE);
        __atomic_add_fetch(strobe, 1, __ATOMIC_RELEASE);
        syscall(SYS_futex, strobe, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

static int queue_wait(struct target_queue *q)
{
        HSAKMT_STATUS s = hsaKmtWaitOnEvent(q->event, WAIT_MS);

        if (s != HSAKMT_STATUS_SUCCESS)
                return fail("hsaKmtWaitOnEvent", s);
        if (__atomic_load_n(&q->signal->value, __ATOMIC_ACQUIRE) != 0)
                return fail("the completion signal's decrement", q->signal->value);
        return 0;
}

static int run(const struct options *o, struct target_queue *queues)
{
        HsaSystemProperties system;
        HSAKMT_STATUS s;

        s = hsaKmtAcquireSystemProperties(&system);
        if (s != HSAKMT_STATUS_SUCCESS)
                return fail("hsaKmtAcquireSystemProperties", s);
        if (system.NumNodes < 2)
                return fail("finding a GPU node", -ENODEV);
        if (o->runtime_enable && runtime_enable() < 0)
                return -1;
        for (unsigned i = 0; i < o->queues; i++)
                if (queue_create(&queues[i]) < 0)
                        return -1;
        printf("queues %u ready\n", o->queues);
        fflush(stdout);
        for (unsigned round = 1; o->rounds == 0 || round <= o->rounds; round++) {
                for (unsigned i = 0; i < o->queues; i++)
                        queue_submit(&queues[i], o->kernel_ns);
                for (unsigned i = 0; i < o->queues; i++)
                        if (queue_wait(&queues[i]) < 0)
                                return -1;
                printf("round %u done\n", round);
                fflush(stdout);
        }
        return 0;
}

int main(int argc, char **argv)
{
        struct target_queue queues[MAX_QUEUES] = { 0 };
        struct options o;
        HSAKMT_STATUS s;
        int r;

        if (parse_options(argc, argv, &o) < 0)
                return EXIT_FAILURE;
        s = hsaKmtOpenKFD();
        if (s != HSAKMT_STATUS_SUCCESS) {
                fprintf(stderr, "thunk-aql-target: libhsakmt cannot open KFD (status %d): run it on an AMD GPU node "
                                "or inside kfdemu-run.\n", (int)s);
                return EXIT_FAILURE;
        }
        r = run(&o, queues);
        for (unsigned i = 0; i < o.queues; i++)
                queue_destroy(&queues[i]);
        hsaKmtReleaseSystemProperties();
        hsaKmtCloseKFD();
        return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
