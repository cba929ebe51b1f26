/* SPDX-License-Identifier: MIT */
/*
 * The daemon's two key figures on an emulated node (run under
 * kfdemu-run --trace TRACE):
 *   - reaction: from an online write-index move (kfdemu-app --dispatch-times,
 *     stamped just before the store) to the daemon's SUSPEND_QUEUES ioctl
 *     entering the emulated kernel (TRACE: the "entered" stamp of kfdemu's
 *     preload, where a real ioctl is in the kernel), over many events; also
 *     to kfdemu's server receiving it, which adds the emulator's socket hop;
 *   - idle CPU: the daemon's utime+stime while it watches idle online queues.
 *
 *   bench-reaction GPREEMPTD KFDEMU_APP --trace TRACE [--events N] [--rate R]
 *                  [--idle-seconds S] [--online-processes P] [--queues Q]
 *                  [--gpus G] [--mode auto|breakpoint|poll] [--realtime-priority N]
 *                  [--realtime-cpu-percent N] [--daemon-setting KEY=VALUE]...
 *                  [--scrape-exporter GPREEMPT_EXPORTER --scrape-interval-ms MS]
 *                  [--policy worst-case|default] [--request-seconds S]
 *                  [--kernels-per-request K] [--request-kernel-us US]
 *                  [--dispatch-times PATH] [--json]
 * P idle online processes of Q queues each, spread over G GPUs, and one offline
 * process per GPU are running throughout (64 × 8 over 8 is the scale case of
 * docs/evaluation.md §2; run under kfdemu-run --gpus 8). The idle phase measures
 * the daemon's CPU over S seconds (0: skipped); the reaction phase then sends
 * requests at R per second from one more online process on GPU 0 until N
 * suspensions reached the emulator (0: skipped), or for S seconds with
 * --request-seconds; each request is K kernels of US microseconds (more than
 * one kernel: one doorbell per request, as the evaluation's online service).
 * A suspension the daemon made on its policy's clock (its log says so: the
 * offline slice after a bound, the share's window, the rate limit or a
 * back-off ended) answers a request that waited for the policy, not one just
 * seen: it is counted apart ("deferred"), not as a reaction.
 * --policy default runs the shipped policy ([Online] and [Offline] left out),
 * worst-case (the default) one suspension per request (HoldOffMs=1,
 * CoalesceMs=0, no bounds) to collect many events. The output counts the
 * requests and the suspensions of that phase; --dispatch-times keeps the
 * requests' store stamps in PATH. --mode is the daemon's
 * DetectorMode=, --realtime-priority and --realtime-cpu-percent its
 * RealtimePriority= and RealtimeCpuPercent= (not given: the daemon's defaults);
 * --daemon-setting adds any other line to the config's [Daemon] section (the
 * daemon checks it: a bad key or value stops the run at start-up).
 * --scrape-exporter runs the exporter in textfile mode every MS ms from start
 * to end, as a Prometheus scrape would (one Metrics call each): what a
 * scraper costs the reaction. The run fails if a scrape failed.
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

_Noreturn static void die(const char *what)
{
        fprintf(stderr, "bench-reaction: %s\n", what);
        exit(1);
}

/* Appends one line of the daemon's [Daemon] section to buf; the run stops if it does not fit. */
static void append_setting(char *buf, size_t size, const char *line)
{
        size_t used = strlen(buf);

        if ((size_t)snprintf(buf + used, size - used, "%s\n", line) >= size - used)
                die("the daemon's settings do not fit: fewer or shorter --daemon-setting");
}

