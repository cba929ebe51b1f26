/* SPDX-License-Identifier: MIT */
/*
 * The emulated runtime and kfdemu-app inside an emulated node
 * (kfdemu-run --gpus 2 -- test-app-queues KFDEMU_APP):
 *   - queues created on two GPUs appear in /sys/class/kfd/kfd/proc/<pid>/queues
 *     with their GPU and ring size, and go away when destroyed;
 *   - dispatched kernels complete: the GPU moves read_dispatch_id in our memory;
 *   - kfdemu-app makes progress, reports it, and its CLR log lines name the
 *     addresses its queues really have;
 *   - SIGTERM ends kfdemu-app cleanly and every signal reaches its log;
 *   - its lifecycle events: a late queue, a queue destroyed mid-run, a
 *     re-exec, a run without RUNTIME_ENABLE;
 *   - with HSA_USERPTR_FOR_PAGED_MEM=0 its amd_queue_t is a GTT BO that
 *     process_vm_readv cannot read and /proc/PID/mem can, and the GPU still
 *     runs its packets; without, plain memory both read.
 * With a second argument, `mes`, on a node whose GPU 0 schedules with MES
 * (kfdemu-run --gpus 2 --config tests/conformance/mes.conf): GPU 0's amd_queue_t is
 * in GTT without any environment, GPU 1's (HWS) in paged memory.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "cleanup.h"
#include "emu-runtime.h"

#define SECOND_NS 1000000000LL

/* The kfdemu-app binary under test, from the command line. */
static const char *kfdemu_app_path;

static int64_t now_monotonic_ns(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * SECOND_NS + ts.tv_nsec;
}

static void runtime_up(struct emu_runtime **ret)
{
        struct emu_runtime_options ro = {.runtime_enable = true};

        assert_int_equal(emu_runtime_open(&ro, ret), 0);
        assert_int_equal(emu_runtime_gpu_count(*ret), 2);
}

static int read_sysfs_u64(pid_t pid, uint32_t queue_id, const char *file, uint64_t *ret)
{
        char path[256];
        _cleanup_fclose_ FILE *f = NULL;
        unsigned long long v;

        snprintf(path, sizeof(path), "/sys/class/kfd/kfd/proc/%d/queues/%u/%s", (int)pid, queue_id, file);
        f = fopen(path, "re");
        if (!f)
                return -errno;
        if (fscanf(f, "%llu", &v) != 1)
                return -EBADMSG;
        *ret = v;
        return 0;
}

static unsigned count_sysfs_queues(pid_t pid)
{
        char path[128];
        DIR *d;
        struct dirent *de;
        unsigned n = 0;

        snprintf(path, sizeof(path), "/sys/class/kfd/kfd/proc/%d/queues", (int)pid);
        d = opendir(path);
        if (!d)
                return 0;
        while ((de = readdir(d)))
                n += de->d_name[0] >= '0' && de->d_name[0] <= '9';
        closedir(d);
        return n;
}

static void test_queues_appear_in_sysfs(void **state)
{
        struct emu_runtime *rt;
        struct emu_aql_queue *queues[4];
        struct emu_queue_identity id;

        runtime_up(&rt);
        for (unsigned i = 0; i < 4; i++) {
                struct emu_queue_options qo = {
                        .gpu_id = emu_runtime_gpu(rt, i % 2)->gpu_id,
                        .priority = EMU_QUEUE_DEFAULT_PRIORITY,
                        .ring_packets = 256,
                };

                assert_int_equal(emu_aql_queue_create(rt, &qo, &queues[i]), 0);
        }
        assert_int_equal(count_sysfs_queues(getpid()), 4);
        for (unsigned i = 0; i < 4; i++) {
                uint64_t gpuid, size;

                emu_aql_queue_identity(queues[i], &id);
                assert_int_equal(read_sysfs_u64(getpid(), id.queue_id, "gpuid", &gpuid), 0);
                assert_int_equal(gpuid, emu_runtime_gpu(rt, i % 2)->gpu_id);
                assert_int_equal(read_sysfs_u64(getpid(), id.queue_id, "size", &size), 0);
                assert_int_equal(size, 256 * 64);
                /* KFD was given the amd_queue_t's own index fields. */
                assert_int_equal(id.read_pointer - id.amd_queue, 0x80);
                assert_int_equal(id.write_pointer - id.amd_queue, 0x38);
        }
        for (unsigned i = 0; i < 4; i++)
                assert_int_equal(emu_aql_queue_destroy(queues[i]), 0);
        assert_int_equal(count_sysfs_queues(getpid()), 0);
        assert_int_equal(emu_runtime_close(rt), 0);
}

