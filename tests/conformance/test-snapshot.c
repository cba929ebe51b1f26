/* SPDX-License-Identifier: MIT */
/*
 * GET_QUEUE_SNAPSHOT (kfd_process_queue_manager.c: pqm_get_queue_snapshot,
 * set_queue_snapshot_entry) and GET_DEVICE_SNAPSHOT (kfd_debug.c:
 * kfd_dbg_trap_device_snapshot) — kfd-interface.md §7.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cleanup.h"
#include "conf-helpers.h"

#define NEW_MASK KFD_EC_MASK(EC_QUEUE_NEW)
#define ENTRY_SIZE ((uint32_t)sizeof(struct kfd_queue_snapshot_entry))
#define FILL 0xa5

/* Three queues, created oldest first: q[0] and q[2] on the first GPU, q[1]
 * on the last one. */
static void create_three(struct conf_session *s, struct conf_queue q[3])
{
        for (int i = 0; i < 3; i++)
                assert_int_equal(conf_target_create_queue(&s->target, s->gpu_ids[i == 1 ? s->n_gpus - 1 : 0], &q[i]), 0);
}

static void expect_entry(const struct kfd_queue_snapshot_entry *e, const struct conf_queue *q, bool is_new)
{
        assert_int_equal(e->queue_id, q->id);
        assert_int_equal(e->gpu_id, q->gpu_id);
        assert_int_equal(e->ring_base_address, q->ring);
        assert_int_equal(e->write_pointer_address, q->wptr);
        assert_int_equal(e->read_pointer_address, q->rptr);
        assert_int_equal(e->ctx_save_restore_address, q->ctx_save);
        assert_int_equal(e->ring_size, q->ring_size);
        assert_int_equal(e->ctx_save_restore_area_size, q->ctx_save_size);
        assert_int_equal(e->queue_type, q->type);
        assert_int_equal(!!(e->exception_status & NEW_MASK), is_new);
}

static void full_snapshot(pid_t pid, uint64_t clear, struct kfd_queue_snapshot_entry *e, uint32_t capacity,
                          uint32_t expect_total)
{
        uint32_t num = capacity, entry_size = ENTRY_SIZE;
        assert_int_equal(conf_dbg_queue_snapshot(conf_kfd(), pid, clear, e, &num, &entry_size), 0);
        assert_int_equal(num, expect_total);
        assert_int_equal(entry_size, ENTRY_SIZE);
}

/* Capacity 0 (NULL buffer allowed) returns the total and clears nothing;
 * the second call copies entries newest first with the addresses exactly as
 * the target passed them to CREATE_QUEUE and the ioctl queue_type. */
static void two_call_protocol(void **state)
{
        struct conf_session *s = *state;
        struct conf_queue q[3];
        create_three(s, q);
        uint32_t num = 0, entry_size = ENTRY_SIZE;
        assert_int_equal(conf_dbg_queue_snapshot(conf_kfd(), s->target.pid, NEW_MASK, NULL, &num, &entry_size), 0);
        assert_int_equal(num, 3);
        assert_int_equal(entry_size, ENTRY_SIZE);

        struct kfd_queue_snapshot_entry e[3];
        full_snapshot(s->target.pid, 0, e, 3, 3);
        for (int i = 0; i < 3; i++)
                expect_entry(&e[i], &q[2 - i], true);
}

/* set_queue_type_for_user: the snapshot's queue_type is the ioctl enum
 * (SDMA = 1), unlike sysfs's internal one. */
static void sdma_queue_in_snapshot(void **state)
{
        struct conf_session *s = *state;
        struct conf_queue q;
        assert_int_equal(conf_target_create_queue_type(&s->target, s->gpu_ids[0], KFD_IOC_QUEUE_TYPE_SDMA, &q), 0);
        struct kfd_queue_snapshot_entry e[1];
        full_snapshot(s->target.pid, 0, e, 1, 1);
        expect_entry(&e[0], &q, true);
}

/* pqm_get_queue_snapshot: entry_size 0 -> -EINVAL. */
static void entry_size_zero_is_einval(void **state)
{
        struct conf_session *s = *state;
        struct kfd_queue_snapshot_entry e[1];
        uint32_t num = 1, entry_size = 0;
        assert_int_equal(conf_dbg_queue_snapshot(conf_kfd(), s->target.pid, 0, e, &num, &entry_size), -EINVAL);
        num = 0;
        assert_int_equal(conf_dbg_queue_snapshot(conf_kfd(), s->target.pid, 0, NULL, &num, &entry_size), -EINVAL);
}

/* The buffer is strided by the caller's entry_size and each record gets
 * min(entry_size, 64) bytes; entry_size out = min(in, 64). */
