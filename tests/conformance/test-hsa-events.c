/* SPDX-License-Identifier: MIT */
/*
 * HSA events (kfd-interface.md §14): CREATE_EVENT (kfd_ioctl_create_event,
 * kfd_event_create, create_signal_event, create_other_event, the event
 * page given by its BO handle), SET/RESET/DESTROY_EVENT, WAIT_EVENTS
 * (kfd_wait_on_events: immediate, timed and infinite waits, any and all,
 * auto-reset, event age, a destroyed event, a signal) and the signal
 * page's mmap through /dev/kfd (kfd_event_mmap).
 *
 * The program's kfd_process keeps its events: the tests run in this order.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "conf-helpers.h"

#define EVENTS_MMAP_OFFSET (0x2ull << 62) /* KFD_MMAP_TYPE_EVENTS */
#define SIGNAL_PAGE_SIZE (KFD_SIGNAL_EVENT_LIMIT * 8)
#define INFINITE 0xffffffffu

static long create_event(uint32_t type, bool auto_reset, struct kfd_ioctl_create_event_args *ret)
{
        *ret = (struct kfd_ioctl_create_event_args){ .event_type = type, .auto_reset = auto_reset };
        return conf_ioctl(conf_kfd(), AMDKFD_IOC_CREATE_EVENT, ret);
}

static long event_op(unsigned long request, uint32_t id)
{
        struct kfd_ioctl_set_event_args a = { .event_id = id };

        return conf_ioctl(conf_kfd(), request, &a);
}

/* WAIT_EVENTS on `n` events; the result in *ret_result, the remaining
 * timeout in *inout_timeout when given. */
static long wait_events(struct kfd_event_data *events, uint32_t n, bool all, uint32_t timeout, uint32_t *ret_result)
{
        struct kfd_ioctl_wait_events_args a = {
                .events_ptr = (uintptr_t)events,
                .num_events = n,
                .wait_for_all = all,
                .timeout = timeout,
                .wait_result = 0xdead,
        };
        long r = conf_ioctl(conf_kfd(), AMDKFD_IOC_WAIT_EVENTS, &a);

        *ret_result = a.wait_result;
        return r;
}

static long wait_one(uint32_t id, uint32_t timeout, uint32_t *ret_result)
{
        struct kfd_event_data data = { .event_id = id };

        return wait_events(&data, 1, false, timeout, ret_result);
}

static double seconds_since(const struct timespec *start)
{
        struct timespec now;

        clock_gettime(CLOCK_MONOTONIC, &now);
        return (double)(now.tv_sec - start->tv_sec) + (double)(now.tv_nsec - start->tv_nsec) / 1e9;
}

/* A thread asleep in WAIT_EVENTS. */
struct waiter {
        pthread_t thread;
        struct kfd_event_data events[3];         /* the last one free for waiter_start_asleep()'s probe */
        uint32_t n, timeout, result;
        bool all;
        uint32_t probe;                          /* waiter_start_asleep()'s, destroyed by waiter_join(); 0: none */
        long ret;
        struct kfd_ioctl_wait_events_args args;  /* the last call's, as copied back */
};

static void *waiter_main(void *arg)
{
        struct waiter *w = arg;

        w->args = (struct kfd_ioctl_wait_events_args){
                .events_ptr = (uintptr_t)w->events,
                .num_events = w->n,
                .wait_for_all = w->all,
                .timeout = w->timeout,
        };
        w->ret = conf_ioctl(conf_kfd(), AMDKFD_IOC_WAIT_EVENTS, &w->args);
        w->result = w->args.wait_result;
        return NULL;
}

/*
 * For a wait whose outcome is the same whether or not its call sleeps yet
 * when the test goes on (an event set before the call looks is found set
 * when it does): the pause lets it get there, so that most runs wake a
 * sleeping call.
 */
static void waiter_start(struct waiter *w)
{
        assert_int_equal(pthread_create(&w->thread, NULL, waiter_main, w), 0);
        conf_sleep_ms(100);
}