static void test_dispatches_complete(void **state)
{
        struct emu_runtime *rt;
        struct emu_aql_queue *q;
        struct emu_queue_options qo = {.priority = 7, .ring_packets = 16};
        struct emu_kernel_launch launch = {.duration_ns = 100000, .workgroups = 8, .workgroup_size = 64};
        struct emu_dispatch_record rec;

        runtime_up(&rt);
        qo.gpu_id = emu_runtime_gpu(rt, 1)->gpu_id;
        assert_int_equal(emu_aql_queue_create(rt, &qo, &q), 0);
        /* More packets than the ring holds: the producer waits for room. */
        for (unsigned i = 0; i < 40; i++) {
                int r;

                while ((r = emu_aql_queue_dispatch(q, &launch, &rec)) == -EAGAIN)
                        assert_int_equal(emu_aql_queue_wait(q, emu_aql_queue_write_index(q) - 16, 5 * SECOND_NS), 0);
                assert_int_equal(r, 0);
                assert_int_equal(rec.index, i);
        }
        assert_int_equal(emu_aql_queue_wait(q, 39, 5 * SECOND_NS), 0);
        assert_int_equal(emu_aql_queue_read_index(q), 40);
        assert_int_equal(emu_aql_queue_write_index(q), 40);
        assert_int_equal(emu_aql_queue_destroy(q), 0);
        assert_int_equal(emu_runtime_close(rt), 0);
}

/* A barrier-AND on a signal the host has not set holds the read index
 * below the write index while the GPU is idle; setting the signal lets it
 * through. */
static void test_barrier_waits_for_host_signal(void **state)
{
        struct emu_runtime *rt;
        struct emu_aql_queue *q;
        struct emu_queue_options qo = {.priority = 7, .ring_packets = 16};
        struct emu_amd_signal kernel_done, host = {.kind = EMU_AMD_SIGNAL_KIND_USER, .value = 1};
        struct emu_kernel_launch launch = {.duration_ns = 100000, .workgroups = 8, .workgroup_size = 64,
                                           .completion_signal = &kernel_done};
        uint64_t barrier;

        runtime_up(&rt);
        qo.gpu_id = emu_runtime_gpu(rt, 0)->gpu_id;
        assert_int_equal(emu_aql_queue_create(rt, &qo, &q), 0);
        assert_int_equal(emu_aql_queue_write_barrier_and(q, NULL, &barrier), -EINVAL);
        assert_int_equal(emu_aql_queue_write(q, &launch, NULL), 0);
        assert_int_equal(emu_aql_queue_write_barrier_and(q, &host, &barrier), 0);
        assert_int_equal(barrier, 1);
        emu_aql_queue_publish(q);
        assert_int_equal(emu_aql_queue_wait_signal(q, &kernel_done, 5 * SECOND_NS), 0);
        /* Many barrier polls later the GPU is idle and the barrier still waits. */
        assert_int_equal(emu_aql_queue_wait(q, barrier, 50 * 1000 * 1000), -ETIMEDOUT);
        assert_int_equal(emu_aql_queue_read_index(q), 1);
        assert_int_equal(emu_aql_queue_write_index(q), 2);
        __atomic_store_n(&host.value, 0, __ATOMIC_RELEASE);
        assert_int_equal(emu_aql_queue_wait(q, barrier, 5 * SECOND_NS), 0);
        assert_int_equal(emu_aql_queue_read_index(q), 2);
        assert_int_equal(emu_aql_queue_destroy(q), 0);
        assert_int_equal(emu_runtime_close(rt), 0);
}

