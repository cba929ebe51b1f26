/* SPDX-License-Identifier: MIT */
/*
 * The debug event channel and QUERY_DEBUG_EVENT: kfd_debug.c:
 * kfd_dbg_ev_raise, kfd_dbg_ev_query_debug_event,
 * kfd_dbg_set_enabled_debug_exception_mask — kfd-interface.md §5.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cmocka.h>

#include "cleanup.h"
#include "conf-helpers.h"

#define NEW_MASK KFD_EC_MASK(EC_QUEUE_NEW)
#define DELETE_MASK KFD_EC_MASK(EC_DEVICE_QUEUE_DELETE)
#define RUNTIME_MASK KFD_EC_MASK(EC_PROCESS_RUNTIME)

struct event {
        long r;
        uint64_t mask;
        uint32_t gpu_id, queue_id;
};

static struct event query(pid_t pid, uint64_t clear)
{
        struct event e = { .gpu_id = 0xdead, .queue_id = 0xdead };
        e.r = conf_dbg_query_event(conf_kfd(), pid, clear, &e.mask, &e.gpu_id, &e.queue_id);
        return e;
}

static void expect_queue_event(pid_t pid, uint64_t clear, const struct conf_queue *q, uint64_t status)
{
        struct event e = query(pid, clear);
        assert_int_equal(e.r, 0);
        assert_int_equal(e.mask, status);
        assert_int_equal(e.queue_id, q->id);
        assert_int_equal(e.gpu_id, q->gpu_id);
}

/* kfd_dbg_ev_raise: one '.' per raise whose bits intersect the
 * subscription, written in the raising context (the CREATE_QUEUE ioctl), so
 * it is in the FIFO by the time the target's ioctl returns. */
static void one_byte_per_raise(void **state)
{
        struct conf_session *s = *state;
        struct conf_queue q;
        for (int i = 0; i < 3; i++)
                assert_int_equal(conf_target_create_queue(&s->target, s->gpu_ids[i % s->n_gpus], &q), 0);
        assert_int_equal(conf_event_wait(s->fifo, 0), 3);
}

/* An unsubscribed raise writes nothing (the status still accumulates). */
static void unsubscribed_raise_writes_nothing(void **state)
{
        struct conf_session *s = *state;
        assert_int_equal(conf_session_attach(s, RUNTIME_MASK), 0);
        struct conf_queue q;
        assert_int_equal(conf_target_create_queue(&s->target, s->gpu_ids[0], &q), 0);
        assert_int_equal(conf_event_wait(s->fifo, 0), 0);
        assert_int_equal(query(s->target.pid, 0).r, -EAGAIN);
}

/* §5: an eventfd is accepted by ENABLE, but the kernel's 1-byte write fails
 * (EINVAL, ignored), so it never becomes readable; the event is still
 * queryable. */
static void eventfd_gets_no_wakeup(void **state)
{
        struct conf_session *s = *state;
        _cleanup_close_ int efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        assert_true(efd >= 0);
        assert_int_equal(conf_seize(s->target.pid), 0);
        s->target.traced = true;
        assert_int_equal(conf_dbg_enable(conf_kfd(), s->target.pid, NEW_MASK, efd, NULL), 0);
        s->enabled = true;
        struct conf_queue q;
        assert_int_equal(conf_target_create_queue(&s->target, s->gpu_ids[0], &q), 0);
        uint64_t count;
        assert_int_equal(read(efd, &count, sizeof(count)), -1);
        assert_int_equal(errno, EAGAIN);
        expect_queue_event(s->target.pid, NEW_MASK, &q, NEW_MASK);
}

/* kfd_dbg_ev_query_debug_event: queues (newest first), then devices, then
 * the process; each source comes back with its whole status and is cleared
 * with the given mask; -EAGAIN when nothing subscribed is pending. Statuses
 * are sticky: the runtime ack does not clear EC_PROCESS_RUNTIME. */
