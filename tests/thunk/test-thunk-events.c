/* SPDX-License-Identifier: MIT */
/*
 * Debian's ROCt thunk (libhsakmt 5.2.3) creates, sets, waits on and
 * destroys HSA signal events on the emulated node: on a dGPU it allocates
 * the event page itself and passes its BO handle with the first
 * CREATE_EVENT (events.c; kfd-interface.md §14). Runs on the MI210 node of
 * tests/kfdemu/configs/mi210.conf.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <cmocka.h>
#include <hsakmt.h>

#define GPU_NODE 1

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

static HsaEvent *create_signal_event(bool manual_reset, bool signaled)
{
        HsaEventDescriptor desc = { .EventType = HSA_EVENTTYPE_SIGNAL, .NodeId = GPU_NODE };
        HsaEvent *event = NULL;

        assert_int_equal(hsaKmtCreateEvent(&desc, manual_reset, signaled, &event), HSAKMT_STATUS_SUCCESS);
        assert_non_null(event);
        return event;
}

/* Created signalled or not, set, consumed by a wait (auto-reset), reset. */
static void set_and_wait(void **state)
{
        HsaEvent *event = create_signal_event(false, true);

        assert_int_equal(hsaKmtWaitOnEvent(event, 0), HSAKMT_STATUS_SUCCESS);
        assert_int_equal(hsaKmtWaitOnEvent(event, 0), HSAKMT_STATUS_WAIT_TIMEOUT);
        assert_int_equal(hsaKmtSetEvent(event), HSAKMT_STATUS_SUCCESS);
        assert_int_equal(hsaKmtWaitOnEvent(event, 10), HSAKMT_STATUS_SUCCESS);
        assert_int_equal(hsaKmtWaitOnEvent(event, 50), HSAKMT_STATUS_WAIT_TIMEOUT);
        assert_int_equal(hsaKmtDestroyEvent(event), HSAKMT_STATUS_SUCCESS);

        event = create_signal_event(true, false);
        assert_int_equal(hsaKmtSetEvent(event), HSAKMT_STATUS_SUCCESS);
        assert_int_equal(hsaKmtWaitOnEvent(event, 0), HSAKMT_STATUS_SUCCESS);
        assert_int_equal(hsaKmtWaitOnEvent(event, 0), HSAKMT_STATUS_SUCCESS);
        assert_int_equal(hsaKmtResetEvent(event), HSAKMT_STATUS_SUCCESS);
        assert_int_equal(hsaKmtWaitOnEvent(event, 0), HSAKMT_STATUS_WAIT_TIMEOUT);
        assert_int_equal(hsaKmtDestroyEvent(event), HSAKMT_STATUS_SUCCESS);
}

static void *set_later(void *arg)
{
        struct timespec delay = { .tv_nsec = 100 * 1000 * 1000 };

        nanosleep(&delay, NULL);
        hsaKmtSetEvent(arg);
        return NULL;
}

/* A wait asleep in the kernel is woken by another thread's set. */
static void set_wakes_a_waiter(void **state)
{
        HsaEvent *events[2] = { create_signal_event(false, false), create_signal_event(false, false) };
        pthread_t setter;

        assert_int_equal(pthread_create(&setter, NULL, set_later, events[1]), 0);
        assert_int_equal(hsaKmtWaitOnMultipleEvents(events, 2, false, 10000), HSAKMT_STATUS_SUCCESS);
        assert_int_equal(pthread_join(setter, NULL), 0);
        for (int i = 0; i < 2; i++)
                assert_int_equal(hsaKmtDestroyEvent(events[i]), HSAKMT_STATUS_SUCCESS);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(set_and_wait),
                cmocka_unit_test(set_wakes_a_waiter),
        };
        return cmocka_run_group_tests(tests, open_node, close_node);
}
