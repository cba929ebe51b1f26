/* SPDX-License-Identifier: MIT */
/*
 * The debug-trap queue snapshot, through libgpreempt: the only source that
 * ties KFD queue ids to ring and pointer addresses (kfd-interface.md §7).
 * Taking it attaches to the process (ptrace seize plus a kfd debug session,
 * which costs a device-wide preemption on HWS GPUs) and detaches again, so it
 * is only done when asked for, and fails with -EALREADY-style errors while
 * another debugger (gpreemptd, rocgdb) holds the process.
 */
#include <errno.h>
#include <stdlib.h>

#include "array.h"
#include "cleanup.h"
#include "explain-sentence.h"
#include <gpreempt/gpreempt.h>
#include "snapshot.h"

static int copy_queues(struct gp_target *target, const struct gp_queue *queues, size_t n, struct qf_snapshot *s)
{
        for (size_t i = 0; i < n && i < QF_MAX_QUEUES_PER_PROCESS; i++) {
                const struct gp_queue *g = &queues[i];
                struct qf_snapshot_queue *q = QF_APPEND(s->queues, s->n);
                if (!q)
                        return -ENOMEM;
                *q = (struct qf_snapshot_queue){
                        .queue_id = g->queue_id,
                        .gpu_id = g->gpu_id,
                        .queue_type = g->type,
                        .ring_base = g->ring_base_address,
                        .ring_size = g->ring_size,
                        .rptr_addr = g->read_pointer_address,
                        .wptr_addr = g->write_pointer_address,
                        .exception_status = g->exception_status,
                };
                /* Indices are a bonus: a queue may vanish between the two calls. */
                q->has_indices = gp_target_read_queue_indices(target, g, &q->read_index, &q->write_index) == 0;
        }
        return 0;
}

int qf_snapshot_read(pid_t pid, const struct gp_context_opts *context_opts, struct qf_snapshot *ret,
                     struct qf_snapshot_error *ret_error)
{
        struct gp_context *ctx = NULL;
        struct gp_target *target = NULL;
        struct qf_snapshot s = { .pid = pid };
        const struct gp_queue *queues;
        size_t n;
        enum gp_op op = GP_OP_OPEN;

        const struct gp_context_opts default_opts = { .sz = sizeof(default_opts) };
        int r = gp_context_new(context_opts ? context_opts : &default_opts, &ctx);
        if (r >= 0) {
                op = GP_OP_ATTACH;
                const struct gp_attach_opts aopts = { .sz = sizeof(aopts) };
                r = gp_target_attach(ctx, pid, &aopts, &target);
        }
        if (r >= 0) {
                s.runtime_state = gp_target_runtime_state(target);
                op = GP_OP_SNAPSHOT;
                r = gp_target_snapshot(target, &queues, &n);
        }
        if (r >= 0)
                r = copy_queues(target, queues, n, &s);
        if (target) {
                int k = gp_target_detach(target);
                if (r >= 0 && k < 0) {
                        op = GP_OP_DETACH;
                        r = k;
                }
        }
        if (r < 0) {
                ret_error->reason = explain_sentence(r, op, pid, target ? (int)s.runtime_state : -1, ctx);
                ret_error->op = op;
                qf_snapshot_clear(&s);
        } else {
                *ret = s;
        }
        gp_context_free(ctx);
        return r < 0 ? r : 0;
}

void qf_snapshot_clear(struct qf_snapshot *s)
{
        free(s->queues);
        *s = (struct qf_snapshot){ 0 };
}
