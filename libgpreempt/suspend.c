/* SPDX-License-Identifier: MIT */
#include <stdbool.h>
#include <string.h>

#include "dbgtrap.h"
#include "opts.h"
#include "target.h"

enum queue_op {
        QUEUE_OP_SUSPEND,
        QUEUE_OP_RESUME,
};

static bool id_in(const uint32_t *ids, size_t n, uint32_t id)
{
        /* No list means no restriction. */
        if (!ids || n == 0)
                return true;
        for (size_t i = 0; i < n; i++)
                if (ids[i] == id)
                        return true;
        return false;
}

/* The opts' filters, read once per call rather than once per queue. */
struct queue_filter {
        const uint32_t *gpu_ids;
        size_t n_gpu_ids;
        const uint32_t *queue_ids;
        size_t n_queue_ids;
};

static struct queue_filter queue_filter_of(const struct gp_queue_opts *opts)
{
        return (struct queue_filter){
                .gpu_ids = OPTS_GET(opts, gpu_ids, NULL),
                .n_gpu_ids = OPTS_GET(opts, n_gpu_ids, 0),
                .queue_ids = OPTS_GET(opts, queue_ids, NULL),
                .n_queue_ids = OPTS_GET(opts, n_queue_ids, 0),
        };
}

static bool queue_selected(const struct queue_filter *filter, uint32_t queue_id, uint32_t gpu_id)
{
        return id_in(filter->gpu_ids, filter->n_gpu_ids, gpu_id) &&
               id_in(filter->queue_ids, filter->n_queue_ids, queue_id);
}

static void count_result(struct gp_queue_report *report, enum gp_queue_result result)
{
        switch (result) {
        case GP_QUEUE_DONE:
                report->n_done++;
                break;
        case GP_QUEUE_INVALID:
                report->n_invalid++;
                break;
        case GP_QUEUE_ERROR:
                report->n_error++;
                break;
        }
}

static int ensure_arrays(struct gp_target *target, size_t n)
{
        size_t id_capacity = target->array_capacity;
        int r;

        r = grow_array((void **)&target->id_array, &id_capacity, n, sizeof(*target->id_array));
        if (r < 0)
                return r;
        return grow_array((void **)&target->statuses, &target->array_capacity, n,
                          sizeof(*target->statuses));
}

/* The per-slot status bits, unsigned: upstream's KFD_DBG_QUEUE_INVALID_MASK
 * is the int expression 1 << 31, which overflows (UBSan stops on it). */
#define QUEUE_SLOT_ERROR (1u << KFD_DBG_QUEUE_ERROR_BIT)
#define QUEUE_SLOT_INVALID (1u << KFD_DBG_QUEUE_INVALID_BIT)

/* The kernel ORs status bits into the id array (q_array_invalidate, then
 * each found queue is un-invalidated). */
static enum gp_queue_result decode_result(uint32_t slot)
{
        if (slot & QUEUE_SLOT_ERROR)
                return GP_QUEUE_ERROR;
        if (slot & QUEUE_SLOT_INVALID)
                return GP_QUEUE_INVALID;
        return GP_QUEUE_DONE;
}

static int issue(struct gp_target *target, enum queue_op op, uint32_t *ids, uint32_t n,
                 const struct gp_queue_opts *opts)
{
        if (op == QUEUE_OP_SUSPEND)
                return dbgtrap_suspend_queues(target->context->kfd_fd, target->pid, ids, n,
                                              OPTS_GET(opts, grace_period, 0), 0);
        return dbgtrap_resume_queues(target->context->kfd_fd, target->pid, ids, n);
}

static bool queue_listed(const struct gp_target *target, uint32_t queue_id)
{
        for (size_t i = 0; i < target->n_queues; i++)
                if (target->queue_ids[i] == queue_id)
                        return true;
        return false;
}

/*
 * A queue comes back INVALID when it is new (EC_QUEUE_NEW not yet cleared),
 * being destroyed, or gone — and ids are reused, so the id may now name a
 * fresh queue. A snapshot clears NEW and tells which ids still exist; those
 * are tried once more.
 */
