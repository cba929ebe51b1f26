/* SPDX-License-Identifier: MIT */
/*
 * The emulated node: its GPUs (the kernel's kfd_topology device list) and
 * the lifetime of everything kernel/ keeps.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "kfd-priv.h"

/* A gpu_id is a 16-bit hash of the device's PCI identity
 * (kfd_topology.c: kfd_generate_gpu_id); a configuration that leaves it 0
 * gets one derived the same way from what it does give, never 0 and never
 * taken twice. */
static uint32_t kfd_derive_gpu_id(const struct emu_node *node, const struct emu_gpu_config *cfg)
{
        uint32_t h = 2166136261u;
        const uint32_t words[] = { cfg->domain, cfg->location_id, cfg->device_id, cfg->drm_render_minor };

        for (unsigned i = 0; i < sizeof(words) / sizeof(words[0]); i++)
                h = (h ^ words[i]) * 16777619u;
        for (;;) {
                uint32_t id = (h ^ (h >> 16)) & 0xffff;
                bool taken = id == 0;

                for (unsigned i = 0; i < node->n_gpus && !taken; i++)
                        taken = node->gpus[i].cfg.gpu_id == id;
                if (!taken)
                        return id;
                h = h * 16777619u + 1;
        }
}

int emu_node_init(struct emu_node *node, const struct emu_config *cfg)
{
        int r;

        if (cfg->n_gpus > EMU_MAX_GPUS)
                return -EINVAL;

        memset(node, 0, sizeof(*node));
        r = -pthread_mutex_init(&node->lock, NULL);
        if (r < 0)
                return r;

        node->cfg = *cfg;
        if (node->cfg.max_num_of_queues_per_device == 0)
                node->cfg.max_num_of_queues_per_device = KFD_DEFAULT_MAX_QUEUES_PER_DEVICE;
        node->log_fd = -1;
        node->fault_rng = cfg->faults.seed;
        for (unsigned i = 0; i < cfg->n_gpus; i++) {
                struct emu_gpu *gpu = &node->gpus[i];

                gpu->node = node;
                /* Topology node 0 is the CPU; GPUs follow in configuration order. */
                gpu->index = i + 1;
                gpu->cfg = cfg->gpus[i];
                if (gpu->cfg.gpu_id == 0)
                        gpu->cfg.gpu_id = kfd_derive_gpu_id(node, &gpu->cfg);
                gpu->mmio_remap_memfd = -1;
                node->n_gpus = i + 1;
        }
        return 0;
}

void emu_node_fini(struct emu_node *node)
{
        kfd_ev_writers_stop(node);
        /* Tear down what is left as if every process exited. */
        while (node->processes)
                emu_process_mm_release(node, node->processes->tgid);
        for (unsigned i = 0; i < node->n_gpus; i++) {
                if (node->gpus[i].mmio_remap_memfd >= 0)
                        close(node->gpus[i].mmio_remap_memfd);
                kfd_smi_clients_free(&node->gpus[i]);
        }
        pthread_mutex_destroy(&node->lock);
}

struct emu_gpu *kfd_device_by_id(struct emu_node *node, uint32_t gpu_id)
{
        for (unsigned i = 0; i < node->n_gpus; i++)
                if (node->gpus[i].cfg.gpu_id == gpu_id)
                        return &node->gpus[i];
        return NULL;
}