struct app_run {
        pid_t pid;
        FILE *out;            /* the app's stdout */
};

static void app_start(struct app_run *run, char *const extra[])
{
        char *argv[32] = {(char *)kfdemu_app_path};
        int pipefd[2];
        int n = 1;

        for (; extra[n - 1]; n++)
                argv[n] = extra[n - 1];
        argv[n] = NULL;
        assert_int_equal(pipe2(pipefd, O_CLOEXEC), 0);
        run->pid = fork();
        assert_true(run->pid >= 0);
        if (run->pid == 0) {
                dup2(pipefd[1], STDOUT_FILENO);
                execv(kfdemu_app_path, argv);
                _exit(127);
        }
        close(pipefd[1]);
        run->out = fdopen(pipefd[0], "r");
        assert_non_null(run->out);
}

/* Reads stdout up to the READY line; returns the queue count it announced. */
static unsigned app_wait_ready(struct app_run *run)
{
        char line[256];
        int pid;
        unsigned queues;

        assert_non_null(fgets(line, sizeof(line), run->out));
        assert_int_equal(sscanf(line, "READY pid=%d queues=%u", &pid, &queues), 2);
        assert_int_equal(pid, run->pid);
        return queues;
}

/* Waits for exit and returns the last line of stdout parsed as JSON. */
static json_object *app_finish(struct app_run *run, int expected_status)
{
        char line[65536], last[65536] = "";
        int status;

        while (fgets(line, sizeof(line), run->out))
                memcpy(last, line, sizeof(last));
        fclose(run->out);
        assert_int_equal(waitpid(run->pid, &status, 0), run->pid);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), expected_status);
        return json_tokener_parse(last);
}

static uint64_t json_u64(json_object *o, const char *key)
{
        json_object *v;

        assert_true(json_object_object_get_ex(o, key, &v));
        return json_object_get_uint64(v);
}

static const char *json_str(json_object *o, const char *key)
{
        json_object *v;

        assert_true(json_object_object_get_ex(o, key, &v));
        return json_object_get_string(v);
}

static bool file_has(const char *path, const char *needle)
{
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        char *line = NULL;
        size_t cap = 0;
        bool found = false;

        assert_non_null(f);
        while (!found && getline(&line, &cap, f) >= 0)
                found = strstr(line, needle) != NULL;
        free(line);
        return found;
}

/* A fresh, empty file of ours for the app to write to. */
static void scratch_file(const char *what, char *path, size_t size)
{
        const char *dir = getenv("TMPDIR");
        int fd;

        snprintf(path, size, "%s/kfdemu-app-test-%d-%s", dir && *dir ? dir : "/tmp", (int)getpid(), what);
        unlink(path);
        fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        close(fd);
}

