/* SPDX-License-Identifier: MIT */
#include "online-queues.h"

#include <errno.h>
#include <string.h>
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
         * The detector needs only the addresses (the indices' and the
         * ring's) and the GPU, which every MQD carries: no join with the
         * sysfs queue ids, which is ambiguous when queues of one process
         * share GPU and ring size.
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
                        .ring_base_address = q->ring_base,
                        .ring_size = q->ring_size,
                };
        }
        qf_mqds_clear(&mqds);
        *ret_queues = queues;
        *ret_n_queues = n;
        return 0;
}

struct online_queues_request {
        char *sysfs_root;
        pid_t pid;
};

static void request_free(void *arg)
{
        struct online_queues_request *req = arg;

        free(req->sysfs_root);
        free(req);
}

void online_queues_free(void *result)
{
        struct online_queues *q = result;

        if (!q)
                return;
        free(q->queues);
        free(q);
}

/* On the helper thread. */
static int read_job(void *arg, void **ret_result)
{
        const struct online_queues_request *req = arg;
        struct online_queues *q = calloc(1, sizeof(*q));
        int r;

        if (!q)
                return -ENOMEM;
        r = online_queues_read(req->sysfs_root, req->pid, &q->queues, &q->n_queues);
        if (r < 0) {
                free(q);
                return r;
        }
        *ret_result = q;
        return 0;
}

int online_queues_job(const char *sysfs_root, pid_t pid,
                      void (*done)(uint64_t key, int r, void *result, void *userdata), void *userdata,
                      struct background_read_job *ret_job)
{
        struct online_queues_request *req = calloc(1, sizeof(*req));

        if (!req)
                return -ENOMEM;
        req->pid = pid;
        req->sysfs_root = strdup(sysfs_root);
        if (!req->sysfs_root) {
                free(req);
                return -ENOMEM;
        }
        *ret_job = (struct background_read_job){
                .key = (uint64_t)pid,
                .read = read_job,
                .done = done,
                .free_result = online_queues_free,
                .free_arg = request_free,
                .arg = req,
                .userdata = userdata,
        };
        return 0;
}
