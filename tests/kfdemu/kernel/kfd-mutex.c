/* SPDX-License-Identifier: MIT */
/*
 * The sleeping locks a caller can find taken: a kfd_process's p->mutex
 * (every ioctl of the process and, as target->mutex, every DBG_TRAP op on
 * it, kfd-interface.md §3 step 6) and p->event_mutex (the ops that read or
 * clear exception state, and every raise), and a GPU's dqm->lock (the
 * device queue manager's: queue create/destroy, suspend/resume, runlist
 * refreshes of every process on that GPU).
 *
 * They stay taken past one kernel entry in three cases:
 * - a call parked in the unmap fence wait of a preemption or in a memory
 *   sync keeps what its ioctl holds there, until it completes
 *   (kfd_call_hold_locks). kfd_ioctl_set_debug_trap holds target->mutex
 *   for the whole op; suspend_queues holds p->event_mutex and the dqm lock
 *   around execute_queues_cpsch, resume_queues the dqm lock;
 *   create_queue_cpsch and destroy_queue_cpsch run it under the dqm lock
 *   inside the ioctl's p->mutex; kfd_ioctl_map_memory_to_gpu waits for the
 *   page-table fence under p->mutex (kfd_device_queue_manager.c,
 *   kfd_chardev.c). [Node] LocksAcrossWaits=no turns this off;
 * - a raiser blocked in the event write (kfd-evwrite.c: kfd_dbg_ev_raise
 *   writes the byte under event_mutex, and DESTROY_QUEUE, RUNTIME_ENABLE
 *   and SET_EXCEPTIONS_ENABLED raise under p->mutex too);
 * - an oops that dies holding p->mutex, forever (kfd-suspend.c).
 * A call that needs a lock taken then sleeps in mutex_lock —
 * uninterruptibly — and runs again from the start of its ioctl once the
 * lock is free.
 */
#include "kfd-priv.h"

static struct emu_node *kfd_call_node(const struct emu_call *call)
{
        return call->debugfs_node ? call->debugfs_node : call->file->process->node;
}

/* A sleeper runs again. What the entry running meanwhile had preempted
 * stays its own. */
static void kfd_lock_rerun(struct emu_call *call)
{
        struct emu_node *node = kfd_call_node(call);
        uint32_t preempted = node->dqm_preempted;

        call->wait_kind = KFD_WAIT_NONE;
        call->lock_process = NULL;
        call->lock_gpu = NULL;
        if (call->debugfs_node)
                kfd_debugfs_mqds_rerun(call);
        else
                kfd_ioctl_rerun(call);
        node->dqm_preempted = preempted;
}

/* The waiters run again in arrival order; one that finds a lock still
 * taken sleeps again. */
static void kfd_lock_run_list(struct emu_call **head)
{
        struct emu_call *waiters = *head;

        *head = NULL;
        while (waiters) {
                struct emu_call *call = waiters;

                waiters = call->next_waiter;
                call->next_waiter = NULL;
                kfd_lock_rerun(call);
        }
}

bool kfd_lock_wait(struct emu_process *p, unsigned locks, struct emu_call *call)
{
        bool taken = ((locks & KFD_LOCK_MUTEX) && (p->mutex_holders > 0 || p->mutex_poisoned)) ||
                     ((locks & KFD_LOCK_EVENT_MUTEX) && p->event_mutex_holders > 0);

        if (!taken)
                return false;
        kfd_waitlist_add_tail(&p->lock_waiters, call, KFD_WAIT_LOCK);
        call->lock_process = p;
        return true;
}

void kfd_lock_take(struct emu_process *p, unsigned locks)
{
        if (locks & KFD_LOCK_MUTEX)
                p->mutex_holders++;
        if (locks & KFD_LOCK_EVENT_MUTEX)
                p->event_mutex_holders++;
}

void kfd_lock_release(struct emu_process *p, unsigned locks)
{
        if (locks & KFD_LOCK_MUTEX)
                p->mutex_holders--;
        if (locks & KFD_LOCK_EVENT_MUTEX)
                p->event_mutex_holders--;
        kfd_lock_run_list(&p->lock_waiters);
}

void kfd_lock_poison(struct emu_process *p)
{
        p->mutex_poisoned = true;
}

void kfd_lock_process_gone(struct emu_process *p)
{
        /* Callers of other processes that slept on p's locks find p gone
         * when they run again; p's own sleepers went with its mm. A call
         * still parked holding p's locks has nothing left to release. */
        for (struct emu_call *c = p->node->lock_holders; c; c = c->next_holder)
                if (c->entry_process == p)
                        c->entry_process = NULL;
        p->mutex_holders = 0;
        p->event_mutex_holders = 0;
        p->mutex_poisoned = false;
        kfd_lock_run_list(&p->lock_waiters);
}

void kfd_lock_abandon(struct emu_call *call)
{
        if (call->lock_gpu)
                kfd_waitlist_remove(&call->lock_gpu->dqm_waiters, call);
        else
                kfd_waitlist_remove(&call->lock_process->lock_waiters, call);
        call->lock_process = NULL;
        call->lock_gpu = NULL;
}

bool kfd_dqm_lock_wait(struct emu_node *node, uint32_t gpus, struct emu_call *call)
{
        for (unsigned i = 0; i < node->n_gpus; i++) {
                struct emu_gpu *gpu = &node->gpus[i];

                if (!(gpus & (1u << i)) || gpu->dqm_holders == 0)
                        continue;
                kfd_waitlist_add_tail(&gpu->dqm_waiters, call, KFD_WAIT_LOCK);
                call->lock_gpu = gpu;
                return true;
        }
        return false;
}

void kfd_dqm_note_preemption(struct emu_gpu *gpu)
{
        gpu->node->dqm_preempted |= 1u << (unsigned)(gpu - gpu->node->gpus);
}

void kfd_call_note_locks(struct emu_call *call, struct emu_process *p, unsigned locks)
{
        call->entry_process = p;
        call->entry_locks = locks;
}

void kfd_call_hold_locks(struct emu_node *node, struct emu_call *call)
{
        if (node->cfg.locks_released_while_waiting || call->holds_locks)
                return;
        if (call->entry_process)
                kfd_lock_take(call->entry_process, call->entry_locks);
        call->held_dqms = node->dqm_preempted;
        for (unsigned i = 0; i < node->n_gpus; i++)
                if (call->held_dqms & (1u << i))
                        node->gpus[i].dqm_holders++;
        call->holds_locks = true;
        call->next_holder = node->lock_holders;
        node->lock_holders = call;
}

void kfd_call_release_locks(struct emu_call *call)
{
        struct emu_node *node;
        struct emu_process *p = call->entry_process;
        uint32_t dqms = call->held_dqms;

        if (!call->holds_locks)
                return;
        node = kfd_call_node(call);
        for (struct emu_call **link = &node->lock_holders; *link; link = &(*link)->next_holder)
                if (*link == call) {
                        *link = call->next_holder;
                        break;
                }
        call->holds_locks = false;
        call->next_holder = NULL;
        call->entry_process = NULL;
        call->held_dqms = 0;
        for (unsigned i = 0; i < node->n_gpus; i++)
                if (dqms & (1u << i))
                        node->gpus[i].dqm_holders--;
        if (p)
                kfd_lock_release(p, call->entry_locks);
        for (unsigned i = 0; i < node->n_gpus; i++)
                if (dqms & (1u << i))
                        kfd_lock_run_list(&node->gpus[i].dqm_waiters);
}
