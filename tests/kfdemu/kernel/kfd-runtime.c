/* SPDX-License-Identifier: MIT */
/*
 * AMDKFD_IOC_RUNTIME_ENABLE (kfd_chardev.c: kfd_ioctl_runtime_enable,
 * runtime_enable, runtime_disable) and the runtime-enable semaphore the
 * target sleeps on until its debugger acknowledges EC_PROCESS_RUNTIME.
 */
#include <errno.h>

#include "kfd-priv.h"

/* runtime_disable after the ack: the per-VMID trap setup is undone, which
 * refreshes the runlist of each such device. */
static void kfd_runtime_disable_finish(struct emu_process *p)
{
        p->runtime_info.ttmp_setup = 0;
        for (unsigned i = 0; i < p->n_pdds; i++)
                kfd_debug_refresh_runlist(p->pdds[i].gpu);
}

static bool kfd_call_is_runtime_enable(const struct emu_call *call)
{
        const struct kfd_ioctl_runtime_enable_args *args = (const void *)call->kdata;

        return args->mode_mask & KFD_RUNTIME_ENABLE_MODE_ENABLE_MASK;
}

/* down_interruptible(&p->runtime_enable_sema) with p->mutex dropped:
 * a banked up() is taken at once, otherwise the call sleeps. */
static int kfd_runtime_sema_down(struct emu_call *call, struct emu_process *p)
{
        if (p->runtime_enable_sema.count > 0) {
                p->runtime_enable_sema.count--;
                p->is_runtime_retry = false;
                return 0;
        }
        kfd_waitlist_add_tail(&p->runtime_enable_sema.waiters, call, KFD_WAIT_RUNTIME_ENABLE);
        return EMU_CALL_PARKED;
}

static int kfd_runtime_enable(struct emu_call *call, struct emu_process *p, uint64_t r_debug, bool ttmp_setup)
{
        /* An interrupted wait goes straight back into it. */
        if (!p->is_runtime_retry) {
                if (p->runtime_info.runtime_state != DEBUG_RUNTIME_STATE_DISABLED)
                        return -EBUSY;
                if (p->n_queues > 0)
                        return -EEXIST;

                p->runtime_info.runtime_state = DEBUG_RUNTIME_STATE_ENABLED;
                p->runtime_info.r_debug = r_debug;
                p->runtime_info.ttmp_setup = ttmp_setup;
        }

        if (!p->debug_trap_enabled)
                return 0;

        if (!p->is_runtime_retry) {
                /* The deferred activation of a debugger that attached first;
                 * its failure shows only in runtime_state (BUSY/ERROR). */
                kfd_dbg_trap_activate(p);
                kfd_dbg_ev_raise(KFD_EC_MASK(EC_PROCESS_RUNTIME), p, NULL, 0, call);
        }
        return kfd_runtime_sema_down(call, p);
}

static int kfd_runtime_disable(struct emu_call *call, struct emu_process *p)
{
        bool was_enabled = p->runtime_info.runtime_state == DEBUG_RUNTIME_STATE_ENABLED;
        int r;

        p->runtime_info.runtime_state = DEBUG_RUNTIME_STATE_DISABLED;
        p->runtime_info.r_debug = 0;

        if (p->debug_trap_enabled) {
                /* Deactivation resumes every queue of the process. */
                if (was_enabled)
                        kfd_dbg_trap_deactivate(p, false, 0);
                if (!p->is_runtime_retry)
                        kfd_dbg_ev_raise(KFD_EC_MASK(EC_PROCESS_RUNTIME), p, NULL, 0, call);
                r = kfd_runtime_sema_down(call, p);
                if (r != 0)
                        return r;
        }

        kfd_runtime_disable_finish(p);
        return 0;
}

long kfd_ioctl_runtime_enable(struct emu_call *call, struct emu_process *p, void *data)
{
        struct kfd_ioctl_runtime_enable_args *args = data;

        /* capabilities_mask is not written: it goes back as it came. */
        if (args->mode_mask & KFD_RUNTIME_ENABLE_MODE_ENABLE_MASK)
                return kfd_runtime_enable(call, p, args->r_debug,
                                          args->mode_mask & KFD_RUNTIME_ENABLE_MODE_TTMP_SAVE_MASK);
        return kfd_runtime_disable(call, p);
}

void kfd_runtime_sema_up(struct emu_process *p)
{
        struct emu_call *call = kfd_waitlist_pop(&p->runtime_enable_sema.waiters);

        if (!call) {
                /* Nobody waits: the ack is banked for the next wait. */
                p->runtime_enable_sema.count++;
                return;
        }

        p->is_runtime_retry = false;
        if (!kfd_call_is_runtime_enable(call))
                kfd_runtime_disable_finish(p);
        emu_call_complete(call, 0);
}

bool emu_has_stop_sensitive_sleepers(struct emu_node *node)
{
        for (struct emu_process *p = node->processes; p; p = p->next)
                if (p->runtime_enable_sema.waiters)
                        return true;
        return false;
}

void emu_interrupt_stopped_sleepers(struct emu_node *node)
{
        for (struct emu_process *p = node->processes; p; p = p->next) {
                struct emu_call *call = p->runtime_enable_sema.waiters;

                while (call) {
                        struct emu_call *next = call->next_waiter;

                        /* SIGSTOP, a group stop or PTRACE_INTERRUPT is a
                         * pending signal to down_interruptible: the ioctl
                         * returns -EINTR, and the task then stops. */
                        if (kfd_task_is_stopped(call->caller.tid))
                                kfd_runtime_wait_interrupted(call);
                        call = next;
                }
        }
}

void kfd_runtime_wait_interrupted(struct emu_call *call)
{
        struct emu_process *p = call->file->process;

        kfd_waitlist_remove(&p->runtime_enable_sema.waiters, call);
        /* down_interruptible returned -EINTR: the next RUNTIME_ENABLE call
         * resumes the wait instead of starting over. */
        p->is_runtime_retry = true;
        emu_call_complete(call, -EINTR);
}