/*
 * Starts w and returns once its call waits in the kernel, for a test whose
 * DESTROY or signal must meet the wait: one that came before the call, as
 * it does after any fixed pause on a loaded host, would meet no wait at all
 * (-EINVAL for the event destroyed, a handler run before the sleep). The
 * call waits for all of w's events and a probe: an auto-reset signal event,
 * which SET leaves unsignalled only when a wait is on it (set_event,
 * kfd-interface.md §14). A SET that an immediate wait then does not find was
 * taken by w's call, which from then on waits for w's events alone: all of
 * them, or its one event (what "any" of one is).
 */
static void waiter_start_asleep(struct waiter *w)
{
        struct kfd_ioctl_create_event_args probe;
        uint32_t result;

        assert_true(w->all || w->n == 1);
        assert_true(w->n < sizeof(w->events) / sizeof(w->events[0]));
        assert_int_equal(create_event(KFD_IOC_EVENT_SIGNAL, true, &probe), 0);
        w->probe = probe.event_id;
        w->events[w->n++] = (struct kfd_event_data){ .event_id = w->probe };
        w->all = true;
        assert_int_equal(pthread_create(&w->thread, NULL, waiter_main, w), 0);
        for (int waited_ms = 0;; waited_ms += 10) {
                assert_int_equal(event_op(AMDKFD_IOC_SET_EVENT, w->probe), 0);
                assert_int_equal(wait_one(w->probe, 0, &result), 0);
                if (result == KFD_IOC_WAIT_RESULT_TIMEOUT)
                        return;
                if (waited_ms >= CONF_REPLY_TIMEOUT_MS)
                        fail_msg("the waiting thread's WAIT_EVENTS did not take its probe event within %d ms",
                                 CONF_REPLY_TIMEOUT_MS);
                conf_sleep_ms(10);
        }
}

static void waiter_join(struct waiter *w)
{
        assert_int_equal(pthread_join(w->thread, NULL), 0);
        if (w->probe)
                assert_int_equal(event_op(AMDKFD_IOC_DESTROY_EVENT, w->probe), 0);
}

/* kfd_events.h: KFD_FIRST_NONSIGNAL_EVENT_ID, the upper half of the IDR's id space */
#define FIRST_NONSIGNAL_EVENT_ID ((INT32_MAX >> 1) + 1)

static uint32_t signal_ids[2];

/* Signal events take the lowest free slot from 1 (id 0 is reserved) and
 * report the events mmap offset; other events take ids from
 * KFD_FIRST_NONSIGNAL_EVENT_ID, (INT_MAX >> 1) + 1,
 * on and get the offset 0. Without an event page of its own the
 * process gets the kernel's, mapped through /dev/kfd (at most its 32 KiB). */
static void create_signal_and_other_events(void **state)
{
        struct kfd_ioctl_create_event_args a;
        uint64_t *slots;

        for (int i = 0; i < 2; i++) {
                assert_int_equal(create_event(KFD_IOC_EVENT_SIGNAL, i == 0, &a), 0);
                assert_int_equal(a.event_id, i + 1);
                assert_int_equal(a.event_slot_index, i + 1);
                assert_int_equal(a.event_trigger_data, i + 1);
                assert_int_equal(a.event_page_offset, EVENTS_MMAP_OFFSET);
                signal_ids[i] = a.event_id;
        }
        assert_int_equal(create_event(KFD_IOC_EVENT_HW_EXCEPTION, false, &a), 0);
        assert_int_equal(a.event_id, FIRST_NONSIGNAL_EVENT_ID);
        assert_int_equal(a.event_page_offset, 0);

        slots = mmap(NULL, SIGNAL_PAGE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, conf_kfd(), (off_t)EVENTS_MMAP_OFFSET);
        assert_true(slots != MAP_FAILED);
        assert_true(slots[0] == UINT64_MAX && slots[KFD_SIGNAL_EVENT_LIMIT - 1] == UINT64_MAX);
        munmap(slots, SIGNAL_PAGE_SIZE);
        assert_true(mmap(NULL, 2 * SIGNAL_PAGE_SIZE, PROT_READ, MAP_SHARED, conf_kfd(), (off_t)EVENTS_MMAP_OFFSET) ==
                    MAP_FAILED);
        assert_int_equal(errno, EINVAL);
}

