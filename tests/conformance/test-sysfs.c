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
        bool found;
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

/* Dwords 136-143 (the line at 0x220): pq_base lo/hi = ring >> 8, then
 * pq_rptr, rptr_report_addr lo/hi = read pointer VA, wptr_poll_addr lo/hi =
 * write pointer VA. */
static bool mqd_line_matches(const uint32_t dw[8], const struct conf_queue *q)
{
        uint64_t base = q->ring >> 8;
        return dw[0] == (uint32_t)base && dw[1] == (uint32_t)(base >> 32) && dw[3] == (uint32_t)q->rptr &&
               dw[4] == (uint32_t)(q->rptr >> 32) && dw[5] == (uint32_t)q->wptr && dw[6] == (uint32_t)(q->wptr >> 32);
}

static void scan_mqds(char *text, pid_t pid, struct mqd_match *m, size_t n)
{
        bool ours = false;
        unsigned long gpu = 0;
        for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
                int p;
                if (sscanf(line, "Process %d ", &p) == 1) {
                        ours = p == pid;
                        continue;
                }
                if (!ours)
                        continue;
                if (strncmp(line, "  Compute queue on device ", 26) == 0) {
                        char *end;
                        gpu = strtoul(line + 26, &end, 16);
                        if (*end != '\0')
                                fail_msg("mqds: bad queue header \"%s\"", line);
                        continue;
                }
                unsigned offset;
                uint32_t dw[8];
                if (!parse_dump_line(line, &offset, dw))
                        continue;
                if (offset % 32 != 0)
                        fail_msg("mqds: dump line \"%s\" is not at a 32-byte row", line);
                if (offset != 0x220)
                        continue;
                for (size_t i = 0; i < n; i++)
                        if (m[i].q->gpu_id == gpu && mqd_line_matches(dw, m[i].q))
                                m[i].found = true;
        }
}

/* §8.3 mqds: per process "Process <tgid> ...", per queue "  Compute queue on
 * device <hex gpu_id>", then the MQD as a hex dump; the queue's addresses
 * are at dwords 136/137 (ring >> 8) and 139-142 (rptr, wptr). */
static void debugfs_mqds_show_queue_addresses(void **state)
{
        struct conf_session *s = *state;
        struct conf_queue q[2];
        struct mqd_match m[2];
        for (int i = 0; i < 2; i++) {
                assert_int_equal(conf_target_create_queue(&s->target, s->gpu_ids[i % s->n_gpus], &q[i]), 0);
                m[i] = (struct mqd_match){ .q = &q[i] };
        }
        _cleanup_free_ char *text = malloc(MQDS_MAX);
        assert_non_null(text);
        ssize_t n = conf_read_file(CONF_DEBUGFS_MQDS, text, MQDS_MAX);
        if (n < 0)
                fail_msg("cannot read %s: %s", CONF_DEBUGFS_MQDS, strerror((int)-n));
        scan_mqds(text, s->target.pid, m, 2);
        for (int i = 0; i < 2; i++)
                if (!m[i].found)
                        fail_msg("mqds: no MQD of pid %d on device %x with ring %#lx rptr %#lx wptr %#lx",
                                 (int)s->target.pid, q[i].gpu_id, (unsigned long)q[i].ring, (unsigned long)q[i].rptr,
                                 (unsigned long)q[i].wptr);
}

int main(int argc, char **argv)
{
        conf_init(argc, argv);
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(queue_files_exact_bytes, conf_fixture_spawned, conf_fixture_end),
                cmocka_unit_test_setup_teardown(proc_dir_and_pasid, conf_fixture_spawned, conf_fixture_end),
                cmocka_unit_test_setup_teardown(queue_dir_follows_queue, conf_fixture_spawned, conf_fixture_end),
                cmocka_unit_test(topology_formats),
                cmocka_unit_test_setup_teardown(debugfs_mqds_show_queue_addresses, conf_fixture_spawned,
                                                conf_fixture_end),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
