/* SPDX-License-Identifier: MIT */
/*
 * The rendered sysfs/debugfs tree of a node with one process and the five
 * queues of the real MI308X capture (tests/data/real), compared with the
 * real dumps: structure, headers, register addresses and the MQD dwords
 * the driver writes.
 */
#include <dirent.h>
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

#include "cleanup.h"
#include "gpu.h"

#define N_QUEUES 5
#define N_XCC 4
#define MQD_DWORDS 512
#define MAX_LINES 20000

struct real_queue {
        uint32_t mqd[N_XCC][MQD_DWORDS];
};

struct fixture {
        char root[PATH_MAX];
        struct emu_node node;
        struct emu_process process;
        struct emu_queue queues[N_QUEUES];
        struct real_queue real[N_QUEUES];        /* file order: newest first */
};

/* Called by the model thread for parked calls; this test parks none. */
void emu_call_complete(struct emu_call *call, long ret)
{
        fail_msg("unexpected completion of a call");
}

/* Called by the model thread for signals with an event; this test has none. */
void emu_signal_event_interrupt(struct emu_process *p, uint32_t event_id)
{
        fail_msg("unexpected event interrupt for %u", event_id);
}

static char *slurp(const char *path)
{
        FILE *f = fopen(path, "re");
        char *text = NULL;
        size_t cap = 0;
        ssize_t n;

        assert_non_null(f);
        n = getdelim(&text, &cap, '\0', f);
        fclose(f);
        assert_true(n >= 0);
        return text;
}

static char *rendered(struct fixture *fx, const char *relpath)
{
        char path[PATH_MAX * 2];

        snprintf(path, sizeof(path), "%s/%s", fx->root, relpath);
        return slurp(path);
}

static char *real_file(const char *name)
{
        const char *dir = getenv("GPREEMPT_REAL_DATA");
        char path[PATH_MAX];

        assert_non_null(dir);
        snprintf(path, sizeof(path), "%s/%s", dir, name);
        return slurp(path);
}

static size_t split_lines(char *text, char **lines, size_t max)
{
        size_t n = 0;

        for (char *save = NULL, *l = strtok_r(text, "\n", &save); l && n < max; l = strtok_r(NULL, "\n", &save))
                lines[n++] = l;
        return n;
}

/* The MQD hex dumps of an mqds file, in order: queue i, XCC x. */
static void parse_mqds(char *text, struct real_queue *out, unsigned n_queues)
{
        static char *lines[MAX_LINES];
        size_t n = split_lines(text, lines, MAX_LINES);
        int q = -1, x = -1;

        for (size_t i = 0; i < n; i++) {
                unsigned off, v[8];

                if (strncmp(lines[i], "  Compute queue on device ", 26) == 0) {
                        q++;
                        x = -1;
                        continue;
                }
                if (sscanf(lines[i], " %x: %x %x %x %x %x %x %x %x", &off, &v[0], &v[1], &v[2], &v[3],
                           &v[4], &v[5], &v[6], &v[7]) != 9)
                        continue;
                if (off == 0)
                        x++;
                assert_in_range(q, 0, (int)n_queues - 1);
                assert_in_range(x, 0, N_XCC - 1);
                memcpy(&out[q].mqd[x][off / 4], v, sizeof(v));
        }
        assert_int_equal(q, (int)n_queues - 1);
}

static uint64_t dw64(const uint32_t *m, unsigned lo)
{
        return (uint64_t)m[lo + 1] << 32 | m[lo];
}