static void test_app_makes_progress_and_logs_its_addresses(void **state)
{
        char log_path[128], times_path[128];
        struct app_run run;
        json_object *report, *queues;
        uint64_t dispatches = 0;
        _cleanup_fclose_ FILE *times = NULL;
        long long ns;
        int pid;
        unsigned gpu_id, queue_id;
        unsigned long long index;

        scratch_file("log", log_path, sizeof(log_path));
        scratch_file("times", times_path, sizeof(times_path));
        app_start(&run, (char *[]){"--queues", "3", "--continuous", "--kernel-us", "200", "--duration", "0.4",
                                   "--json", "--amd-log-level", "4", "--amd-log-file", log_path,
                                   "--dispatch-times", times_path, NULL});
        assert_int_equal(app_wait_ready(&run), 3);
        report = app_finish(&run, 0);
        assert_non_null(report);
        assert_true(json_u64(report, "kernels") > 0);
        assert_true(json_u64(report, "requests") > 0);
        assert_true(json_object_object_get_ex(report, "queues", &queues));
        assert_int_equal(json_object_array_length(queues), 3);
        for (size_t i = 0; i < 3; i++) {
                json_object *q = json_object_array_get_idx(queues, i);
                char created[256], dispatch[256];

                assert_true(json_u64(q, "read_dispatch_id") > 0);
                snprintf(created, sizeof(created), "Created SWq=%s to map on HWq=%s with size 1024",
                         json_str(q, "amd_queue"), json_str(q, "ring_base_address"));
                snprintf(dispatch, sizeof(dispatch), "SWq=%s, HWq=%s, id=%" PRIu64 ", Dispatch Header = 0xb02",
                         json_str(q, "amd_queue"), json_str(q, "ring_base_address"), json_u64(q, "hsa_queue_id"));
                assert_true(file_has(log_path, created));
                assert_true(file_has(log_path, dispatch));
        }
        /* Every dispatch has its publication time, completed or not. */
        times = fopen(times_path, "re");
        assert_non_null(times);
        while (fscanf(times, "%lld %d %u %u %llu", &ns, &pid, &gpu_id, &queue_id, &index) == 5) {
                assert_int_equal(pid, run.pid);
                assert_true(ns > 0);
                dispatches++;
        }
        assert_true(dispatches >= json_u64(report, "kernels"));
        json_object_put(report);
        unlink(log_path);
        unlink(times_path);
}

static double json_latency(json_object *report, const char *which, const char *key)
{
        json_object *lat, *v;

        assert_true(json_object_object_get_ex(report, which, &lat));
        assert_true(json_object_object_get_ex(lat, key, &v));
        return json_object_get_double(v);
}

/* The latency log has a line per completed request; its model-time latency
 * (the GPU's timestamps) is at least the request's GPU time, at most what
 * the application saw on the wall clock, and the report agrees. */
static void test_app_latency_log_has_model_and_wall_time(void **state)
{
        char log_path[128], line[256];
        struct app_run run;
        json_object *report;
        _cleanup_fclose_ FILE *log = NULL;
        long long scheduled, model, wall, submitted, started;
        uint64_t lines = 0;

        scratch_file("latency", log_path, sizeof(log_path));
        app_start(&run, (char *[]){"--rate", "50", "--kernels-per-request", "4", "--kernel-us", "300", "--duration",
                                   "0.5", "--json", "--latency-log", log_path, NULL});
        assert_int_equal(app_wait_ready(&run), 1);
        report = app_finish(&run, 0);
        assert_non_null(report);
        log = fopen(log_path, "re");
        assert_non_null(log);
        assert_non_null(fgets(line, sizeof(line), log));
        assert_true(line[0] == '#');
        while (fscanf(log, "%lld %lld %lld %lld %lld", &scheduled, &model, &wall, &submitted, &started) == 5) {
                assert_true(scheduled > 0);
                assert_true(submitted >= 0);
                assert_true(started >= submitted);
                /* Four kernels of 300 us alone on the GPU, back to back. */
                assert_true(model - started >= 4 * 300000);
                assert_true(wall >= model);
                lines++;
        }
        assert_true(lines > 0);
        assert_int_equal(lines, json_u64(report, "requests"));
        assert_true(json_latency(report, "latency_ms", "p50") >= 1.2);
        assert_true(json_latency(report, "wall_latency_ms", "max") >= json_latency(report, "latency_ms", "max"));
        json_object_put(report);
        unlink(log_path);
}

/* Counts the lines of a dispatch-times file and how many distinct
 * publication times they carry. */
