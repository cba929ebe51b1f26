/* SPDX-License-Identifier: MIT */
/*
 * The debug session of a target (kfd_debug.c): kfd_dbg_trap_enable,
 * kfd_dbg_trap_disable, and the activation that needs both a debugger and
 * an enabled runtime (kfd_dbg_trap_activate / kfd_dbg_trap_deactivate).
 */
#include <errno.h>
#include <unistd.h>

#include "kfd-priv.h"
#include "usermem.h"

/* KFD_IS_SOC15: GC 9.0.1 (gfx900) or newer. */
#define KFD_GFX_TARGET_SOC15_FIRST 90000u

bool kfd_dbg_is_per_vmid_supported(const struct emu_gpu *gpu)
{
        return gpu->cfg.per_vmid_debug;
}

int kfd_dbg_trap_activate(struct emu_process *target)
{
        for (unsigned i = 0; i < target->n_pdds; i++) {
                struct emu_gpu *gpu = target->pdds[i].gpu;

                if (!kfd_dbg_is_per_vmid_supported(gpu)) {
                        int r = kfd_reserve_debug_trap_vmid(gpu, target);

                        if (r < 0) {
                                /* All or nothing: devices already activated are undone. */
                                target->runtime_info.runtime_state = r == -EBUSY ? DEBUG_RUNTIME_STATE_ENABLED_BUSY
                                                                                 : DEBUG_RUNTIME_STATE_ENABLED_ERROR;
                                kfd_dbg_trap_deactivate(target, true, i);
                                return r;
                        }
                }
                kfd_debug_refresh_runlist(gpu);
        }
        return 0;
}

void kfd_dbg_trap_deactivate(struct emu_process *target, bool unwind, unsigned unwind_count)
{
        if (!unwind) {
                uint32_t flags = 0;
                uint64_t delay;

                /* Every queue of the target resumes. The caller does not wait
                 * for these preemptions (README "Known differences"). */
                kfd_resume_queues(NULL, target, 0, 0, &delay);
                kfd_dbg_clear_process_address_watch(target);
                kfd_dbg_trap_set_wave_launch_mode(target, KFD_DBG_TRAP_WAVE_LAUNCH_MODE_NORMAL);
                kfd_dbg_trap_set_flags(target, &flags);
        }

        for (unsigned i = 0; i < target->n_pdds; i++) {
                struct emu_gpu *gpu = target->pdds[i].gpu;

                if (unwind && i == unwind_count)
                        break;
                if (!kfd_dbg_is_per_vmid_supported(gpu) && kfd_release_debug_trap_vmid(gpu) < 0)
                        kfd_log(target->node, "Failed to release debug vmid on [%u]", gpu->cfg.gpu_id);
                kfd_debug_refresh_runlist(gpu);
        }
}

/* kfd_dbg_clean_exception_status */
static void kfd_dbg_clean_exception_status(struct emu_process *target)
{
        for (unsigned i = 0; i < target->n_pdds; i++)
                target->pdds[i].exception_status = 0;
        for (struct emu_queue *q = target->queues; q; q = q->next)
                q->exception_status = 0;
        target->exception_status = 0;
}

int kfd_dbg_trap_disable(struct emu_process *target)
{
        if (!target->debug_trap_enabled)
                return 0;

        /* Deactivation is deferred to the runtime if it is not enabled; a
         * BUSY/ERROR activation is forgotten so a new debugger can retry. */
        if (target->runtime_info.runtime_state == DEBUG_RUNTIME_STATE_ENABLED)
                kfd_dbg_trap_deactivate(target, false, 0);
        else if (target->runtime_info.runtime_state != DEBUG_RUNTIME_STATE_DISABLED)
                target->runtime_info.runtime_state = DEBUG_RUNTIME_STATE_ENABLED;

        if (target->dbg_ev_fd >= 0) {
                close(target->dbg_ev_fd);
                target->dbg_ev_fd = -1;
        }
        if (target->debugger_process) {
                target->debugger_process->debugged_process_count--;
                target->debugger_process = NULL;
        }
        target->debug_trap_enabled = false;
        kfd_dbg_clean_exception_status(target);
        return 0;
}

int kfd_dbg_trap_enable(struct emu_call *call, struct emu_process *target, uint32_t dbg_fd,
                        uint64_t rinfo_ptr, uint32_t *rinfo_size)
{
        uint32_t copy_size;
        int fd, r;

        if (target->debug_trap_enabled)
                return -EALREADY;

        for (unsigned i = 0; i < target->n_pdds; i++)
                if (target->pdds[i].gpu->cfg.gfx_target_version < KFD_GFX_TARGET_SOC15_FIRST)
                        return -ENODEV;

        copy_size = kfd_min_u32(*rinfo_size, sizeof(target->runtime_info));

        /* fget(dbg_fd) in the caller's file table: the server holds its own
         * reference to the same open file until the session ends. */
        /* kfd_ioctl's EBADF check made the file's process the caller's. */
        r = kfd_fget(call->file->process, dbg_fd, &fd);
        if (r < 0) {
                if (r != -EBADF)
                        kfd_log(target->node, "kfdemu cannot take fd %u of PID %d: %s", dbg_fd,
                                (int)call->caller.tgid, r == -EPERM ? "not permitted" : "error");
                kfd_log(target->node, "Failed to get file for (%u)", dbg_fd);
                return -EBADF;
        }
        target->dbg_ev_fd = fd;

        /* Activation is deferred until the runtime enables itself. */
        if (target->runtime_info.runtime_state == DEBUG_RUNTIME_STATE_ENABLED)
                kfd_dbg_trap_activate(target);

        target->debug_trap_enabled = true;
        if (target->debugger_process)
                target->debugger_process->debugged_process_count++;

        /* A failed rinfo copy deactivates but leaves the session enabled. */
        r = 0;
        if (emu_copy_to_user(call->caller.tgid, rinfo_ptr, &target->runtime_info, copy_size) < 0) {
                kfd_dbg_trap_deactivate(target, false, 0);
                r = -EFAULT;
        }
        *rinfo_size = sizeof(target->runtime_info);
        return r;
}