static void add_queue(struct fixture *fx, unsigned i, const uint32_t *real_xcc0)
{
        struct emu_queue *q = &fx->queues[i];

        *q = (struct emu_queue){
                .process = &fx->process,
                .gpu = &fx->node.gpus[0],
                .id = i,
                .type = KFD_IOC_QUEUE_TYPE_COMPUTE_AQL,
                .ring_base_address = dw64(real_xcc0, 136) << 8,
                .read_pointer_address = dw64(real_xcc0, 139),
                .write_pointer_address = dw64(real_xcc0, 141),
                .ctx_save_restore_address = dw64(real_xcc0, 171),
                .ctx_save_restore_size = real_xcc0[177],
                .ctl_stack_size = real_xcc0[175],
                .ring_size = 4u << ((real_xcc0[145] & 0x3f) + 1),
                .queue_priority = real_xcc0[134],
                .doorbell_slot = i,
                .next = fx->process.queues,
        };
        fx->process.queues = q;
        fx->process.n_queues++;
        assert_int_equal(emu_gpu_queue_created(q), 0);
}

static int setup(void **state)
{
        struct fixture *fx = calloc(1, sizeof(*fx));
        _cleanup_free_ char *real = real_file("mi308x-mqds-5queues.txt");

        snprintf(fx->root, sizeof(fx->root), "/tmp/kfdemu-gpu-render-%d", (int)getpid());
        assert_int_equal(mkdir(fx->root, 0700), 0);
        pthread_mutex_init(&fx->node.lock, NULL);
        fx->node.n_gpus = 1;
        fx->node.cfg.n_gpus = 1;
        fx->node.cfg.sched_policy = 0;
        fx->node.cfg.queue_preemption_timeout_ms = 9000;
        snprintf(fx->node.cfg.root, sizeof(fx->node.cfg.root), "%s", fx->root);
        fx->node.gpus[0].node = &fx->node;
        emu_gpu_config_default(0, &fx->node.gpus[0].cfg);
        assert_int_equal(emu_gpu_start(&fx->node), 0);

        fx->process = (struct emu_process){ .node = &fx->node, .tgid = getpid(), .pasid = 0x8001, .n_pdds = 1 };
        fx->process.pdds[0].gpu = &fx->node.gpus[0];
        fx->node.processes = &fx->process;

        parse_mqds(real, fx->real, N_QUEUES);
        pthread_mutex_lock(&fx->node.lock);
        /* Created oldest first: the file lists the newest first. */
        for (unsigned i = 0; i < N_QUEUES; i++)
                add_queue(fx, i, fx->real[N_QUEUES - 1 - i].mqd[0]);
        emu_render_process(&fx->process);
        emu_render_debugfs(&fx->node);
        pthread_mutex_unlock(&fx->node.lock);
        *state = fx;
        return 0;
}

static int teardown(void **state)
{
        struct fixture *fx = *state;
        char cmd[PATH_MAX + 16];

        pthread_mutex_lock(&fx->node.lock);
        for (unsigned i = 0; i < N_QUEUES; i++)
                emu_gpu_queue_destroyed(&fx->queues[i]);
        pthread_mutex_unlock(&fx->node.lock);
        emu_gpu_stop(&fx->node);
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fx->root);
        assert_int_equal(system(cmd), 0);
        pthread_mutex_destroy(&fx->node.lock);
        free(fx);
        return 0;
}

static void test_mqds_structure(void **state)
{
        struct fixture *fx = *state;
        _cleanup_free_ char *ours = rendered(fx, "sys/kernel/debug/kfd/mqds");
        _cleanup_free_ char *real = real_file("mi308x-mqds-5queues.txt");
        static char *our_lines[MAX_LINES], *real_lines[MAX_LINES];
        char header[64];
        size_t n_ours, n_real;

        n_ours = split_lines(ours, our_lines, MAX_LINES);
        n_real = split_lines(real, real_lines, MAX_LINES);
        /* 1 process line + 5 x (1 queue line + 4 XCC x 64 lines). */
        assert_int_equal(n_ours, 1 + N_QUEUES * (1 + N_XCC * 64));
        assert_int_equal(n_ours, n_real);
        snprintf(header, sizeof(header), "Process %d PASID 0x8001:", (int)getpid());
        assert_string_equal(our_lines[0], header);
        for (size_t i = 1; i < n_ours; i++) {
                /* Same line kinds at the same places; same offsets. */
                assert_int_equal(strlen(our_lines[i]), strlen(real_lines[i]));
                assert_memory_equal(our_lines[i], real_lines[i], strncmp(real_lines[i], "  C", 3) == 0 ? strlen(real_lines[i]) : 14);
        }
}

