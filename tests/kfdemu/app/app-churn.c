/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "app-churn.h"
#include "cleanup.h"

/* hipMalloc's smallest VRAM block in ROCr's allocator is 2 MiB (its
 * fragment size); the churn allocates one such block per cycle. */
#define CHURN_BUFFER_SIZE (2ull << 20)
/* A VA in the GPUVM aperture well above what the queues' memory uses; the
 * block is freed every cycle, so the same address serves every cycle. */
#define CHURN_BUFFER_VA (1ull << 42)

struct app_churn {
        struct emu_runtime *rt;
        unsigned gpu_index;
        int64_t period_ns;
        int quit_pipe[2];        /* closing the write end ends the thread */
        pthread_t thread;
        int error;
        const char *error_step;
};

static int64_t monotonic_ns(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int churn_cycle(struct app_churn *c)
{
        struct emu_queue_options qo = {
                .gpu_id = emu_runtime_gpu(c->rt, c->gpu_index)->gpu_id,
                .priority = EMU_QUEUE_DEFAULT_PRIORITY,
                .ring_packets = EMU_QUEUE_MIN_PACKETS,
        };
        struct emu_aql_queue *queue;
        uint64_t handle;
        int r;

        r = emu_gpu_memory_alloc(c->rt, c->gpu_index, CHURN_BUFFER_VA, CHURN_BUFFER_SIZE, &handle);
        if (r < 0) {
                c->error_step = r == -ENOMEM ? "allocating 2 MiB of VRAM: the GPU has no room left for it; free "
                                               "some of its memory or give another --gpu"
                                             : "allocating and mapping GPU memory";
                return r;
        }
        r = emu_aql_queue_create(c->rt, &qo, &queue);
        if (r < 0)
                c->error_step = "creating a queue";
        else if ((r = emu_aql_queue_destroy(queue)) < 0)
                c->error_step = "destroying a queue";
        if (r < 0) {
                (void)emu_gpu_memory_free(c->rt, c->gpu_index, handle);
                return r;
        }
        r = emu_gpu_memory_free(c->rt, c->gpu_index, handle);
        if (r < 0)
                c->error_step = "unmapping and freeing GPU memory";
        return r;
}

/* Waits until `deadline_ns`; false once the thread is told to end. */
static bool wait_until(const struct app_churn *c, int64_t deadline_ns)
{
        struct pollfd quit = { .fd = c->quit_pipe[0], .events = POLLIN };

        for (;;) {
                int64_t left_ns = deadline_ns - monotonic_ns();
                int r = poll(&quit, 1, left_ns > 0 ? (int)((left_ns + 999999) / 1000000) : 0);

                if (r > 0)
                        return false;
                if (r == 0 && left_ns <= 0)
                        return true;
        }
}

static void *churn_main(void *userdata)
{
        struct app_churn *c = userdata;
        int64_t next = monotonic_ns();

        /* Behind schedule (a suspend held a step), the next cycle starts at
         * once rather than catching up with a burst. */
        while (wait_until(c, next)) {
                int r = churn_cycle(c);

                if (r < 0) {
                        c->error = r;
                        break;
                }
                next += c->period_ns;
                if (next < monotonic_ns())
                        next = monotonic_ns();
        }
        return NULL;
}

int app_churn_stop(struct app_churn *c, const char **ret_step)
{
        int r;

        if (!c)
                return 0;
        close(c->quit_pipe[1]);
        pthread_join(c->thread, NULL);
        close(c->quit_pipe[0]);
        r = c->error;
        if (r < 0 && ret_step)
                *ret_step = c->error_step;
        free(c);
        return r;
}

int app_churn_start(struct emu_runtime *rt, unsigned gpu_index, double rate, struct app_churn **ret)
{
        _cleanup_free_ struct app_churn *c = NULL;
        sigset_t all, old;
        int r;

        *ret = NULL;
        if (rate <= 0)
                return 0;
        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        *c = (struct app_churn){ .rt = rt, .gpu_index = gpu_index, .period_ns = (int64_t)(1e9 / rate) };
        if (pipe2(c->quit_pipe, O_CLOEXEC) < 0)
                return NEG_ERRNO();
        sigfillset(&all);
        pthread_sigmask(SIG_BLOCK, &all, &old);
        r = -pthread_create(&c->thread, NULL, churn_main, c);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (r < 0) {
                close(c->quit_pipe[0]);
                close(c->quit_pipe[1]);
                return r;
        }
        *ret = TAKE_PTR(c);
        return 0;
}