static void entry_size_smaller_and_larger(void **state)
{
        struct conf_session *s = *state;
        struct conf_queue q[3];
        create_three(s, q);
        static const uint32_t sizes[] = { 32, 100 };
        for (size_t i = 0; i < ELEMENTSOF(sizes); i++) {
                uint32_t stride = sizes[i], copied = stride < ENTRY_SIZE ? stride : ENTRY_SIZE;
                uint8_t buf[4 * 100];
                memset(buf, FILL, sizeof(buf));
                uint32_t num = 3, entry_size = stride;
                assert_int_equal(conf_dbg_queue_snapshot(conf_kfd(), s->target.pid, 0, buf, &num, &entry_size), 0);
                assert_int_equal(num, 3);
                assert_int_equal(entry_size, copied);
                for (uint32_t k = 0; k < 3; k++) {
                        struct kfd_queue_snapshot_entry e;
                        memset(&e, 0, sizeof(e));
                        memcpy(&e, buf + k * stride, copied);
                        assert_int_equal(e.ring_base_address, q[2 - k].ring);
                        assert_int_equal(e.read_pointer_address, q[2 - k].rptr);
                        if (copied == ENTRY_SIZE)
                                assert_int_equal(e.queue_id, q[2 - k].id);
                        for (uint32_t j = copied; j < stride; j++)
                                if (buf[k * stride + j] != FILL)
                                        fail_msg("entry_size %u: byte %u of record %u written", stride, j, k);
                }
                for (size_t j = 3 * stride; j < sizeof(buf); j++)
                        if (buf[j] != FILL)
                                fail_msg("entry_size %u: byte %zu past the last record written", stride, j);
        }
}

/* The clear mask applies only to queues actually copied; num_queues out is
 * the total even when the capacity is smaller or larger. */
static void clears_only_copied_entries(void **state)
{
        struct conf_session *s = *state;
        struct conf_queue q[3];
        create_three(s, q);
        struct kfd_queue_snapshot_entry e[8];
        full_snapshot(s->target.pid, NEW_MASK, e, 1, 3);
        expect_entry(&e[0], &q[2], true);

        memset(e, FILL, sizeof(e));
        full_snapshot(s->target.pid, 0, e, 8, 3);
        expect_entry(&e[0], &q[2], false);
        expect_entry(&e[1], &q[1], true);
        expect_entry(&e[2], &q[0], true);
        const uint8_t *tail = (const uint8_t *)&e[3];
        for (size_t j = 0; j < 5 * sizeof(e[0]); j++)
                assert_int_equal(tail[j], FILL);
}

/* kfd_dbg_trap_device_snapshot: snapshot_buf_ptr must be non-NULL even for
 * a count-only call; entry_size 0 is accepted; one entry per device of the
 * target with its topology gpu_id. */
static void device_snapshot(void **state)
{
        struct conf_session *s = *state;
        pid_t pid = s->target.pid;
        struct kfd_dbg_device_info_entry d[CONF_MAX_GPUS];
        struct kfd_ioctl_dbg_trap_args a = {
                .device_snapshot = { .snapshot_buf_ptr = 0, .num_devices = 0, .entry_size = sizeof(d[0]) },
        };
        assert_int_equal(conf_dbg_trap(conf_kfd(), pid, KFD_IOC_DBG_TRAP_GET_DEVICE_SNAPSHOT, &a), -EINVAL);

        memset(&a, 0, sizeof(a));
        a.device_snapshot.snapshot_buf_ptr = (uintptr_t)d;
        a.device_snapshot.num_devices = 0;
        a.device_snapshot.entry_size = sizeof(d[0]);
        assert_int_equal(conf_dbg_trap(conf_kfd(), pid, KFD_IOC_DBG_TRAP_GET_DEVICE_SNAPSHOT, &a), 0);
        assert_int_equal(a.device_snapshot.num_devices, s->n_gpus);

        memset(&a, 0, sizeof(a));
        a.device_snapshot.snapshot_buf_ptr = (uintptr_t)d;
        a.device_snapshot.num_devices = CONF_MAX_GPUS;
        a.device_snapshot.entry_size = 0;
        assert_int_equal(conf_dbg_trap(conf_kfd(), pid, KFD_IOC_DBG_TRAP_GET_DEVICE_SNAPSHOT, &a), 0);

        /* entry_size out = min(in, the kernel's entry): 120 in KFD 1.13, 128
         * once capability2/pad exist (§2.4). */
        uint8_t big[CONF_MAX_GPUS * 200];
        memset(&a, 0, sizeof(a));
        a.device_snapshot.snapshot_buf_ptr = (uintptr_t)big;
        a.device_snapshot.num_devices = CONF_MAX_GPUS;
        a.device_snapshot.entry_size = 200;
        assert_int_equal(conf_dbg_trap(conf_kfd(), pid, KFD_IOC_DBG_TRAP_GET_DEVICE_SNAPSHOT, &a), 0);
        if (a.device_snapshot.entry_size != 120 && a.device_snapshot.entry_size != 128)
                fail_msg("device entry_size out %u, want 120 or 128", a.device_snapshot.entry_size);

        memset(d, 0, sizeof(d));
        memset(&a, 0, sizeof(a));
        a.device_snapshot.snapshot_buf_ptr = (uintptr_t)d;
        a.device_snapshot.num_devices = CONF_MAX_GPUS;
        a.device_snapshot.entry_size = sizeof(d[0]);
        assert_int_equal(conf_dbg_trap(conf_kfd(), pid, KFD_IOC_DBG_TRAP_GET_DEVICE_SNAPSHOT, &a), 0);
        assert_int_equal(a.device_snapshot.num_devices, s->n_gpus);
        assert_int_equal(a.device_snapshot.entry_size, sizeof(d[0]));
        for (int i = 0; i < s->n_gpus; i++) {
                bool found = false;
                for (int j = 0; j < s->n_gpus; j++)
                        found |= d[j].gpu_id == s->gpu_ids[i];
                if (!found)
                        fail_msg("topology gpu_id %u missing from the device snapshot", s->gpu_ids[i]);
        }
}