/* Dwords the CP writes back when it unmaps a queue, or that kfdemu
 * invents (the MQD's GART address) or orders differently from the DKMS
 * driver of the capture (logical XCC ids): not compared. */
static bool driver_written(unsigned dw)
{
        static const unsigned skipped[] = { 1, 39, 42, 88, 89, 90, 91, 96, 114, 128, 131, 138, 146, 147, 148,
                                            157, 158, 159, 168, 169, 182, 185, 227, 320, 321, 322, 323 };

        for (unsigned i = 0; i < sizeof(skipped) / sizeof(skipped[0]); i++)
                if (skipped[i] == dw)
                        return false;
        return true;
}

static void test_mqd_dwords_match_the_real_dump(void **state)
{
        struct fixture *fx = *state;
        _cleanup_free_ char *ours = rendered(fx, "sys/kernel/debug/kfd/mqds");
        static struct real_queue parsed[N_QUEUES];

        parse_mqds(ours, parsed, N_QUEUES);
        for (unsigned q = 0; q < N_QUEUES; q++)
                for (unsigned x = 0; x < N_XCC; x++)
                        for (unsigned dw = 0; dw < MQD_DWORDS; dw++) {
                                uint32_t real = fx->real[q].mqd[x][dw], our = parsed[q].mqd[x][dw];

                                if (!driver_written(dw))
                                        continue;
                                /* Live doorbell/queue-control bits of queues the CP saved. */
                                if (dw == 143)
                                        real &= ~0x60000000u;
                                if (dw == 145)
                                        real &= ~0x8000u;
                                if (dw == 160)
                                        real &= ~0x40100000u;
                                if (real != our)
                                        fail_msg("queue %u xcc %u dword %u: real %08x, rendered %08x", q, x, dw, real, our);
                        }
        /* Each queue's MQD copies start on its own logical XCC, in turn. */
        for (unsigned q = 0; q < N_QUEUES; q++)
                for (unsigned x = 0; x < N_XCC; x++)
                        assert_int_equal(parsed[q].mqd[x][39], (parsed[q].mqd[0][39] + x) % N_XCC);
}

/* The lines of the first node's section of an hqds file. */
static size_t first_node(char *text, char **lines)
{
        size_t n = split_lines(text, lines, MAX_LINES);

        for (size_t i = 1; i < n; i++)
                if (strncmp(lines[i], "Node ", 5) == 0)
                        return i;
        return n;
}

static void test_hqds_layout_matches_the_real_dump(void **state)
{
        struct fixture *fx = *state;
        _cleanup_free_ char *ours = rendered(fx, "sys/kernel/debug/kfd/hqds");
        _cleanup_free_ char *real = real_file("mi308x-hqds-5queues.txt");
        static char *our_lines[MAX_LINES], *real_lines[MAX_LINES];
        size_t n_ours = first_node(ours, our_lines), n_real = first_node(real, real_lines);
        char *current = NULL;
        unsigned n_rings_checked = 0;

        assert_int_equal(n_ours, n_real);
        assert_string_equal(our_lines[0], "Node 1, gpu_id f7bc:");
        for (size_t i = 1; i < n_ours; i++) {
                bool is_register_line = strncmp(real_lines[i], "    ", 4) == 0;
                unsigned ring_real, ring_ours;

                if (!is_register_line) {
                        /* Section headers: HIQ per XCC, CP slots, SDMA RLCs. */
                        assert_string_equal(our_lines[i], real_lines[i]);
                        current = real_lines[i];
                        continue;
                }
                /* Same registers at the same addresses, same count per line. */
                assert_int_equal(strlen(our_lines[i]), strlen(real_lines[i]));
                assert_memory_equal(our_lines[i], real_lines[i], 14);
                if (strstr(current, "SDMA") || strstr(current, "HIQ"))
                        continue;
                /* CP slots: the same queue (by ring base) in the same slot,
                 * and the same empty slots. */
                if (strstr(real_lines[i], ": ") && strncmp(real_lines[i] + 9, "934", 3) == 0) {
                        assert_int_equal(sscanf(real_lines[i] + 14, "%x", &ring_real), 1);
                        assert_int_equal(sscanf(our_lines[i] + 14, "%x", &ring_ours), 1);
                        assert_int_equal(ring_ours, ring_real);
                        n_rings_checked++;
                }
        }
        /* 4 XCCs x 24 KFD slots, 5 of them holding the queues. */
        assert_int_equal(n_rings_checked, N_XCC * 24);
}

