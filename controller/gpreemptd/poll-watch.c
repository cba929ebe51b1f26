/* SPDX-License-Identifier: MIT */
#include "poll-watch.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct watched_read {
        pid_t pid;
        bool active;
        struct iovec *remote;
        size_t n_remote;
        size_t size; /* the bytes of the remote iovecs */
        struct poll_watch_index *indices;
        size_t n_indices;
};

struct poll_watch {
        uint64_t interval_ns, until_ns;
        uint64_t next_due_ns;
        struct watched_read *reads;
        size_t n_reads;
        size_t quiet_turn; /* where the search for the next quiet process to read starts */
        bool incomplete;   /* a read failed: the watch has ended, the loop's looks take it from here */
        unsigned char *buffer;
        size_t buffer_size;
};

int poll_watch_new(uint64_t interval_ns, uint64_t until_ns, struct poll_watch **ret)
{
        struct poll_watch *w = calloc(1, sizeof(*w));

        if (!w)
                return -ENOMEM;
        w->interval_ns = interval_ns;
        w->until_ns = until_ns;
        *ret = w;
        return 0;
}

struct poll_watch *poll_watch_free(struct poll_watch *w)
{
        if (!w)
                return NULL;
        for (size_t i = 0; i < w->n_reads; i++) {
                free(w->reads[i].remote);
                free(w->reads[i].indices);
        }
        free(w->reads);
        free(w->buffer);
        free(w);
        return NULL;
}

int poll_watch_add_process(struct poll_watch *w, pid_t pid, bool active, const struct iovec *remote, size_t n_remote,
                           const struct poll_watch_index *indices, size_t n_indices)
{
        struct watched_read r = { .pid = pid, .active = active, .n_remote = n_remote, .n_indices = n_indices };
        struct watched_read *reads;

        for (size_t i = 0; i < n_remote; i++)
                r.size += remote[i].iov_len;
        for (size_t i = 0; i < n_indices; i++)
                if (indices[i].offset > r.size || r.size - indices[i].offset < sizeof(uint64_t))
                        return -EINVAL;
        if (r.size > w->buffer_size) {
                unsigned char *buffer = realloc(w->buffer, r.size);

                if (!buffer)
                        return -ENOMEM;
                w->buffer = buffer;
                w->buffer_size = r.size;
        }
        reads = realloc(w->reads, (w->n_reads + 1) * sizeof(*reads));
        if (!reads)
                return -ENOMEM;
        w->reads = reads;
        r.remote = malloc((n_remote ? n_remote : 1) * sizeof(*r.remote));
        r.indices = malloc((n_indices ? n_indices : 1) * sizeof(*r.indices));
        if (!r.remote || !r.indices) {
                free(r.remote);
                free(r.indices);
                return -ENOMEM;
        }
        if (n_remote)
                memcpy(r.remote, remote, n_remote * sizeof(*remote));
        if (n_indices)
                memcpy(r.indices, indices, n_indices * sizeof(*indices));
        w->reads[w->n_reads++] = r;
        return 0;
}

size_t poll_watch_n_processes(const struct poll_watch *w)
{
        return w->n_reads;
}

bool poll_watch_complete(const struct poll_watch *w)
{
        return !w->incomplete;
}

uint64_t poll_watch_until(const struct poll_watch *w)
{
        return w->until_ns;
}

/* An incomplete watch ends: its owner hands the GPU back to the loop. */
uint64_t poll_watch_next_due(const struct poll_watch *w)
{
        if (w->next_due_ns >= w->until_ns || w->n_reads == 0 || w->incomplete)
                return UINT64_MAX;
        return w->next_due_ns;
}

/* Reads r; returns whether an index changed. A read that fails or comes short ends the watch. */
static bool read_changed(struct poll_watch *w, struct watched_read *r)
{
        struct iovec local = { w->buffer, r->size };
        ssize_t got = process_vm_readv(r->pid, &local, 1, r->remote, r->n_remote, 0);

        if (got != (ssize_t)r->size) {
                w->incomplete = true;
                return false;
        }
        for (size_t i = 0; i < r->n_indices; i++) {
                uint64_t value;

                memcpy(&value, w->buffer + r->indices[i].offset, sizeof(value));
                if (value != r->indices[i].value)
                        return true;
        }
        return false;
}

/* The quiet process read longest ago, taken in turn; NULL when none is left. */
static struct watched_read *next_quiet(struct poll_watch *w)
{
        for (size_t k = 0; k < w->n_reads; k++) {
                struct watched_read *r = &w->reads[(w->quiet_turn + k) % w->n_reads];

                if (!r->active) {
                        w->quiet_turn = (size_t)(r - w->reads) + 1;
                        return r;
                }
        }
        return NULL;
}

bool poll_watch_poll(struct poll_watch *w, uint64_t now_ns, pid_t *ret_pid)
{
        struct watched_read *quiet = next_quiet(w);

        w->next_due_ns = now_ns + w->interval_ns;
        for (size_t i = 0; i < w->n_reads && !w->incomplete; i++) {
                struct watched_read *r = &w->reads[i];

                if ((r->active || r == quiet) && read_changed(w, r)) {
                        *ret_pid = r->pid;
                        return true;
                }
        }
        return false;
}
