/* SPDX-License-Identifier: MIT */
/*
 * The packet at a queue's read index (aql-barrier.h): the packet types and
 * the barriers' rules, then the reads, here from this test's own memory
 * through the daemon's queue-memory reader.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cmocka.h>

#include "aql-barrier.h"

/* hsa.h hsa_packet_type_t */
enum { VENDOR = 0, INVALID = 1, DISPATCH = 2, AND = 3, AGENT = 4, OR = 5 };
/* the barrier bit and system-scope fences, as CLR's barriers carry them */
#define FENCES (1u << 8 | 2u << 9 | 2u << 11)

struct amd_signal {
        int64_t kind;
        int64_t value;
        unsigned char rest[48];
} __attribute__((aligned(64)));

static void write_packet(unsigned char *packet, unsigned type, const struct amd_signal *const *deps, size_t n_deps)
{
        uint16_t header = (uint16_t)(type | FENCES);

        memset(packet, 0, AQL_PACKET_SIZE);
        for (size_t i = 0; i < n_deps; i++) {
                uint64_t handle = (uint64_t)(uintptr_t)deps[i];

                memcpy(packet + 8 + i * sizeof(handle), &handle, sizeof(handle));
        }
        memcpy(packet, &header, sizeof(header));
}

static void test_ring_addresses(void **state)
{
        struct aql_ring ring = { .base_address = 0x10000, .size_bytes = 4 * AQL_PACKET_SIZE };
        uint64_t address = 0;

        assert_true(aql_ring_packet_address(&ring, 0, &address));
        assert_int_equal(address, 0x10000);
        assert_true(aql_ring_packet_address(&ring, 6, &address)); /* the index wraps */
        assert_int_equal(address, 0x10000 + 2 * AQL_PACKET_SIZE);
        ring.size_bytes = 0;
        assert_false(aql_ring_packet_address(&ring, 0, &address));
        ring.size_bytes = 3 * AQL_PACKET_SIZE; /* the CP masks the index: not a ring */
        assert_false(aql_ring_packet_address(&ring, 0, &address));
        ring.size_bytes = 4 * AQL_PACKET_SIZE + 8;
        assert_false(aql_ring_packet_address(&ring, 0, &address));
}

static void test_packet_types(void **state)
{
        unsigned char packet[AQL_PACKET_SIZE];
        struct amd_signal signal = { 0 };
        const struct amd_signal *deps[] = { &signal };
        struct aql_barrier barrier;

        write_packet(packet, DISPATCH, NULL, 0);
        assert_int_equal(aql_packet_parse(packet, &barrier), AQL_HEAD_RUNS);
        write_packet(packet, VENDOR, NULL, 0);
        assert_int_equal(aql_packet_parse(packet, &barrier), AQL_HEAD_RUNS);
        write_packet(packet, AGENT, NULL, 0);
        assert_int_equal(aql_packet_parse(packet, &barrier), AQL_HEAD_RUNS);
        write_packet(packet, INVALID, deps, 1);
        assert_int_equal(aql_packet_parse(packet, &barrier), AQL_HEAD_UNPUBLISHED);

        write_packet(packet, AND, deps, 1);
        assert_int_equal(aql_packet_parse(packet, &barrier), AQL_HEAD_WAITS);
        assert_false(barrier.any);
        assert_int_equal(barrier.n_deps, 1);
        assert_int_equal(barrier.value_address[0], (uint64_t)(uintptr_t)&signal.value);
        write_packet(packet, OR, deps, 1);
        assert_int_equal(aql_packet_parse(packet, &barrier), AQL_HEAD_WAITS);
        assert_true(barrier.any);
}

/* Zero handles are skipped: met for AND, never met for OR. */
static void test_barrier_rules(void **state)
{
        struct aql_barrier and2 = { .any = false, .n_deps = 2 }, or2 = { .any = true, .n_deps = 2 };
        struct aql_barrier and0 = { .any = false }, or0 = { .any = true };

        assert_true(aql_barrier_waits(&and2, (int64_t[]){ 1, 1 }));
        assert_true(aql_barrier_waits(&and2, (int64_t[]){ 0, 1 }));
        assert_true(aql_barrier_waits(&and2, (int64_t[]){ -1, 0 })); /* only 0 is met */
        assert_false(aql_barrier_waits(&and2, (int64_t[]){ 0, 0 }));
        assert_true(aql_barrier_waits(&or2, (int64_t[]){ 1, 1 }));
        assert_false(aql_barrier_waits(&or2, (int64_t[]){ 1, 0 }));
        assert_false(aql_barrier_waits(&or2, (int64_t[]){ 0, 0 }));
        assert_false(aql_barrier_waits(&and0, NULL));
        assert_true(aql_barrier_waits(&or0, NULL));
}

