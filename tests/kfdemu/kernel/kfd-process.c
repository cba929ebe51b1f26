/* SPDX-License-Identifier: MIT */
/*
 * kfd_process (kfd_process.c): one per mm, created by the first open of
 * /dev/kfd (or by a debugger's ENABLE), found by the process, torn down when
 * the mm goes (kfd_process_notifier_release_internal).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "gpu.h"
#include "kfd-priv.h"

/* PASIDs come from amdgpu_pasid_alloc(16): an IDA over [0x8000, 0x10000),
 * lowest free first, freed with the process. */
#define KFD_PASID_FIRST 0x8000u
#define KFD_PASID_END 0x10000u

static bool kfd_pasid_in_use(const struct emu_node *node, uint32_t pasid)
{
        for (const struct emu_process *p = node->processes; p; p = p->next)
                if (p->pasid == pasid)
                        return true;
        return false;
}

static int kfd_pasid_alloc(const struct emu_node *node, uint32_t *ret)
{
        for (uint32_t pasid = KFD_PASID_FIRST; pasid < KFD_PASID_END; pasid++) {
                if (!kfd_pasid_in_use(node, pasid)) {
                        *ret = pasid;
                        return 0;
                }
        }
        return -ENOSPC;
}

/* Field 22 of /proc/<pid>/stat (starttime): with the pid it names one
 * process for its whole life, so a reused pid is told apart. */
static uint64_t kfd_read_start_time(pid_t tgid)
{
        char path[64], buf[1024];
        _cleanup_close_ int fd = -1;
        unsigned long long start_time = 0;
        ssize_t n;
        char *after_comm;

        snprintf(path, sizeof(path), "/proc/%d/stat", (int)tgid);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return 0;
        n = read(fd, buf, sizeof(buf) - 1);
        if (n <= 0)
                return 0;
        buf[n] = '\0';
        /* comm may hold spaces and parentheses: fields restart after the last ')'. */
        after_comm = strrchr(buf, ')');
        if (!after_comm ||
            sscanf(after_comm + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
                   &start_time) != 1)
                return 0;
        return start_time;
}

static void kfd_process_free(struct emu_process *p)
{
        if (p->pidfd >= 0)
                close(p->pidfd);
        if (p->dbg_ev_fd >= 0)
                close(p->dbg_ev_fd);
        free(p);
}

static void kfd_process_unlink(struct emu_process *p)
{
        for (struct emu_process **link = &p->node->processes; *link; link = &(*link)->next) {
                if (*link == p) {
                        *link = p->next;
                        p->next = NULL;
                        return;
                }
        }
}

int kfd_create_process(struct emu_node *node, pid_t tgid, struct emu_process **ret)
{
        struct emu_process *p;
        int r;

        p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;

        p->node = node;
        p->tgid = tgid;
        p->pidfd = -1;
        p->dbg_ev_fd = -1;
        kfd_event_init_process(p);
        p->start_time = kfd_read_start_time(tgid);
        r = kfd_pasid_alloc(node, &p->pasid);
        if (r < 0) {
                free(p);
                return r;
        }

        /* kfd_create_process_device_data for every device the process's
         * device cgroup allows: kfdemu has no device cgroup, so all of them. */
        for (unsigned i = 0; i < node->n_gpus; i++)
                p->pdds[i].gpu = &node->gpus[i];
        p->n_pdds = node->n_gpus;

        p->next = node->processes;
        node->processes = p;

        r = emu_transport_watch_process(node, p);
        if (r < 0) {
                kfd_process_unlink(p);
                kfd_process_free(p);
                return r;
        }

        emu_render_process(p);
        *ret = p;
        return 0;
}

struct emu_process *kfd_lookup_process_by_tgid(struct emu_node *node, pid_t tgid)
{
        for (struct emu_process *p = node->processes; p; p = p->next)
                if (p->tgid == tgid)
                        return p;
        return NULL;
}

struct emu_pdd *kfd_process_device_by_id(struct emu_process *p, uint32_t gpu_id)
{
        for (unsigned i = 0; i < p->n_pdds; i++)
                if (p->pdds[i].gpu->cfg.gpu_id == gpu_id)
                        return &p->pdds[i];
        return NULL;
}

void kfd_process_put_file(struct emu_process *p)
{
        p->n_files--;
        if (p->is_released && p->n_files == 0)
                kfd_process_free(p);
}

void emu_process_mm_release(struct emu_node *node, pid_t tgid)
{
        struct emu_process *p = kfd_lookup_process_by_tgid(node, tgid);

        if (!p)
                return;

        /* kfd_process_notifier_release_internal: the process as a target
         * loses its session (queues resumed, VMID released, no event byte
         * to the debugger) ... */
        kfd_dbg_trap_disable(p);

        /* ... and as a debugger, the processes it debugs do too: the walk
         * runs only while debugged_process_count > 0 and stops at 0. A
         * debugger whose ENABLE failed with -EALREADY is recorded as the
         * target's debugger_process (kfd_ioctl_set_debug_trap sets it
         * first) but debugs nothing: its exit ends nobody's session. */
        for (struct emu_process *target = node->processes; target && p->debugged_process_count > 0;
             target = target->next)
                if (target->debugger_process == p)
                        kfd_dbg_trap_disable(target);
        /* The kernel leaves any other pointer to the freed debugger
         * dangling; kfdemu forgets it. */
        for (struct emu_process *target = node->processes; target; target = target->next)
                if (target->debugger_process == p)
                        target->debugger_process = NULL;

        for (unsigned i = 0; i < node->n_gpus; i++) {
                if (node->gpus[i].debug_vmid_owner == p) {
                        kfd_log(node, "Failed to release debug vmid on [%u]", node->gpus[i].cfg.gpu_id);
                        node->gpus[i].debug_vmid_owner = NULL;
                }
        }

        /* The threads that slept in this process's ioctls are gone, and a
         * raiser blocked writing for it holds nothing of it any more. */
        kfd_process_detach_waiters(p);
        kfd_ev_writers_forget_process(node, p);

        /* kfd_process_wq_release: process_termination_cpsch removes the
         * queues without waiting for anything, then the sysfs entries go. */
        kfd_process_remove_queues(p);
        /* kfd_process_wq_release: kfd_event_free_process. */
        kfd_event_free_process(p);
        /* kfd_process_destroy_pdds: each device's BOs are freed and its
         * VM goes back to its render node
         * (amdgpu_amdkfd_gpuvm_release_process_vm). */
        for (unsigned i = 0; i < p->n_pdds; i++) {
                kfd_process_device_free_bos(&p->pdds[i]);
                kfd_process_device_release_vm(&p->pdds[i]);
        }
        kfd_process_unlink(p);
        p->is_released = true;
        emu_render_process_removed(node, tgid);
        /* Other processes' callers that slept on its mutexes run, and find
         * it gone. */
        kfd_lock_process_gone(p);

        if (p->n_files == 0)
                kfd_process_free(p);

        /* The targets' destroys that the resumes above woke run now, with
         * their debug sessions already over. */
        kfd_run_destroy_wakeups(node);
}

void kfd_process_detach_waiters(struct emu_process *p)
{
        while (kfd_waitlist_pop(&p->runtime_enable_sema.waiters))
                ;
        while (kfd_waitlist_pop(&p->destroy_waiters))
                ;
        for (struct emu_call *call = p->lock_waiters, *next; call; call = next) {
                next = call->next_waiter;
                /* A debugfs reader (no file) is nobody's thread. */
                if (call->file && call->file->process == p)
                        kfd_lock_abandon(call);
        }
        kfd_event_abandon_waits(p);
}
