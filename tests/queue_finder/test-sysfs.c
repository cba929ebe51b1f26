/* SPDX-License-Identifier: MIT */
/*
 * KFD sysfs, topology and container pids, on a tree written the way the
 * kernel formats it (kfd-interface.md §8.1-8.2): queue attributes without a
 * trailing newline, the internal queue type enum, decimal properties.
 */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "sources.h"
#include "test-util.h"

static char root[PATH_MAX];

static void put(const char *rel, const char *content)
{
        char path[PATH_MAX * 2];
        snprintf(path, sizeof(path), "%s/%s", root, rel);
        /* mkdir -p of the parent */
        for (char *s = path + strlen(root) + 1; (s = strchr(s, '/')); s++) {
                *s = 0;
                assert_true(mkdir(path, 0755) == 0 || errno == EEXIST);
                *s = '/';
        }
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fputs(content, f);
        assert_int_equal(fclose(f), 0);
}

static int setup(void **state)
{
        test_tmpdir_create("qf-sysfs", root, sizeof(root));
        put("proc/1234/pasid", "32770\n");
        put("proc/1234/queues/0/size", "1048576");
        put("proc/1234/queues/0/type", "0");
        put("proc/1234/queues/0/gpuid", "63420");
        put("proc/1234/queues/2/size", "4096");
        put("proc/1234/queues/2/type", "1");
        put("proc/1234/queues/2/gpuid", "63420");
        put("proc/1234/queues/5/size", "not a number");
        put("proc/1234/queues/5/type", "0");
        put("proc/1234/queues/5/gpuid", "63420");
        put("proc/1234/stats_63420/cu_occupancy", "12\n");
        put("proc/1234/vram_63420", "4096\n");
        put("proc/99/pasid", "32771\n");
        put("topology/nodes/0/gpu_id", "0\n");
        put("topology/nodes/0/name", "\n");
        put("topology/nodes/0/properties", "cpu_cores_count 64\n");
        put("topology/nodes/1/gpu_id", "63420\n");
        put("topology/nodes/1/name", "gfx942\n");
        put("topology/nodes/1/properties", "cpu_cores_count 0\nsimd_count 1216\ngfx_target_version 90402\n"
                                           "vendor_id 4098\ndevice_id 29857\nlocation_id 3072\ndomain 0\n"
                                           "drm_render_minor 128\nnum_xcc 4\nunique_id 1234567890\n");
        put("topology/nodes/2/gpu_id", "4660\n");
        put("topology/nodes/2/name", "gfx90a\n");
        put("topology/nodes/2/properties", "gfx_target_version 90010\nlocation_id 50440\ndomain 1\nbroken\n");
        return 0;
}

static int teardown(void **state)
{
        return test_tmpdir_remove(root);
}

static void test_process(void **state)
{
        char kfd[PATH_MAX];
        snprintf(kfd, sizeof(kfd), "%s", root);
        struct qf_diags d = { 0 };
        struct qf_sysfs_process p;
        assert_int_equal(qf_sysfs_read_process(kfd, 1234, &d, &p), 0);
        assert_int_equal(p.pid, 1234);
        assert_true(p.has_pasid);
        assert_int_equal(p.pasid, 32770);
        assert_int_equal(p.n_queues, 2);
        assert_int_equal(p.queues[0].queue_id, 0);
        assert_int_equal(p.queues[0].size, 1048576);
        assert_int_equal(p.queues[0].type, QF_SYSFS_QUEUE_COMPUTE);
        assert_int_equal(p.queues[0].gpu_id, 63420);
        assert_int_equal(p.queues[1].queue_id, 2);
        assert_int_equal(p.queues[1].type, QF_SYSFS_QUEUE_SDMA);
        assert_int_equal(p.n_occupancy, 1);
        assert_int_equal(p.occupancy[0].gpu_id, 63420);
        assert_int_equal(p.occupancy[0].cus, 12);
        /* The broken queue 5 is reported, not fatal. */
        assert_int_equal(d.n, 1);
        assert_non_null(strstr(d.items[0].file, "queues/5/size"));
        qf_sysfs_process_clear(&p);
        qf_diags_clear(&d);

        assert_int_equal(qf_sysfs_read_process(kfd, 4321, &d, &p), -ENOENT);

        pid_t *pids;
        size_t n;
        assert_int_equal(qf_sysfs_list_pids(kfd, &pids, &n), 0);
        assert_int_equal(n, 2);
        assert_int_equal(pids[0], 99);
        assert_int_equal(pids[1], 1234);
        free(pids);
}