/* Only signal events can be set or reset from the CPU; unknown ids, the
 * reserved 0 among them, are -EINVAL everywhere. */
static void set_reset_destroy_checks(void **state)
{
        assert_int_equal(event_op(AMDKFD_IOC_SET_EVENT, 0), -EINVAL);
        assert_int_equal(event_op(AMDKFD_IOC_DESTROY_EVENT, 0), -EINVAL);
        assert_int_equal(event_op(AMDKFD_IOC_SET_EVENT, 77), -EINVAL);
        assert_int_equal(event_op(AMDKFD_IOC_RESET_EVENT, 77), -EINVAL);
        assert_int_equal(event_op(AMDKFD_IOC_DESTROY_EVENT, 77), -EINVAL);
        assert_int_equal(event_op(AMDKFD_IOC_SET_EVENT, FIRST_NONSIGNAL_EVENT_ID), -EINVAL);
        assert_int_equal(event_op(AMDKFD_IOC_RESET_EVENT, FIRST_NONSIGNAL_EVENT_ID), -EINVAL);
        assert_int_equal(event_op(AMDKFD_IOC_DESTROY_EVENT, FIRST_NONSIGNAL_EVENT_ID), 0);
        assert_int_equal(event_op(AMDKFD_IOC_DESTROY_EVENT, FIRST_NONSIGNAL_EVENT_ID), -EINVAL);
}

/* An immediate wait tests once. A set auto-reset event is consumed by the
 * wait that sees it; a manual one stays set until RESET. */
static void immediate_waits(void **state)
{
        uint32_t result;

        assert_int_equal(wait_one(signal_ids[0], 0, &result), 0);
        assert_int_equal(result, KFD_IOC_WAIT_RESULT_TIMEOUT);
        assert_int_equal(event_op(AMDKFD_IOC_SET_EVENT, signal_ids[0]), 0);
        assert_int_equal(wait_one(signal_ids[0], 0, &result), 0);
        assert_int_equal(result, KFD_IOC_WAIT_RESULT_COMPLETE);
        assert_int_equal(wait_one(signal_ids[0], 0, &result), 0);
        assert_int_equal(result, KFD_IOC_WAIT_RESULT_TIMEOUT);

        assert_int_equal(event_op(AMDKFD_IOC_SET_EVENT, signal_ids[1]), 0);
        for (int i = 0; i < 2; i++) {
                assert_int_equal(wait_one(signal_ids[1], 0, &result), 0);
                assert_int_equal(result, KFD_IOC_WAIT_RESULT_COMPLETE);
        }
        assert_int_equal(event_op(AMDKFD_IOC_RESET_EVENT, signal_ids[1]), 0);
        assert_int_equal(wait_one(signal_ids[1], 0, &result), 0);
        assert_int_equal(result, KFD_IOC_WAIT_RESULT_TIMEOUT);
}

/* Bad waits fail before sleeping, with wait_result FAIL: more events
 * than kcalloc can hold -ENOMEM, an unknown event -EINVAL, an unreadable
 * array -EFAULT; no events at all complete. */
static void wait_checks(void **state)
{
        struct kfd_event_data data[2] = { { .event_id = signal_ids[1] }, { .event_id = 77 } };
        uint32_t result;

        assert_int_equal(wait_events(data, UINT32_MAX, false, INFINITE, &result), -ENOMEM);
        assert_int_equal(result, KFD_IOC_WAIT_RESULT_FAIL);
        assert_int_equal(wait_events(data, 2, false, INFINITE, &result), -EINVAL);
        assert_int_equal(result, KFD_IOC_WAIT_RESULT_FAIL);
        assert_int_equal(wait_events((struct kfd_event_data *)8, 1, false, INFINITE, &result), -EFAULT);
        assert_int_equal(result, KFD_IOC_WAIT_RESULT_FAIL);
        assert_int_equal(wait_events(data, 0, true, INFINITE, &result), 0);
        assert_int_equal(result, KFD_IOC_WAIT_RESULT_COMPLETE);
}