/* kfd_dbg_trap_device_snapshot copies the topology node's properties: the
 * entry of each GPU carries what sysfs shows for it (§7, §8.2), and the
 * apertures kfd_init_apertures set up (non-empty ranges). */
static void device_snapshot_matches_topology(void **state)
{
        struct conf_session *s = *state;
        struct kfd_dbg_device_info_entry d[CONF_MAX_GPUS];
        struct kfd_ioctl_dbg_trap_args a = {
                .device_snapshot = { .snapshot_buf_ptr = (uintptr_t)d, .num_devices = CONF_MAX_GPUS,
                                     .entry_size = sizeof(d[0]) },
        };
        memset(d, 0, sizeof(d));
        assert_int_equal(conf_dbg_trap(conf_kfd(), s->target.pid, KFD_IOC_DBG_TRAP_GET_DEVICE_SNAPSHOT, &a), 0);
        for (uint32_t i = 0; i < a.device_snapshot.num_devices && i < CONF_MAX_GPUS; i++) {
                static const struct {
                        const char *key;
                        size_t offset;
                } keys[] = {
                        { "capability", offsetof(struct kfd_dbg_device_info_entry, capability) },
                        { "debug_prop", offsetof(struct kfd_dbg_device_info_entry, debug_prop) },
                        { "fw_version", offsetof(struct kfd_dbg_device_info_entry, fw_version) },
                        { "array_count", offsetof(struct kfd_dbg_device_info_entry, array_count) },
                        { "simd_arrays_per_engine", offsetof(struct kfd_dbg_device_info_entry, simd_arrays_per_engine) },
                        { "vendor_id", offsetof(struct kfd_dbg_device_info_entry, vendor_id) },
                        { "device_id", offsetof(struct kfd_dbg_device_info_entry, device_id) },
                        { "simd_count", offsetof(struct kfd_dbg_device_info_entry, simd_count) },
                        { "num_xcc", offsetof(struct kfd_dbg_device_info_entry, num_xcc) },
                };
                for (size_t k = 0; k < ELEMENTSOF(keys); k++) {
                        uint32_t got;
                        memcpy(&got, (const uint8_t *)&d[i] + keys[k].offset, sizeof(got));
                        long long want = conf_gpu_property(d[i].gpu_id, keys[k].key);
                        if (want < 0 || (uint32_t)want != got)
                                fail_msg("gpu %u: snapshot %s %#x, topology %lld", d[i].gpu_id, keys[k].key, got, want);
                }
                assert_true(d[i].lds_base < d[i].lds_limit);
                assert_true(d[i].scratch_base < d[i].scratch_limit);
                assert_true(d[i].gpuvm_base < d[i].gpuvm_limit);
        }
}

int main(int argc, char **argv)
{
        conf_init(argc, argv);
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(two_call_protocol, conf_fixture_attached, conf_fixture_end),
                cmocka_unit_test_setup_teardown(sdma_queue_in_snapshot, conf_fixture_attached, conf_fixture_end),
                cmocka_unit_test_setup_teardown(entry_size_zero_is_einval, conf_fixture_attached, conf_fixture_end),
                cmocka_unit_test_setup_teardown(entry_size_smaller_and_larger, conf_fixture_attached, conf_fixture_end),
                cmocka_unit_test_setup_teardown(clears_only_copied_entries, conf_fixture_attached, conf_fixture_end),
                cmocka_unit_test_setup_teardown(device_snapshot, conf_fixture_attached, conf_fixture_end),
                cmocka_unit_test_setup_teardown(device_snapshot_matches_topology, conf_fixture_attached,
                                                conf_fixture_end),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
