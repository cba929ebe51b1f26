/* SPDX-License-Identifier: MIT */
#include "registrations.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cleanup.h"
#include "process-facts.h"

/* Ancestors looked at above a process: deeper than any job's process tree, and a bound on a loop in /proc. */
#define REGISTRATIONS_MAX_DEPTH 64

bool registration_name_is_valid(const char *name)
{
        size_t n = strnlen(name, REGISTRATION_NAME_MAX + 1);

        if (n == 0 || n > REGISTRATION_NAME_MAX)
                return false;
        for (size_t i = 0; i < n; i++)
                if (name[i] < 0x21 || name[i] > 0x7e)
                        return false;
        return true;
}

static void registration_done(struct registration *reg)
{
        if (reg->pidfd >= 0)
                close(reg->pidfd);
        free(reg->name);
}

/* A pidfd turns readable when its process exits (pidfd_open(2)). */
static bool has_exited(const struct registration *reg)
{
        struct pollfd p = { .fd = reg->pidfd, .events = POLLIN };

        return reg->pidfd >= 0 && poll(&p, 1, 0) != 0;
}

static void drop_at(struct registrations *r, size_t i)
{
        registration_done(&r->items[i]);
        r->items[i] = r->items[--r->n];
}

/*
 * A registration whose task exited ends, unless it covers a Slurm step: the
 * processes the task left in the step's cgroup keep it until none is
 * tracked any more (registrations_drop_unused_steps), or Slurm ends the step.
 */
/* Ends items[i], whose task exited; returns whether it is still there (as its step's). */
static bool retire_at(struct registrations *r, size_t i)
{
        struct registration *reg = &r->items[i];

        if (!reg->slurm_step[0]) {
                drop_at(r, i);
                return false;
        }
        close(reg->pidfd);
        reg->pidfd = -1;
        reg->pid = 0; /* its pid may name another process now */
        return true;
}

static void drop_exited(struct registrations *r)
{
        for (size_t i = 0; i < r->n;)
                if (!has_exited(&r->items[i]) || retire_at(r, i))
                        i++;
}

static struct registration *find_own(struct registrations *r, pid_t pid)
{
        if (pid <= 0)
                return NULL;
        for (size_t i = 0; i < r->n; i++)
                if (r->items[i].pid == pid)
                        return &r->items[i];
        return NULL;
}

int registrations_set(struct registrations *r, const char *proc_root, pid_t pid, enum workload_class class,
                      const char *name)
{
        _cleanup_free_ char *copy = NULL;
        struct registration *reg, *grown;
        struct cluster_cgroup cg;
        int pidfd, k;

        if (name && !registration_name_is_valid(name))
                return -EINVAL;
        if (name && !(copy = strdup(name)))
                return -ENOMEM;
        drop_exited(r);
        reg = find_own(r, pid);
        if (reg) {
                reg->class = class;
                free(reg->name);
                reg->name = TAKE_PTR(copy);
                return 0;
        }
        if (r->n >= REGISTRATIONS_MAX)
                return -ENOSPC;
        grown = realloc(r->items, (r->n + 1) * sizeof(*grown));
        if (!grown)
                return -ENOMEM;
        r->items = grown;
        pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
        if (pidfd < 0)
                return NEG_ERRNO();
        /* read after the pidfd: a pid that was reused before it would be the new process's own cgroup */
        k = process_facts_read_cluster_cgroup(proc_root, pid, &cg);
        if (k < 0) {
                close(pidfd);
                return k;
        }
        reg = &r->items[r->n++];
        *reg = (struct registration){ .pid = pid, .pidfd = pidfd, .class = class, .name = TAKE_PTR(copy) };
        if (cg.slurm_step[0]) {
                reg->slurm_job = cg.slurm_job_id;
                memcpy(reg->slurm_step, cg.slurm_step, sizeof(reg->slurm_step));
        }
        return 0;
}

bool registrations_remove(struct registrations *r, pid_t pid)
{
        for (size_t i = 0; i < r->n; i++)
                if (r->items[i].pid == pid) {
                        drop_at(r, i);
                        return true;
                }
        return false;
}

static struct registration *find_of_step(struct registrations *r, const struct cluster_cgroup *cg)
{
        if (!cg->slurm_step[0])
                return NULL;
        for (size_t i = 0; i < r->n; i++)
                if (r->items[i].slurm_job == cg->slurm_job_id && strcmp(r->items[i].slurm_step, cg->slurm_step) == 0)
                        return &r->items[i];
        return NULL;
}

const struct registration *registrations_find(struct registrations *r, const char *proc_root, pid_t pid,
                                              const struct cluster_cgroup *cg)
{
        struct registration *reg = NULL;

        for (int depth = 0; r->n > 0 && pid > 1 && depth <= REGISTRATIONS_MAX_DEPTH && !reg; depth++) {
                reg = find_own(r, pid);
                /* only the one found is looked at: a lookup per process stays a walk, not a poll of all */
                if (reg && has_exited(reg)) {
                        (void)retire_at(r, (size_t)(reg - r->items));
                        reg = NULL;
                }
                if (!reg && process_facts_read_parent(proc_root, pid, &pid) < 0)
                        break;
        }
        if (!reg)
                reg = find_of_step(r, cg);
        if (reg)
                reg->covers = true;
        return reg;
}

void registrations_mark_unused(struct registrations *r)
{
        drop_exited(r);
        for (size_t i = 0; i < r->n; i++)
                r->items[i].covers = false;
}

void registrations_drop_unused_steps(struct registrations *r)
{
        for (size_t i = 0; i < r->n;)
                if (r->items[i].pidfd < 0 && !r->items[i].covers)
                        drop_at(r, i);
                else
                        i++;
}

void registrations_done(struct registrations *r)
{
        for (size_t i = 0; i < r->n; i++)
                registration_done(&r->items[i]);
        free(r->items);
        *r = (struct registrations){ 0 };
}
