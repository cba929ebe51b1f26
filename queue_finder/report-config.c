/* SPDX-License-Identifier: MIT */
/*
 * --emit-config: gpreemptd workload sections for the processes found, to be
 * saved as a drop-in in /etc/gpreempt/workloads.d/. A pid lives only as long
 * as its process, so a known executable is matched by path and the pid is
 * only a comment; without one the section matches the pid.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

/* gpreemptd.conf(5): Name= is 1 to this many letters, digits or "-_.@". */
#define WORKLOAD_NAME_MAX 64
/* What /proc/PID/exe adds to a binary replaced on disk (a package upgrade): not part of its path. */
#define DELETED_SUFFIX " (deleted)"

static bool name_char(char c)
{
        return isalnum((unsigned char) c) || (c && strchr("-_.@", c));
}

/* "<executable's name>-<pid>" as gpreemptd takes a Name=: other characters
 * become '_', and the name is cut to leave room for the pid. */
static void workload_name(char buf[static WORKLOAD_NAME_MAX + 1], const char *base, size_t base_len, pid_t pid)
{
        char suffix[16];
        int n = snprintf(suffix, sizeof(suffix), "-%d", (int) pid);
        size_t k = 0;

        for (; k < base_len && k < WORKLOAD_NAME_MAX - (size_t) n; k++)
                buf[k] = name_char(base[k]) ? base[k] : '_';
        memcpy(buf + k, suffix, (size_t) n + 1);
}

/*
 * The executable's path as a MatchExecutable= glob that matches that path
 * alone (fnmatch(3) without FNM_NOESCAPE: '\' makes "*?[\" literal), its
 * " (deleted)" dropped, as gpreemptd drops it; NULL where no value can
 * hold it: control characters (INI values end at the newline) or white
 * space (which separates a Match key's values), and out of memory, where
 * the pid matches instead. *ret_len: the path's length
 * without the suffix. Free the result.
 */
static char *executable_glob(const char *exe, size_t *ret_len)
{
        size_t len = strlen(exe), sl = strlen(DELETED_SUFFIX);
        char *glob, *g;

        if (len > sl && strcmp(exe + len - sl, DELETED_SUFFIX) == 0)
                len -= sl;
        for (size_t i = 0; i < len; i++)
                if ((unsigned char) exe[i] <= 0x20 || exe[i] == 0x7f)
                        return NULL;
        glob = g = malloc(2 * len + 1);
        if (!glob)
                return NULL;
        for (size_t i = 0; i < len; i++) {
                if (strchr("*?[]\\", exe[i]))
                        *g++ = '\\';
                *g++ = exe[i];
        }
        *g = '\0';
        *ret_len = len;
        return glob;
}

int qf_report_config(FILE *f, const struct qf_report *r, enum qf_workload_class cls)
{
        const char *class_name = cls == QF_WORKLOAD_ONLINE ? "online" : "offline";
        fprintf(f, "# gpreemptd workloads found by queue_finder (class %s).\n", class_name);
        for (size_t i = 0; r->result && i < r->result->n_processes; i++) {
                const struct qf_process *p = &r->result->processes[i];
                /* A section needs a process to match: queues no log line
                 * tied to one would make a MatchPID that names nobody. */
                if (!p->has_pid) {
                        fprintf(f, "\n# %zu queue(s) from log lines that name no process are left out: give the "
                                   "process with --log-pid PID.\n",
                                p->n_queues);
                        continue;
                }
                if (p->pid <= 0)
                        continue;
                size_t exe_len = 0;
                char *glob = p->has_exe ? executable_glob(p->exe, &exe_len) : NULL;
                char name[WORKLOAD_NAME_MAX + 1];
                fprintf(f, "\n[Workload]\n");
                if (glob) {
                        const char *base = memrchr(p->exe, '/', exe_len);
                        base = base ? base + 1 : p->exe;
                        workload_name(name, base, exe_len - (size_t) (base - p->exe), p->pid);
                        fprintf(f, "# pid %d when this was generated, %zu GPU queue(s)\nName=%s\n", (int) p->pid,
                                p->n_queues, name);
                } else {
                        fprintf(f, "# %zu GPU queue(s)%s\nName=pid-%d\n", p->n_queues,
                                p->has_exe ? "; its executable's path has white space or control characters, which "
                                             "MatchExecutable= cannot hold"
                                           : "",
                                (int) p->pid);
                }
                fprintf(f, "Class=%s\n", class_name);
                if (glob)
                        fprintf(f, "MatchExecutable=%s\n", glob);
                else
                        fprintf(f, "MatchPID=%d\n", (int) p->pid);
                free(glob);
        }
        return ferror(f) ? -EIO : 0;
}
