/* SPDX-License-Identifier: MIT */
/*
 * The daemon's two key figures on an emulated node (run under kfdemu-run):
 *   - reaction: from an online write-index move (kfdemu-app --dispatch-times,
 *     stamped just before the store) to gpreemptd issuing SUSPEND_QUEUES
 *     (its debug log, stamped just before the ioctl), over many events;
 *   - idle CPU: the daemon's utime+stime while it watches 8 idle online queues.
 *
 *   bench-reaction GPREEMPTD KFDEMU_APP [--events N] [--idle-seconds S]
 *                  [--online-processes P] [--queues Q] [--gpus G] [--json]
 * The idle phase watches P online processes of Q queues each, spread over G GPUs
 * (64 × 8 over 8 is evaluation.md's scale case; run under kfdemu-run --gpus 8).
 * Simulated: the figures are for kfdemu, not a real GPU.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_EVENTS 200000

static char dir[64];

static void die(const char *what)
{
        fprintf(stderr, "bench-reaction: %s\n", what);
        exit(1);
}

static void write_file(const char *name, const char *text)
{
        char path[256];
        FILE *f;

        snprintf(path, sizeof(path), "%s/%s", dir, name);
        f = fopen(path, "we");
        if (!f || fputs(text, f) < 0 || fclose(f) != 0)
                die("cannot write the configuration");
}

static pid_t spawn(const char *const *argv, const char *out_path)
{
        pid_t pid = fork();

        if (pid < 0)
                die("fork failed");
        if (pid == 0) {
                int fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

                prctl(PR_SET_PDEATHSIG, SIGKILL);
                dup2(fd, STDOUT_FILENO);
                dup2(fd, STDERR_FILENO);
                execv(argv[0], (char *const *)argv);
                _exit(127);
        }
        return pid;
}

static bool file_contains(const char *path, const char *text)
{
        static char buf[1 << 22];
        FILE *f = fopen(path, "re");
        size_t n;

        if (!f)
                return false;
        n = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[n] = '\0';
        return strstr(buf, text) != NULL;
}

static void wait_for(const char *path, const char *text, int seconds)
{
        for (int i = 0; i < seconds * 100; i++) {
                if (file_contains(path, text))
                        return;
                usleep(10000);
        }
        fprintf(stderr, "bench-reaction: \"%s\" never appeared in %s\n", text, path);
        exit(1);
}

static double cpu_seconds(pid_t pid)
{
        char path[64], buf[1024], *p;
        unsigned long utime, stime;
        FILE *f;

        snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
        f = fopen(path, "re");
        if (!f || !fgets(buf, sizeof(buf), f))
                die("cannot read the daemon's /proc stat");
        fclose(f);
        p = strrchr(buf, ')');
        /* after "pid (comm)": state is field 3, utime 14, stime 15 */
        if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &utime, &stime) != 2)
                die("cannot parse the daemon's /proc stat");
        return (double)(utime + stime) / (double)sysconf(_SC_CLK_TCK);
}

static int compare_i64(const void *a, const void *b)
{
        int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
        return x < y ? -1 : x > y;
}

static size_t read_numbers(const char *path, const char *marker, int64_t *out, size_t max)
{
        FILE *f = fopen(path, "re");
        char line[512];
        size_t n = 0;

        if (!f)
                die("cannot read a result file");
        while (n < max && fgets(line, sizeof(line), f)) {
                char *at = marker ? strstr(line, marker) : line;

                if (at)
                        out[n++] = strtoll(at + (marker ? strlen(marker) : 0), NULL, 10);
        }
        fclose(f);
        return n;
}