static void query_order_is_queues_devices_process(void **state)
{
        struct conf_session *s = *state;
        assert_int_equal(conf_session_spawn(s, false), 0);
        assert_int_equal(conf_session_attach(s, CONF_SUBSCRIPTION), 0);
        pid_t pid = s->target.pid;
        assert_int_equal(conf_target_send(&s->target, "runtime-enable"), 0);
        assert_int_equal(conf_event_wait(s->fifo, CONF_REPLY_TIMEOUT_MS), 1);
        assert_int_equal(conf_dbg_send_runtime_event(conf_kfd(), pid, RUNTIME_MASK, 0, 0), 0);
        char line[64];
        assert_int_equal(conf_target_reply(&s->target, line, sizeof(line), CONF_REPLY_TIMEOUT_MS), 0);
        assert_int_equal(conf_parse_result(line), 0);

        uint32_t gpu_a = s->gpu_ids[0], gpu_b = s->gpu_ids[s->n_gpus - 1];
        struct conf_queue older, newer, gone;
        assert_int_equal(conf_target_create_queue(&s->target, gpu_a, &older), 0);
        assert_int_equal(conf_target_create_queue(&s->target, gpu_b, &newer), 0);
        assert_int_equal(conf_target_create_queue(&s->target, gpu_a, &gone), 0);
        assert_int_equal(conf_target_call(&s->target, "destroy %u", gone.id), 0);

        expect_queue_event(pid, UINT64_MAX, &newer, NEW_MASK);
        expect_queue_event(pid, UINT64_MAX, &older, NEW_MASK);
        struct event e = query(pid, UINT64_MAX);
        assert_int_equal(e.r, 0);
        assert_int_equal(e.mask, DELETE_MASK);
        assert_int_equal(e.gpu_id, gpu_a);
        e = query(pid, UINT64_MAX);
        assert_int_equal(e.r, 0);
        assert_int_equal(e.mask, RUNTIME_MASK);
        assert_int_equal(e.gpu_id, 0);
        assert_int_equal(e.queue_id, 0);
        assert_int_equal(query(pid, UINT64_MAX).r, -EAGAIN);
}

/* Only the returned source is cleared, and only with the given mask: with
 * no (or an unrelated) clear mask the same source comes back forever. */
static void query_clears_only_with_mask(void **state)
{
        struct conf_session *s = *state;
        pid_t pid = s->target.pid;
        struct conf_queue a, b;
        assert_int_equal(conf_target_create_queue(&s->target, s->gpu_ids[0], &a), 0);
        assert_int_equal(conf_target_create_queue(&s->target, s->gpu_ids[0], &b), 0);
        expect_queue_event(pid, 0, &b, NEW_MASK);
        expect_queue_event(pid, 0, &b, NEW_MASK);
        expect_queue_event(pid, DELETE_MASK | RUNTIME_MASK, &b, NEW_MASK);
        expect_queue_event(pid, NEW_MASK, &b, NEW_MASK);
        expect_queue_event(pid, NEW_MASK, &a, NEW_MASK);
        assert_int_equal(query(pid, NEW_MASK).r, -EAGAIN);
}

/* kfd_dbg_set_enabled_debug_exception_mask: the mask is replaced (no OR),
 * and one byte is written at once if something pending matches the new
 * mask. ENABLE itself does not notify for pending statuses. */
static void set_exceptions_enabled_notifies_pending(void **state)
{
        struct conf_session *s = *state;
        struct conf_queue q;
        assert_int_equal(conf_target_create_queue(&s->target, s->gpu_ids[0], &q), 0);
        assert_int_equal(conf_session_attach(s, RUNTIME_MASK), 0);
        pid_t pid = s->target.pid;
        assert_int_equal(conf_event_wait(s->fifo, 0), 0);
        assert_int_equal(query(pid, 0).r, -EAGAIN);

        assert_int_equal(conf_dbg_set_exceptions_enabled(conf_kfd(), pid, NEW_MASK), 0);
        assert_int_equal(conf_event_wait(s->fifo, 0), 1);
        expect_queue_event(pid, 0, &q, NEW_MASK);

        assert_int_equal(conf_dbg_set_exceptions_enabled(conf_kfd(), pid, DELETE_MASK), 0);
        assert_int_equal(conf_event_wait(s->fifo, 0), 0);
        assert_int_equal(query(pid, 0).r, -EAGAIN);
}

