/* SPDX-License-Identifier: MIT */
/*
 * HSA events (kfd_events.c and their ioctls in kfd_chardev.c, 6.x trees;
 * kfd-interface.md §14): CREATE/DESTROY/SET/RESET_EVENT, WAIT_EVENTS with
 * its sleep, timeout and signal handling, the signal page (the user's BO
 * or the kernel's own, which /dev/kfd maps), and the GPU's interrupt for
 * a completion signal's event.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "gpu.h"
#include "kfd-priv.h"
#include "usermem.h"

#define KFD_SIGNAL_PAGE_SIZE (KFD_SIGNAL_EVENT_LIMIT * 8u)
/* allocate_event_notification_slot: "Oldest user mode expects 256 event
 * slots", so the kernel's own page hands out ids below 256 until user
 * mode maps it (kfd_event_mmap then records the mapping's length). */
#define KFD_DEFAULT_SIGNAL_MAPPED_SIZE (256u * 8u)
/* kfd_event_init_process allocates id 0 with no event ("used for a fast
 * path to ignore bogus events that are sent by the CP without a context
 * ID") and counts it as a signal event. */
#define KFD_RESERVED_EVENT_ID 0u
/* KFD_FIRST_NONSIGNAL_EVENT_ID (kfd_events.h): other events take the upper
 * half of the IDR's id space, (INT_MAX >> 1) + 1 up to INT_MAX. */
#define KFD_FIRST_NONSIGNAL_EVENT_ID ((uint32_t)(INT32_MAX >> 1) + 1)
/* UNSIGNALED_EVENT_SLOT: what a slot holds until the GPU writes it. */
#define KFD_UNSIGNALED_EVENT_SLOT UINT64_MAX
/* KFD_EVENT_TIMEOUT_IMMEDIATE / _INFINITE. */
#define KFD_EVENT_TIMEOUT_IMMEDIATE 0u
#define KFD_EVENT_TIMEOUT_INFINITE 0xffffffffu
#define KFD_EVENT_TIMEOUT_MAX_FINITE 0x7fffffffu
/* sizeof(struct kfd_event_waiter) on x86-64: a wait_queue_entry (40),
 * the event pointer and two bools; kcalloc of more than KMALLOC_MAX_SIZE
 * fails. */
#define KFD_EVENT_WAITER_SIZE 56u

/* One event of a WAIT_EVENTS call (kfd_event_waiter). */
struct kfd_event_waiter {
        struct kfd_event_waiter *next;   /* on the event's list (ev->wq) */
        struct emu_event *event;         /* NULL once the event is destroyed */
        struct kfd_event_wait *wait;
        bool activated;
        bool age_enabled;
};

/* A WAIT_EVENTS call asleep (call->event_wait). */
struct kfd_event_wait {
        struct emu_call *call;
        struct emu_process *process;
        bool all;
        bool timed;                      /* a finite timeout: a timer is pending */
        uint64_t deadline_ns;            /* model time the timer fires at */
        uint32_t num_events;
        struct kfd_event_waiter waiters[];
};

/* The user's kfd_event_data: only the signal event's age (the union's
 * first member since KFD 1.12) is read or written here. */
struct kfd_user_event_data {
        uint64_t last_event_age;
        uint64_t rest_of_union[3];
        uint64_t kfd_event_data_ext;
        uint32_t event_id;
        uint32_t pad;
};
_Static_assert(sizeof(struct kfd_user_event_data) == sizeof(struct kfd_event_data), "kfd_event_data layout");

/* The page size kfd_event_mmap's vma has: the mapping's length rounded
 * up to whole pages. */
#define KFD_PAGE_ALIGN(x) (((x) + 4095ull) & ~4095ull)