static void count_publications(const char *path, uint64_t *ret_lines, uint64_t *ret_times)
{
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        long long ns, last = -1;
        int pid;
        unsigned gpu_id, queue_id;
        unsigned long long index;

        assert_non_null(f);
        *ret_lines = *ret_times = 0;
        while (fscanf(f, "%lld %d %u %u %llu", &ns, &pid, &gpu_id, &queue_id, &index) == 5) {
                (*ret_lines)++;
                *ret_times += ns != last;
                last = ns;
        }
}

/* Runs a closed loop of K-kernel requests on a 16-packet ring with one
 * doorbell per request; returns the requests done and, from the
 * dispatch-times file, its lines and distinct publication times. */
static uint64_t run_doorbell_per_request(char *kernels, char *kernel_us, uint64_t *ret_lines, uint64_t *ret_times)
{
        char times_path[128];
        struct app_run run;
        json_object *report;
        uint64_t requests;

        scratch_file("times", times_path, sizeof(times_path));
        app_start(&run, (char *[]){"--continuous", "--kernels-per-request", kernels, "--kernel-us", kernel_us,
                                   "--ring-packets", "16", "--duration", "0.3", "--doorbell-per-request",
                                   "--dispatch-times", times_path, "--json", NULL});
        assert_int_equal(app_wait_ready(&run), 1);
        report = app_finish(&run, 0);
        assert_non_null(report);
        requests = json_u64(report, "requests");
        json_object_put(report);
        count_publications(times_path, ret_lines, ret_times);
        unlink(times_path);
        return requests;
}

/* One doorbell per request: a request's packets share one publication;
 * a request longer than the ring is published in parts and still ends. */
static void test_app_doorbell_per_request(void **state)
{
        uint64_t lines, times;

        assert_true(run_doorbell_per_request("8", "50", &lines, &times) > 0);
        assert_int_equal(lines, 8 * times);
        assert_true(run_doorbell_per_request("40", "20", &lines, &times) > 0);
        assert_true(times > lines / 40);
}

/* --host-wait-us: each request ends with a barrier the host releases after
 * the wait, so requests take at least that long each, every barrier is
 * consumed in the end, and the latency excludes the wait. */
static void test_app_host_wait(void **state)
{
        struct app_run run;
        json_object *report, *queues, *queue;
        int64_t start = now_monotonic_ns();

        app_start(&run, (char *[]){"--continuous", "--requests", "4", "--kernels-per-request", "2", "--kernel-us",
                                   "300", "--host-wait-us", "40000", "--json", NULL});
        assert_int_equal(app_wait_ready(&run), 1);
        report = app_finish(&run, 0);
        assert_non_null(report);
        assert_true(now_monotonic_ns() - start >= 4 * 40 * 1000 * 1000);
        assert_int_equal(json_u64(report, "requests"), 4);
        assert_true(json_object_object_get_ex(report, "queues", &queues));
        queue = json_object_array_get_idx(queues, 0);
        assert_int_equal(json_u64(queue, "write_dispatch_id"), 4 * 3);
        assert_int_equal(json_u64(queue, "read_dispatch_id"), 4 * 3);
        assert_true(json_latency(report, "latency_ms", "max") < 40.0);
        json_object_put(report);
}

/* --queue-during-wait: a kernel is written behind each barrier during the
 * wait, to run after the release; the requests are as before. */
static void test_app_queue_during_wait(void **state)
{
        struct app_run run;
        json_object *report, *queues, *queue;

        app_start(&run, (char *[]){"--continuous", "--requests", "3", "--kernel-us", "300", "--host-wait-us", "20000",
                                   "--queue-during-wait", "--json", NULL});
        assert_int_equal(app_wait_ready(&run), 1);
        report = app_finish(&run, 0);
        assert_non_null(report);
        assert_int_equal(json_u64(report, "requests"), 3);
        assert_true(json_object_object_get_ex(report, "queues", &queues));
        queue = json_object_array_get_idx(queues, 0);
        /* per request: its kernel, its barrier, the kernel queued behind it; every barrier consumed (the
         * last kernel behind one may still run when the job ends) */
        assert_int_equal(json_u64(queue, "write_dispatch_id"), 3 * 3);
        assert_true(json_u64(queue, "read_dispatch_id") >= 3 * 3 - 1);
        json_object_put(report);
}

