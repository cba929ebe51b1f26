/* SPDX-License-Identifier: MIT */
#include "process-queues.h"

#include <stdio.h>

#include "sources.h"

int process_queues_read(const char *sysfs_root, pid_t pid, struct process_queues *ret)
{
        struct qf_sysfs_process sysfs = { 0 };
        struct qf_diags diags = { 0 };
        struct process_queues q = { .signature = 1469598103934665603ull }; /* FNV-1a over (queue id, gpu id) */
        char root[512];
        int r;

        snprintf(root, sizeof(root), "%s/class/kfd/kfd", sysfs_root);
        r = qf_sysfs_read_process(root, pid, &diags, &sysfs);
        qf_diags_clear(&diags);
        if (r < 0)
                return r;
        for (size_t i = 0; i < sysfs.n_queues; i++) {
                const struct qf_sysfs_queue *sq = &sysfs.queues[i];

                q.n_compute_queues += sq->type == QF_SYSFS_QUEUE_COMPUTE;
                q.signature = (q.signature ^ sq->queue_id) * 1099511628211ull;
                q.signature = (q.signature ^ sq->gpu_id) * 1099511628211ull;
                if (!process_queues_on_gpu(&q, sq->gpu_id) && q.n_gpu_ids < PROCESS_QUEUES_MAX_GPUS)
                        q.gpu_ids[q.n_gpu_ids++] = sq->gpu_id;
        }
        q.n_queues = sysfs.n_queues;
        qf_sysfs_process_clear(&sysfs);
        *ret = q;
        return 0;
}

bool process_queues_on_gpu(const struct process_queues *q, uint32_t gpu_id)
{
        for (size_t i = 0; i < q->n_gpu_ids; i++)
                if (q->gpu_ids[i] == gpu_id)
                        return true;
        return false;
}
