/* SPDX-License-Identifier: MIT */
#include "call-trace.h"

#include <stdio.h>
#include <string.h>

#include "kfd-abi.h"

bool call_trace_capture(const struct emu_call *call, uint64_t entered_ns, uint64_t received_ns,
                        struct call_trace_entry *entry)
{
        struct kfd_ioctl_dbg_trap_args args;

        /* kcmd is kernel/'s own definition, set once the number was in its table */
        if (call->kcmd != AMDKFD_IOC_DBG_TRAP || call->usize < sizeof(args))
                return false;
        memcpy(&args, call->kdata, sizeof(args));
        if (args.op != KFD_IOC_DBG_TRAP_SUSPEND_QUEUES && args.op != KFD_IOC_DBG_TRAP_RESUME_QUEUES)
                return false;
        *entry = (struct call_trace_entry){
                .entered_ns = entered_ns,
                .received_ns = received_ns,
                .op = args.op,
                .caller_tgid = (int)call->caller.tgid,
                .target_pid = args.pid,
                .n_queues = args.op == KFD_IOC_DBG_TRAP_SUSPEND_QUEUES ? args.suspend_queues.num_queues
                                                                       : args.resume_queues.num_queues,
        };
        return true;
}

void call_trace_write(int fd, const struct call_trace_entry *e)
{
        (void)dprintf(fd, "%llu %s caller %d target %u queues %u entered %llu ended %llu\n",
                      (unsigned long long)e->received_ns,
                      e->op == KFD_IOC_DBG_TRAP_SUSPEND_QUEUES ? "SUSPEND_QUEUES" : "RESUME_QUEUES",
                      e->caller_tgid, e->target_pid, e->n_queues, (unsigned long long)e->entered_ns,
                      (unsigned long long)e->ended_ns);
}