/* The listing names each process's directory by its inode number, the one stat gives: a new
 * directory under the same pid (an exec'd process that opened /dev/kfd again) has another. */
static void test_listing_identity(void **state)
{
        char path[PATH_MAX + 32];
        struct qf_sysfs_listed_process *listed;
        struct stat st;
        size_t n;

        assert_int_equal(qf_sysfs_list_processes(root, &listed, &n), 0);
        assert_int_equal(n, 2);
        assert_int_equal(listed[0].pid, 99);
        assert_int_equal(listed[1].pid, 1234);
        for (size_t i = 0; i < n; i++) {
                snprintf(path, sizeof(path), "%s/proc/%d", root, (int)listed[i].pid);
                assert_int_equal(stat(path, &st), 0);
                assert_true(listed[i].dir_ino == (uint64_t)st.st_ino);
        }

        /* made before the old one goes, so that the file system cannot hand the old number out again */
        uint64_t before = listed[0].dir_ino;
        char fresh[PATH_MAX + 32];
        free(listed);
        put("proc/99.new/pasid", "32771\n");
        snprintf(path, sizeof(path), "%s/proc/99/pasid", root);
        assert_int_equal(unlink(path), 0);
        snprintf(path, sizeof(path), "%s/proc/99", root);
        assert_int_equal(rmdir(path), 0);
        snprintf(fresh, sizeof(fresh), "%s/proc/99.new", root);
        assert_int_equal(rename(fresh, path), 0);
        assert_int_equal(qf_sysfs_list_processes(root, &listed, &n), 0);
        assert_int_equal(n, 2);
        assert_int_equal(listed[0].pid, 99);
        assert_true(listed[0].dir_ino != before);
        free(listed);
}

static void test_topology(void **state)
{
        struct qf_diags d = { 0 };
        struct qf_gpu *gpus;
        size_t n;
        assert_int_equal(qf_topology_read(root, &d, &gpus, &n), 0);
        assert_int_equal(n, 2);

        assert_int_equal(gpus[0].node, 1);
        assert_int_equal(gpus[0].gpu_id, 0xf7bc);
        assert_string_equal(gpus[0].name, "gfx942");
        assert_string_equal(gpus[0].gfx, "gfx942");
        assert_int_equal(gpus[0].device_id, 0x74a1);
        assert_int_equal(gpus[0].bus, 0x0c);
        assert_int_equal(gpus[0].dev, 0);
        assert_int_equal(gpus[0].fn, 0);
        assert_int_equal(gpus[0].drm_render_minor, 128);
        assert_int_equal(gpus[0].num_xcc, 4);
        /* This machine has no render node: the fallback name is used. */
        qf_gpu_name_resolve(&gpus[0]);
        assert_string_equal(gpus[0].marketing_name, "AMD GPU gfx942 [1002:74a1] 0000:0c:00.0");
        assert_false(gpus[0].marketing_name_from_libdrm);

        assert_string_equal(gpus[1].gfx, "gfx90a");
        assert_int_equal(gpus[1].domain, 1);
        assert_int_equal(gpus[1].bus, 0xc5);
        assert_int_equal(gpus[1].dev, 1);
        assert_int_equal(gpus[1].fn, 0);
        assert_int_equal(gpus[1].drm_render_minor, -1);
        qf_gpu_name_resolve(&gpus[1]);
        assert_string_equal(gpus[1].marketing_name, "AMD GPU gfx90a [1002:0000] 0001:c5:01.0");

        /* "broken" is line 4 of node 2's properties. */
        assert_int_equal(d.n, 1);
        assert_int_equal(d.items[0].line, 4);
        free(gpus);
        qf_diags_clear(&d);
}