/* ENABLE with queues that already carry NEW: no byte, but the queue is
 * there to query (§5: ENABLE does not notify for already-pending statuses). */
static void enable_does_not_notify_pending(void **state)
{
        struct conf_session *s = *state;
        struct conf_queue q;
        assert_int_equal(conf_target_create_queue(&s->target, s->gpu_ids[0], &q), 0);
        assert_int_equal(conf_session_attach(s, NEW_MASK), 0);
        assert_int_equal(conf_event_wait(s->fifo, 0), 0);
        expect_queue_event(s->target.pid, NEW_MASK, &q, NEW_MASK);
}

/* §5: kfd_dbg_trap_enable holds its own reference to the caller's file, so
 * closing the fd number that was passed does not stop the bytes. */
static void event_file_outlives_the_fd_number(void **state)
{
        struct conf_session *s = *state;
        assert_int_equal(conf_seize(s->target.pid), 0);
        s->target.traced = true;
        s->fifo = conf_event_fifo();
        int passed = dup(s->fifo);
        assert_true(passed >= 0);
        assert_int_equal(conf_dbg_enable(conf_kfd(), s->target.pid, NEW_MASK, passed, NULL), 0);
        s->enabled = true;
        close(passed);
        struct conf_queue q;
        assert_int_equal(conf_target_create_queue(&s->target, s->gpu_ids[0], &q), 0);
        assert_int_equal(conf_event_wait(s->fifo, 0), 1);
}

/* §5: kfd_dbg_ev_raise does kernel_write(file, ".", 1, &pos) with pos 0:
 * into a regular file the byte lands at offset 0, and the file's own
 * position does not move. */
static void regular_file_gets_the_byte_at_offset_0(void **state)
{
        struct conf_session *s = *state;
        char path[] = "/tmp/conf-events-XXXXXX";
        int fd = mkostemp(path, O_CLOEXEC);
        assert_true(fd >= 0);
        unlink(path);
        assert_int_equal(write(fd, "xyz", 3), 3);
        assert_int_equal(lseek(fd, 1, SEEK_SET), 1);
        assert_int_equal(conf_seize(s->target.pid), 0);
        s->target.traced = true;
        assert_int_equal(conf_dbg_enable(conf_kfd(), s->target.pid, NEW_MASK, fd, NULL), 0);
        s->enabled = true;
        struct conf_queue q;
        assert_int_equal(conf_target_create_queue(&s->target, s->gpu_ids[0], &q), 0);
        char buf[8] = { 0 };
        assert_int_equal(pread(fd, buf, sizeof(buf), 0), 3);
        assert_string_equal(buf, ".yz");
        assert_int_equal(lseek(fd, 0, SEEK_CUR), 1);
        close(fd);
}

/* Fills a pipe or FIFO until the next write would block. */
static void fill(int fd)
{
        int flags = fcntl(fd, F_GETFL);
        fcntl(fd, F_SETFL, flags | O_NONBLOCK);
        char buf[4096];
        memset(buf, 'x', sizeof(buf));
        while (write(fd, buf, sizeof(buf)) > 0)
                ;
        while (write(fd, buf, 1) > 0)
                ;
        fcntl(fd, F_SETFL, flags);
}

/* §5: with the O_NONBLOCK FIFO full, the raise's write fails silently and
 * the raiser (the target's CREATE_QUEUE) does not wait; the event is still
 * there to query. */
static void full_fifo_drops_bytes_without_blocking(void **state)
{
        struct conf_session *s = *state;
        fill(s->fifo);
        struct conf_queue q;
        assert_int_equal(conf_target_create_queue(&s->target, s->gpu_ids[0], &q), 0);
        expect_queue_event(s->target.pid, NEW_MASK, &q, NEW_MASK);
}

/* Drains the pipe `delay_ms` after it starts, raising `drained` first:
 * whatever returns after it was blocked behind the raiser's write. */
