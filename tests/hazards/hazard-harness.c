/* SPDX-License-Identifier: MIT */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "hazard-harness.h"

int held_app_start(const char *app_path, const char *const args[], struct held_app *ret)
{
        int r;

        *ret = (struct held_app){ .app = { .stdout_fd = -1, .stdin_fd = -1 } };
        r = gp_context_new(&(struct gp_context_opts){ .sz = sizeof(struct gp_context_opts) }, &ret->context);
        if (r < 0)
                return r;
        r = app_spawn(app_path, args, &ret->app);
        if (r < 0)
                return r;
        return gp_target_attach(ret->context, ret->app.pid,
                                &(struct gp_attach_opts){ .sz = sizeof(struct gp_attach_opts) }, &ret->target);
}

int held_app_suspend(struct held_app *h, uint64_t *ret_ns)
{
        uint64_t start = now_nsec();
        int r = gp_target_suspend(h->target, NULL, NULL);

        *ret_ns = now_nsec() - start;
        return r;
}

int held_app_resume(struct held_app *h)
{
        return gp_target_resume(h->target, NULL, NULL);
}

void held_app_stop(struct held_app *h)
{
        if (h->target)
                gp_target_detach(h->target);
        h->target = NULL;
        child_kill(&h->app);
        gp_context_free(h->context);
        h->context = NULL;
}

static int allowed_cpus(cpu_set_t *ret)
{
        return sched_getaffinity(0, sizeof(*ret), ret) < 0 ? NEG_ERRNO() : 0;
}

int pin_thread(int cpu)
{
        cpu_set_t set;
        int r;

        if (cpu < 0) {
                CPU_ZERO(&set);
                for (long i = 0; i < sysconf(_SC_NPROCESSORS_ONLN) && i < CPU_SETSIZE; i++)
                        CPU_SET(i, &set);
        } else {
                CPU_ZERO(&set);
                CPU_SET(cpu, &set);
        }
        r = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
        return -r;
}

int measured_cpu(void)
{
        cpu_set_t set;

        if (allowed_cpus(&set) < 0)
                return -1;
        for (int i = CPU_SETSIZE - 1; i >= 0; i--)
                if (CPU_ISSET(i, &set))
                        return i;
        return -1;
}

/* The CPUs this process may use but `cpu`; none on a one-CPU machine,
 * where real-time throttling still lets the others run a little. */
static int cpus_but(int cpu, cpu_set_t *ret)
{
        int r = allowed_cpus(ret);

        if (r < 0)
                return r;
        CPU_CLR(cpu, ret);
        return CPU_COUNT(ret);
}

static void pin_thread_off(int cpu)
{
        cpu_set_t set;

        if (cpus_but(cpu, &set) > 0)
                (void)pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

int keep_process_off_cpu(pid_t pid, int cpu)
{
        char path[64];
        cpu_set_t set;
        struct dirent *de;
        int r = cpus_but(cpu, &set);

        if (r <= 0)
                return r;
        snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
        _cleanup_closedir_ DIR *d = opendir(path);
        if (!d)
                return NEG_ERRNO();
        while ((de = readdir(d)))
                if (de->d_name[0] != '.' && sched_setaffinity(atoi(de->d_name), sizeof(set), &set) < 0 &&
                    errno != ESRCH)
                        return NEG_ERRNO();
        return 0;
}

struct hog_interval {
        uint64_t start_ns, end_ns, iterations, cpu_ns;
};

struct hog {
        struct child child;
        pthread_t reader;
        pthread_mutex_t lock;
        struct hog_interval *intervals;
        size_t n, cap;
        int cpu;
};

static void hog_record(struct hog *h, const struct hog_interval *iv)
{
        pthread_mutex_lock(&h->lock);
        if (h->n == h->cap) {
                size_t cap = h->cap ? 2 * h->cap : 1024;
                struct hog_interval *grown = realloc(h->intervals, cap * sizeof(*grown));

                if (!grown) {
                        pthread_mutex_unlock(&h->lock);
                        return;
                }
                h->intervals = grown;
                h->cap = cap;
        }
        h->intervals[h->n++] = *iv;
        pthread_mutex_unlock(&h->lock);
}

static void *hog_reader(void *userdata)
{
        struct hog *h = userdata;
        _cleanup_fclose_ FILE *f = fdopen(dup(h->child.stdout_fd), "re");
        char line[128];

        /* The reader must not compete with the hog it measures. */
        pin_thread_off(h->cpu);
        while (f && fgets(line, sizeof(line), f)) {
                struct hog_interval iv;

                if (sscanf(line, "HOG %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64, &iv.start_ns, &iv.end_ns,
                           &iv.iterations, &iv.cpu_ns) == 4)
                        hog_record(h, &iv);
        }
        return NULL;
}

int hog_start(const char *hog_path, int cpu, struct hog **ret)
{
        char cpu_arg[16];
        /* Short intervals: a starved stretch is not smeared over its neighbours. */
        char *argv[] = { (char *)hog_path, (char *)"--cpu", cpu_arg, (char *)"--interval-ms", (char *)"2", NULL };
        struct hog *h = calloc(1, sizeof(*h));
        int r;

        if (!h)
                return -ENOMEM;
        snprintf(cpu_arg, sizeof(cpu_arg), "%d", cpu);
        h->cpu = cpu;
        pthread_mutex_init(&h->lock, NULL);
        r = child_spawn(argv, false, &h->child);
        if (r >= 0)
                r = child_wait_line(&h->child, "READY", 5000, NULL, 0);
        if (r >= 0)
                r = -pthread_create(&h->reader, NULL, hog_reader, h);
        if (r < 0) {
                child_kill(&h->child);
                free(h);
                return r;
        }
        *ret = h;
        return 0;
}

double hog_cpu_share(struct hog *h, uint64_t from_ns, uint64_t to_ns)
{
        double cpu_ns = 0;

        pthread_mutex_lock(&h->lock);
        for (size_t i = 0; i < h->n; i++) {
                const struct hog_interval *iv = &h->intervals[i];
                uint64_t lo = iv->start_ns > from_ns ? iv->start_ns : from_ns;
                uint64_t hi = iv->end_ns < to_ns ? iv->end_ns : to_ns;

                /* CPU time spread evenly over the interval it was reported in. */
                if (hi > lo && iv->end_ns > iv->start_ns)
                        cpu_ns += (double)iv->cpu_ns * (double)(hi - lo) / (double)(iv->end_ns - iv->start_ns);
        }
        pthread_mutex_unlock(&h->lock);
        return cpu_ns / (double)(to_ns - from_ns);
}

void hog_stop(struct hog *h)
{
        if (!h)
                return;
        child_kill(&h->child);
        pthread_join(h->reader, NULL);
        pthread_mutex_destroy(&h->lock);
        free(h->intervals);
        free(h);
}
