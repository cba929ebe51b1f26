/* SPDX-License-Identifier: MIT */
#include "process-environ.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "process-facts.h"

static bool proc_dir_exists(const char *proc_root, pid_t pid)
{
        _cleanup_free_ char *dir = NULL;

        return asprintf(&dir, "%s/%d", proc_root, (int)pid) >= 0 && access(dir, F_OK) == 0;
}

int process_environ_read(const char *proc_root, pid_t pid, struct process_environ *ret)
{
        _cleanup_free_ char *path = NULL;
        struct process_environ e = { 0 };
        int r;

        if (asprintf(&path, "%s/%d/environ", proc_root, (int)pid) < 0)
                return -ENOMEM;
        /* one byte more than the bound, to tell a full environment from a cut one */
        r = process_facts_read_file(path, PROCESS_ENVIRON_MAX + 1, &e.data, &e.len);
        if (r == -ESRCH && proc_dir_exists(proc_root, pid)) {
                /* a process without memory, a kernel thread or a zombie: environ_open() says ESRCH
                 * (fs/proc/base.c, proc_mem_open()), and the environment is empty */
                *ret = (struct process_environ){ .data = strdup("") };
                return ret->data ? 0 : -ENOMEM;
        }
        if (r == -ESRCH || r == -ENOMEM)
                return r;
        if (r < 0) {
                /* open() fails with EACCES without PTRACE_MODE_READ (fs/proc/base.c, environ_open()) */
                *ret = (struct process_environ){ .error = r };
                return 0;
        }
        if (e.len > PROCESS_ENVIRON_MAX) {
                char *last_nul = memrchr(e.data, '\0', PROCESS_ENVIRON_MAX);

                e.truncated = true;
                e.len = last_nul ? (size_t)(last_nul - e.data) + 1 : 0;
                e.data[e.len] = '\0';
        }
        *ret = e;
        return 0;
}

void process_environ_done(struct process_environ *e)
{
        free(e->data);
        *e = (struct process_environ){ 0 };
}

const char *process_environ_get(const struct process_environ *e, const char *name)
{
        size_t name_len = strcspn(name, "=");

        if (!e->data || name_len == 0)
                return NULL;
        /* e->data[e->len] is a NUL too, so the last string ends even if the process left it open */
        for (const char *s = e->data; s < e->data + e->len; s += strlen(s) + 1)
                if (strncmp(s, name, name_len) == 0 && s[name_len] == '=')
                        return s + name_len + 1;
        return NULL;
}