int main(int argc, char **argv)
{
        static int64_t writes[MAX_EVENTS * 2], issued[MAX_EVENTS], reaction[MAX_EVENTS];
        char log_path[128], offline_out[128], online_out[128], times_path[128], env_dir[160], env_run[160];
        char duration[32], rate[32];
        long events = 10000, idle_seconds = 60, online_processes = 1, queues = 8, gpus = 1;
        static pid_t idle_online[256];
        bool json = false;
        size_t n_writes, n_issued, n = 0;
        pid_t daemon, offline, online;
        double cpu0, cpu1;

        if (argc < 3) {
                fprintf(stderr, "usage: bench-reaction GPREEMPTD KFDEMU_APP [--events N] [--idle-seconds S] [--json]\n");
                return 2;
        }
        for (int i = 3; i < argc; i++) {
                if (strcmp(argv[i], "--events") == 0 && i + 1 < argc)
                        events = strtol(argv[++i], NULL, 10);
                else if (strcmp(argv[i], "--idle-seconds") == 0 && i + 1 < argc)
                        idle_seconds = strtol(argv[++i], NULL, 10);
                else if (strcmp(argv[i], "--online-processes") == 0 && i + 1 < argc)
                        online_processes = strtol(argv[++i], NULL, 10);
                else if (strcmp(argv[i], "--queues") == 0 && i + 1 < argc)
                        queues = strtol(argv[++i], NULL, 10);
                else if (strcmp(argv[i], "--gpus") == 0 && i + 1 < argc)
                        gpus = strtol(argv[++i], NULL, 10);
                else if (strcmp(argv[i], "--json") == 0)
                        json = true;
        }
        if (events < 1 || events > MAX_EVENTS || idle_seconds < 1 || online_processes < 1 || online_processes > 256 ||
            queues < 1 || queues > 64 || gpus < 1 || gpus > 16)
                die("--events must be 1..200000, --idle-seconds positive, --online-processes 1..256, "
                    "--queues 1..64, --gpus 1..16");

        /* mkdtemp's template: the name, then six 'X' it replaces */
        snprintf(dir, sizeof(dir), "/tmp/gpreempt-bench-%6s", "");
        memset(dir + strlen(dir) - 6, 'X', 6);
        if (!mkdtemp(dir))
                die("mkdtemp failed");
        snprintf(log_path, sizeof(log_path), "%s/daemon.log", dir);
        snprintf(offline_out, sizeof(offline_out), "%s/offline.out", dir);
        snprintf(online_out, sizeof(online_out), "%s/online.out", dir);
        snprintf(times_path, sizeof(times_path), "%s/dispatch-times", dir);
        write_file("gpreemptd.conf", "[Daemon]\nLogLevel=debug\nDiscoveryIntervalMs=20\n"
                                     "[Online]\nHoldOffMs=1\nCoalesceMs=0\n"
                                     "[Offline]\nMaxSuspendMs=3600000\nMinOfflineSharePercent=0\nShareWindowMs=3600000\n");
        {
                char path[256];

                snprintf(path, sizeof(path), "%s/workloads.d", dir);
                if (mkdir(path, 0755) < 0)
                        die("mkdir failed");
        }
        write_file("workloads.d/bench.conf", "[Workload]\nName=serve\nClass=online\nMatchCommandLine=*--rate*\n"
                                             "[Workload]\nName=train\nClass=offline\nMatchCommandLine=*--continuous*\n");
        snprintf(env_dir, sizeof(env_dir), "GPREEMPT_CONFIG_DIR=%s", dir);
        snprintf(env_run, sizeof(env_run), "GPREEMPT_RUNTIME_DIR=%s/run", dir);
        putenv(env_dir);
        putenv(env_run);

        daemon = spawn((const char *const[]){ argv[1], NULL }, log_path);
        wait_for(log_path, "running", 10);
        offline = spawn((const char *const[]){ argv[2], "--continuous", "--gpu", "0", "--kernel-us", "2000",
                                               "--report", "none", NULL },
                        offline_out);
        wait_for(log_path, "attached", 10);

        /* idle: online queues that never get work after the first request */
        snprintf(duration, sizeof(duration), "%ld", idle_seconds + 60);
        snprintf(rate, sizeof(rate), "%ld", queues);
        for (long i = 0; i < online_processes; i++) {
                char gpu[16], watching[64];

                snprintf(gpu, sizeof(gpu), "%ld", i % gpus);
                idle_online[i] = spawn((const char *const[]){ argv[2], "--rate", "0.001", "--queues", rate, "--gpu", gpu,
                                                              "--kernel-us", "100", "--duration", duration,
                                                              "--report", "none", NULL },
                                       online_out);
                snprintf(watching, sizeof(watching), "Process %d: watching %ld online queues", (int)idle_online[i],
                         queues);
                wait_for(log_path, watching, 30);
        }
        sleep(1); /* past the "recently busy" period of the first request */
        cpu0 = cpu_seconds(daemon);
        sleep((unsigned)idle_seconds);
        cpu1 = cpu_seconds(daemon);
        for (long i = 0; i < online_processes; i++) {
                kill(idle_online[i], SIGTERM);
                waitpid(idle_online[i], NULL, 0);
        }

        /* reaction: requests far enough apart that each one finds the GPU idle and resumed */
        snprintf(duration, sizeof(duration), "%.1f", (double)events / 200.0 + 0.5);
        online = spawn((const char *const[]){ argv[2], "--rate", "200", "--gpu", "0", "--kernel-us", "100",
                                              "--duration", duration, "--dispatch-times", times_path,
                                              "--report", "none", NULL },
                       online_out);
        waitpid(online, NULL, 0);
        kill(offline, SIGTERM);
        waitpid(offline, NULL, 0);
        kill(daemon, SIGTERM);
        waitpid(daemon, NULL, 0);

        n_writes = read_numbers(times_path, NULL, writes, MAX_EVENTS * 2);
        n_issued = read_numbers(log_path, "suspend issued at ", issued, MAX_EVENTS);
        qsort(writes, n_writes, sizeof(int64_t), compare_i64);
        /* each suspension answers the latest write before it */
        for (size_t i = 0, w = 0; i < n_issued; i++) {
                while (w + 1 < n_writes && writes[w + 1] <= issued[i])
                        w++;
                if (n_writes && writes[w] <= issued[i] && issued[i] - writes[w] < 50000000)
                        reaction[n++] = issued[i] - writes[w];
        }
        qsort(reaction, n, sizeof(int64_t), compare_i64);
        if (n == 0)
                die("no suspension could be paired with a write");
        printf(json ? "{\"simulated\":\"kfdemu\",\"reaction_events\":%zu,\"reaction_p50_us\":%.1f,"
                      "\"reaction_p99_us\":%.1f,\"reaction_max_us\":%.1f,\"idle_queues\":%ld,\"idle_seconds\":%ld,"
                      "\"idle_cpu_percent\":%.3f}\n"
                    : "simulated on kfdemu\nreaction (write -> SUSPEND_QUEUES issued): %zu events, p50 %.1f us, "
                      "p99 %.1f us, max %.1f us\nidle CPU watching %ld online queues over %ld s: %.3f%% of a core\n",
               n, reaction[n / 2] / 1e3, reaction[n * 99 / 100] / 1e3, reaction[n - 1] / 1e3,
               online_processes * queues, idle_seconds,
               (cpu1 - cpu0) / (double)idle_seconds * 100.0);
        {
                char cmd[128];

                snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
                if (system(cmd) != 0)
                        fprintf(stderr, "bench-reaction: could not remove %s\n", dir);
        }
        return 0;
}
