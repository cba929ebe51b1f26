/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "cleanup.h"
#include "idle-threads.h"

struct idle_threads {
        int quit_pipe[2]; /* closing the write end ends them all */
        unsigned n;
        pthread_t threads[];
};

static void *idle_main(void *userdata)
{
        struct pollfd quit = {.fd = *(const int *)userdata, .events = POLLIN};

        /* A signal handler interrupts the wait (EINTR); only the hang-up ends it. */
        while (poll(&quit, 1, -1) <= 0 || !(quit.revents & (POLLIN | POLLHUP)))
                ;
        return NULL;
}

void idle_threads_stop(struct idle_threads *t)
{
        if (!t)
                return;
        close(t->quit_pipe[1]);
        for (unsigned i = 0; i < t->n; i++)
                pthread_join(t->threads[i], NULL);
        close(t->quit_pipe[0]);
        free(t);
}

int idle_threads_start(unsigned n, struct idle_threads **ret)
{
        struct idle_threads *t = calloc(1, sizeof(*t) + n * sizeof(pthread_t));
        int r;

        if (!t)
                return -ENOMEM;
        if (pipe2(t->quit_pipe, O_CLOEXEC) < 0) {
                r = NEG_ERRNO();
                free(t);
                return r;
        }
        for (; t->n < n; t->n++) {
                r = -pthread_create(&t->threads[t->n], NULL, idle_main, &t->quit_pipe[0]);
                if (r < 0) {
                        idle_threads_stop(t);
                        return r;
                }
        }
        *ret = t;
        return 0;
}
