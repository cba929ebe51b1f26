/* SPDX-License-Identifier: MIT */
#include "queue-progress.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#include "cleanup.h"
#include "test-support.h"

#define POLL_MS 2

static int read_all(pid_t pid, const struct soak_queue *queues, size_t n, uint64_t *ret)
{
        int r;

        for (size_t i = 0; i < n; i++)
                if ((r = peek_u64(pid, queues[i].read_pointer_address, &ret[i])) < 0)
                        return r;
        return 0;
}

int queue_progress_total(pid_t pid, const struct soak_queue *queues, size_t n, uint64_t *ret_total)
{
        uint64_t total = 0, index;
        int r;

        for (size_t i = 0; i < n; i++) {
                if ((r = peek_u64(pid, queues[i].read_pointer_address, &index)) < 0)
                        return r;
                total += index;
        }
        *ret_total = total;
        return 0;
}

/* Polls the read indices until `done` says so or the time is up; moved[i]
 * tells which queues moved from where they were at the start. */
static int watch(pid_t pid, const struct soak_queue *queues, size_t n, int ms, bool stop_at_first,
                 bool *moved)
{
        _cleanup_free_ uint64_t *start = calloc(n, sizeof(*start));
        _cleanup_free_ uint64_t *now = calloc(n, sizeof(*now));
        uint64_t deadline = now_usec() + (uint64_t)ms * 1000u;
        size_t n_moved = 0;
        int r;

        if (!start || !now)
                return -ENOMEM;
        if ((r = read_all(pid, queues, n, start)) < 0)
                return r;
        while (now_usec() < deadline) {
                sleep_ms(POLL_MS);
                if ((r = read_all(pid, queues, n, now)) < 0)
                        return r;
                for (size_t i = 0; i < n; i++)
                        if (!moved[i] && now[i] != start[i]) {
                                moved[i] = true;
                                n_moved++;
                        }
                if (n_moved == n || (stop_at_first && n_moved > 0))
                        break;
        }
        return 0;
}

int queue_progress_any_moves(pid_t pid, const struct soak_queue *queues, size_t n, int ms,
                             long *ret_moved)
{
        _cleanup_free_ bool *moved = calloc(n, sizeof(*moved));
        int r;

        if (!moved)
                return -ENOMEM;
        if ((r = watch(pid, queues, n, ms, true, moved)) < 0)
                return r;
        *ret_moved = -1;
        for (size_t i = 0; i < n; i++)
                if (moved[i]) {
                        *ret_moved = (long)queues[i].queue_id;
                        break;
                }
        return 0;
}

int queue_progress_all_move(pid_t pid, const struct soak_queue *queues, size_t n, int timeout_ms,
                            size_t *ret_n_stalled, uint32_t *ret_first_stalled)
{
        _cleanup_free_ bool *moved = calloc(n, sizeof(*moved));
        size_t n_stalled = 0;
        int r;

        if (!moved)
                return -ENOMEM;
        if ((r = watch(pid, queues, n, timeout_ms, false, moved)) < 0)
                return r;
        *ret_first_stalled = 0;
        for (size_t i = 0; i < n; i++)
                if (!moved[i] && n_stalled++ == 0)
                        *ret_first_stalled = queues[i].queue_id;
        *ret_n_stalled = n_stalled;
        return 0;
}