struct drainer {
        pthread_t thread;
        int fd;
        int delay_ms;
        atomic_bool drained;
};

static void *drain_later(void *arg)
{
        struct drainer *d = arg;
        char buf[65536];
        conf_sleep_ms(d->delay_ms);
        atomic_store(&d->drained, true);
        while (read(d->fd, buf, sizeof(buf)) == sizeof(buf))
                ;
        return NULL;
}

static void drain_start(struct drainer *d, int fd)
{
        *d = (struct drainer){ .fd = fd, .delay_ms = 2 * CONF_BLOCKED_MS };
        assert_int_equal(pthread_create(&d->thread, NULL, drain_later, d), 0);
}

/* A blocking pipe, full, as the debug event file of the target. */
static int attach_with_full_blocking_pipe(struct conf_session *s, uint64_t mask)
{
        int p[2];
        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        assert_int_equal(conf_seize(s->target.pid), 0);
        s->target.traced = true;
        assert_int_equal(conf_dbg_enable(conf_kfd(), s->target.pid, mask, p[1], NULL), 0);
        s->enabled = true;
        fill(p[1]);
        close(p[1]);
        return p[0];
}

/* §5: with a *blocking* pipe, a full pipe blocks the raiser — here the
 * target's CREATE_QUEUE, which raises EC_QUEUE_NEW after dropping p->mutex
 * but under event_mutex (kfd_dbg_ev_raise: kernel_write under
 * target->event_mutex) — until the debugger reads. Callers that need
 * neither lock are served meanwhile; QUERY_DEBUG_EVENT, which takes
 * event_mutex, waits until the byte is written. */
static void full_blocking_pipe_blocks_the_raiser(void **state)
{
        struct conf_session *s = *state;
        _cleanup_close_ int rd = attach_with_full_blocking_pipe(s, NEW_MASK);
        assert_int_equal(conf_target_send(&s->target, "create %u", s->gpu_ids[0]), 0);
        assert_true(conf_target_still_blocked(&s->target));
        struct kfd_ioctl_get_version_args v;
        assert_int_equal(conf_ioctl(conf_kfd(), AMDKFD_IOC_GET_VERSION, &v), 0);

        struct drainer d;
        drain_start(&d, rd);
        uint64_t status = 0;
        assert_int_equal(conf_dbg_query_event(conf_kfd(), s->target.pid, 0, &status, NULL, NULL), 0);
        if (!atomic_load(&d.drained))
                fail_msg("QUERY_DEBUG_EVENT returned while the raiser held event_mutex");
        assert_int_equal(status & NEW_MASK, NEW_MASK);
        assert_int_equal(pthread_join(d.thread, NULL), 0);
        char line[256];
        assert_int_equal(conf_target_reply(&s->target, line, sizeof(line), CONF_REPLY_TIMEOUT_MS), 0);
        assert_int_equal(strncmp(line, "queue ", 6), 0);
}

/* §5, §3 step 6: pqm_destroy_queue raises EC_DEVICE_QUEUE_DELETE under
 * p->mutex, so while its write blocks, every DBG_TRAP op on the target
 * (target->mutex) waits too — even one that needs no event_mutex. */
static void blocked_destroy_raiser_holds_the_target_mutex(void **state)
{
        struct conf_session *s = *state;
        struct conf_queue q;
        assert_int_equal(conf_target_create_queue(&s->target, s->gpu_ids[0], &q), 0);
        _cleanup_close_ int rd = attach_with_full_blocking_pipe(s, KFD_EC_MASK(EC_DEVICE_QUEUE_DELETE));
        assert_int_equal(conf_target_send(&s->target, "destroy %u", q.id), 0);
        assert_true(conf_target_still_blocked(&s->target));

        struct drainer d;
        drain_start(&d, rd);
        struct kfd_ioctl_dbg_trap_args a = { .send_runtime_event = { .exception_mask = 0 } };
        assert_int_equal(conf_dbg_trap(conf_kfd(), s->target.pid, KFD_IOC_DBG_TRAP_SEND_RUNTIME_EVENT, &a), 0);
        if (!atomic_load(&d.drained))
                fail_msg("a DBG_TRAP op returned while the raiser held the target's mutex");
        assert_int_equal(pthread_join(d.thread, NULL), 0);
        assert_int_equal(conf_target_reply(&s->target, (char[256]){ 0 }, 256, CONF_REPLY_TIMEOUT_MS), 0);
}

