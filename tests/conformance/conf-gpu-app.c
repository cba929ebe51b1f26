/* SPDX-License-Identifier: MIT */
/*
 * conf-gpu-app: the conformance suite's GPU application. It does, with raw
 * ioctls, what a ROCm runtime does (open /dev/kfd, RUNTIME_ENABLE, AQL queues
 * whose read/write indices live in an amd_queue_t-shaped object, doorbells)
 * but one step per command, so a test can put the target exactly where a rule
 * applies. Commands on stdin, one reply line each on stdout:
 *
 *   open                     -> ok | err -ERRNO
 *   runtime-enable           -> ok 0 caps CAPS_HEX | err -ERRNO   (may sleep in the kernel)
 *   runtime-disable          -> ok 0 caps CAPS_HEX | err -ERRNO   (may sleep in the kernel)
 *   create GPU_ID [TYPE]     -> queue ID RING WPTR RPTR CTX RING_SIZE CTX_SIZE | err -ERRNO
 *                               (TYPE: the ioctl's queue type, AQL compute by default)
 *   destroy ID               -> ok | err -ERRNO   (sleeps while the queue is suspended)
 *   destroy-in-thread ID     -> the same reply, from another thread, once that destroy returns;
 *                               commands go on meanwhile
 *   submit ID NS COUNT       -> ok WRITE_INDEX    (COUNT kernels of NS each)
 *   thread                   -> ok TID            (a second thread that only sleeps)
 *   hw-event                 -> ok EVENT_ID | err -ERRNO  (an HW exception event, as ROCr makes one
 *                               to learn of GPU resets)
 *   wait-event ID MS         -> ok WAIT_RESULT | err -ERRNO   (WAIT_EVENTS on that event)
 *   exec                     -> execs itself: a new mm, a new READY line
 *   exit                     -> exits with status 0 (so does end of input)
 *
 * It prints "READY <pid>" first. Addresses are hex, everything else decimal.
 * SIGUSR1 has a handler without SA_RESTART, so a test can interrupt a
 * sleeping ioctl the way a signal interrupts ROCr's.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <linux/futex.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cleanup.h"
#include "conf-helpers.h"
#include "emu-hw.h"
#include "kfd-abi.h"

#define APP_MAX_QUEUES 512
#define APP_EOP_SIZE 4096u
#define APP_CTX_SAVE_SIZE (256u * 1024u)
#define APP_CTL_STACK_SIZE 4096u
#define APP_PAGE 4096u

/* HSA packet header: type in bits 0-7, system-scope acquire/release fences. */
#define APP_HEADER_ACQUIRE_SYSTEM (2u << 9)
#define APP_HEADER_RELEASE_SYSTEM (2u << 11)

struct app_queue {
        bool used;
        uint32_t id;
        uint32_t gpu_id;
        uint8_t *amd_queue;   /* 256 bytes shaped like ROCr's amd_queue_t */
        uint8_t *ring;
        void *eop;
        void *ctx_save;
        volatile uint64_t *doorbell;
        uint8_t *frame;
        uint64_t write_index;
};

struct app_frame {
        uint32_t gpu_id;
        uint64_t offset;
        uint8_t *base;
};

/* LeakSanitizer's exit-time check stops the process's threads with ptrace,
 * which fails (and disturbs the exit) when a test is our tracer; the tests
 * run this helper traced, so leak checking is off for it. The hook is read by
 * the sanitizer runtime only. */
int __lsan_is_turned_off(void);
__attribute__((visibility("default"))) int __lsan_is_turned_off(void)
{
        return 1;
}

static int kfd = -1;
static struct app_queue queues[APP_MAX_QUEUES];
static struct app_frame frames[CONF_MAX_GPUS];

static void *page_alloc(size_t size)
{
        void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        return p == MAP_FAILED ? NULL : p;
}

static void reply_result(long r)
{
        if (r < 0)
                printf("err %ld\n", r);
        else
                printf("ok %ld\n", r);
}

static long cmd_open(void)
{
        if (kfd >= 0)
                return -EALREADY;
        kfd = conf_open_kfd();
        return kfd < 0 ? kfd : conf_acquire_vms(kfd);
}

