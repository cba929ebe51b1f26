/* SPDX-License-Identifier: MIT */
/*
 * The sysfs and debugfs views: kfd_process.c: kfd_procfs_queue_show,
 * kfd_procfs_add_queue, kfd_create_process; kfd_topology.c: node_show;
 * kfd_process.c: kfd_debugfs_mqds_by_process with
 * kfd_process_queue_manager.c: pqm_debugfs_mqds and the v9 compute MQD
 * layout — kfd-interface.md §8.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cleanup.h"
#include "conf-helpers.h"

#define MQDS_MAX (4u << 20)

static void read_proc_file(pid_t pid, const char *rel, char *buf, size_t size)
{
        char path[256];
        snprintf(path, sizeof(path), CONF_SYSFS_KFD "/proc/%d/%s", (int)pid, rel);
        ssize_t n = conf_read_file(path, buf, size);
        if (n < 0)
                fail_msg("cannot read %s: %s", path, strerror((int)-n));
}

/* True when s is exactly decimal digits followed by `tail` ("" or "\n"). */
static bool is_decimal(const char *s, const char *tail)
{
        size_t digits = strspn(s, "0123456789");
        return digits > 0 && strcmp(s + digits, tail) == 0;
}

/* kfd_procfs_queue_show: size (%llu), type (internal enum: COMPUTE=0 for
 * AQL too) and gpuid (%u), no trailing newline. */
static void queue_files_exact_bytes(void **state)
{
        struct conf_session *s = *state;
        pid_t pid = s->target.pid;
        for (int i = 0; i < s->n_gpus; i++) {
                struct conf_queue q;
                assert_int_equal(conf_target_create_queue(&s->target, s->gpu_ids[i], &q), 0);
                char rel[64], buf[64], want[32];
                snprintf(rel, sizeof(rel), "queues/%u/size", q.id);
                read_proc_file(pid, rel, buf, sizeof(buf));
                snprintf(want, sizeof(want), "%u", CONF_APP_RING_SIZE);
                assert_string_equal(buf, want);
                snprintf(rel, sizeof(rel), "queues/%u/type", q.id);
                read_proc_file(pid, rel, buf, sizeof(buf));
                assert_string_equal(buf, "0");
                snprintf(rel, sizeof(rel), "queues/%u/gpuid", q.id);
                read_proc_file(pid, rel, buf, sizeof(buf));
                snprintf(want, sizeof(want), "%u", s->gpu_ids[i]);
                assert_string_equal(buf, want);
        }
}

/* kfd_procfs_queue_show prints the internal queue type: SDMA = 1. */
static void sdma_queue_type_file(void **state)
{
        struct conf_session *s = *state;
        struct conf_queue q;
        assert_int_equal(conf_target_create_queue_type(&s->target, s->gpu_ids[0], KFD_IOC_QUEUE_TYPE_SDMA, &q), 0);
        char rel[64], buf[64];
        snprintf(rel, sizeof(rel), "queues/%u/type", q.id);
        read_proc_file(s->target.pid, rel, buf, sizeof(buf));
        assert_string_equal(buf, "1");
}

/* §8.1: pasid is decimal + "\n"; the directory exists for every process
 * that opened /dev/kfd, this test program included. */
static void proc_dir_and_pasid(void **state)
{
        struct conf_session *s = *state;
        char buf[64];
        read_proc_file(s->target.pid, "pasid", buf, sizeof(buf));
        assert_true(is_decimal(buf, "\n"));
        assert_true(conf_kfd() >= 0);
        read_proc_file(getpid(), "pasid", buf, sizeof(buf));
        assert_true(is_decimal(buf, "\n"));
}

static long cu_occupancy(pid_t pid, uint32_t gpu_id)
{
        char rel[64], buf[64];
        snprintf(rel, sizeof(rel), "stats_%u/cu_occupancy", gpu_id);
        read_proc_file(pid, rel, buf, sizeof(buf));
        if (!is_decimal(buf, "\n"))
                fail_msg("%s: \"%s\" is not %%d\\n", rel, buf);
        return strtol(buf, NULL, 10);
}

/* §8.1: vram_<gpuid> is "%llu\n"; stats_<gpuid>/cu_occupancy is "%d\n",
 * counts the CUs this process's waves occupy, is 0 on a GPU where it has no
 * queues, and drops to 0 once its queues are suspended (the waves were
 * context-saved before SUSPEND returned). */
