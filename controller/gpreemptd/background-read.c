/* SPDX-License-Identifier: MIT */
#include "background-read.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "cleanup.h"

struct job {
        struct background_read_job spec;
        int r;
        void *result;
        bool cancelled; /* running or finished: its result is freed instead of delivered */
        struct job *next;
};

struct job_list {
        struct job *head, *tail;
};

struct background_read {
        sd_event_source *source;
        int event_fd;
        pthread_t thread;
        bool thread_started;
        pthread_mutex_t lock;
        pthread_cond_t wake;
        /* under lock: */
        struct job_list queued;
        struct job *running;
        struct job_list finished;
        bool stopping;
};

static void list_append(struct job_list *l, struct job *j)
{
        j->next = NULL;
        if (l->tail)
                l->tail->next = j;
        else
                l->head = j;
        l->tail = j;
}

static struct job *list_pop(struct job_list *l)
{
        struct job *j = l->head;

        if (j) {
                l->head = j->next;
                if (!l->head)
                        l->tail = NULL;
        }
        return j;
}

/* Unlinks key's job from l; returns it, or NULL. */
static struct job *list_remove(struct job_list *l, uint64_t key)
{
        struct job *prev = NULL;

        for (struct job *j = l->head; j; prev = j, j = j->next) {
                if (j->spec.key != key)
                        continue;
                if (prev)
                        prev->next = j->next;
                else
                        l->head = j->next;
                if (l->tail == j)
                        l->tail = prev;
                return j;
        }
        return NULL;
}

static struct job *list_find(const struct job_list *l, uint64_t key)
{
        for (struct job *j = l->head; j; j = j->next)
                if (j->spec.key == key)
                        return j;
        return NULL;
}

/* A job that ends without delivery: its result (if any) and its arg. */
static void job_drop(struct job *j)
{
        if (j->result && j->spec.free_result)
                j->spec.free_result(j->result);
        if (j->spec.free_arg)
                j->spec.free_arg(j->spec.arg);
        free(j);
}

static void *helper_main(void *userdata)
{
        struct background_read *b = userdata;

        pthread_mutex_lock(&b->lock);
        for (;;) {
                struct job *j;

                while (!b->stopping && !b->queued.head)
                        pthread_cond_wait(&b->wake, &b->lock);
                if (b->stopping)
                        break;
                j = list_pop(&b->queued);
                b->running = j;
                pthread_mutex_unlock(&b->lock);

                j->r = j->spec.read(j->spec.arg, &j->result);
                if (j->r < 0)
                        j->result = NULL;

                pthread_mutex_lock(&b->lock);
                b->running = NULL;
                list_append(&b->finished, j);
                /* a full counter (never, at 2^64 - 1) still leaves the fd readable */
                (void)eventfd_write(b->event_fd, 1);
        }
        pthread_mutex_unlock(&b->lock);
        return NULL;
}

static int on_finished(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
        struct background_read *b = userdata;
        struct job_list finished;
        eventfd_t count;
        struct job *j;

        (void)eventfd_read(fd, &count);
        pthread_mutex_lock(&b->lock);
        finished = b->finished;
        b->finished = (struct job_list){ 0 };
        pthread_mutex_unlock(&b->lock);

        while ((j = list_pop(&finished))) {
                if (j->cancelled) {
                        job_drop(j);
                        continue;
                }
                j->spec.done(j->spec.key, j->r, j->result, j->spec.userdata);
                j->result = NULL;
                job_drop(j);
        }
        return 0;
}

/* The helper at normal priority, whatever the creating thread runs at, and with every signal blocked. */
static int start_helper(struct background_read *b)
{
        struct sched_param normal = { .sched_priority = 0 };
        sigset_t all, saved;
        pthread_attr_t attr;
        int r;

        r = pthread_attr_init(&attr);
        if (r != 0)
                return -r;
        r = pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED);
        if (r == 0)
                r = pthread_attr_setschedpolicy(&attr, SCHED_OTHER);
        if (r == 0)
                r = pthread_attr_setschedparam(&attr, &normal);
        if (r == 0) {
                sigfillset(&all);
                pthread_sigmask(SIG_SETMASK, &all, &saved);
                r = pthread_create(&b->thread, &attr, helper_main, b);
                pthread_sigmask(SIG_SETMASK, &saved, NULL);
        }
        pthread_attr_destroy(&attr);
        if (r != 0)
                return -r;
        b->thread_started = true;
        return 0;
}

DEFINE_TRIVIAL_CLEANUP_FUNC(struct background_read *, background_read_free);

int background_read_new(sd_event *e, int64_t priority, struct background_read **ret)
{
        _cleanup_(background_read_freep) struct background_read *b = calloc(1, sizeof(*b));
        int r;

        if (!b)
                return -ENOMEM;
        b->event_fd = -1;
        pthread_mutex_init(&b->lock, NULL);
        pthread_cond_init(&b->wake, NULL);
        b->event_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (b->event_fd < 0)
                return NEG_ERRNO();
        r = sd_event_add_io(e, &b->source, b->event_fd, EPOLLIN, on_finished, b);
        if (r < 0)
                return r;
        r = sd_event_source_set_priority(b->source, priority);
        if (r < 0)
                return r;
        (void)sd_event_source_set_description(b->source, "background-read");
        r = start_helper(b);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(b);
        return 0;
}

struct background_read *background_read_free(struct background_read *b)
{
        struct job *j;

        if (!b)
                return NULL;
        if (b->thread_started) {
                pthread_mutex_lock(&b->lock);
                b->stopping = true;
                pthread_cond_signal(&b->wake);
                pthread_mutex_unlock(&b->lock);
                pthread_join(b->thread, NULL);
        }
        while ((j = list_pop(&b->queued)))
                job_drop(j);
        while ((j = list_pop(&b->finished)))
                job_drop(j);
        sd_event_source_disable_unref(b->source);
        closep(&b->event_fd);
        pthread_cond_destroy(&b->wake);
        pthread_mutex_destroy(&b->lock);
        free(b);
        return NULL;
}

int background_read_submit(struct background_read *b, const struct background_read_job *spec)
{
        struct job *j;
        int r = 0;

        pthread_mutex_lock(&b->lock);
        if (list_find(&b->queued, spec->key) || list_find(&b->finished, spec->key) ||
            (b->running && b->running->spec.key == spec->key)) {
                r = -EBUSY;
                goto out;
        }
        j = calloc(1, sizeof(*j));
        if (!j) {
                r = -ENOMEM;
                goto out;
        }
        j->spec = *spec;
        list_append(&b->queued, j);
        pthread_cond_signal(&b->wake);
out:
        pthread_mutex_unlock(&b->lock);
        return r;
}

int background_read_cancel(struct background_read *b, uint64_t key)
{
        struct job *queued, *finished;
        int r = 0;

        pthread_mutex_lock(&b->lock);
        queued = list_remove(&b->queued, key);
        finished = list_find(&b->finished, key);
        if (finished)
                finished->cancelled = true;
        else if (b->running && b->running->spec.key == key)
                b->running->cancelled = true;
        else if (!queued)
                r = -ENOENT;
        pthread_mutex_unlock(&b->lock);
        if (queued)
                job_drop(queued);
        return r;
}
