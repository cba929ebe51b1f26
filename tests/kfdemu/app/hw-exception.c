/* SPDX-License-Identifier: MIT */
/*
 * What a ROCm process does when its GPU is reset: ROCr's
 * Runtime::BindErrorHandlers makes a manual-reset HW exception event at
 * start, its async-exceptions thread (Runtime::AsyncEventsLoop through
 * Signal::WaitAnyExceptions) sleeps in WAIT_EVENTS on it, and
 * Runtime::HwExceptionHandler prints "HW Exception by GPU node-N (Agent
 * handle: 0x...) reason :GPU Hang" and aborts (ROCR-Runtime runtime.cpp,
 * signal.cpp; kfd-interface.md §16.3). The kernel sets the event from
 * kfd_signal_reset_event, for a whole-GPU reset in every process that has
 * the device (§16.1), for a per-queue reset only in the processes whose
 * queue was reset (§16.2).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "kfd-abi.h"
#include "runtime-internal.h"

/* KFD_EVENT_TIMEOUT_INFINITE: ROCr's async thread waits without a bound. */
#define WAIT_FOREVER 0xffffffffu
/* ROCr's agents_by_node_ for node 0 holds the CPU agent. */
#define CPU_NODE 0u

enum { WAIT_HW_EXCEPTION, WAIT_WAKE, WAIT_EVENT_COUNT };

struct emu_hw_exception_watch {
        const struct emu_runtime *rt;
        uint32_t hw_exception_event_id;
        /* The async thread's control.wake: an auto-reset signal event that
         * Runtime::AsyncEventsControl::Shutdown sets to end the wait. */
        uint32_t wake_event_id;
        atomic_bool exit;
        bool thread_started;
        pthread_t thread;
        int wait_error;            /* a WAIT_EVENTS that failed ended the thread */
};

/* hsaKmtCreateEvent (libhsakmt events.c) for one event; ret_id is set only
 * on success. */
static int create_event(int kfd_fd, uint32_t type, bool manual_reset, uint32_t *ret_id)
{
        struct kfd_ioctl_create_event_args args = {
                .event_type = type,
                .auto_reset = !manual_reset,
        };
        int r = emu_kfd_ioctl(kfd_fd, AMDKFD_IOC_CREATE_EVENT, &args);

        if (r < 0)
                return r;
        *ret_id = args.event_id;
        return 0;
}

/* The GPU the kernel's event data names, or -1 when it names none. */
static int faulting_gpu(const struct emu_runtime *rt, const struct kfd_hsa_hw_exception_data *data)
{
        for (unsigned i = 0; data->gpu_id && i < rt->n_gpus; i++)
                if (rt->gpus[i].gpu_id == data->gpu_id)
                        return (int)i;
        return -1;
}

/*
 * Runtime::HwExceptionHandler with no system event handler registered. The
 * node comes from the event data (hsaKmtWaitOnMultipleEvents_Ext turns its
 * gpu_id into a node). Kernels whose copy_signaled_event_data does not copy
 * HW exception data out (the 6.10 tree, and kfdemu) leave it zeroed, as
 * ROCr's own copy starts: node 0, the CPU agent's node. ROCr then aborts
 * only once the data says memory was lost; the emulated runtime aborts on
 * the event itself, which every reset sets with memory_lost = 1 (§16.1).
 * The agent handle is the address of the runtime's record of that node.
 */
static _Noreturn void abort_on_hw_exception(const struct emu_runtime *rt,
                                            const struct kfd_hsa_hw_exception_data *data)
{
        int gpu = faulting_gpu(rt, data);
        unsigned node = gpu >= 0 ? rt->gpus[gpu].node : CPU_NODE;
        const void *agent = gpu >= 0 ? (const void *)&rt->gpus[gpu] : (const void *)rt;

        fprintf(stderr, "HW Exception by GPU node-%u (Agent handle: %p) reason :%s\n", node, agent,
                data->reset_cause == KFD_HW_EXCEPTION_ECC ? "ECC" : "GPU Hang");
        abort();
}

