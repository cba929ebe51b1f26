/* SPDX-License-Identifier: MIT */
/*
 * Fault injection: which preemption of SUSPEND_QUEUES / RESUME_QUEUES
 * fails, as the node configuration's [Faults] section says (kfdemu-run(1)).
 * What the kernel then does is kfd-reset.c's.
 */
#include "gpu.h"
#include "kfd-priv.h"

/* splitmix64: the same sequence from the same Seed= on every machine, so
 * that a test with a probability is repeatable. */
static uint64_t kfd_fault_random(struct emu_node *node)
{
        uint64_t z = (node->fault_rng += 0x9e3779b97f4a7c15ull);

        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
}

bool kfd_fault_queue_may_hang(const struct emu_fault_config *f, const struct emu_queue *q)
{
        /* A queue hangs a preemption only while it has waves to save; a
         * queue already reset has none. */
        return !q->is_reset && emu_gpu_queue_has_waves(q) && (!f->queue_id_set || q->id == f->queue_id);
}

static bool kfd_fault_gpu_has_busy_queue(const struct emu_fault_config *f, struct emu_gpu *gpu)
{
        for (struct emu_process *p = gpu->node->processes; p; p = p->next)
                for (struct emu_queue *q = p->queues; q; q = q->next)
                        if (q->gpu == gpu && kfd_fault_queue_may_hang(f, q))
                                return true;
        return false;
}

enum emu_fault_kind kfd_fault_pick(struct emu_gpu *gpu, enum emu_fault_op op)
{
        const struct emu_fault_config *f = &gpu->node->cfg.faults;
        uint32_t n;
        bool fire;

        if (f->kind == EMU_FAULT_NONE || !(f->ops & op))
                return EMU_FAULT_NONE;
        if (f->gpu_mask && !(f->gpu_mask & (1u << (gpu - gpu->node->gpus))))
                return EMU_FAULT_NONE;
        if (f->while_busy && !kfd_fault_gpu_has_busy_queue(f, gpu))
                return EMU_FAULT_NONE;

        /* Only the preemptions that pass the conditions above are counted. */
        n = ++gpu->debugger_preemptions;
        if (f->nth)
                fire = n == f->nth;
        else if (f->every)
                fire = n % f->every == 0;
        else
                fire = kfd_fault_random(gpu->node) % 1000000u < f->probability_ppm;
        return fire ? f->kind : EMU_FAULT_NONE;
}
