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
        close(reg->pidfd);
        free(reg->name);
}

/* A pidfd turns readable when its process exits (pidfd_open(2)). */
static bool has_exited(const struct registration *reg)
{
        struct pollfd p = { .fd = reg->pidfd, .events = POLLIN };

        return poll(&p, 1, 0) != 0;
}

static void drop_at(struct registrations *r, size_t i)
{
        registration_done(&r->items[i]);
        r->items[i] = r->items[--r->n];
}

static void drop_exited(struct registrations *r)
{
        for (size_t i = 0; i < r->n;)
                if (has_exited(&r->items[i]))
                        drop_at(r, i);
                else
                        i++;
}

static struct registration *find_own(struct registrations *r, pid_t pid)
{
        for (size_t i = 0; i < r->n; i++)
                if (r->items[i].pid == pid)
                        return &r->items[i];
        return NULL;
}

int registrations_set(struct registrations *r, pid_t pid, enum workload_class class, const char *name)
{
        _cleanup_free_ char *copy = NULL;
        struct registration *reg, *grown;
        int pidfd;

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
        r->items[r->n++] = (struct registration){ .pid = pid, .pidfd = pidfd, .class = class, .name = TAKE_PTR(copy) };
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

const struct registration *registrations_find(struct registrations *r, const char *proc_root, pid_t pid)
{
        drop_exited(r);
        for (int depth = 0; r->n > 0 && pid > 1 && depth <= REGISTRATIONS_MAX_DEPTH; depth++) {
                const struct registration *reg = find_own(r, pid);

                if (reg)
                        return reg;
                if (process_facts_read_parent(proc_root, pid, &pid) < 0)
                        return NULL;
        }
        return NULL;
}

void registrations_done(struct registrations *r)
{
        for (size_t i = 0; i < r->n; i++)
                registration_done(&r->items[i]);
        free(r->items);
        *r = (struct registrations){ 0 };
}