/* Entries named with a leading zero, which the kernel never prints, are
 * not KFD's and are skipped: each reader opens an entry again by its number,
 * so "01234" would be read as "1234" and listed twice. */
static void test_leading_zeros(void **state)
{
        char kfd[PATH_MAX + 16];
        snprintf(kfd, sizeof(kfd), "%s/zeros", root);
        put("zeros/proc/1234/pasid", "32770\n");
        put("zeros/proc/1234/queues/7/size", "4096");
        put("zeros/proc/1234/queues/7/type", "0");
        put("zeros/proc/1234/queues/7/gpuid", "63420");
        put("zeros/proc/1234/queues/07/size", "4096");
        put("zeros/proc/1234/queues/07/type", "0");
        put("zeros/proc/1234/queues/07/gpuid", "63420");
        put("zeros/proc/1234/stats_63420/cu_occupancy", "12\n");
        put("zeros/proc/1234/stats_063420/cu_occupancy", "12\n");
        put("zeros/proc/01234/pasid", "32770\n");
        put("zeros/proc/0/pasid", "1\n");
        put("zeros/topology/nodes/1/gpu_id", "63420\n");
        put("zeros/topology/nodes/1/properties", "gfx_target_version 90402\n");
        put("zeros/topology/nodes/01/gpu_id", "63420\n");
        put("zeros/topology/nodes/01/properties", "gfx_target_version 90402\n");

        pid_t *pids;
        size_t n;
        assert_int_equal(qf_sysfs_list_pids(kfd, &pids, &n), 0);
        assert_int_equal(n, 1);
        assert_int_equal(pids[0], 1234);
        free(pids);

        struct qf_diags d = { 0 };
        struct qf_sysfs_process p;
        assert_int_equal(qf_sysfs_read_process(kfd, 1234, &d, &p), 0);
        assert_int_equal(p.n_queues, 1);
        assert_int_equal(p.queues[0].queue_id, 7);
        assert_int_equal(p.n_occupancy, 1);
        qf_sysfs_process_clear(&p);

        struct qf_gpu *gpus;
        assert_int_equal(qf_topology_read(kfd, &d, &gpus, &n), 0);
        assert_int_equal(n, 1);
        assert_int_equal(gpus[0].node, 1);
        free(gpus);
        assert_int_equal(d.n, 0);
        qf_diags_clear(&d);
}

/* A name longer than the buffer is reported and left out, not cut short to
 * the first bytes the failed read left in the buffer. */
static void test_long_name(void **state)
{
        char kfd[PATH_MAX + 16], name[200];
        snprintf(kfd, sizeof(kfd), "%s/longname", root);
        memset(name, 'x', sizeof(name) - 2);
        name[sizeof(name) - 2] = '\n';
        name[sizeof(name) - 1] = 0;
        put("longname/topology/nodes/1/gpu_id", "63420\n");
        put("longname/topology/nodes/1/name", name);
        put("longname/topology/nodes/1/properties", "gfx_target_version 90402\n");

        struct qf_diags d = { 0 };
        struct qf_gpu *gpus;
        size_t n;
        assert_int_equal(qf_topology_read(kfd, &d, &gpus, &n), 0);
        assert_int_equal(n, 1);
        assert_string_equal(gpus[0].name, "");
        assert_string_equal(gpus[0].gfx, "gfx942");
        free(gpus);
        assert_int_equal(d.n, 1);
        assert_non_null(strstr(d.items[0].file, "nodes/1/name"));
        assert_true(test_has_warning(&d, 0, "cannot read the node's name"));
        qf_diags_clear(&d);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_process),
                cmocka_unit_test(test_listing_identity),
                cmocka_unit_test(test_topology),
                cmocka_unit_test(test_leading_zeros),
                cmocka_unit_test(test_long_name),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