/* kfd_dbg_trap_query_exception_info, queue codes: source_id is the queue
 * id, no payload (info_size 0), clear_exception clears that one bit;
 * -ENODATA once it is clear, -EINVAL for a queue the process lacks. */
static void query_exception_info_for_a_queue(void **state)
{
        struct conf_session *s = *state;
        pid_t pid = s->target.pid;
        struct conf_queue q;
        assert_int_equal(conf_target_create_queue(&s->target, s->gpu_ids[0], &q), 0);
        uint64_t payload = 0;
        struct kfd_ioctl_dbg_trap_args a = {
                .query_exception_info = {
                        .info_ptr = (uintptr_t)&payload,
                        .info_size = sizeof(payload),
                        .source_id = q.id,
                        .exception_code = EC_QUEUE_NEW,
                        .clear_exception = 1,
                },
        };
        struct kfd_ioctl_dbg_trap_args b = a;
        assert_int_equal(conf_dbg_trap(conf_kfd(), pid, KFD_IOC_DBG_TRAP_QUERY_EXCEPTION_INFO, &a), 0);
        assert_int_equal(a.query_exception_info.info_size, 0);
        a = b;
        assert_int_equal(conf_dbg_trap(conf_kfd(), pid, KFD_IOC_DBG_TRAP_QUERY_EXCEPTION_INFO, &a), -ENODATA);
        a = b;
        a.query_exception_info.source_id = 999;
        assert_int_equal(conf_dbg_trap(conf_kfd(), pid, KFD_IOC_DBG_TRAP_QUERY_EXCEPTION_INFO, &a), -EINVAL);
        assert_int_equal(query(pid, 0).r, -EAGAIN);
}

int main(int argc, char **argv)
{
        conf_init(argc, argv);
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(one_byte_per_raise, conf_fixture_attached, conf_fixture_end),
                cmocka_unit_test_setup_teardown(unsubscribed_raise_writes_nothing, conf_fixture_spawned, conf_fixture_end),
                cmocka_unit_test_setup_teardown(eventfd_gets_no_wakeup, conf_fixture_spawned, conf_fixture_end),
                cmocka_unit_test_setup_teardown(query_order_is_queues_devices_process, conf_fixture_empty,
                                                conf_fixture_end),
                cmocka_unit_test_setup_teardown(query_clears_only_with_mask, conf_fixture_attached, conf_fixture_end),
                cmocka_unit_test_setup_teardown(set_exceptions_enabled_notifies_pending, conf_fixture_spawned,
                                                conf_fixture_end),
                cmocka_unit_test_setup_teardown(event_file_outlives_the_fd_number, conf_fixture_spawned,
                                                conf_fixture_end),
                cmocka_unit_test_setup_teardown(regular_file_gets_the_byte_at_offset_0, conf_fixture_spawned,
                                                conf_fixture_end),
                cmocka_unit_test_setup_teardown(full_fifo_drops_bytes_without_blocking, conf_fixture_attached,
                                                conf_fixture_end),
                cmocka_unit_test_setup_teardown(full_blocking_pipe_blocks_the_raiser, conf_fixture_spawned,
                                                conf_fixture_end),
                cmocka_unit_test_setup_teardown(blocked_destroy_raiser_holds_the_target_mutex, conf_fixture_spawned,
                                                conf_fixture_end),
                cmocka_unit_test_setup_teardown(query_exception_info_for_a_queue, conf_fixture_attached, conf_fixture_end),
                cmocka_unit_test_setup_teardown(enable_does_not_notify_pending, conf_fixture_spawned, conf_fixture_end),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