static void *watch_hw_exceptions(void *arg)
{
        struct emu_hw_exception_watch *w = arg;

        for (;;) {
                struct kfd_event_data events[WAIT_EVENT_COUNT] = {
                        [WAIT_HW_EXCEPTION] = {.event_id = w->hw_exception_event_id},
                        [WAIT_WAKE] = {.event_id = w->wake_event_id},
                };
                struct kfd_ioctl_wait_events_args args = {
                        .events_ptr = (uintptr_t)events,
                        .num_events = WAIT_EVENT_COUNT,
                        .wait_for_all = 0,
                        .timeout = WAIT_FOREVER,
                };
                int r = emu_kfd_ioctl(w->rt->kfd_fd, AMDKFD_IOC_WAIT_EVENTS, &args);

                if (atomic_load(&w->exit))
                        return NULL;
                if (r < 0) {
                        /* Waiting again would fail the same way at once. */
                        w->wait_error = r;
                        return NULL;
                }
                /* Only a stop sets the wake event: any other completion is
                 * the HW exception. */
                if (args.wait_result == KFD_IOC_WAIT_RESULT_COMPLETE)
                        abort_on_hw_exception(w->rt, &events[WAIT_HW_EXCEPTION].hw_exception_data);
        }
}

/* Process-directed signals stay with the threads the program chose to take
 * them: ROCr's thread is an implementation detail, not one of them. */
static int start_thread_without_signals(struct emu_hw_exception_watch *w)
{
        sigset_t all, saved;
        int r;

        sigfillset(&all);
        r = -pthread_sigmask(SIG_BLOCK, &all, &saved);
        if (r < 0)
                return r;
        r = -pthread_create(&w->thread, NULL, watch_hw_exceptions, w);
        pthread_sigmask(SIG_SETMASK, &saved, NULL);
        if (r < 0)
                return r;
        w->thread_started = true;
        return 0;
}

int emu_hw_exception_watch_start(const struct emu_runtime *rt, struct emu_hw_exception_watch **ret_watch)
{
        struct emu_hw_exception_watch *w = calloc(1, sizeof(*w));
        int r;

        if (!w)
                return -ENOMEM;
        w->rt = rt;
        /* Manual reset "to avoid racing condition with driver", as ROCr's. */
        r = create_event(rt->kfd_fd, KFD_IOC_EVENT_HW_EXCEPTION, true, &w->hw_exception_event_id);
        if (r == 0)
                r = create_event(rt->kfd_fd, KFD_IOC_EVENT_SIGNAL, false, &w->wake_event_id);
        if (r == 0)
                r = start_thread_without_signals(w);
        if (r < 0) {
                emu_hw_exception_watch_stop(w);
                return r;
        }
        *ret_watch = w;
        return 0;
}

/* DESTROY_EVENT of an event the watch made (id 0 is reserved by the
 * kernel: never an event); returns `r` unless that was 0 and this fails. */
static int destroy_event_keeping_first_error(int kfd_fd, uint32_t id, int r)
{
        struct kfd_ioctl_destroy_event_args args = {.event_id = id};
        int d;

        if (id == 0)
                return r;
        d = emu_kfd_ioctl(kfd_fd, AMDKFD_IOC_DESTROY_EVENT, &args);
        return r < 0 ? r : d;
}

int emu_hw_exception_watch_stop(struct emu_hw_exception_watch *w)
{
        int kfd_fd, r = 0;

        if (!w)
                return 0;
        kfd_fd = w->rt->kfd_fd;
        if (w->thread_started) {
                struct kfd_ioctl_set_event_args wake = {.event_id = w->wake_event_id};

                atomic_store(&w->exit, true);
                r = emu_kfd_ioctl(kfd_fd, AMDKFD_IOC_SET_EVENT, &wake);
                if (r < 0) {
                        /* Not woken, the thread sleeps on in the kernel and
                         * still uses the watch: it ends with the process. */
                        pthread_detach(w->thread);
                        return r;
                }
                pthread_join(w->thread, NULL);
                r = w->wait_error;
        }
        /* Runtime::Unload destroys the events once the thread is gone. */
        r = destroy_event_keeping_first_error(kfd_fd, w->wake_event_id, r);
        r = destroy_event_keeping_first_error(kfd_fd, w->hw_exception_event_id, r);
        free(w);
        return r < 0 ? r : 0;
}