/* capabilities_mask is passed in with a marker: the kernel never writes it,
 * so the reply shows what came back. */
static void cmd_runtime(uint32_t mode)
{
        struct kfd_ioctl_runtime_enable_args a = {
                .r_debug = mode ? CONF_APP_R_DEBUG : 0,
                .mode_mask = mode,
                .capabilities_mask = CONF_APP_CAPS_MARKER,
        };
        long r = conf_ioctl(kfd, AMDKFD_IOC_RUNTIME_ENABLE, &a);
        if (r < 0)
                reply_result(r);
        else
                printf("ok %ld caps %#x\n", r, a.capabilities_mask);
}

static void *sleeping_thread(void *arg)
{
        int *tid = arg;
        __atomic_store_n(tid, (int)gettid(), __ATOMIC_RELEASE);
        for (;;)
                pause();
        return NULL;
}

static void cmd_thread(void)
{
        static int tid;
        pthread_t th;
        if (pthread_create(&th, NULL, sleeping_thread, &tid) != 0) {
                reply_result(-EAGAIN);
                return;
        }
        while (!__atomic_load_n(&tid, __ATOMIC_ACQUIRE))
                usleep(100);
        reply_result(tid);
}

static void cmd_exec(void)
{
        fflush(stdout);
        execl("/proc/self/exe", "conf-gpu-app", (char *)NULL);
        reply_result(-errno);
}

/* libhsakmt maps the whole doorbell frame of a GPU once per process. */
static uint8_t *doorbell_frame(uint32_t gpu_id, uint64_t doorbell_offset)
{
        uint64_t offset = doorbell_offset & ~(uint64_t)(EMU_DOORBELL_FRAME_SIZE - 1);
        for (size_t i = 0; i < ELEMENTSOF(frames); i++) {
                if (frames[i].base && frames[i].gpu_id == gpu_id && frames[i].offset == offset)
                        return frames[i].base;
                if (!frames[i].base) {
                        void *p = mmap(NULL, EMU_DOORBELL_FRAME_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, kfd,
                                       (off_t)offset);
                        if (p == MAP_FAILED)
                                return NULL;
                        frames[i] = (struct app_frame){ .gpu_id = gpu_id, .offset = offset, .base = p };
                        return p;
                }
        }
        return NULL;
}

static struct app_queue *find_queue(uint32_t id)
{
        for (size_t i = 0; i < ELEMENTSOF(queues); i++)
                if (queues[i].used && queues[i].id == id)
                        return &queues[i];
        return NULL;
}

static void free_queue_memory(struct app_queue *q)
{
        if (q->amd_queue)
                munmap(q->amd_queue, APP_PAGE);
        if (q->ring)
                munmap(q->ring, CONF_APP_RING_SIZE);
        if (q->eop)
                munmap(q->eop, APP_EOP_SIZE);
        if (q->ctx_save)
                munmap(q->ctx_save, APP_CTX_SAVE_SIZE);
        *q = (struct app_queue){ 0 };
}

