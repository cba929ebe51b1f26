/* SPDX-License-Identifier: MIT */
/*
 * Turning an error into a sentence: gp_explain() gathers the facts that tell
 * causes apart (who traces the target, what the target is, the caller's
 * privilege, the scheduler policy, the PID namespaces), explain_format()
 * turns facts into words. The split lets tests check every sentence
 * without a GPU.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <gpreempt/gpreempt.h>

struct explain_facts {
        int error; /* negative errno */
        enum gp_op op;
        pid_t pid;
        int runtime_state; /* -1: unknown */
        uint32_t kfd_major, kfd_minor; /* 0: unknown */
        bool process_exists;
        pid_t tracer_pid; /* 0: not traced; -1: unknown */
        const char *tracer_comm;
        bool tracer_is_self;
        int sched_policy; /* amdgpu.sched_policy; -1: unknown */
        /* The caller runs in a PID namespace below the initial one. */
        bool caller_in_child_pid_namespace;
        /* The target's NSpid line when it has more than one entry. */
        const char *target_nspid;
        /* The target's state letter ('Z': a zombie; 0: unknown), the threads
         * of its group (0: unknown) and its parent (0: unknown). */
        char target_state;
        long target_threads;
        pid_t target_parent;
        bool target_kernel_thread;
        /* CAP_SYS_PTRACE is in the caller's effective set (as root's): no
         * advice to run as root. */
        bool caller_has_cap_sys_ptrace;
};

int explain_format(const struct explain_facts *facts, char **ret_sentence);
