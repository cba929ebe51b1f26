/* SPDX-License-Identifier: MIT */
/*
 * Reading debugfs kfd/mqds (kfd_process.c: kfd_debugfs_mqds_by_process):
 * a single_open seq_file whose show walks every kfd_process and dumps its
 * queues' MQDs under mutex_lock(&p->mutex). A read meets every process's
 * long ioctls, a preemption's DBG_TRAP on it included, and waits for each
 * (uninterruptibly). kfdemu renders the whole dump once every mutex was
 * free, where the kernel has dumped the processes before the one it waits
 * on already.
 */
#include "kfd-priv.h"

long emu_debugfs_mqds_open(struct emu_node *node, struct emu_call *call)
{
        call->debugfs_node = node;
        call->wait_kind = KFD_WAIT_NONE;
        for (struct emu_process *p = node->processes; p; p = p->next)
                if (kfd_lock_wait(p, KFD_LOCK_MUTEX, call))
                        return EMU_CALL_PARKED;
        return 0;
}

void kfd_debugfs_mqds_rerun(struct emu_call *call)
{
        if (emu_debugfs_mqds_open(call->debugfs_node, call) != EMU_CALL_PARKED)
                call->reply(call, 0);
}