static void vram_and_cu_occupancy(void **state)
{
        struct conf_session *s = *state;
        pid_t pid = s->target.pid;
        char rel[64], buf[64];
        for (int i = 0; i < s->n_gpus; i++) {
                snprintf(rel, sizeof(rel), "vram_%u", s->gpu_ids[i]);
                read_proc_file(pid, rel, buf, sizeof(buf));
                assert_true(is_decimal(buf, "\n"));
        }
        assert_true(s->n_gpus > 1);
        uint32_t busy = s->gpu_ids[0], idle = s->gpu_ids[1];
        struct conf_queue q;
        assert_int_equal(conf_target_create_queue(&s->target, busy, &q), 0);
        assert_int_equal(conf_target_submit(&s->target, q.id, 20000000, 20), 20);
        long occupied = 0;
        for (int waited = 0; occupied == 0 && waited < CONF_REPLY_TIMEOUT_MS; waited += 2) {
                occupied = cu_occupancy(pid, busy);
                if (occupied == 0)
                        conf_sleep_ms(2);
        }
        assert_true(occupied > 0);
        assert_int_equal(cu_occupancy(pid, idle), 0);

        assert_int_equal(conf_session_attach(s, CONF_SUBSCRIPTION), 0);
        assert_int_equal(conf_dbg_clear_new(conf_kfd(), pid), 0);
        uint32_t id = q.id;
        assert_int_equal(conf_dbg_suspend(conf_kfd(), pid, &id, 1, 0), 1);
        assert_int_equal(cu_occupancy(pid, busy), 0);
}

/* kfd_procfs_add_queue / removal on destroy: queues/<id> follows the queue. */
static void queue_dir_follows_queue(void **state)
{
        struct conf_session *s = *state;
        struct conf_queue q;
        assert_int_equal(conf_target_create_queue(&s->target, s->gpu_ids[0], &q), 0);
        char path[256];
        snprintf(path, sizeof(path), CONF_SYSFS_KFD "/proc/%d/queues/%u", (int)s->target.pid, q.id);
        assert_true(conf_path_exists(path));
        assert_int_equal(conf_target_call(&s->target, "destroy %u", q.id), 0);
        assert_false(conf_path_exists(path));
}

/* node_show: gpu_id is "%u\n", a 16-bit hash for GPUs (0 for CPU nodes);
 * properties are "name value" lines in decimal; generation_id is "%u\n". */
static void topology_formats(void **state)
{
        char buf[8192];
        assert_true(conf_read_file(CONF_SYSFS_KFD "/topology/generation_id", buf, sizeof(buf)) > 0);
        assert_true(is_decimal(buf, "\n"));
        int gpus = 0;
        for (int node = 0;; node++) {
                char path[128];
                snprintf(path, sizeof(path), CONF_SYSFS_KFD "/topology/nodes/%d/gpu_id", node);
                if (conf_read_file(path, buf, sizeof(buf)) < 0)
                        break;
                if (!is_decimal(buf, "\n"))
                        fail_msg("%s: \"%s\" is not %%u\\n", path, buf);
                unsigned long id = strtoul(buf, NULL, 10);
                assert_true(id <= 0xffff);
                gpus += id != 0;
                snprintf(path, sizeof(path), CONF_SYSFS_KFD "/topology/nodes/%d/properties", node);
                assert_true(conf_read_file(path, buf, sizeof(buf)) > 0);
                for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
                        char name[64];
                        unsigned long long v;
                        int end = 0;
                        if (sscanf(line, "%63s %llu%n", name, &v, &end) != 2 || line[end] != '\0')
                                fail_msg("%s: line \"%s\" is not \"name decimal\"", path, line);
                }
        }
        uint32_t ids[CONF_MAX_GPUS];
        assert_int_equal(gpus, conf_gpu_ids(ids, CONF_MAX_GPUS));
        assert_true(gpus >= 1);
}

struct mqd_match {
        const struct conf_queue *q;
        unsigned copies;     /* dumps whose address dwords match the queue */
};

/* One "    %08x: " line with 8 dwords (seq_hex_dump, 32 bytes, groups of 4). */
static bool parse_dump_line(const char *line, unsigned *offset, uint32_t dw[8])
{
        int end = 0;
        if (strncmp(line, "    ", 4) != 0)
                return false;
        int n = sscanf(line, "    %8x: %8x %8x %8x %8x %8x %8x %8x %8x%n", offset, &dw[0], &dw[1], &dw[2], &dw[3],
                       &dw[4], &dw[5], &dw[6], &dw[7], &end);
        return n == 9 && line[end] == '\0';
}