/* A timed wait sleeps its timeout and returns TIMEOUT with 0. */
static void timed_wait_times_out(void **state)
{
        struct timespec start;
        uint32_t result;

        clock_gettime(CLOCK_MONOTONIC, &start);
        assert_int_equal(wait_one(signal_ids[1], 200, &result), 0);
        assert_int_equal(result, KFD_IOC_WAIT_RESULT_TIMEOUT);
        assert_true(seconds_since(&start) >= 0.2);
}

/* SET wakes a waiter asleep; with wait_for_all it needs every event. */
static void set_wakes_waiters(void **state)
{
        struct waiter any = { .events = { { .event_id = signal_ids[0] } }, .n = 1, .timeout = INFINITE };
        struct waiter all = {
                .events = { { .event_id = signal_ids[0] }, { .event_id = signal_ids[1] } },
                .n = 2,
                .all = true,
                .timeout = 10000,
        };

        waiter_start(&any);
        assert_int_equal(event_op(AMDKFD_IOC_SET_EVENT, signal_ids[0]), 0);
        waiter_join(&any);
        assert_int_equal(any.ret, 0);
        assert_int_equal(any.result, KFD_IOC_WAIT_RESULT_COMPLETE);

        waiter_start(&all);
        assert_int_equal(event_op(AMDKFD_IOC_SET_EVENT, signal_ids[1]), 0);
        conf_sleep_ms(100);
        assert_true(pthread_tryjoin_np(all.thread, NULL) == EBUSY);
        assert_int_equal(event_op(AMDKFD_IOC_SET_EVENT, signal_ids[0]), 0);
        waiter_join(&all);
        assert_int_equal(all.ret, 0);
        assert_int_equal(all.result, KFD_IOC_WAIT_RESULT_COMPLETE);
        assert_int_equal(event_op(AMDKFD_IOC_RESET_EVENT, signal_ids[1]), 0);
}

/* Every SET ages an event by one from 1, consumed or not: a manual-reset
 * event set and reset, and an auto-reset one set with no waiter, are at
 * age 2. A waiter that gives the event's age (last_event_age, KFD 1.12)
 * is woken at once by any age but the current one, and sleeps on the
 * current one; either way it gets the age back. */
static void event_age(void **state)
{
        struct kfd_ioctl_create_event_args manual, autoreset;
        struct kfd_event_data stale = { .signal_event_data.last_event_age = 1 };
        struct waiter w = { .n = 1, .timeout = INFINITE };
        uint32_t result;

        assert_int_equal(create_event(KFD_IOC_EVENT_SIGNAL, false, &manual), 0);
        assert_int_equal(create_event(KFD_IOC_EVENT_SIGNAL, true, &autoreset), 0);

        assert_int_equal(event_op(AMDKFD_IOC_SET_EVENT, manual.event_id), 0);
        assert_int_equal(event_op(AMDKFD_IOC_RESET_EVENT, manual.event_id), 0);
        stale.event_id = manual.event_id;
        assert_int_equal(wait_events(&stale, 1, false, 0, &result), 0);
        assert_int_equal(result, KFD_IOC_WAIT_RESULT_COMPLETE);
        assert_int_equal(stale.signal_event_data.last_event_age, 2);

        assert_int_equal(event_op(AMDKFD_IOC_SET_EVENT, autoreset.event_id), 0);
        stale = (struct kfd_event_data){ .event_id = autoreset.event_id, .signal_event_data.last_event_age = 1 };
        assert_int_equal(wait_events(&stale, 1, false, 0, &result), 0);
        assert_int_equal(result, KFD_IOC_WAIT_RESULT_COMPLETE);
        assert_int_equal(stale.signal_event_data.last_event_age, 2);

        w.events[0] = (struct kfd_event_data){ .event_id = autoreset.event_id, .signal_event_data.last_event_age = 2 };
        waiter_start(&w);
        assert_true(pthread_tryjoin_np(w.thread, NULL) == EBUSY);
        assert_int_equal(event_op(AMDKFD_IOC_SET_EVENT, autoreset.event_id), 0);
        waiter_join(&w);
        assert_int_equal(w.ret, 0);
        assert_int_equal(w.result, KFD_IOC_WAIT_RESULT_COMPLETE);
        assert_int_equal(w.events[0].signal_event_data.last_event_age, 3);

        assert_int_equal(event_op(AMDKFD_IOC_DESTROY_EVENT, manual.event_id), 0);
        assert_int_equal(event_op(AMDKFD_IOC_DESTROY_EVENT, autoreset.event_id), 0);
}