static void test_app_bad_latency_log_path_is_explained(void **state)
{
        struct app_run run;

        app_start(&run, (char *[]){"--latency-log", "/nonexistent-dir/latency", NULL});
        /* Exit status 1, as for any setup failure (kfdemu-app(1)), and no report. */
        assert_null(app_finish(&run, 1));
}

static void test_app_sigterm_ends_cleanly(void **state)
{
        char sig_path[128];
        struct app_run run;
        json_object *report;

        scratch_file("signals", sig_path, sizeof(sig_path));
        app_start(&run, (char *[]){"--queues", "2", "--gpu", "1", "--kernel-us", "500", "--json", "--signal-log",
                                   sig_path, NULL});
        assert_int_equal(app_wait_ready(&run), 2);
        assert_int_equal(count_sysfs_queues(run.pid), 2);
        assert_int_equal(kill(run.pid, SIGUSR2), 0);
        assert_int_equal(kill(run.pid, SIGTERM), 0);
        report = app_finish(&run, 0);
        assert_non_null(report);
        assert_true(json_object_get_boolean(json_object_object_get(report, "final")));
        assert_true(file_has(sig_path, "12\n"));
        assert_true(file_has(sig_path, "15\n"));
        json_object_put(report);
        unlink(sig_path);
}

/* --threads: more threads that take signals, joined at a clean exit; a
 * sigqueue'd signal is logged with its code and value. */
static void test_app_idle_threads_and_a_queued_signal(void **state)
{
        char sig_path[128], expected[64];
        struct app_run run;
        json_object *report;

        scratch_file("queued-signals", sig_path, sizeof(sig_path));
        app_start(&run, (char *[]){"--gpu", "1", "--kernel-us", "500", "--json", "--threads", "2", "--signal-log",
                                   sig_path, NULL});
        assert_int_equal(app_wait_ready(&run), 1);
        assert_int_equal(sigqueue(run.pid, SIGRTMIN, (union sigval){.sival_int = 5}), 0);
        assert_int_equal(kill(run.pid, SIGTERM), 0);
        report = app_finish(&run, 0);
        assert_non_null(report);
        assert_true(json_object_get_boolean(json_object_object_get(report, "final")));
        snprintf(expected, sizeof(expected), "%d code=%d value=5", SIGRTMIN, SI_QUEUE);
        assert_true(file_has(sig_path, expected));
        json_object_put(report);
        unlink(sig_path);
}

static void sleep_s(double s)
{
        struct timespec ts = {.tv_sec = (time_t)s, .tv_nsec = (long)((s - (double)(time_t)s) * 1e9)};

        nanosleep(&ts, NULL);
}

static void test_app_late_queue_then_destroy(void **state)
{
        struct app_run run;
        json_object *report, *queues;

        /* Wide margins around each event: sanitizers and loaded CI slow things down. */
        app_start(&run, (char *[]){"--queues", "2", "--kernel-us", "300", "--late-queue-after", "0.1",
                                   "--destroy-queue-after", "0.7", "--duration", "2", "--json", NULL});
        assert_int_equal(app_wait_ready(&run), 2);
        sleep_s(0.4);
        assert_int_equal(count_sysfs_queues(run.pid), 3);
        sleep_s(0.6);
        assert_int_equal(count_sysfs_queues(run.pid), 2);
        report = app_finish(&run, 0);
        assert_non_null(report);
        assert_true(json_object_object_get_ex(report, "queues", &queues));
        assert_int_equal(json_object_array_length(queues), 3);
        /* The late queue worked too. */
        assert_true(json_u64(json_object_array_get_idx(queues, 2), "requests") > 0);
        json_object_put(report);
}

