/* SPDX-License-Identifier: MIT */
/*
 * How the detector's cadence was chosen: for each poll interval, the CPU the
 * polling loop costs while 8 online queues are idle, and the delay from a
 * write-index change to the detector noticing it. Runs the loop the daemon
 * runs (an sd-event timer with 1 µs accuracy) against a second process.
 *
 *   bench-detector [SECONDS_PER_INTERVAL] [--json]
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <systemd/sd-event.h>
#include <time.h>
#include <unistd.h>

#include "detector.h"
#include "fake-online-process.h"

#define QUEUES 8
#define MAX_SAMPLES 20000

struct bench {
        struct detector *detector;
        uint64_t interval_us;
        uint64_t end_us;
        _Atomic uint64_t written_at_ns; /* when the writer moved the index; 0 = noticed */
        uint64_t samples[MAX_SAMPLES];
        size_t n_samples;
        bool stop_writer;
        struct fake_online_process *online;
};

static uint64_t mono_ns(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void on_busy(uint32_t gpu_id, uint64_t now, void *userdata)
{
        struct bench *b = userdata;
        uint64_t at = atomic_exchange(&b->written_at_ns, 0);

        if (at && b->n_samples < MAX_SAMPLES)
                b->samples[b->n_samples++] = mono_ns() - at;
}

static void on_idle(uint32_t gpu_id, uint64_t since, uint64_t now, void *userdata)
{
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
        struct bench *b = userdata;

        detector_poll(b->detector, usec);
        if (usec >= b->end_us)
                return sd_event_exit(sd_event_source_get_event(s), 0);
        sd_event_source_set_time(s, usec + b->interval_us);
        return sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
}

/* Moves a write index every few ms (and the read index right after, as a finished kernel). */
static void *writer(void *arg)
{
        struct bench *b = arg;
        unsigned seed = 1;

        while (!__atomic_load_n(&b->stop_writer, __ATOMIC_ACQUIRE)) {
                struct timespec pause = { 0, (long)(2000000 + rand_r(&seed) % 3000000) };
                size_t q = (size_t)rand_r(&seed) % QUEUES;

                nanosleep(&pause, NULL);
                atomic_store(&b->written_at_ns, mono_ns());
                (*fake_write_index(b->online, q))++;
                nanosleep(&(struct timespec){ 0, 100000 }, NULL);
                *fake_read_index(b->online, q) = *fake_write_index(b->online, q);
        }
        return NULL;
}

static double cpu_seconds(void)
{
        struct rusage ru;

        getrusage(RUSAGE_THREAD, &ru);
        return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
               ru.ru_stime.tv_usec / 1e6;
}

static int compare_u64(const void *a, const void *b)
{
        uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
        return x < y ? -1 : x > y;
}

static void run(struct bench *b, uint64_t interval_us, double seconds, bool with_writer,
                double *ret_cpu_percent)
{
        sd_event_source *timer = NULL;
        sd_event *e = NULL;
        pthread_t thread;
        uint64_t now;
        double cpu0;

        sd_event_new(&e);
        b->interval_us = interval_us;
        b->n_samples = 0;
        b->stop_writer = false;
        sd_event_now(e, CLOCK_MONOTONIC, &now);
        b->end_us = now + (uint64_t)(seconds * 1e6);
        sd_event_add_time(e, &timer, CLOCK_MONOTONIC, now + interval_us, 1, on_timer, b);
        if (with_writer)
                pthread_create(&thread, NULL, writer, b);
        cpu0 = cpu_seconds();
        sd_event_loop(e);
        *ret_cpu_percent = (cpu_seconds() - cpu0) / seconds * 100.0;
        if (with_writer) {
                __atomic_store_n(&b->stop_writer, true, __ATOMIC_RELEASE);
                pthread_join(thread, NULL);
        }
        sd_event_source_disable_unref(timer);
        sd_event_unref(e);
}

int main(int argc, char **argv)
{
        static const uint64_t intervals[] = { 10, 20, 50, 100, 200, 500, 1000 };
        double seconds = argc > 1 && argv[1][0] != '-' ? atof(argv[1]) : 2.0;
        bool json = argc > 1 && strcmp(argv[argc - 1], "--json") == 0;
        struct detector_callbacks cb = { .gpu_busy = on_busy, .gpu_idle = on_idle };
        struct detector_queue_addr addr[QUEUES];
        struct fake_online_process online;
        struct bench *b = calloc(1, sizeof(*b));

        fake_online_process_start(&online, QUEUES);
        b->online = &online;
        for (size_t q = 0; q < QUEUES; q++)
                addr[q] = fake_queue_addr(&online, q, 1);
        detector_new(&cb, b, DETECTOR_MODE_POLL, &b->detector);
        detector_watch(b->detector, online.pid, addr, QUEUES);

        if (!json)
                printf("%-12s %-14s %-12s %-12s %-12s %s\n", "interval_us", "idle_cpu_%", "detect_p50_us",
                       "detect_p99_us", "detect_max_us", "events");
        else
                printf("[");
        for (size_t i = 0; i < sizeof(intervals) / sizeof(intervals[0]); i++) {
                double idle_cpu, busy_cpu;

                run(b, intervals[i], seconds, false, &idle_cpu);
                run(b, intervals[i], seconds, true, &busy_cpu);
                qsort(b->samples, b->n_samples, sizeof(uint64_t), compare_u64);
                if (b->n_samples == 0)
                        b->samples[0] = 0;
                printf(json ? "%s{\"interval_us\":%" PRIu64 ",\"idle_cpu_percent\":%.2f,\"detect_p50_us\":%.1f,"
                              "\"detect_p99_us\":%.1f,\"detect_max_us\":%.1f,\"events\":%zu}"
                            : "%s%-12" PRIu64 " %-14.2f %-12.1f %-12.1f %-12.1f %zu\n",
                       json && i ? "," : "", intervals[i], idle_cpu, b->samples[b->n_samples / 2] / 1e3,
                       b->samples[b->n_samples * 99 / 100] / 1e3,
                       b->samples[b->n_samples ? b->n_samples - 1 : 0] / 1e3, b->n_samples);
        }
        if (json)
                printf("]\n");
        detector_free(b->detector);
        fake_online_process_stop(&online);
        free(b);
        return 0;
}