/* The model's clock (CLOCK_MONOTONIC), which its timers count in. */
static uint64_t now_ns(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static struct emu_event *lookup_event_by_id(struct emu_process *p, uint32_t id)
{
        for (struct emu_event *ev = p->events; ev; ev = ev->next)
                if (ev->id == id)
                        return ev;
        return NULL;
}

/* idr_alloc(&p->event_idr, ev, start, end): the lowest free id in
 * [start, end), end 0 meaning no bound; -ENOSPC when none is. The
 * reserved id is never free. */
static long lowest_free_id(struct emu_process *p, uint32_t start, uint64_t end)
{
        for (uint64_t id = start; end == 0 ? id < INT32_MAX : id < end; id++)
                if (id != KFD_RESERVED_EVENT_ID && !lookup_event_by_id(p, (uint32_t)id))
                        return (long)id;
        return -ENOSPC;
}

/* Makes `memfd` (taken over) the process's signal page of `size` bytes,
 * every slot unsignaled. */
static int signal_page_install(struct emu_process *p, int memfd, uint64_t mapped_size)
{
        uint64_t *slots = mmap(NULL, KFD_SIGNAL_PAGE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);

        if (slots == MAP_FAILED) {
                close(memfd);
                return -ENOMEM;
        }
        memset(slots, 0xff, KFD_SIGNAL_PAGE_SIZE);
        p->signal_page_memfd = memfd;
        p->signal_slots = slots;
        p->signal_mapped_size = mapped_size;
        return 0;
}

/* allocate_signal_page: the kernel's own page, for user mode to mmap. */
static int allocate_signal_page(struct emu_process *p)
{
        int memfd = memfd_create("kfdemu-signal-page", MFD_CLOEXEC);

        if (memfd < 0)
                return -ENOMEM;
        if (ftruncate(memfd, KFD_SIGNAL_PAGE_SIZE) < 0) {
                close(memfd);
                return -ENOMEM;
        }
        return signal_page_install(p, memfd, KFD_DEFAULT_SIGNAL_MAPPED_SIZE);
}

/* The event page given by its BO handle (kfd_kmap_event_page, then
 * amdgpu_amdkfd_gpuvm_map_gtt_bo_to_kernel and kfd_event_page_set). */
static long set_event_page_by_handle(struct emu_process *p, uint64_t handle)
{
        struct emu_pdd *pdd;
        struct emu_bo *bo;
        long r;
        int memfd;

        /* "Event page is already set": before the device is even looked
         * up, so kfd_event_page_set's -EBUSY is never reached. */
        if (p->signal_page_memfd >= 0)
                return -EINVAL;
        r = kfd_bind_device(p, (uint32_t)(handle >> 32), &pdd);
        if (r < 0)
                return r;
        bo = kfd_bo_by_handle(pdd, (uint32_t)handle);
        if (!bo)
                return -EINVAL;
        /* "userptr can't be mapped to kernel"; doorbell and MMIO BOs have
         * no pages kfdemu could map (README "Known differences"). */
        if (bo->memfd < 0)
                return -EINVAL;
        /* **[ver]** trees with the size check: a page with fewer slots
         * than KFD_SIGNAL_EVENT_LIMIT is refused before it is cleared. */
        if (bo->size < KFD_SIGNAL_PAGE_SIZE)
                return -EINVAL;
        memfd = fcntl(bo->memfd, F_DUPFD_CLOEXEC, 0);
        if (memfd < 0)
                return -ENOMEM;
        r = signal_page_install(p, memfd, bo->size);
        if (r < 0)
                return r;
        p->signal_handle = handle;
        return 0;
}

long kfd_ioctl_create_event(struct emu_call *call, struct emu_process *p, void *data)
{
        struct kfd_ioctl_create_event_args *args = data;
        struct emu_event *ev;
        bool signal = args->event_type == KFD_IOC_EVENT_SIGNAL || args->event_type == KFD_IOC_EVENT_DEBUG_EVENT;
        long id, r;

        /* For dGPUs the event page is allocated in user mode and its handle
         * passed with the first CREATE_EVENT. */
        if (args->event_page_offset) {
                r = set_event_page_by_handle(p, args->event_page_offset);
                if (r < 0)
                        return r;
        }

        /* kfd_event_create clears the offset before anything can fail;
         * the ioctl's arguments go back to user mode even on error. */
        args->event_page_offset = 0;
        if (signal) {
                /* create_signal_event: no slot left that user mode maps
                 * (the reserved id counts as one). */
                if (p->signal_mapped_size && p->signal_event_count == p->signal_mapped_size / 8)
                        return -ENOSPC;
                if (p->signal_page_memfd < 0) {
                        r = allocate_signal_page(p);
                        if (r < 0)
                                return r;
                }
                /* "Only use signal slots user mode has mapped". */
                id = lowest_free_id(p, KFD_RESERVED_EVENT_ID, p->signal_mapped_size / 8);
        } else {
                id = lowest_free_id(p, KFD_FIRST_NONSIGNAL_EVENT_ID, 0);
        }
        if (id < 0)
                return id;

        ev = calloc(1, sizeof(*ev));
        if (!ev)
                return -ENOMEM;
        ev->id = (uint32_t)id;
        ev->type = args->event_type;
        ev->auto_reset = args->auto_reset != 0;
        ev->age = 1;
        ev->next = p->events;
        p->events = ev;
        if (signal) {
                p->signal_event_count++;
                args->event_page_offset = KFD_MMAP_TYPE_EVENTS;
                args->event_slot_index = ev->id;
        }
        args->event_id = ev->id;
        args->event_trigger_data = ev->id;
        return 0;
}

/* test_event_condition */
static uint32_t wait_condition(const struct kfd_event_wait *w)
{
        uint32_t activated = 0;

        for (uint32_t i = 0; i < w->num_events; i++) {
                if (!w->waiters[i].event)
                        return KFD_IOC_WAIT_RESULT_FAIL;
                if (w->waiters[i].activated) {
                        if (!w->all)
                                return KFD_IOC_WAIT_RESULT_COMPLETE;
                        activated++;
                }
        }
        return activated == w->num_events ? KFD_IOC_WAIT_RESULT_COMPLETE : KFD_IOC_WAIT_RESULT_TIMEOUT;
}

static void set_event_and_wake(struct emu_event *ev);

/* free_waiters: off the events' lists. After an interrupted wait, an
 * auto-reset event the wait consumed is set again, which wakes the
 * event's other waiters as set_event's wake_up_all does. The wait's own
 * waiters all leave their lists first: the wait that is ending must not
 * be among those woken. */
static void free_waiters(struct kfd_event_wait *w, bool undo_auto_reset)
{
        for (uint32_t i = 0; i < w->num_events; i++) {
                struct kfd_event_waiter *waiter = &w->waiters[i];

                if (!waiter->event)
                        continue;
                for (struct kfd_event_waiter **link = &waiter->event->waiters; *link; link = &(*link)->next)
                        if (*link == waiter) {
                                *link = waiter->next;
                                break;
                        }
        }
        if (!undo_auto_reset)
                return;
        for (uint32_t i = 0; i < w->num_events; i++) {
                struct kfd_event_waiter *waiter = &w->waiters[i];

                if (waiter->event && waiter->activated && waiter->event->auto_reset)
                        set_event_and_wake(waiter->event);
        }
}

/* copy_signaled_event_data: the age of each signal event that fired, for
 * the waiters that asked for it. */
static long copy_signaled_event_data(const struct kfd_event_wait *w, pid_t tgid, uint64_t events_ptr)
{
        for (uint32_t i = 0; i < w->num_events; i++) {
                const struct kfd_event_waiter *waiter = &w->waiters[i];
                uint64_t dst = events_ptr + i * sizeof(struct kfd_user_event_data) +
                               offsetof(struct kfd_user_event_data, last_event_age);

                if (!waiter->activated || !waiter->age_enabled || !waiter->event)
                        continue;
                if (emu_copy_to_user(tgid, dst, &waiter->event->age, sizeof(waiter->event->age)) < 0)
                        return -EFAULT;
        }
        return 0;
}

/* The end of kfd_wait_on_events: copy-out, waiters freed, the result. */
static long wait_result(struct kfd_event_wait *w, long ret, uint32_t result)
{
        struct kfd_ioctl_wait_events_args *args = (void *)w->call->kdata;

        if (ret == 0 && result == KFD_IOC_WAIT_RESULT_COMPLETE)
                ret = copy_signaled_event_data(w, w->call->caller.tgid, args->events_ptr);
        free_waiters(w, ret == -EMU_ERESTARTSYS);
        if (ret)
                result = KFD_IOC_WAIT_RESULT_FAIL;
        else if (result == KFD_IOC_WAIT_RESULT_FAIL)
                ret = -EIO;
        args->wait_result = result;
        return ret;
}

/* Wakes a parked wait with its outcome. */
static void wait_finish(struct kfd_event_wait *w, long ret, uint32_t result)
{
        struct emu_call *call = w->call;

        if (w->timed)
                emu_gpu_cancel_completion(w->process->node, call);
        ret = wait_result(w, ret, result);
        call->event_wait = NULL;
        call->wait_kind = KFD_WAIT_NONE;
        free(w);
        emu_call_complete(call, ret);
}

/* The waits `ev`'s waiters belong to test their condition again, as the
 * woken tasks do; those no longer waiting finish. */
static void wake_waiters(struct emu_event *ev)
{
        bool finished;

        do {
                finished = false;
                for (struct kfd_event_waiter *waiter = ev->waiters; waiter; waiter = waiter->next) {
                        uint32_t result = wait_condition(waiter->wait);

                        if (result != KFD_IOC_WAIT_RESULT_TIMEOUT) {
                                wait_finish(waiter->wait, 0, result);
                                finished = true;
                                break;
                        }
                }
        } while (finished);
}

/* set_event: an auto-reset event that wakes someone is consumed. Every
 * set ages the event; the age never wraps back to 0 ("no age given") or
 * 1 (never set). */
static void set_event(struct emu_event *ev)
{
        ev->signaled = !ev->auto_reset || !ev->waiters;
        if (++ev->age == 0)
                ev->age = 2;
        for (struct kfd_event_waiter *waiter = ev->waiters; waiter; waiter = waiter->next)
                waiter->activated = true;
}

static void set_event_and_wake(struct emu_event *ev)
{
        set_event(ev);
        wake_waiters(ev);
}

void kfd_signal_reset_event(struct emu_gpu *gpu, bool only_reset_queues)
{
        /* kfd_signal_reset_event: every HW exception event of every process
         * with this device is set (the reason, GPU hang, and memory lost go
         * in its data, which kfdemu does not copy out: §14); during a
         * per-queue reset only the processes whose queue was reset. */
        for (struct emu_process *p = gpu->node->processes; p; p = p->next) {
                struct emu_pdd *pdd = kfd_process_device_by_id(p, gpu->cfg.gpu_id);

                if (!pdd || (only_reset_queues && !pdd->has_reset_queue))
                        continue;
                for (struct emu_event *ev = p->events; ev; ev = ev->next)
                        if (ev->type == KFD_IOC_EVENT_HW_EXCEPTION)
                                set_event_and_wake(ev);
        }
}

long kfd_ioctl_set_event(struct emu_call *call, struct emu_process *p, void *data)
{
        const struct kfd_ioctl_set_event_args *args = data;
        struct emu_event *ev = lookup_event_by_id(p, args->event_id);

        /* event_can_be_cpu_signaled: signal events only. */
        if (!ev || ev->type != KFD_IOC_EVENT_SIGNAL)
                return -EINVAL;
        set_event_and_wake(ev);
        return 0;
}

long kfd_ioctl_reset_event(struct emu_call *call, struct emu_process *p, void *data)
{
        const struct kfd_ioctl_reset_event_args *args = data;
        struct emu_event *ev = lookup_event_by_id(p, args->event_id);

        if (!ev || ev->type != KFD_IOC_EVENT_SIGNAL)
                return -EINVAL;
        ev->signaled = false;
        return 0;
}

/* destroy_event: its waiters see it gone (their waits fail with -EIO). */
static void destroy_event(struct emu_process *p, struct emu_event *ev)
{
        struct kfd_event_waiter *waiter;

        for (waiter = ev->waiters; waiter; waiter = waiter->next)
                waiter->event = NULL;
        while ((waiter = ev->waiters)) {
                struct kfd_event_wait *w = waiter->wait;

                /* A wait may name the event more than once. */
                for (struct kfd_event_waiter **link = &ev->waiters; *link;)
                        if ((*link)->wait == w)
                                *link = (*link)->next;
                        else
                                link = &(*link)->next;
                wait_finish(w, 0, KFD_IOC_WAIT_RESULT_FAIL);
        }
        if (ev->type == KFD_IOC_EVENT_SIGNAL || ev->type == KFD_IOC_EVENT_DEBUG_EVENT)
                p->signal_event_count--;
        for (struct emu_event **link = &p->events; *link; link = &(*link)->next)
                if (*link == ev) {
                        *link = ev->next;
                        break;
                }
        free(ev);
}

long kfd_ioctl_destroy_event(struct emu_call *call, struct emu_process *p, void *data)
{
        const struct kfd_ioctl_destroy_event_args *args = data;
        struct emu_event *ev = lookup_event_by_id(p, args->event_id);

        if (!ev)
                return -EINVAL;
        destroy_event(p, ev);
        return 0;
}

/* init_event_waiter */
static long init_event_waiter(struct emu_process *p, struct kfd_event_waiter *waiter,
                              const struct kfd_user_event_data *data)
{
        struct emu_event *ev = lookup_event_by_id(p, data->event_id);

        if (!ev)
                return -EINVAL;
        waiter->event = ev;
        waiter->activated = ev->signaled;
        ev->signaled = ev->signaled && !ev->auto_reset;
        /* last_event_age 0 is "reserved for backward compatible". */
        if (ev->type == KFD_IOC_EVENT_SIGNAL && data->last_event_age) {
                waiter->age_enabled = true;
                if (ev->age != data->last_event_age)
                        waiter->activated = true;
        }
        if (!waiter->activated) {
                waiter->next = ev->waiters;
                ev->waiters = waiter;
        }
        return 0;
}

long kfd_ioctl_wait_events(struct emu_call *call, struct emu_process *p, void *data)
{
        struct kfd_ioctl_wait_events_args *args = data;
        struct kfd_event_wait *w;
        uint32_t result;
        long r = 0;

        /* A failed kcalloc goes to the kernel's `out:`, which reports the
         * wait as failed too. */
        if ((uint64_t)args->num_events * KFD_EVENT_WAITER_SIZE > KFD_KMALLOC_MAX_SIZE) {
                args->wait_result = KFD_IOC_WAIT_RESULT_FAIL;
                return -ENOMEM;
        }
        w = calloc(1, sizeof(*w) + (size_t)args->num_events * sizeof(w->waiters[0]));
        if (!w) {
                args->wait_result = KFD_IOC_WAIT_RESULT_FAIL;
                return -ENOMEM;
        }
        w->call = call;
        w->process = p;
        w->all = args->wait_for_all != 0;
        w->num_events = args->num_events;
        for (uint32_t i = 0; i < args->num_events; i++) {
                struct kfd_user_event_data event_data;

                w->waiters[i].wait = w;
                if (emu_copy_from_user(call->caller.tgid, &event_data,
                                       args->events_ptr + i * sizeof(event_data), sizeof(event_data)) < 0)
                        r = -EFAULT;
                else
                        r = init_event_waiter(p, &w->waiters[i], &event_data);
                if (r < 0) {
                        /* Only the waiters set up so far are on lists. */
                        w->num_events = i;
                        break;
                }
        }

        result = wait_condition(w);
        /* No events at all are "all activated": complete at once. An
         * immediate timeout tests the condition once more and returns. */
        if (r < 0 || result != KFD_IOC_WAIT_RESULT_TIMEOUT || args->timeout == KFD_EVENT_TIMEOUT_IMMEDIATE) {
                r = wait_result(w, r, result);
                free(w);
                return r;
        }

        /* Asleep until an event fires, the timeout passes or a signal comes. */
        call->event_wait = w;
        call->wait_kind = KFD_WAIT_EVENTS;
        if (args->timeout != KFD_EVENT_TIMEOUT_INFINITE) {
                /* user_timeout_to_jiffies: "msecs_to_jiffies interprets all
                 * values above 2^31-1 as infinite, but we consider them
                 * finite", so they are cut to that. */
                uint64_t timeout_ns = (uint64_t)(args->timeout < KFD_EVENT_TIMEOUT_MAX_FINITE
                                                         ? args->timeout
                                                         : KFD_EVENT_TIMEOUT_MAX_FINITE) * 1000000u;

                w->timed = true;
                w->deadline_ns = now_ns() + timeout_ns;
                emu_gpu_complete_after(p->node, call, 0, timeout_ns);
        }
        return EMU_CALL_PARKED;
}

void kfd_wait_events_timed_out(struct emu_call *call)
{
        struct kfd_event_wait *w = call->event_wait;

        w->timed = false;                /* the timer is what fired */
        wait_finish(w, 0, KFD_IOC_WAIT_RESULT_TIMEOUT);
}

void kfd_wait_events_interrupted(struct emu_call *call)
{
        struct kfd_event_wait *w = call->event_wait;
        struct kfd_ioctl_wait_events_args *args = (void *)call->kdata;

        /* The remaining time goes back to user mode, so that the restarted
         * call waits only for what is left. */
        if (w->timed) {
                uint64_t now = now_ns();

                args->timeout = now >= w->deadline_ns ? 0 : (uint32_t)((w->deadline_ns - now) / 1000000u);
        }
        wait_finish(w, -EMU_ERESTARTSYS, KFD_IOC_WAIT_RESULT_FAIL);
}

void kfd_wait_events_abandon(struct emu_call *call)
{
        struct kfd_event_wait *w = call->event_wait;

        if (w->timed)
                emu_gpu_cancel_completion(w->process->node, call);
        free_waiters(w, false);
        call->event_wait = NULL;
        call->wait_kind = KFD_WAIT_NONE;
        free(w);
}

void emu_signal_event_interrupt(struct emu_process *p, uint32_t event_id)
{
        struct emu_event *ev;

        /* lookup_signaled_event_by_partial_id: the slot must have been
         * written; then set_event_from_interrupt for events the GPU may
         * signal, after acknowledge_signal resets the slot. */
        if (p->is_released || !p->signal_slots || event_id >= KFD_SIGNAL_EVENT_LIMIT ||
            p->signal_slots[event_id] == KFD_UNSIGNALED_EVENT_SLOT)
                return;
        ev = lookup_event_by_id(p, event_id);
        if (!ev || (ev->type != KFD_IOC_EVENT_SIGNAL && ev->type != KFD_IOC_EVENT_DEBUG_EVENT))
                return;
        p->signal_slots[event_id] = KFD_UNSIGNALED_EVENT_SLOT;
        set_event_and_wake(ev);
}

int kfd_event_mmap(struct emu_process *p, uint64_t length, struct emu_mmap_result *ret)
{
        /* get_order(length) may not pass the page's: at most 32 KiB. */
        if (length > KFD_SIGNAL_PAGE_SIZE)
                return -EINVAL;
        if (p->signal_page_memfd < 0)
                return -EINVAL;
        ret->n_segments = 1;
        ret->segments[0] = (struct emu_mmap_segment){ .memfd = p->signal_page_memfd, .length = length };
        /* vma->vm_end - vma->vm_start: whole pages. */
        p->signal_mapped_size = KFD_PAGE_ALIGN(length);
        return 0;
}

void kfd_event_init_process(struct emu_process *p)
{
        p->signal_page_memfd = -1;
        p->signal_event_count = 1;       /* the reserved id's */
}

void kfd_event_abandon_waits(struct emu_process *p)
{
        /* Only the process's own threads can wait on its events. */
        for (struct emu_event *ev = p->events; ev; ev = ev->next)
                while (ev->waiters)
                        kfd_wait_events_abandon(ev->waiters->wait->call);
}

void kfd_event_free_process(struct emu_process *p)
{
        while (p->events)
                destroy_event(p, p->events);
        if (p->signal_slots)
                munmap(p->signal_slots, KFD_SIGNAL_PAGE_SIZE);
        if (p->signal_page_memfd >= 0)
                close(p->signal_page_memfd);
        p->signal_slots = NULL;
        p->signal_page_memfd = -1;
        p->signal_handle = 0;
}