static void test_sysfs_proc(void **state)
{
        struct fixture *fx = *state;
        char path[256];
        _cleanup_free_ char *pasid = NULL, *type = NULL, *size = NULL, *gpuid = NULL, *occ = NULL;

        snprintf(path, sizeof(path), "sys/class/kfd/kfd/proc/%d/pasid", (int)getpid());
        pasid = rendered(fx, path);
        assert_string_equal(pasid, "32769\n");
        snprintf(path, sizeof(path), "sys/class/kfd/kfd/proc/%d/queues/4/type", (int)getpid());
        type = rendered(fx, path);
        assert_string_equal(type, "0");
        snprintf(path, sizeof(path), "sys/class/kfd/kfd/proc/%d/queues/4/size", (int)getpid());
        size = rendered(fx, path);
        assert_string_equal(size, "1048576");
        snprintf(path, sizeof(path), "sys/class/kfd/kfd/proc/%d/queues/0/gpuid", (int)getpid());
        gpuid = rendered(fx, path);
        assert_string_equal(gpuid, "63420");
        snprintf(path, sizeof(path), "sys/class/kfd/kfd/proc/%d/stats_63420/cu_occupancy", (int)getpid());
        occ = rendered(fx, path);
        assert_string_equal(occ, "0\n");
}

static void test_destroyed_queue_leaves_sysfs(void **state)
{
        struct fixture *fx = *state;
        char path[PATH_MAX * 2];
        struct emu_queue *newest = fx->process.queues;

        pthread_mutex_lock(&fx->node.lock);
        emu_gpu_queue_destroyed(newest);
        fx->process.queues = newest->next;
        emu_render_process(&fx->process);
        emu_render_debugfs(&fx->node);
        fx->process.queues = newest;
        pthread_mutex_unlock(&fx->node.lock);
        snprintf(path, sizeof(path), "%s/sys/class/kfd/kfd/proc/%d/queues/%u", fx->root, (int)getpid(), newest->id);
        assert_int_equal(access(path, F_OK), -1);
        snprintf(path, sizeof(path), "%s/sys/class/kfd/kfd/proc/%d/queues/%u", fx->root, (int)getpid(), newest->id - 1);
        assert_int_equal(access(path, F_OK), 0);
}

static void test_removed_process_leaves_no_trace(void **state)
{
        struct fixture *fx = *state;
        char path[PATH_MAX * 2];
        struct dirent *de;
        unsigned entries = 0;
        DIR *dir;

        pthread_mutex_lock(&fx->node.lock);
        emu_render_process_removed(&fx->node, fx->process.tgid);
        pthread_mutex_unlock(&fx->node.lock);
        /* Nothing, not even a half-removed tree, under proc/. */
        snprintf(path, sizeof(path), "%s/sys/class/kfd/kfd/proc", fx->root);
        dir = opendir(path);
        assert_non_null(dir);
        while ((de = readdir(dir)))
                entries += de->d_name[0] != '.';
        closedir(dir);
        assert_int_equal(entries, 0);
}