static void on_sigusr1(int sig)
{
        (void)sig;
}

/* A signal ends the sleep: -ERESTARTSYS, EINTR for a handler without
 * SA_RESTART, the remaining time written back into the timeout. A finite
 * timeout counts from at most 0x7FFFFFFF ms. */
static void signal_interrupts_a_wait(void **state)
{
        struct sigaction sa = { .sa_handler = on_sigusr1 };
        struct waiter w = { .events = { { .event_id = signal_ids[1] } }, .n = 1, .timeout = 10000 };
        struct waiter longest = { .events = { { .event_id = signal_ids[1] } }, .n = 1, .timeout = INFINITE - 1 };

        assert_int_equal(sigaction(SIGUSR1, &sa, NULL), 0);
        waiter_start_asleep(&w);
        assert_int_equal(pthread_kill(w.thread, SIGUSR1), 0);
        waiter_join(&w);
        assert_int_equal(w.ret, -EINTR);
        assert_int_equal(w.result, KFD_IOC_WAIT_RESULT_FAIL);
        assert_true(w.args.timeout < 10000 && w.args.timeout > 5000);

        waiter_start_asleep(&longest);
        assert_int_equal(pthread_kill(longest.thread, SIGUSR1), 0);
        waiter_join(&longest);
        assert_int_equal(longest.ret, -EINTR);
        assert_true(longest.args.timeout <= 0x7fffffffu && longest.args.timeout > 0x7fffffffu - 5000);
}

/* An interrupted wait gives back the auto-reset event it had consumed:
 * setting it again wakes the event's other waiters. Here the first wait
 * consumed the set event but sleeps on a second one (wait_for_all); the
 * second wait, on the first event only, completes when the first is
 * interrupted. */
static void interrupted_wait_wakes_others(void **state)
{
        struct kfd_ioctl_create_event_args consumed, never_set;
        struct waiter holder = { .n = 2, .all = true, .timeout = INFINITE };
        struct waiter other = { .n = 1, .timeout = 10000 };

        assert_int_equal(create_event(KFD_IOC_EVENT_SIGNAL, true, &consumed), 0);
        assert_int_equal(create_event(KFD_IOC_EVENT_SIGNAL, true, &never_set), 0);
        assert_int_equal(event_op(AMDKFD_IOC_SET_EVENT, consumed.event_id), 0);
        holder.events[0].event_id = consumed.event_id;
        holder.events[1].event_id = never_set.event_id;
        other.events[0].event_id = consumed.event_id;

        waiter_start_asleep(&holder);
        waiter_start_asleep(&other);
        assert_true(pthread_tryjoin_np(other.thread, NULL) == EBUSY);
        assert_int_equal(pthread_kill(holder.thread, SIGUSR1), 0);
        waiter_join(&holder);
        assert_int_equal(holder.ret, -EINTR);
        waiter_join(&other);
        assert_int_equal(other.ret, 0);
        assert_int_equal(other.result, KFD_IOC_WAIT_RESULT_COMPLETE);

        assert_int_equal(event_op(AMDKFD_IOC_DESTROY_EVENT, consumed.event_id), 0);
        assert_int_equal(event_op(AMDKFD_IOC_DESTROY_EVENT, never_set.event_id), 0);
}