static int retry_invalid(struct gp_target *target, const struct gp_queue_opts *opts,
                         size_t *ret_n_retried)
{
        uint32_t n_retry = 0;
        int r;

        r = target_refresh_queues(target);
        if (r < 0)
                return r;
        for (size_t i = 0; i < target->n_statuses; i++)
                if (target->statuses[i].result == GP_QUEUE_INVALID &&
                    queue_listed(target, target->statuses[i].queue_id))
                        target->id_array[n_retry++] = target->statuses[i].queue_id;
        if (n_retry == 0) {
                *ret_n_retried = 0;
                return 0;
        }

        r = issue(target, QUEUE_OP_SUSPEND, target->id_array, n_retry, opts);
        if (r < 0)
                return r;
        for (uint32_t k = 0; k < n_retry; k++) {
                uint32_t queue_id = target->id_array[k] & ~(QUEUE_SLOT_ERROR | QUEUE_SLOT_INVALID);
                for (size_t i = 0; i < target->n_statuses; i++)
                        if (target->statuses[i].queue_id == queue_id)
                                target->statuses[i].result = decode_result(target->id_array[k]);
        }
        *ret_n_retried = n_retry;
        return 0;
}

static int queue_op(struct gp_target *target, enum queue_op op, const struct gp_queue_opts *opts,
                    struct gp_queue_report *ret_report)
{
        struct gp_queue_report report = { 0 };
        struct queue_filter filter;
        uint32_t n = 0;
        int r;

        if (!target || !OPTS_VALID(opts))
                return -EINVAL;
        filter = queue_filter_of(opts);
        r = target_check_usable(target);
        if (r < 0)
                return r;

        /* The queue list is the one the processed events describe: a
         * suspend re-reads it when an event said it moved. It does not look
         * for unprocessed events itself: that would add a system call to the
         * reaction path, and a queue created a microsecond later is missed
         * either way (its event is the caller's cue to suspend it). A resume
         * needs no fresh list: a queue it does not know was never suspended
         * by us. */
        if (op == QUEUE_OP_SUSPEND && target->queues_stale) {
                r = target_refresh_queues(target);
                if (r < 0)
                        return r;
        }

        r = ensure_arrays(target, target->n_queues);
        if (r < 0)
                return r;
        for (size_t i = 0; i < target->n_queues; i++) {
                uint32_t queue_id = target->queue_ids[i], gpu_id = target->queue_gpu_ids[i];

                if (!queue_selected(&filter, queue_id, gpu_id))
                        continue;
                target->id_array[n] = queue_id;
                target->statuses[n] = (struct gp_queue_status){ .queue_id = queue_id,
                                                                .gpu_id = gpu_id };
                n++;
        }
        target->n_statuses = n;
        if (n == 0)
                return -GP_ERR_NO_QUEUES;

        r = issue(target, op, target->id_array, n, opts);
        if (r < 0)
                return r;
        for (uint32_t i = 0; i < n; i++) {
                target->statuses[i].result = decode_result(target->id_array[i]);
                count_result(&report, target->statuses[i].result);
        }

        if (op == QUEUE_OP_SUSPEND && report.n_invalid > 0) {
                r = retry_invalid(target, opts, &report.n_retried);
                if (r < 0)
                        return r;
                report.n_done = report.n_invalid = report.n_error = 0;
                for (uint32_t i = 0; i < n; i++)
                        count_result(&report, target->statuses[i].result);
        }
        report.queues = target->statuses;
        report.n_queues = n;
        log_debug(&target->context->logger, "pid %d: %s: %zu done, %zu invalid, %zu error",
                  target->pid, op == QUEUE_OP_SUSPEND ? "suspend" : "resume", report.n_done,
                  report.n_invalid, report.n_error);
        if (ret_report)
                *ret_report = report;
        return (int)report.n_done;
}

GP_EXPORT int gp_target_suspend(struct gp_target *target, const struct gp_queue_opts *opts,
                                struct gp_queue_report *ret_report)
{
        return queue_op(target, QUEUE_OP_SUSPEND, opts, ret_report);
}

GP_EXPORT int gp_target_resume(struct gp_target *target, const struct gp_queue_opts *opts,
                               struct gp_queue_report *ret_report)
{
        return queue_op(target, QUEUE_OP_RESUME, opts, ret_report);
}