/* kfd_init() -> kfd_procfs_init(): proc/ exists from module load, empty
 * until a process opens /dev/kfd. A node of its own, with no process. */
static void test_proc_exists_at_load(void **state)
{
        struct emu_node *node = calloc(1, sizeof(*node));
        char path[PATH_MAX + 64], cmd[PATH_MAX + 16];
        struct dirent *de;
        struct stat st;
        unsigned entries = 0;
        DIR *dir;

        assert_non_null(node);
        snprintf(node->cfg.root, sizeof(node->cfg.root), "/tmp/kfdemu-gpu-render-load-%d", (int)getpid());
        assert_int_equal(mkdir(node->cfg.root, 0700), 0);
        pthread_mutex_init(&node->lock, NULL);
        node->n_gpus = 1;
        node->cfg.n_gpus = 1;
        node->gpus[0].node = node;
        emu_gpu_config_default(0, &node->gpus[0].cfg);
        assert_null(node->processes);
        /* renders the topology (emu_render_topology), as at module load */
        assert_int_equal(emu_gpu_start(node), 0);

        snprintf(path, sizeof(path), "%s/sys/class/kfd/kfd/proc", node->cfg.root);
        assert_int_equal(stat(path, &st), 0);
        assert_true(S_ISDIR(st.st_mode));
        dir = opendir(path);
        assert_non_null(dir);
        while ((de = readdir(dir)))
                entries += de->d_name[0] != '.';
        closedir(dir);
        assert_int_equal(entries, 0);

        emu_gpu_stop(node);
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", node->cfg.root);
        assert_int_equal(system(cmd), 0);
        pthread_mutex_destroy(&node->lock);
        free(node);
}

static void test_topology(void **state)
{
        struct fixture *fx = *state;
        _cleanup_free_ char *props = rendered(fx, "sys/class/kfd/kfd/topology/nodes/1/properties");
        _cleanup_free_ char *gpu_id = rendered(fx, "sys/class/kfd/kfd/topology/nodes/1/gpu_id");
        _cleanup_free_ char *cpu_id = rendered(fx, "sys/class/kfd/kfd/topology/nodes/0/gpu_id");
        _cleanup_free_ char *policy = rendered(fx, "sys/module/amdgpu/parameters/sched_policy");
        unsigned capability = 0;
        const char *cap;

        assert_string_equal(gpu_id, "63420\n");
        assert_string_equal(cpu_id, "0\n");
        assert_string_equal(policy, "0\n");
        assert_non_null(strstr(props, "\ngfx_target_version 90402\n"));
        assert_non_null(strstr(props, "\nnum_xcc 4\n"));
        assert_non_null(strstr(props, "\ndrm_render_minor 128\n"));
        assert_int_equal(strncmp(props, "cpu_cores_count 0\nsimd_count 320\n", 33), 0);
        cap = strstr(props, "\ncapability ");
        assert_non_null(cap);
        assert_int_equal(sscanf(cap, "\ncapability %u", &capability), 1);
        assert_true(capability & 0x20000000u);
        assert_true(capability & 0x8000u);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_mqds_structure, setup, teardown),
                cmocka_unit_test_setup_teardown(test_mqd_dwords_match_the_real_dump, setup, teardown),
                cmocka_unit_test_setup_teardown(test_hqds_layout_matches_the_real_dump, setup, teardown),
                cmocka_unit_test_setup_teardown(test_sysfs_proc, setup, teardown),
                cmocka_unit_test_setup_teardown(test_destroyed_queue_leaves_sysfs, setup, teardown),
                cmocka_unit_test_setup_teardown(test_removed_process_leaves_no_trace, setup, teardown),
                cmocka_unit_test_setup_teardown(test_topology, setup, teardown),
                cmocka_unit_test(test_proc_exists_at_load),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