static void cmd_create(uint32_t gpu_id, uint32_t queue_type)
{
        struct app_queue *q = NULL;
        for (size_t i = 0; !q && i < ELEMENTSOF(queues); i++)
                if (!queues[i].used)
                        q = &queues[i];
        if (!q) {
                reply_result(-ENOSPC);
                return;
        }
        q->amd_queue = page_alloc(APP_PAGE);
        q->ring = page_alloc(CONF_APP_RING_SIZE);
        q->eop = page_alloc(APP_EOP_SIZE);
        q->ctx_save = page_alloc(APP_CTX_SAVE_SIZE);
        if (!q->amd_queue || !q->ring || !q->eop || !q->ctx_save) {
                free_queue_memory(q);
                reply_result(-ENOMEM);
                return;
        }
        /* hsa_queue_t.base_address and .size, as ROCr fills them. */
        memcpy(q->amd_queue + 8, &(uint64_t){ (uintptr_t)q->ring }, 8);
        memcpy(q->amd_queue + 24, &(uint32_t){ CONF_APP_RING_SIZE / EMU_AQL_PACKET_SIZE }, 4);
        struct kfd_ioctl_create_queue_args a = {
                .ring_base_address = (uintptr_t)q->ring,
                .write_pointer_address = (uintptr_t)(q->amd_queue + GP_AMD_QUEUE_WRITE_DISPATCH_ID_OFFSET),
                .read_pointer_address = (uintptr_t)(q->amd_queue + GP_AMD_QUEUE_READ_DISPATCH_ID_OFFSET),
                .ring_size = CONF_APP_RING_SIZE,
                .gpu_id = gpu_id,
                .queue_type = queue_type,
                .queue_percentage = KFD_MAX_QUEUE_PERCENTAGE,
                .queue_priority = 7,
                .eop_buffer_address = (uintptr_t)q->eop,
                .eop_buffer_size = APP_EOP_SIZE,
                .ctx_save_restore_address = (uintptr_t)q->ctx_save,
                .ctx_save_restore_size = APP_CTX_SAVE_SIZE,
                .ctl_stack_size = APP_CTL_STACK_SIZE,
        };
        long r = conf_ioctl(kfd, AMDKFD_IOC_CREATE_QUEUE, &a);
        if (r < 0) {
                free_queue_memory(q);
                reply_result(r);
                return;
        }
        q->used = true;
        q->id = a.queue_id;
        q->gpu_id = gpu_id;
        q->frame = doorbell_frame(gpu_id, a.doorbell_offset);
        if (q->frame)
                q->doorbell = (volatile uint64_t *)(q->frame + (a.doorbell_offset & (EMU_DOORBELL_FRAME_SIZE - 1)));
        printf("queue %u %lx %lx %lx %lx %u %u\n", q->id, (unsigned long)a.ring_base_address,
               (unsigned long)a.write_pointer_address, (unsigned long)a.read_pointer_address,
               (unsigned long)a.ctx_save_restore_address, a.ring_size, a.ctx_save_restore_size);
}

static void cmd_destroy(uint32_t id)
{
        struct kfd_ioctl_destroy_queue_args a = { .queue_id = id };
        long r = conf_ioctl(kfd, AMDKFD_IOC_DESTROY_QUEUE, &a);
        struct app_queue *q = find_queue(id);
        if (r == 0 && q)
                free_queue_memory(q);
        reply_result(r);
}

static void *destroy_thread(void *arg)
{
        cmd_destroy((uint32_t)(uintptr_t)arg);
        return NULL;
}

/* A destroy that may sleep in the kernel while this process takes more
 * commands: a second thread of ROCr's destroying the same queue. */
static void cmd_destroy_in_thread(uint32_t id)
{
        pthread_t t;

        if (pthread_create(&t, NULL, destroy_thread, (void *)(uintptr_t)id) != 0) {
                reply_result(-EAGAIN);
                return;
        }
        pthread_detach(t);
}