/* Appends "key=value" to buf, or nothing for an option not given (-1): the daemon's default applies then. */
static void optional_key(char *buf, size_t size, const char *key, long value)
{
        char line[64];

        if (value < 0)
                return;
        snprintf(line, sizeof(line), "%s=%ld", key, value);
        append_setting(buf, size, line);
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

/*
 * A scraper: `exporter --textfile DIR/scrape.prom` every interval until
 * SIGTERM, like Prometheus asking gpreempt-exporter. Exits 1 if a scrape
 * failed (the daemon did not answer), 0 otherwise.
 */
static volatile sig_atomic_t scraper_stop;

static void on_scraper_term(int sig)
{
        scraper_stop = 1;
}

static pid_t spawn_scraper(const char *exporter, long interval_ms, const char *out_path)
{
        pid_t pid = fork();

        if (pid < 0)
                die("fork failed");
        if (pid == 0) {
                char textfile[128];
                bool failed = false;

                prctl(PR_SET_PDEATHSIG, SIGKILL);
                signal(SIGTERM, on_scraper_term);
                snprintf(textfile, sizeof(textfile), "%s/scrape.prom", dir);
                while (!scraper_stop) {
                        int status;
                        pid_t scrape = spawn((const char *const[]){ exporter, "--textfile", textfile, NULL }, out_path);

                        while (waitpid(scrape, &status, 0) < 0 && errno == EINTR)
                                ;
                        failed = failed || !WIFEXITED(status) || WEXITSTATUS(status) != 0;
                        usleep((useconds_t)interval_ms * 1000);
                }
                _exit(failed ? 1 : 0);
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

/* Waits until text is in the file; returns false after the time. */
static bool appears(const char *path, const char *text, int seconds)
{
        for (int i = 0; i < seconds * 100; i++) {
                if (file_contains(path, text))
                        return true;
                usleep(10000);
        }
        return false;
}

static void wait_for(const char *path, const char *text, int seconds)
{
        char line[512], last[512] = "";
        FILE *f;

        if (appears(path, text, seconds))
                return;
        /* the daemon's last words usually say why (a refused setting, say) */
        f = fopen(path, "re");
        while (f && fgets(line, sizeof(line), f))
                if (line[0] != '\n')
                        memcpy(last, line, sizeof(last));
        if (f)
                fclose(f);
        last[strcspn(last, "\n")] = '\0';
        fprintf(stderr, "bench-reaction: \"%s\" never appeared in %s; its last line: %s\n", text, path,
                last[0] ? last : "(none)");
        exit(1);
}

/*
 * The number after "Process <pid>: <prefix>" in the daemon's last line that
 * has it and also holds marker: how many queues it said it watches, or has
 * under a breakpoint.
 */
static long last_count(const char *path, pid_t pid, const char *prefix, const char *marker)
{
        char line[512], start[96];
        long n = 0;
        FILE *f = fopen(path, "re");

        if (!f)
                die("cannot read the daemon's log");
        snprintf(start, sizeof(start), "Process %d: %s", (int)pid, prefix);
        while (fgets(line, sizeof(line), f)) {
                char *at = strstr(line, start);

                if (at && strstr(line, marker))
                        n = strtol(at + strlen(start), NULL, 10);
        }
        fclose(f);
        return n;
}

/*
 * Counts the lines holding marker that were added to the file since the last
 * call; a line still being written is left for the next call.
 */
static size_t count_new_lines(FILE *f, const char *marker)
{
        static char line[4096];
        size_t n = 0;

        clearerr(f);
        for (;;) {
                long at = ftell(f);

                if (!fgets(line, sizeof(line), f))
                        break;
                if (!strchr(line, '\n')) {
                        fseek(f, at, SEEK_SET);
                        break;
                }
                n += strstr(line, marker) != NULL;
        }
        return n;
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

/* The numbers after marker (whole lines when NULL), times scale, in file order. */
static size_t read_numbers(const char *path, const char *marker, double scale, int64_t *out, size_t max)
{
        FILE *f = fopen(path, "re");
        char line[512];
        size_t n = 0;

        if (!f)
                die("cannot read a result file");
        while (n < max && fgets(line, sizeof(line), f)) {
                char *at = marker ? strstr(line, marker) : line;

                if (at)
                        out[n++] = (int64_t)(strtod(at + (marker ? strlen(marker) : 0), NULL) * scale);
        }
        fclose(f);
        return n;
}

/*
 * The trace's matching lines: when the ioctl entered (the kernel's view),
 * when kfdemu's server received it (the line's first field) and when it
 * ended, each sorted. One thread's calls do not overlap, so the i-th of each
 * belong together.
 */
static size_t read_matching_times(const char *path, const char *marker, int64_t *entered, int64_t *received,
                                  int64_t *ended, size_t max)
{
        FILE *f = fopen(path, "re");
        char line[512];
        size_t n = 0;

        if (!f)
                die("cannot read the trace");
        while (n < max && fgets(line, sizeof(line), f)) {
                const char *e = strstr(line, " entered "), *end = strstr(line, " ended ");

                if (!strstr(line, marker))
                        continue;
                if (!e || !end)
                        die("a trace line has no ioctl entry or end time: kfdemu-run is older than this benchmark");
                received[n] = strtoll(line, NULL, 10);
                ended[n] = strtoll(end + strlen(" ended "), NULL, 10);
                entered[n++] = strtoll(e + strlen(" entered "), NULL, 10);
        }
        fclose(f);
        qsort(entered, n, sizeof(int64_t), compare_i64);
        qsort(received, n, sizeof(int64_t), compare_i64);
        qsort(ended, n, sizeof(int64_t), compare_i64);
        return n;
}

/*
 * The reactions of the suspensions whose write landed while the daemon was
 * not inside one of its RESUME_QUEUES calls [resume_start, resume_end): a
 * write during one waits for it, as on a real hardware-scheduled GPU, where
 * the kernel waits for the preemption the resume takes. Returns how many
 * there are; *ret_waited counts the others.
 */
static size_t reactions_outside_resumes(const int64_t *writes, size_t n_writes, const int64_t *entered, size_t n,
                                        const int64_t *resume_start, const int64_t *resume_end, size_t n_resumes,
                                        int64_t *out, size_t *ret_waited)
{
        size_t n_out = 0, waited = 0;

        for (size_t i = 0, w = 0, r = 0; i < n; i++) {
                while (w + 1 < n_writes && writes[w + 1] <= entered[i])
                        w++;
                if (!n_writes || writes[w] > entered[i] || entered[i] - writes[w] >= 50000000)
                        continue;
                while (r + 1 < n_resumes && resume_start[r + 1] <= writes[w])
                        r++;
                if (n_resumes && resume_start[r] <= writes[w] && writes[w] < resume_end[r])
                        waited++;
                else
                        out[n_out++] = entered[i] - writes[w];
        }
        qsort(out, n_out, sizeof(int64_t), compare_i64);
        *ret_waited = waited;
        return n_out;
}

/*
 * Leaves out of the sorted calls (entered, received and ended belong
 * together) the first one entered at or after each of the sorted decided
 * times (less a microsecond: the daemon logs them in whole µs). Returns how
 * many are left.
 */
static size_t drop_decided(int64_t *entered, int64_t *received, int64_t *ended, size_t n, const int64_t *decided,
                           size_t n_decided)
{
        size_t kept = 0;

        for (size_t i = 0, d = 0; i < n; i++) {
                /* a decision whose call never entered (its session ended first) takes none */
                while (d < n_decided && entered[i] - (decided[d] - 1000) > 5000000)
                        d++;
                if (d < n_decided && decided[d] - 1000 <= entered[i]) {
                        d++;
                        continue;
                }
                entered[kept] = entered[i];
                received[kept] = received[i];
                ended[kept++] = ended[i];
        }
        return kept;
}

/* The p-th percentile of n sorted nanosecond values, in microseconds; -1 if none. */
static double percentile(const int64_t *sorted, size_t n, unsigned p)
{
        return n ? sorted[n * p / 100] / 1e3 : -1.0;
}

/* For each event, its distance back to the latest of from[] at or before it (sorted from[]). */
static size_t pair_back(const int64_t *from, size_t n_from, const int64_t *events, size_t n_events, int64_t *out)
{
        size_t n = 0;

        for (size_t i = 0, w = 0; i < n_events; i++) {
                while (w + 1 < n_from && from[w + 1] <= events[i])
                        w++;
                if (n_from && from[w] <= events[i] && events[i] - from[w] < 50000000)
                        out[n++] = events[i] - from[w];
        }
        qsort(out, n, sizeof(int64_t), compare_i64);
        return n;
}

int main(int argc, char **argv)
{
        static int64_t writes[MAX_EVENTS * 2], entered[MAX_EVENTS], received[MAX_EVENTS], ended[MAX_EVENTS],
                seen[MAX_EVENTS], reaction[MAX_EVENTS], to_server[MAX_EVENTS], to_issue[MAX_EVENTS],
                resume_start[MAX_EVENTS * 2], resume_received[MAX_EVENTS * 2], resume_end[MAX_EVENTS * 2],
                outside[MAX_EVENTS], decided[MAX_EVENTS];
        char log_path[128], offline_out[128], online_out[128], times_path[128], env_dir[160], env_run[160];
        char duration[32], rate[32], config[1024], suspend_marker[64], resume_marker[64], daemon_settings[512] = "";
        char kernels_arg[16], kernel_us_arg[32];
        const char *trace_path = NULL, *mode = "auto", *policy = "worst-case", *kept_times = NULL;
        long request_seconds = 0, kernels_per_request = 1, request_kernel_us = 100;
        size_t n_requests = 0;
        long events = 10000, idle_seconds = 60, online_processes = 1, queues = 8, gpus = 1;
        long realtime_priority = -1, realtime_cpu_percent = -1; /* -1: not given */
        double request_rate = 100;
        const char *scrape_exporter = NULL;
        long scrape_interval_ms = 1000;
        char scrape_out[128];
        pid_t scraper = -1;
        static pid_t idle_online[256], offline[16];
        FILE *trace_file;
        size_t issued_so_far = 0;
        bool json = false, requests;
        long n_watched = 0, n_breakpoint = 0;
        size_t demotions;
        size_t n_writes, n_issued, n_seen, n = 0, n_to_server = 0, n_to_issue = 0, n_resumes, n_outside = 0,
               n_waited = 0, n_decided, n_deferred = 0;
        pid_t daemon, online;
        double cpu0 = 0, cpu1 = 0, busy_cpu = 0, busy_seconds = 0;
        struct timespec t0, t1;

        if (argc < 3) {
                fprintf(stderr, "usage: bench-reaction GPREEMPTD KFDEMU_APP [--events N] [--rate R] [--idle-seconds S]\n"
                                "                      [--online-processes P] [--queues Q] [--gpus G] [--json]\n");
                return 2;
        }
        for (int i = 3; i < argc; i++) {
                if (strcmp(argv[i], "--events") == 0 && i + 1 < argc)
                        events = strtol(argv[++i], NULL, 10);
                else if (strcmp(argv[i], "--rate") == 0 && i + 1 < argc)
                        request_rate = strtod(argv[++i], NULL);
                else if (strcmp(argv[i], "--idle-seconds") == 0 && i + 1 < argc)
                        idle_seconds = strtol(argv[++i], NULL, 10);
                else if (strcmp(argv[i], "--online-processes") == 0 && i + 1 < argc)
                        online_processes = strtol(argv[++i], NULL, 10);
                else if (strcmp(argv[i], "--queues") == 0 && i + 1 < argc)
                        queues = strtol(argv[++i], NULL, 10);
                else if (strcmp(argv[i], "--gpus") == 0 && i + 1 < argc)
                        gpus = strtol(argv[++i], NULL, 10);
                else if (strcmp(argv[i], "--trace") == 0 && i + 1 < argc)
                        trace_path = argv[++i];
                else if (strcmp(argv[i], "--mode") == 0 && i + 1 < argc)
                        mode = argv[++i];
                else if (strcmp(argv[i], "--realtime-priority") == 0 && i + 1 < argc)
                        realtime_priority = strtol(argv[++i], NULL, 10);
                else if (strcmp(argv[i], "--realtime-cpu-percent") == 0 && i + 1 < argc)
                        realtime_cpu_percent = strtol(argv[++i], NULL, 10);
                else if (strcmp(argv[i], "--daemon-setting") == 0 && i + 1 < argc) {
                        const char *setting = argv[++i];

                        if (!strchr(setting, '=') || setting[0] == '=' || strpbrk(setting, "\r\n["))
                                die("--daemon-setting takes one KEY=VALUE of the [Daemon] section");
                        append_setting(daemon_settings, sizeof(daemon_settings), setting);
                } else if (strcmp(argv[i], "--scrape-exporter") == 0 && i + 1 < argc)
                        scrape_exporter = argv[++i];
                else if (strcmp(argv[i], "--scrape-interval-ms") == 0 && i + 1 < argc)
                        scrape_interval_ms = strtol(argv[++i], NULL, 10);
                else if (strcmp(argv[i], "--policy") == 0 && i + 1 < argc)
                        policy = argv[++i];
                else if (strcmp(argv[i], "--request-seconds") == 0 && i + 1 < argc)
                        request_seconds = strtol(argv[++i], NULL, 10);
                else if (strcmp(argv[i], "--kernels-per-request") == 0 && i + 1 < argc)
                        kernels_per_request = strtol(argv[++i], NULL, 10);
                else if (strcmp(argv[i], "--request-kernel-us") == 0 && i + 1 < argc)
                        request_kernel_us = strtol(argv[++i], NULL, 10);
                else if (strcmp(argv[i], "--dispatch-times") == 0 && i + 1 < argc)
                        kept_times = argv[++i];
                else if (strcmp(argv[i], "--json") == 0)
                        json = true;
                else {
                        fprintf(stderr, "bench-reaction: unknown or incomplete option %s\n", argv[i]);
                        return 2;
                }
        }
        if (strcmp(policy, "worst-case") != 0 && strcmp(policy, "default") != 0)
                die("--policy must be worst-case or default");
        if ((events > 0 || request_seconds > 0) && !trace_path)
                die("--trace TRACE is needed to measure reaction: the file given to kfdemu-run --trace");
        if (events > 0 && request_seconds > 0)
                die("--events and --request-seconds exclude each other: end the request phase by count or by time");
        if (request_seconds < 0 || request_seconds > 86400 || kernels_per_request < 1 || kernels_per_request > 1000 ||
            request_kernel_us < 1 || request_kernel_us > 1000000)
                die("--request-seconds must be 0..86400, --kernels-per-request 1..1000, --request-kernel-us 1..1000000");
        if (strcmp(mode, "auto") != 0 && strcmp(mode, "breakpoint") != 0 && strcmp(mode, "poll") != 0)
                die("--mode must be auto, breakpoint or poll");
        if (events < 0 || events > MAX_EVENTS || idle_seconds < 0 || online_processes < 0 || online_processes > 256 ||
            queues < 1 || queues > 64 || gpus < 1 || gpus > 16 || !(request_rate >= 1 && request_rate <= 1000) ||
            (realtime_priority != -1 && (realtime_priority < 0 || realtime_priority > 99)) ||
            (realtime_cpu_percent != -1 && (realtime_cpu_percent < 1 || realtime_cpu_percent > 100)) ||
            scrape_interval_ms < 10 || scrape_interval_ms > 3600000)
                die("--events must be 0..200000, --idle-seconds 0 or more, --online-processes 0..256, "
                    "--realtime-priority 0..99, --realtime-cpu-percent 1..100, "
                    "--queues 1..64, --gpus 1..16, --rate 1..1000, --scrape-interval-ms 10..3600000");

        requests = events > 0 || request_seconds > 0;
        /* mkdtemp's template: the name, then six 'X' it replaces */
        snprintf(dir, sizeof(dir), "/tmp/gpreempt-bench-%6s", "");
        memset(dir + strlen(dir) - 6, 'X', 6);
        if (!mkdtemp(dir))
                die("mkdtemp failed");
        snprintf(log_path, sizeof(log_path), "%s/daemon.log", dir);
        snprintf(offline_out, sizeof(offline_out), "%s/offline.out", dir);
        snprintf(online_out, sizeof(online_out), "%s/online.out", dir);
        if (kept_times)
                snprintf(times_path, sizeof(times_path), "%s", kept_times);
        else
                snprintf(times_path, sizeof(times_path), "%s/dispatch-times", dir);
        /* the daemon's defaults, with debug logging (the benchmark reads the
         * daemon's "watching" and "online work seen" lines); for the worst
         * case, a short hold-off and no bounds give one suspension per request */
        optional_key(daemon_settings, sizeof(daemon_settings), "RealtimePriority", realtime_priority);
        optional_key(daemon_settings, sizeof(daemon_settings), "RealtimeCpuPercent", realtime_cpu_percent);
        snprintf(config, sizeof(config), "[Daemon]\nLogLevel=debug\nDetectorMode=%s\n%s%s", mode, daemon_settings,
                 strcmp(policy, "default") == 0
                         ? ""
                         : "[Online]\nHoldOffMs=1\nCoalesceMs=0\n"
                           "[Offline]\nMaxSuspendMs=3600000\nMinOfflineSharePercent=0\nShareWindowMs=3600000\n");
        write_file("gpreemptd.conf", config);
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
        if (scrape_exporter) {
                snprintf(scrape_out, sizeof(scrape_out), "%s/scrape.out", dir);
                scraper = spawn_scraper(scrape_exporter, scrape_interval_ms, scrape_out);
        }
        snprintf(suspend_marker, sizeof(suspend_marker), " SUSPEND_QUEUES caller %d ", (int)daemon);
        snprintf(resume_marker, sizeof(resume_marker), " RESUME_QUEUES caller %d ", (int)daemon);
        for (long g = 0; g < gpus; g++) {
                char gpu[16], attached[64];

                snprintf(gpu, sizeof(gpu), "%ld", g);
                offline[g] = spawn((const char *const[]){ argv[2], "--continuous", "--gpu", gpu, "--kernel-us", "2000",
                                                          "--report", "none", NULL },
                                   offline_out);
                snprintf(attached, sizeof(attached), "Process %d: attached", (int)offline[g]);
                wait_for(log_path, attached, 30);
        }

        /* idle: online queues that never get work after the first request */
        /* kfdemu-app ends once its next request would fall after --duration:
         * at 0.001 requests/s that is 1000 s away, so the duration must go
         * beyond it for the process to stay; the end of the run stops it */
        snprintf(duration, sizeof(duration), "%d", 100000);
        snprintf(rate, sizeof(rate), "%ld", queues);
        for (long i = 0; i < online_processes; i++) {
                char gpu[16], watching[64];

                snprintf(gpu, sizeof(gpu), "%ld", i % gpus);
                idle_online[i] = spawn((const char *const[]){ argv[2], "--rate", "0.001", "--queues", rate, "--gpu", gpu,
                                                              "--kernel-us", "100", "--duration", duration,
                                                              "--report", "none", NULL },
                                       online_out);
                snprintf(watching, sizeof(watching), "Process %d: watching ", (int)idle_online[i]);
                wait_for(log_path, watching, 30);
                /* kfdemu's debugfs can list fewer MQDs than sysfs has queues for a
                 * while (or for good): wait a little, then measure what is watched */
                snprintf(watching, sizeof(watching), "Process %d: watching %ld online queues", (int)idle_online[i],
                         queues);
                appears(log_path, watching, 5);
        }
        for (long i = 0; i < online_processes; i++) {
                n_watched += last_count(log_path, idle_online[i], "watching ", "online queues");
                n_breakpoint += last_count(log_path, idle_online[i], "", "have a write breakpoint");
        }
        sleep(1); /* past the "recently busy" period of the first request */
        if (idle_seconds > 0) {
                cpu0 = cpu_seconds(daemon);
                sleep((unsigned)idle_seconds);
                cpu1 = cpu_seconds(daemon);
        }

        /* reaction: requests spaced so that most find the GPU resumed, until
         * enough suspensions were issued or for the time asked */
        if (requests) {
                trace_file = fopen(trace_path, "re");
                if (!trace_file || fseek(trace_file, 0, SEEK_END) < 0)
                        die("cannot follow the trace (kfdemu-run --trace)");
                snprintf(rate, sizeof(rate), "%g", request_rate);
                snprintf(kernels_arg, sizeof(kernels_arg), "%ld", kernels_per_request);
                snprintf(kernel_us_arg, sizeof(kernel_us_arg), "%ld", request_kernel_us);
                /* more than one kernel: one doorbell per request, as runner.app_argv() gives the
                 * evaluation's online service on kfdemu (its reason is there) */
                online = spawn((const char *const[]){ argv[2], "--rate", rate, "--gpu", "0", "--kernel-us",
                                                      kernel_us_arg, "--kernels-per-request", kernels_arg,
                                                      "--duration", "100000", "--dispatch-times", times_path,
                                                      "--report", "none",
                                                      kernels_per_request > 1 ? "--doorbell-per-request" : NULL,
                                                      NULL },
                               online_out);
                /* the daemon's CPU while it serves the requests: the busy cadence's cost */
                clock_gettime(CLOCK_MONOTONIC, &t0);
                busy_cpu = cpu_seconds(daemon);
                for (;;) {
                        usleep(100000);
                        issued_so_far += count_new_lines(trace_file, suspend_marker);
                        clock_gettime(CLOCK_MONOTONIC, &t1);
                        busy_seconds = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
                        if (events > 0 ? issued_so_far >= (size_t)events : busy_seconds >= (double)request_seconds)
                                break;
                }
                busy_cpu = cpu_seconds(daemon) - busy_cpu;
                fclose(trace_file);
                kill(online, SIGTERM);
                waitpid(online, NULL, 0);
        }
        for (long i = 0; i < online_processes; i++)
                kill(idle_online[i], SIGTERM);
        for (long g = 0; g < gpus; g++)
                kill(offline[g], SIGTERM);
        for (long i = 0; i < online_processes; i++)
                waitpid(idle_online[i], NULL, 0);
        for (long g = 0; g < gpus; g++)
                waitpid(offline[g], NULL, 0);
        if (scraper > 0) {
                int status;

                kill(scraper, SIGTERM);
                waitpid(scraper, &status, 0);
                if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
                        die("a scrape failed: the daemon did not answer Metrics (see scrape.out)");
        }
        kill(daemon, SIGTERM);
        waitpid(daemon, NULL, 0);

        if (requests) {
                n_writes = read_numbers(times_path, NULL, 1, writes, MAX_EVENTS * 2);
                n_issued = read_matching_times(trace_path, suspend_marker, entered, received, ended, MAX_EVENTS);
                n_decided = read_numbers(log_path, "on the policy's clock at ", 1e6, decided, MAX_EVENTS);
                qsort(decided, n_decided, sizeof(int64_t), compare_i64);
                n_deferred = n_issued;
                n_issued = drop_decided(entered, received, ended, n_issued, decided, n_decided);
                n_deferred -= n_issued;
                n_resumes = read_matching_times(trace_path, resume_marker, resume_start, resume_received, resume_end,
                                                MAX_EVENTS * 2);
                /* the loop's clock at the wakeup that saw the work, logged in ms. It is
                 * taken when the loop wakes, so a write landing during that poll is
                 * stamped later than it: only wakeup -> ioctl is measured from it. A
                 * suspension the worker made on a trap or on its own poll has its own
                 * wakeup, logged in ns (the loop's line for it comes after the ioctl) */
                n_seen = read_numbers(log_path, "online work seen at ", 1e6, seen, MAX_EVENTS);
                n_seen += read_numbers(log_path, "offline work suspended on a trap at ", 1, seen + n_seen,
                                       MAX_EVENTS - n_seen);
                n_seen += read_numbers(log_path, "offline work suspended on a poll at ", 1, seen + n_seen,
                                       MAX_EVENTS - n_seen);
                qsort(seen, n_seen, sizeof(int64_t), compare_i64);
                qsort(writes, n_writes, sizeof(int64_t), compare_i64);
                /* a request's kernels share one publication stamp (one doorbell per request) */
                for (size_t i = 0; i < n_writes; i++)
                        n_requests += i == 0 || writes[i] != writes[i - 1];
                /* each suspension answers the latest write before it */
                n = pair_back(writes, n_writes, entered, n_issued, reaction);
                if (n == 0)
                        die("no suspension could be paired with a write");
                n_to_server = pair_back(writes, n_writes, received, n_issued, to_server);
                n_to_issue = pair_back(seen, n_seen, entered, n_issued, to_issue);
                n_outside = reactions_outside_resumes(writes, n_writes, entered, n_issued, resume_start, resume_end,
                                                      n_resumes, outside, &n_waited);
        }
        /* how often RealtimeCpuPercent= put the loop at normal priority (loop-scheduling.c's two messages) */
        {
                FILE *log = fopen(log_path, "re");

                if (!log)
                        die("cannot read the daemon's log");
                demotions = count_new_lines(log, "runs at normal priority until");
                rewind(log);
                demotions += count_new_lines(log, "core: at normal priority");
                fclose(log);
        }
        /* the figures, in microseconds (percentage for the CPU); -1 when there are none */
        double r50 = -1, r99 = -1, rmax = -1, s50 = -1, s99 = -1, w50 = -1, w99 = -1, o50 = -1, o99 = -1, cpu = -1;

        if (requests) {
                r50 = percentile(reaction, n, 50);
                r99 = percentile(reaction, n, 99);
                rmax = reaction[n - 1] / 1e3;
                s50 = percentile(to_server, n_to_server, 50);
                s99 = percentile(to_server, n_to_server, 99);
                w50 = percentile(to_issue, n_to_issue, 50);
                w99 = percentile(to_issue, n_to_issue, 99);
                o50 = percentile(outside, n_outside, 50);
                o99 = percentile(outside, n_outside, 99);
                cpu = busy_cpu / busy_seconds * 100.0;
        }
        if (json) {
                printf("{\"simulated\":\"kfdemu\",\"mode\":\"%s\",\"idle_queues\":%ld,\"idle_queues_watched\":%ld,"
                       "\"idle_queues_breakpoint\":%ld,\"gpus\":%ld",
                       mode, online_processes * queues, n_watched, n_breakpoint, gpus);
                if (requests)
                        printf(",\"reaction_events\":%zu,\"reaction_p50_us\":%.1f,\"reaction_p99_us\":%.1f,"
                               "\"reaction_max_us\":%.1f,\"to_server_p50_us\":%.1f,\"to_server_p99_us\":%.1f,"
                               "\"wakeup_to_ioctl_p50_us\":%.1f,\"wakeup_to_ioctl_p99_us\":%.1f,"
                               "\"during_resume_events\":%zu,\"outside_resume_p50_us\":%.1f,"
                               "\"outside_resume_p99_us\":%.1f,\"busy_cpu_percent\":%.2f,\"request_seconds\":%.1f,"
                               "\"requests\":%zu,\"suspensions\":%zu,\"deferred_suspensions\":%zu,\"daemon_pid\":%d",
                               n, r50, r99, rmax, s50, s99, w50, w99, n_waited, o50, o99, cpu, busy_seconds,
                               n_requests, issued_so_far, n_deferred, (int)daemon);
                printf(",\"realtime_demotions\":%zu", demotions);
                if (idle_seconds > 0)
                        printf(",\"idle_seconds\":%ld,\"idle_cpu_percent\":%.3f", idle_seconds,
                               (cpu1 - cpu0) / (double)idle_seconds * 100.0);
                printf("}\n");
        } else {
                printf("simulated on kfdemu, DetectorMode=%s; %ld of %ld idle online queues watched (%ld by "
                       "breakpoint) over %ld GPUs\n", mode, n_watched, online_processes * queues, n_breakpoint, gpus);
                if (requests)
                        printf("reaction (write -> SUSPEND_QUEUES ioctl entering the kernel): %zu events, p50 %.1f us, "
                               "p99 %.1f us, max %.1f us\n"
                               "  write -> kfdemu's server receiving it (+ the emulator's socket hop): p50 %.1f us, "
                               "p99 %.1f us\n  loop wakeup that saw it -> ioctl: p50 %.1f us, p99 %.1f us\n"
                               "  %zu writes landed during the daemon's RESUME_QUEUES call; the other %zu: p50 %.1f us, "
                               "p99 %.1f us\n  the daemon's CPU meanwhile: %.2f%% of a core\n"
                               "  %zu requests in %.1f s, %zu suspensions, of which %zu on the policy's clock (online "
                               "work waited for a bound, the rate limit or a back-off: no reaction, not counted above)\n",
                               n, r50, r99, rmax, s50, s99, w50, w99, n_waited, n_outside, o50, o99, cpu, n_requests,
                               busy_seconds, issued_so_far, n_deferred);
                if (idle_seconds > 0)
                        printf("idle CPU over %ld s: %.3f%% of a core\n", idle_seconds,
                               (cpu1 - cpu0) / (double)idle_seconds * 100.0);
                printf("RealtimeCpuPercent= put the loop at normal priority %zu times\n", demotions);
        }
        {
                char cmd[128];

                snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
                if (system(cmd) != 0)
                        fprintf(stderr, "bench-reaction: could not remove %s\n", dir);
        }
        return 0;
}