/* DESTROY of an event a waiter sleeps on: the wait fails with -EIO. */
static void destroy_wakes_with_eio(void **state)
{
        struct waiter w = { .events = { { .event_id = signal_ids[1] } }, .n = 1, .timeout = INFINITE };

        waiter_start_asleep(&w);
        assert_int_equal(event_op(AMDKFD_IOC_DESTROY_EVENT, signal_ids[1]), 0);
        waiter_join(&w);
        assert_int_equal(w.ret, -EIO);
        assert_int_equal(w.result, KFD_IOC_WAIT_RESULT_FAIL);
}

static long alloc_gtt(int kfd, uint32_t gpu_id, uint64_t size, uint32_t flags, uint64_t user_addr, uint64_t *ret)
{
        struct kfd_ioctl_alloc_memory_of_gpu_args a = {
                .va_addr = 1ull << 41, .size = size, .gpu_id = gpu_id, .flags = flags, .mmap_offset = user_addr,
        };
        long r = conf_ioctl(kfd, AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, &a);

        *ret = a.handle;
        return r;
}

/* The event page the thunk allocates itself, in a process of its own (a
 * process has one page): given by handle with the first CREATE_EVENT. An
 * unknown handle, a userptr BO or one smaller than the 4096 slots is
 * -EINVAL and leaves event_page_offset as it came; a CREATE_EVENT that
 * gets past the page sets it to 0 even for an event that is not a signal
 * one. A second page is -EINVAL, and the page's BO cannot be freed
 * (-EPERM). Each check is one bit of the child's exit status. */
static int event_page_child(void)
{
        static uint8_t user_buffer[SIGNAL_PAGE_SIZE] __attribute__((aligned(4096)));
        int kfd = conf_open_kfd(), failed = 0;
        uint32_t gpus[2];
        uint64_t small, userptr, page, other;
        struct kfd_ioctl_create_event_args a = { .event_type = KFD_IOC_EVENT_SIGNAL };
        struct kfd_ioctl_free_memory_of_gpu_args f;

        if (kfd < 0 || conf_gpu_ids(gpus, 2) < 1 || conf_acquire_vms(kfd) < 0 ||
            alloc_gtt(kfd, gpus[0], 4096, KFD_IOC_ALLOC_MEM_FLAGS_GTT, 0, &small) < 0 ||
            alloc_gtt(kfd, gpus[0], sizeof(user_buffer), KFD_IOC_ALLOC_MEM_FLAGS_USERPTR, (uintptr_t)user_buffer,
                      &userptr) < 0 ||
            alloc_gtt(kfd, gpus[0], SIGNAL_PAGE_SIZE, KFD_IOC_ALLOC_MEM_FLAGS_GTT, 0, &page) < 0 ||
            alloc_gtt(kfd, gpus[0], SIGNAL_PAGE_SIZE, KFD_IOC_ALLOC_MEM_FLAGS_GTT, 0, &other) < 0)
                return 1;
        a.event_page_offset = page + 100;
        failed |= (conf_ioctl(kfd, AMDKFD_IOC_CREATE_EVENT, &a) != -EINVAL || a.event_page_offset != page + 100) << 1;
        a.event_page_offset = userptr;
        failed |= (conf_ioctl(kfd, AMDKFD_IOC_CREATE_EVENT, &a) != -EINVAL) << 2;
        a.event_page_offset = small;
        failed |= (conf_ioctl(kfd, AMDKFD_IOC_CREATE_EVENT, &a) != -EINVAL) << 3;
        a.event_type = KFD_IOC_EVENT_HW_EXCEPTION;
        a.event_page_offset = page;
        failed |= (conf_ioctl(kfd, AMDKFD_IOC_CREATE_EVENT, &a) != 0 || a.event_page_offset != 0) << 4;
        a.event_type = KFD_IOC_EVENT_SIGNAL;
        failed |= (conf_ioctl(kfd, AMDKFD_IOC_CREATE_EVENT, &a) != 0 || a.event_id != 1) << 8;
        a.event_page_offset = other;
        failed |= (conf_ioctl(kfd, AMDKFD_IOC_CREATE_EVENT, &a) != -EINVAL || a.event_page_offset != other) << 5;
        f.handle = page;
        failed |= (conf_ioctl(kfd, AMDKFD_IOC_FREE_MEMORY_OF_GPU, &f) != -EPERM) << 6;
        f.handle = other;
        failed |= (conf_ioctl(kfd, AMDKFD_IOC_FREE_MEMORY_OF_GPU, &f) != 0) << 7;
        return failed;
}