static void test_app_exec_keeps_pid(void **state)
{
        struct app_run run;
        json_object *report;

        app_start(&run, (char *[]){"--exec-after", "0.1", "--duration", "0.2", "--json", NULL});
        assert_int_equal(app_wait_ready(&run), 1);
        /* The re-executed image sets up again under the same pid. */
        assert_int_equal(app_wait_ready(&run), 1);
        report = app_finish(&run, 0);
        assert_non_null(report);
        assert_int_equal(json_u64(report, "pid"), run.pid);
        json_object_put(report);
}

static void test_app_without_runtime_enable(void **state)
{
        struct app_run run;
        json_object *report;

        app_start(&run, (char *[]){"--no-runtime-enable", "--requests", "5", "--kernel-us", "100", "--json", NULL});
        assert_int_equal(app_wait_ready(&run), 1);
        report = app_finish(&run, 0);
        assert_non_null(report);
        assert_false(json_object_get_boolean(json_object_object_get(report, "runtime_enabled")));
        assert_int_equal(json_u64(report, "requests"), 5);
        json_object_put(report);
}

/* --churn: memory and queue cycles beside the job, which goes on; the
 * churn's queues come and go, the job's stays. */
/* The next report line (SIGUSR1) as JSON. */
static json_object *app_report_now(struct app_run *run)
{
        char line[65536];

        assert_int_equal(kill(run->pid, SIGUSR1), 0);
        assert_non_null(fgets(line, sizeof(line), run->out));
        return json_tokener_parse(line);
}

static uint64_t read_proc_mem_u64(pid_t pid, uint64_t address)
{
        char path[64];
        _cleanup_close_ int fd = -1;
        uint64_t v = 0;

        snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        assert_int_equal(pread(fd, &v, sizeof(v), (off_t)address), (ssize_t)sizeof(v));
        return v;
}

/* One queue of kfdemu-app run with `userptr_for_paged_mem` as its
 * environment's HSA_USERPTR_FOR_PAGED_MEM (NULL: unset): where its
 * amd_queue_t lives, whether process_vm_readv reads its read index, and
 * that /proc/PID/mem sees the GPU move it. */
static void check_amd_queue_memory(const char *gpu, const char *userptr_for_paged_mem, const char *want_memory,
                                   bool want_readv)
{
        struct app_run run;
        json_object *report, *queues, *q;
        uint64_t read_pointer, first, v = 0;
        struct iovec local = {&v, sizeof(v)}, remote;
        ssize_t n;
        int64_t deadline;

        if (userptr_for_paged_mem)
                assert_int_equal(setenv("HSA_USERPTR_FOR_PAGED_MEM", userptr_for_paged_mem, 1), 0);
        app_start(&run, (char *[]){"--queues", "1", "--gpu", (char *)gpu, "--continuous", "--kernel-us", "200",
                                   "--json", NULL});
        assert_int_equal(unsetenv("HSA_USERPTR_FOR_PAGED_MEM"), 0);
        assert_int_equal(app_wait_ready(&run), 1);

        report = app_report_now(&run);
        assert_non_null(report);
        assert_true(json_object_object_get_ex(report, "queues", &queues));
        q = json_object_array_get_idx(queues, 0);
        assert_string_equal(json_str(q, "amd_queue_memory"), want_memory);
        read_pointer = strtoull(json_str(q, "read_pointer_address"), NULL, 16);
        json_object_put(report);

        remote = (struct iovec){(void *)(uintptr_t)read_pointer, sizeof(v)};
        errno = 0;
        n = process_vm_readv(run.pid, &local, 1, &remote, 1, 0);
        if (want_readv) {
                assert_int_equal(n, (ssize_t)sizeof(v));
        } else {
                assert_int_equal(n, -1);
                assert_int_equal(errno, EFAULT);
        }
        /* The emulated GPU reads the ring and writes the read index through
         * its own view of the memory: the index moves. */
        first = read_proc_mem_u64(run.pid, read_pointer);
        deadline = now_monotonic_ns() + 5 * SECOND_NS;
        while (read_proc_mem_u64(run.pid, read_pointer) <= first + 2 && now_monotonic_ns() < deadline)
                usleep(1000);
        assert_true(read_proc_mem_u64(run.pid, read_pointer) > first + 2);

        assert_int_equal(kill(run.pid, SIGTERM), 0);
        report = app_finish(&run, 0);
        assert_non_null(report);
        assert_true(json_u64(report, "kernels") > 2);
        json_object_put(report);
}