/* A handle in the middle of the array counts as much as the first. */
static void test_dependencies_anywhere(void **state)
{
        unsigned char packet[AQL_PACKET_SIZE] = { 0 };
        struct aql_barrier barrier;
        uint64_t handle = 0x7000;
        uint16_t header = AND | FENCES;

        memcpy(packet, &header, sizeof(header));
        memcpy(packet + 8 + 3 * sizeof(handle), &handle, sizeof(handle));
        assert_int_equal(aql_packet_parse(packet, &barrier), AQL_HEAD_WAITS);
        assert_int_equal(barrier.n_deps, 1);
        assert_int_equal(barrier.value_address[0], 0x7008);
}

struct own_memory {
        struct queue_memory *memory;
        unsigned char ring[4][AQL_PACKET_SIZE] __attribute__((aligned(64)));
        struct amd_signal signals[2];
};

static int own_memory_setup(void **state)
{
        static struct own_memory m;

        memset(&m, 0, sizeof(m));
        if (queue_memory_new("/proc", getpid(), &m.memory) < 0)
                return -1;
        *state = &m;
        return 0;
}

static int own_memory_teardown(void **state)
{
        struct own_memory *m = *state;

        queue_memory_free(m->memory);
        return 0;
}

/* The packet at the read index and its signals, read from a process's memory. */
static void test_head_read(void **state)
{
        struct own_memory *m = *state;
        struct aql_ring ring = { (uint64_t)(uintptr_t)m->ring, sizeof(m->ring) };
        const struct amd_signal *both[] = { &m->signals[0], &m->signals[1] };
        enum aql_head head;

        write_packet(m->ring[0], DISPATCH, NULL, 0);
        write_packet(m->ring[1], AND, both, 2);
        write_packet(m->ring[2], OR, both, 2);
        write_packet(m->ring[3], INVALID, NULL, 0);
        m->signals[0].value = 1;
        m->signals[1].value = 0;

        assert_int_equal(aql_head_read(m->memory, &ring, 0, &head), 0);
        assert_int_equal(head, AQL_HEAD_RUNS);
        assert_int_equal(aql_head_read(m->memory, &ring, 5, &head), 0); /* slot 1 */
        assert_int_equal(head, AQL_HEAD_WAITS);
        assert_int_equal(aql_head_read(m->memory, &ring, 2, &head), 0);
        assert_int_equal(head, AQL_HEAD_RUNS);
        assert_int_equal(aql_head_read(m->memory, &ring, 3, &head), 0);
        assert_int_equal(head, AQL_HEAD_UNPUBLISHED);

        m->signals[0].value = 0;
        assert_int_equal(aql_head_read(m->memory, &ring, 1, &head), 0);
        assert_int_equal(head, AQL_HEAD_RUNS);
        m->signals[0].value = m->signals[1].value = 1;
        assert_int_equal(aql_head_read(m->memory, &ring, 2, &head), 0);
        assert_int_equal(head, AQL_HEAD_WAITS);
}

/* What cannot be read is an error, never a wait: the ring, or a signal unmapped. */
static void test_head_read_errors(void **state)
{
        struct own_memory *m = *state;
        long page = sysconf(_SC_PAGESIZE);
        void *gone = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        struct aql_ring ring = { (uint64_t)(uintptr_t)m->ring, sizeof(m->ring) };
        const struct amd_signal *deps[] = { &m->signals[0], gone };
        enum aql_head head = AQL_HEAD_RUNS;

        assert_true(gone != MAP_FAILED);
        munmap(gone, (size_t)page);
        write_packet(m->ring[0], AND, deps, 2);
        assert_int_equal(aql_head_read(m->memory, &ring, 0, &head), -EIO);
        ring.base_address = (uint64_t)(uintptr_t)gone;
        assert_int_equal(aql_head_read(m->memory, &ring, 0, &head), -EIO);
        ring.size_bytes = 0;
        assert_int_equal(aql_head_read(m->memory, &ring, 0, &head), -EINVAL);
        assert_int_equal(head, AQL_HEAD_RUNS); /* untouched */
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_ring_addresses),
                cmocka_unit_test(test_packet_types),
                cmocka_unit_test(test_barrier_rules),
                cmocka_unit_test(test_dependencies_anywhere),
                cmocka_unit_test_setup_teardown(test_head_read, own_memory_setup, own_memory_teardown),
                cmocka_unit_test_setup_teardown(test_head_read_errors, own_memory_setup, own_memory_teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
