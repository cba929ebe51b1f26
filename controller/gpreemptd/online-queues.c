/* SPDX-License-Identifier: MIT */
#include "online-queues.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "cleanup.h"
#include "sources.h"

int online_queues_read(const char *sysfs_root, pid_t pid, struct detector_queue_addr **ret_queues,
                       size_t *ret_n_queues)
{
        char mqds_path[512];
        struct qf_mqds mqds = { 0 };
        struct qf_diags diags = { 0 };
        struct detector_queue_addr *queues = NULL;
        _cleanup_close_ int fd = -1;
        size_t n = 0;
        int r;

        snprintf(mqds_path, sizeof(mqds_path), "%s/kernel/debug/kfd/mqds", sysfs_root);
        fd = open(mqds_path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        r = qf_mqds_parse(fd, mqds_path, &diags, &mqds);
        qf_diags_clear(&diags);
        if (r < 0)
                return r;
        /*
         * The detector needs only the addresses and the GPU, which every MQD
         * carries: no join with the sysfs queue ids, which is ambiguous when
         * queues of one process share GPU and ring size.
         */
        queues = calloc(mqds.n ? mqds.n : 1, sizeof(*queues));
        if (!queues) {
                qf_mqds_clear(&mqds);
                return -ENOMEM;
        }
        for (size_t i = 0; i < mqds.n; i++) {
                const struct qf_mqd_queue *q = &mqds.queues[i];

                if (q->pid != pid || q->kind != QF_MQD_COMPUTE || !q->has_addresses)
                        continue;
                queues[n++] = (struct detector_queue_addr){
                        .gpu_id = q->gpu_id,
                        .read_pointer_address = q->rptr_addr,
                        .write_pointer_address = q->wptr_addr,
                };
        }
        qf_mqds_clear(&mqds);
        *ret_queues = queues;
        *ret_n_queues = n;
        return 0;
}