/* Compute MQD, the row at 0x220 (dwords 136-143): pq_base lo/hi = ring >> 8,
 * pq_rptr, rptr_report_addr lo/hi = read pointer VA, wptr_poll_addr lo/hi =
 * write pointer VA. */
static bool compute_row_matches(const uint32_t dw[8], const struct conf_queue *q)
{
        uint64_t base = q->ring >> 8;
        return dw[0] == (uint32_t)base && dw[1] == (uint32_t)(base >> 32) && dw[3] == (uint32_t)q->rptr &&
               dw[4] == (uint32_t)(q->rptr >> 32) && dw[5] == (uint32_t)q->wptr && dw[6] == (uint32_t)(q->wptr >> 32);
}

/* v9 SDMA MQD: rb_base dw1 (>> 8) and rb_base_hi dw2 on row 0x00,
 * rb_rptr_addr_hi dw8 and _lo dw9 (hi before lo) on row 0x20. */
static bool sdma_rows_match(const uint32_t row0[8], const uint32_t row1[8], const struct conf_queue *q)
{
        uint64_t base = q->ring >> 8;
        return row0[1] == (uint32_t)base && row0[2] == (uint32_t)(base >> 32) && row1[0] == (uint32_t)(q->rptr >> 32) &&
               row1[1] == (uint32_t)q->rptr;
}

struct mqd_scan {
        pid_t pid;
        bool ours;
        bool sdma;
        unsigned long gpu;
        uint32_t row0[8];
};

static void scan_line(struct mqd_scan *st, const char *line, struct mqd_match *m, size_t n)
{
        int p;
        if (sscanf(line, "Process %d ", &p) == 1) {
                st->ours = p == st->pid;
                return;
        }
        if (!st->ours)
                return;
        static const char *const headers[] = { "  Compute queue on device ", "  SDMA queue on device " };
        for (size_t h = 0; h < ELEMENTSOF(headers); h++) {
                size_t len = strlen(headers[h]);
                if (strncmp(line, headers[h], len) == 0) {
                        char *end;
                        st->gpu = strtoul(line + len, &end, 16);
                        st->sdma = h == 1;
                        if (*end != '\0')
                                fail_msg("mqds: bad queue header \"%s\"", line);
                        return;
                }
        }
        unsigned offset;
        uint32_t dw[8];
        if (!parse_dump_line(line, &offset, dw))
                return;
        if (offset % 32 != 0)
                fail_msg("mqds: dump line \"%s\" is not at a 32-byte row", line);
        if (offset == 0)
                memcpy(st->row0, dw, sizeof(st->row0));
        for (size_t i = 0; i < n; i++) {
                const struct conf_queue *q = m[i].q;
                bool sdma = q->type == KFD_IOC_QUEUE_TYPE_SDMA;
                if (q->gpu_id != st->gpu || sdma != st->sdma)
                        continue;
                if (sdma ? offset == 0x20 && sdma_rows_match(st->row0, dw, q) : offset == 0x220 && compute_row_matches(dw, q))
                        m[i].copies++;
        }
}

static unsigned num_xcc_of(uint32_t gpu_id)
{
        long long n = conf_gpu_property(gpu_id, "num_xcc");
        return n > 0 ? (unsigned)n : 1;
}

/* §8.3 mqds: per process "Process <tgid> ...", per queue "  Compute queue on
 * device <hex gpu_id>" (or "  SDMA queue ..."), then the MQD as a hex dump
 * with the queue's addresses at fixed dwords; a compute queue is dumped once
 * per XCC (num_xcc in the node's properties). */
static void debugfs_mqds_show_queue_addresses(void **state)
{
        struct conf_session *s = *state;
        struct conf_queue q[3];
        struct mqd_match m[3];
        for (int i = 0; i < 3; i++) {
                uint32_t type = i == 2 ? KFD_IOC_QUEUE_TYPE_SDMA : KFD_IOC_QUEUE_TYPE_COMPUTE_AQL;
                assert_int_equal(conf_target_create_queue_type(&s->target, s->gpu_ids[i % s->n_gpus], type, &q[i]), 0);
                m[i] = (struct mqd_match){ .q = &q[i] };
        }
        _cleanup_free_ char *text = malloc(MQDS_MAX);
        assert_non_null(text);
        ssize_t n = conf_read_file(CONF_DEBUGFS_MQDS, text, MQDS_MAX);
        if (n < 0)
                fail_msg("cannot read %s: %s", CONF_DEBUGFS_MQDS, strerror((int)-n));
        struct mqd_scan st = { .pid = s->target.pid };
        char *save = NULL;
        for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
                scan_line(&st, line, m, ELEMENTSOF(m));
        for (int i = 0; i < 3; i++) {
                unsigned want = q[i].type == KFD_IOC_QUEUE_TYPE_SDMA ? 1 : num_xcc_of(q[i].gpu_id);
                if (m[i].copies != want)
                        fail_msg("mqds: %u MQD dumps of pid %d's %s queue on device %x (ring %#lx rptr %#lx wptr %#lx), "
                                 "want %u",
                                 m[i].copies, (int)s->target.pid, q[i].type == KFD_IOC_QUEUE_TYPE_SDMA ? "SDMA" : "compute",
                                 q[i].gpu_id, (unsigned long)q[i].ring, (unsigned long)q[i].rptr, (unsigned long)q[i].wptr,
                                 want);
        }
}