/* The kernel's own page, until user mode maps it, has the 256 slots the
 * oldest user mode expects: with the reserved id 0, 255 signal events and
 * then -ENOSPC (event_page_offset 0 even so). Once the whole page is
 * mapped, its 4096 slots are there. In a process of its own. */
static int kernel_page_child(void)
{
        int kfd = conf_open_kfd(), failed = 0;
        struct kfd_ioctl_create_event_args a = { .event_type = KFD_IOC_EVENT_SIGNAL };
        void *slots;

        if (kfd < 0)
                return 1;
        for (uint32_t id = 1; id < 256; id++) {
                a.event_page_offset = 0;
                if (conf_ioctl(kfd, AMDKFD_IOC_CREATE_EVENT, &a) != 0 || a.event_id != id)
                        return 2;
        }
        a.event_page_offset = 0;
        failed |= (conf_ioctl(kfd, AMDKFD_IOC_CREATE_EVENT, &a) != -ENOSPC || a.event_page_offset != 0) << 2;
        slots = mmap(NULL, SIGNAL_PAGE_SIZE, PROT_READ, MAP_SHARED, kfd, (off_t)EVENTS_MMAP_OFFSET);
        failed |= (slots == MAP_FAILED) << 3;
        failed |= (conf_ioctl(kfd, AMDKFD_IOC_CREATE_EVENT, &a) != 0 || a.event_id != 256) << 4;
        return failed;
}

/* Runs `child_main` in a child process that must exit 0. */
static void run_child(int (*child_main)(void))
{
        int status;
        pid_t child = fork();

        assert_true(child >= 0);
        if (child == 0)
                _exit(child_main());
        assert_int_equal(waitpid(child, &status, 0), child);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
}

static void kernel_page_slots(void **state)
{
        run_child(kernel_page_child);
}

static void event_page_by_handle(void **state)
{
        run_child(event_page_child);
}

/* A process killed while it waits: its kfd_process goes as usual (the
 * sleeping call goes with its thread). */
static void killed_while_waiting(void **state)
{
        int status;
        pid_t child = fork();

        assert_true(child >= 0);
        if (child == 0) {
                int kfd = conf_open_kfd();
                struct kfd_ioctl_create_event_args a = { .event_type = KFD_IOC_EVENT_SIGNAL };
                struct kfd_event_data data = { 0 };
                struct kfd_ioctl_wait_events_args w = {
                        .events_ptr = (uintptr_t)&data, .num_events = 1, .timeout = INFINITE,
                };

                if (kfd < 0 || conf_ioctl(kfd, AMDKFD_IOC_CREATE_EVENT, &a) < 0)
                        _exit(1);
                data.event_id = a.event_id;
                conf_ioctl(kfd, AMDKFD_IOC_WAIT_EVENTS, &w);
                _exit(2);
        }
        conf_sleep_ms(200);
        assert_int_equal(kill(child, SIGKILL), 0);
        assert_int_equal(waitpid(child, &status, 0), child);
        assert_true(WIFSIGNALED(status));
        assert_int_equal(conf_wait_kfd_process_gone(child), 0);
}

int main(int argc, char **argv)
{
        conf_init(argc, argv);
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(create_signal_and_other_events),
                cmocka_unit_test(set_reset_destroy_checks),
                cmocka_unit_test(immediate_waits),
                cmocka_unit_test(wait_checks),
                cmocka_unit_test(timed_wait_times_out),
                cmocka_unit_test(set_wakes_waiters),
                cmocka_unit_test(event_age),
                cmocka_unit_test(signal_interrupts_a_wait),
                cmocka_unit_test(interrupted_wait_wakes_others),
                cmocka_unit_test(destroy_wakes_with_eio),
                cmocka_unit_test(event_page_by_handle),
                cmocka_unit_test(kernel_page_slots),
                cmocka_unit_test(killed_while_waiting),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