/* Publishes one kernel dispatch packet the way ROCr does (emu-hw.h). */
static void submit_one(struct app_queue *q, uint64_t ns)
{
        uint32_t slots = CONF_APP_RING_SIZE / EMU_AQL_PACKET_SIZE;
        struct emu_aql_dispatch_packet *p =
                (struct emu_aql_dispatch_packet *)(q->ring + (q->write_index % slots) * EMU_AQL_PACKET_SIZE);
        /* The ring holds `slots` packets: wait for the GPU to consume one. */
        uint64_t *read_index = (uint64_t *)(q->amd_queue + GP_AMD_QUEUE_READ_DISPATCH_ID_OFFSET);
        while (q->write_index - __atomic_load_n(read_index, __ATOMIC_ACQUIRE) >= slots)
                usleep(100);
        *p = (struct emu_aql_dispatch_packet){
                .setup = 1,
                .workgroup_size_x = 64,
                .workgroup_size_y = 1,
                .workgroup_size_z = 1,
                .grid_size_x = 1,
                .grid_size_y = 1,
                .grid_size_z = 1,
                .kernel_object = ns,
        };
        __atomic_store_n(&p->header,
                         (uint16_t)(EMU_AQL_PACKET_TYPE_KERNEL_DISPATCH | APP_HEADER_ACQUIRE_SYSTEM |
                                    APP_HEADER_RELEASE_SYSTEM),
                         __ATOMIC_RELEASE);
        q->write_index++;
        uint64_t *write_index = (uint64_t *)(q->amd_queue + GP_AMD_QUEUE_WRITE_DISPATCH_ID_OFFSET);
        __atomic_store_n(write_index, q->write_index, __ATOMIC_RELEASE);
        __atomic_store_n(q->doorbell, q->write_index, __ATOMIC_RELEASE);
        /* The emulated hardware cannot trap the doorbell store: bump the
         * node strobe and wake the GPU model (emu-hw.h step 4). */
        uint32_t *strobe = (uint32_t *)(q->frame + EMU_NODE_STROBE_OFFSET);
        __atomic_fetch_add(strobe, 1, __ATOMIC_RELEASE);
        syscall(SYS_futex, strobe, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

static void cmd_submit(uint32_t id, uint64_t ns, unsigned count)
{
        struct app_queue *q = find_queue(id);
        if (!q || !q->doorbell) {
                reply_result(-ENOENT);
                return;
        }
        for (unsigned i = 0; i < count; i++)
                submit_one(q, ns);
        reply_result((long)q->write_index);
}

/* ROCr's Runtime::BindVmFaultHandler: a manual-reset HW exception event,
 * which kfd_signal_reset_event sets when the GPU (or a queue) is reset. */
static long cmd_hw_event(void)
{
        struct kfd_ioctl_create_event_args a = { .event_type = KFD_IOC_EVENT_HW_EXCEPTION, .auto_reset = 0 };
        long r = conf_ioctl(kfd, AMDKFD_IOC_CREATE_EVENT, &a);
        return r < 0 ? r : (long)a.event_id;
}

static long cmd_wait_event(uint32_t id, uint32_t timeout_ms)
{
        struct kfd_event_data data = { .event_id = id };
        struct kfd_ioctl_wait_events_args a = {
                .events_ptr = (uintptr_t)&data, .num_events = 1, .timeout = timeout_ms,
        };
        long r = conf_ioctl(kfd, AMDKFD_IOC_WAIT_EVENTS, &a);
        return r < 0 ? r : (long)a.wait_result;
}

static void run_command(const char *line)
{
        unsigned a, c;
        unsigned long b;
        if (strcmp(line, "open") == 0)
                reply_result(cmd_open());
        else if (strcmp(line, "runtime-enable") == 0)
                cmd_runtime(KFD_RUNTIME_ENABLE_MODE_ENABLE_MASK);
        else if (strcmp(line, "runtime-disable") == 0)
                cmd_runtime(0);
        else if (strcmp(line, "thread") == 0)
                cmd_thread();
        else if (strcmp(line, "exec") == 0)
                cmd_exec();
        else if (strcmp(line, "hw-event") == 0)
                reply_result(cmd_hw_event());
        else if (sscanf(line, "wait-event %u %u", &a, &c) == 2)
                reply_result(cmd_wait_event(a, c));
        else if (sscanf(line, "create %u %u", &a, &c) == 2)
                cmd_create(a, c);
        else if (sscanf(line, "create %u", &a) == 1)
                cmd_create(a, KFD_IOC_QUEUE_TYPE_COMPUTE_AQL);
        else if (sscanf(line, "destroy-in-thread %u", &a) == 1)
                cmd_destroy_in_thread(a);
        else if (sscanf(line, "destroy %u", &a) == 1)
                cmd_destroy(a);
        else if (sscanf(line, "submit %u %lu %u", &a, &b, &c) == 3)
                cmd_submit(a, b, c);
        else if (strcmp(line, "exit") == 0)
                exit(0);
        else
                reply_result(-EINVAL);
}

static void on_sigusr1(int sig)
{
}

int main(void)
{
        struct sigaction sa = { .sa_handler = on_sigusr1 };
        sigaction(SIGUSR1, &sa, NULL);
        char line[256];
        setvbuf(stdout, NULL, _IOLBF, 0);
        /* The teardown tests debug this process from a forked debugger that
         * is not its ancestor; Yama's ptrace_scope=1 allows that only when
         * the tracee opts in (fails harmlessly without Yama). */
        prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
        printf("READY %d\n", (int)getpid());
        while (fgets(line, sizeof(line), stdin)) {
                line[strcspn(line, "\n")] = '\0';
                run_command(line);
        }
        return 0;
}