/* The topology node index of a gpu_id (nodes/<n>/gpu_id). */
static int node_of(uint32_t gpu_id)
{
        for (int node = 0;; node++) {
                char path[128], buf[64];
                snprintf(path, sizeof(path), CONF_SYSFS_KFD "/topology/nodes/%d/gpu_id", node);
                if (conf_read_file(path, buf, sizeof(buf)) < 0)
                        fail_msg("gpu_id %u is not in the topology", gpu_id);
                if (strtoul(buf, NULL, 10) == gpu_id)
                        return node;
        }
}

/* §8.3 hqds (kfd_topology.c: kfd_debugfs_hqds_by_device ->
 * dqm_debugfs_hqds): one "Node <n>, gpu_id <hex>:" section per GPU, n the
 * topology node; hardware slots as register rows "    <addr>: <val>..." with
 * no pid or queue id. A mapped queue's ring base (>> 8, lo then hi, as in
 * cp_hqd_pq_base) sits in a slot of its GPU's section. */
static void debugfs_hqds_show_mapped_queue(void **state)
{
        struct conf_session *s = *state;
        struct conf_queue q;
        uint32_t gpu = s->gpu_ids[s->n_gpus - 1];
        assert_int_equal(conf_target_create_queue(&s->target, gpu, &q), 0);
        _cleanup_free_ char *text = malloc(MQDS_MAX);
        assert_non_null(text);
        ssize_t n = conf_read_file(CONF_DEBUGFS_HQDS, text, MQDS_MAX);
        if (n < 0)
                fail_msg("cannot read %s: %s", CONF_DEBUGFS_HQDS, strerror((int)-n));
        uint64_t base = q.ring >> 8;
        int sections = 0;
        bool in_gpu = false, found = false;
        char *save = NULL;
        for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                int node, end = 0;
                unsigned id;
                if (sscanf(line, "Node %d, gpu_id %x:%n", &node, &id, &end) == 2 && line[end] == '\0') {
                        sections++;
                        in_gpu = id == gpu;
                        if (in_gpu)
                                assert_int_equal(node, node_of(gpu));
                        continue;
                }
                uint32_t v[8];
                unsigned addr;
                int got = sscanf(line, "    %8x: %8x %8x %8x %8x %8x %8x %8x %8x", &addr, &v[0], &v[1], &v[2], &v[3], &v[4],
                                 &v[5], &v[6], &v[7]);
                for (int i = 0; in_gpu && i + 1 < got - 1; i++)
                        found |= v[i] == (uint32_t)base && v[i + 1] == (uint32_t)(base >> 32);
        }
        assert_int_equal(sections, s->n_gpus);
        if (!found)
                fail_msg("hqds: ring base %#lx >> 8 of a mapped queue is in no HQD of gpu_id %x", (unsigned long)q.ring,
                         gpu);
}

int main(int argc, char **argv)
{
        conf_init(argc, argv);
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(queue_files_exact_bytes, conf_fixture_spawned, conf_fixture_end),
                cmocka_unit_test_setup_teardown(sdma_queue_type_file, conf_fixture_spawned, conf_fixture_end),
                cmocka_unit_test_setup_teardown(proc_dir_and_pasid, conf_fixture_spawned, conf_fixture_end),
                cmocka_unit_test_setup_teardown(queue_dir_follows_queue, conf_fixture_spawned, conf_fixture_end),
                cmocka_unit_test_setup_teardown(vram_and_cu_occupancy, conf_fixture_spawned, conf_fixture_end),
                cmocka_unit_test(topology_formats),
                cmocka_unit_test_setup_teardown(debugfs_mqds_show_queue_addresses, conf_fixture_spawned,
                                                conf_fixture_end),
                cmocka_unit_test_setup_teardown(debugfs_hqds_show_mapped_queue, conf_fixture_spawned, conf_fixture_end),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