static void test_app_amd_queue_in_gtt(void **state)
{
        check_amd_queue_memory("0", "0", "gtt", false);
}

static void test_app_amd_queue_in_paged_memory(void **state)
{
        check_amd_queue_memory("0", NULL, "paged", true);
        check_amd_queue_memory("0", "1", "paged", true);
}

/* ROCr's isMES(): an ISA major version of 11 or more. */
static void test_app_amd_queue_on_mes_gpu(void **state)
{
        check_amd_queue_memory("0", NULL, "gtt", false);
        check_amd_queue_memory("1", NULL, "paged", true);
}

static void test_app_churn(void **state)
{
        struct app_run run;
        json_object *report;

        app_start(&run, (char *[]){"--gpu", "1", "--kernel-us", "200", "--churn", "200", "--duration", "0.5", "--json",
                                   NULL});
        assert_int_equal(app_wait_ready(&run), 1);
        report = app_finish(&run, 0);
        assert_non_null(report);
        assert_true(json_u64(report, "requests") > 0);
        json_object_put(report);
}

int main(int argc, char **argv)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_queues_appear_in_sysfs),
                cmocka_unit_test(test_dispatches_complete),
                cmocka_unit_test(test_barrier_waits_for_host_signal),
                cmocka_unit_test(test_app_makes_progress_and_logs_its_addresses),
                cmocka_unit_test(test_app_latency_log_has_model_and_wall_time),
                cmocka_unit_test(test_app_bad_latency_log_path_is_explained),
                cmocka_unit_test(test_app_doorbell_per_request),
                cmocka_unit_test(test_app_host_wait),
                cmocka_unit_test(test_app_queue_during_wait),
                cmocka_unit_test(test_app_sigterm_ends_cleanly),
                cmocka_unit_test(test_app_idle_threads_and_a_queued_signal),
                cmocka_unit_test(test_app_late_queue_then_destroy),
                cmocka_unit_test(test_app_exec_keeps_pid),
                cmocka_unit_test(test_app_without_runtime_enable),
                cmocka_unit_test(test_app_churn),
                cmocka_unit_test(test_app_amd_queue_in_gtt),
                cmocka_unit_test(test_app_amd_queue_in_paged_memory),
        };

        const struct CMUnitTest mes_tests[] = {
                cmocka_unit_test(test_app_amd_queue_on_mes_gpu),
        };

        if (argc == 3 && strcmp(argv[2], "mes") == 0) {
                kfdemu_app_path = argv[1];
                return cmocka_run_group_tests(mes_tests, NULL, NULL);
        }
        if (argc != 2) {
                fprintf(stderr, "usage: kfdemu-run --gpus 2 -- %s KFDEMU_APP\n"
                                "       kfdemu-run --gpus 2 --config tests/conformance/mes.conf -- %s KFDEMU_APP mes\n",
                        argv[0], argv[0]);
                return 2;
        }
        kfdemu_app_path = argv[1];
        return cmocka_run_group_tests(tests, NULL, NULL);
}
