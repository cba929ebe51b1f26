/* SPDX-License-Identifier: MIT */
#include "online-queues.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "cleanup.h"
#include "join.h"
#include "sources.h"

int online_queues_read(const char *sysfs_root, pid_t pid, struct detector_queue_addr **ret_queues,
                       size_t *ret_n_queues)
{
        char kfd_root[512], mqds_path[512];
        struct qf_sysfs_process sysfs = { 0 };
        struct qf_mqds mqds = { 0 };
        struct qf_diags diags = { 0 };
        struct qf_result joined = { 0 };
        struct detector_queue_addr *queues = NULL;
        _cleanup_close_ int fd = -1;
        size_t n = 0;
        int r;

        snprintf(kfd_root, sizeof(kfd_root), "%s/class/kfd/kfd", sysfs_root);
        snprintf(mqds_path, sizeof(mqds_path), "%s/kernel/debug/kfd/mqds", sysfs_root);

        r = qf_sysfs_read_process(kfd_root, pid, &diags, &sysfs);
        if (r < 0)
                goto out;
        fd = open(mqds_path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
                r = -errno;
                goto out;
        }
        r = qf_mqds_parse(fd, mqds_path, &diags, &mqds);
        if (r < 0)
                goto out;
        r = qf_join(&(struct qf_inputs){ .sysfs = &sysfs, .n_sysfs = 1, .mqds = &mqds, .mqds_name = mqds_path,
                                         .pids = &pid, .n_pids = 1 },
                    &joined);
        if (r < 0)
                goto out;
        for (size_t i = 0; i < joined.n_processes; i++) {
                const struct qf_process *p = &joined.processes[i];

                if (p->pid != pid)
                        continue;
                queues = calloc(p->n_queues ? p->n_queues : 1, sizeof(*queues));
                if (!queues) {
                        r = -ENOMEM;
                        goto out;
                }
                for (size_t q = 0; q < p->n_queues; q++) {
                        const struct qf_queue *qq = &p->queues[q];

                        if (!qq->rptr_addr.sources || !qq->wptr_addr.sources || !qq->gpu_id.sources)
                                continue;
                        if (!qq->mqd || qq->mqd->kind != QF_MQD_COMPUTE)
                                continue;
                        queues[n++] = (struct detector_queue_addr){
                                .gpu_id = (uint32_t)qq->gpu_id.v,
                                .read_pointer_address = qq->rptr_addr.v,
                                .write_pointer_address = qq->wptr_addr.v,
                        };
                }
        }
        *ret_queues = queues;
        *ret_n_queues = n;
        queues = NULL;
        r = 0;
out:
        free(queues);
        qf_result_clear(&joined);
        qf_mqds_clear(&mqds);
        qf_sysfs_process_clear(&sysfs);
        qf_diags_clear(&diags);
        return r;
}
