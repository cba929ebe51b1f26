/* SPDX-License-Identifier: MIT */
/*
 * doctor: each process using the GPU (a directory under
 * /sys/class/kfd/kfd/proc, kfd-interface.md §8.1), without touching it:
 * its command line, its class as gpreemptd would give it, whether a
 * debugger other than gpreemptd traces it (a process has one tracer,
 * §9.7-9.8), and whether its ROCm runtime lets it be suspended (§9.9).
 *
 * Only a debug session shows a runtime's state. When gpreemptd has one on
 * the process its Status says the state; otherwise the names of the ROCm
 * libraries in /proc/<pid>/maps may tell the ROCm version (5.7 and later
 * enable debugging, rocm-userspace.md §5, §11), and when they do not, the
 * answer is "unknown".
 */
#include "doctor.h"

#include <errno.h>
#include <json.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "config.h"
#include "doctor-parse.h"
#include "fileio.h"
#include "process-facts.h"
#include "sources.h"
#include "workload-match.h"

/* /proc/<pid>/maps of a large process runs to megabytes; past this it is cut (the ROCm libraries load early). */
#define MAPS_MAX (16u << 20)
/* A command line is shown up to this many bytes. */
#define COMMAND_SHOWN 120

enum klass {
        CLASS_UNKNOWN, /* the configuration did not load, and gpreemptd does not say */
        CLASS_NONE,    /* no workload matches */
        CLASS_ONLINE,
        CLASS_OFFLINE,
};

/* Whether the process can be suspended, as far as doctor can tell. */
enum suspendable {
        SUSPENDABLE_YES,
        SUSPENDABLE_UNKNOWN,
        SUSPENDABLE_NO,
};

struct process_view {
        pid_t pid;
        char command[COMMAND_SHOWN + 4];
        bool is_gpreemptd;
        enum klass klass;
        char workload[64];
        const char *class_source; /* "gpreemptd", "the configuration" */
        pid_t tracer;
        char tracer_name[64];
        bool tracer_is_gpreemptd;
        enum suspendable runtime;
        char runtime_text[384];
        char runtime_advice[256];
};

/* src into dst, cut to fit (names shown to the user, never parsed again). */
static void copy_cut(char *dst, size_t size, const char *src)
{
        size_t n = strnlen(src, size - 1);

        memcpy(dst, src, n);
        dst[n] = '\0';
}

/* The base name of an executable's path, "" for none. */
static const char *base_name(const char *exe)
{
        if (!exe)
                return "";
        return strrchr(exe, '/') ? strrchr(exe, '/') + 1 : exe;
}

static void comm_of(const struct doctor *d, pid_t pid, char *buf, size_t size)
{
        char path[PATH_MAX], text[64];
        size_t len;

        buf[0] = '\0';
        if (qf_pathf(path, sizeof(path), "%s/%d/comm", d->paths.proc_root, (int)pid) < 0 ||
            qf_read_file(path, text, sizeof(text), &len) < 0)
                return;
        text[strcspn(text, "\n")] = '\0';
        snprintf(buf, size, "%s", text);
}

static void read_tracer(const struct doctor *d, const struct process_facts *facts, struct process_view *v)
{
        _cleanup_free_ char *exe = NULL;
        const char *name;

        v->tracer = facts ? facts->tracer : -1;
        if (v->tracer <= 0)
                return;
        comm_of(d, v->tracer, v->tracer_name, sizeof(v->tracer_name));
        if (process_facts_read_exe(d->paths.proc_root, v->tracer, &exe) < 0)
                exe = NULL;
        name = base_name(exe);
        v->tracer_is_gpreemptd = strcmp(name, "gpreemptd") == 0 || strcmp(v->tracer_name, "gpreemptd") == 0;
        if (!v->tracer_name[0])
                copy_cut(v->tracer_name, sizeof(v->tracer_name), name[0] ? name : "another process");
}

/* gpreemptd's Status entry for the process, or NULL. */
static struct json_object *daemon_entry(const struct doctor *d, pid_t pid)
{
        struct json_object *processes, *v;

        if (!d->daemon_status || !json_object_object_get_ex(d->daemon_status, "processes", &processes) ||
            !json_object_is_type(processes, json_type_array))
                return NULL;
        for (size_t i = 0; i < json_object_array_length(processes); i++) {
                struct json_object *p = json_object_array_get_idx(processes, i);

                if (json_object_object_get_ex(p, "pid", &v) && json_object_get_int64(v) == pid)
                        return p;
        }
        return NULL;
}

static const char *entry_string(struct json_object *entry, const char *key)
{
        struct json_object *v;

        return entry && json_object_object_get_ex(entry, key, &v) && json_object_is_type(v, json_type_string)
                       ? json_object_get_string(v)
                       : NULL;
}

static bool entry_bool(struct json_object *entry, const char *key)
{
        struct json_object *v;

        return entry && json_object_object_get_ex(entry, key, &v) && json_object_get_boolean(v);
}

static int64_t entry_int(struct json_object *entry, const char *key)
{
        struct json_object *v;

        return entry && json_object_object_get_ex(entry, key, &v) ? json_object_get_int64(v) : 0;
}

static void classify(const struct doctor *d, struct json_object *entry, const struct process_facts *facts,
                     struct process_view *v)
{
        const char *klass = entry_string(entry, "class");
        const struct workload *w;

        if (entry) {
                v->class_source = "gpreemptd";
                v->klass = !klass ? CLASS_NONE : strcmp(klass, "offline") == 0 ? CLASS_OFFLINE : CLASS_ONLINE;
                snprintf(v->workload, sizeof(v->workload), "%s",
                         entry_bool(entry, "registered") ? "registered by hand" : entry_string(entry, "workload") ?: "");
                return;
        }
        v->class_source = "the configuration";
        if (!d->config || !facts) {
                v->klass = CLASS_UNKNOWN;
                return;
        }
        w = workload_match_first(d->config, facts);
        v->klass = !w ? CLASS_NONE : w->class == WORKLOAD_CLASS_OFFLINE ? CLASS_OFFLINE : CLASS_ONLINE;
        if (w)
                snprintf(v->workload, sizeof(v->workload), "%s", w->name);
}

static void runtime_said(struct process_view *v, enum suspendable s, const char *advice, const char *format, ...)
        __attribute__((format(printf, 4, 5)));
static void runtime_said(struct process_view *v, enum suspendable s, const char *advice, const char *format, ...)
{
        va_list ap;

        v->runtime = s;
        va_start(ap, format);
        vsnprintf(v->runtime_text, sizeof(v->runtime_text), format, ap);
        va_end(ap);
        snprintf(v->runtime_advice, sizeof(v->runtime_advice), "%s", advice ? advice : "");
}

static void judge_runtime(const struct doctor *d, struct json_object *entry, struct process_view *v)
{
        const char *state = entry_string(entry, "runtime"), *attach_error = entry_string(entry, "attach_error");
        _cleanup_free_ char *maps = NULL;
        char path[PATH_MAX];
        struct doctor_rocm rocm;
        int r;

        if (entry_bool(entry, "attached") && state) {
                if (strcmp(state, "enabled") == 0)
                        runtime_said(v, SUSPENDABLE_YES, NULL,
                                     "its ROCm runtime enabled debugging (gpreemptd's session says so)");
                else if (strcmp(state, "disabled") == 0 && entry_int(entry, "queues") == 0)
                        runtime_said(v, SUSPENDABLE_UNKNOWN,
                                     "look again once it runs: ROCm 5.7 and newer enable debugging as they start",
                                     "its ROCm runtime has not enabled debugging yet (gpreemptd's session says "
                                     "disabled) and it has no queues: it may still be starting");
                else if (strcmp(state, "disabled") == 0)
                        runtime_said(v, SUSPENDABLE_NO,
                                     "run it with ROCm 5.7 or newer, whose runtime enables debugging at start",
                                     "its ROCm runtime has not enabled debugging (gpreemptd's session says "
                                     "disabled): it is older than ROCm 5.7, or a runtime without debugger support");
                else if (strcmp(state, "enabled-busy") == 0)
                        runtime_said(v, SUSPENDABLE_NO,
                                     "on a GPU with one debug VMID, run one offline process at a time",
                                     "another process holds its GPU's only debug VMID (gpreemptd's session says "
                                     "enabled-busy)");
                else
                        runtime_said(v, SUSPENDABLE_NO, "check dmesg for amdgpu errors",
                                     "the kernel could not activate debugging for it (gpreemptd's session says %s)",
                                     state);
                return;
        }
        if (attach_error) {
                runtime_said(v, SUSPENDABLE_NO, "see gpreemptctl status and journalctl -u gpreemptd",
                             "gpreemptd could not attach: %s", attach_error);
                return;
        }
        r = qf_pathf(path, sizeof(path), "%s/%d/maps", d->paths.proc_root, (int)v->pid);
        if (r >= 0)
                r = process_facts_read_file(path, MAPS_MAX, &maps, NULL);
        if (r < 0) {
                runtime_said(v, SUSPENDABLE_UNKNOWN, "run gpreemptctl doctor as root",
                             "its ROCm runtime is unknown: %s cannot be read (%s)", path, strerror(-r));
                return;
        }
        doctor_parse_rocm(maps, &rocm);
        if (!rocm.mapped)
                runtime_said(v, SUSPENDABLE_UNKNOWN,
                             "once gpreemptd has attached, gpreemptctl status shows its runtime's state",
                             "its ROCm runtime is unknown: it maps no libamdhip64, libhsa-runtime64 or libhsakmt "
                             "(a static or another runtime)");
        else if (!rocm.version_known)
                runtime_said(v, SUSPENDABLE_UNKNOWN,
                             "once gpreemptd has attached, gpreemptctl status shows its runtime's state",
                             "its ROCm runtime is unknown: %s does not say which ROCm it is", rocm.library);
        else if (rocm.major < 5 || (rocm.major == 5 && rocm.minor < 7))
                runtime_said(v, SUSPENDABLE_NO, "run it with ROCm 5.7 or newer, whose runtime enables debugging at start",
                             "it runs ROCm %u.%u (%s), older than 5.7, whose runtime never enables debugging",
                             rocm.major, rocm.minor, rocm.library);
        else
                runtime_said(v, SUSPENDABLE_YES, NULL,
                             "it runs ROCm %u.%u (%s), whose runtime enables debugging%s", rocm.major, rocm.minor,
                             rocm.library, d->debug_firmware_missing ? " where the GPU firmware allows (see gpu)" : "");
}

static void describe_class(const struct process_view *v, char *buf, size_t size)
{
        switch (v->klass) {
        case CLASS_OFFLINE:
        case CLASS_ONLINE:
                snprintf(buf, size, "%s%s%s, by %s", v->klass == CLASS_OFFLINE ? "offline" : "online",
                         v->workload[0] ? ", workload " : "", v->workload, v->class_source);
                return;
        case CLASS_NONE:
                snprintf(buf, size, "not classified by %s: gpreemptd leaves it alone", v->class_source);
                return;
        case CLASS_UNKNOWN:
                snprintf(buf, size, "class unknown: the configuration did not load");
                return;
        }
}

static void report(struct doctor *d, const struct process_view *v)
{
        bool foreign = v->tracer > 0 && !v->tracer_is_gpreemptd;
        enum suspendable s = foreign ? SUSPENDABLE_NO : v->runtime;
        enum doctor_status status;
        char klass[160], tracer[192];
        struct doctor_check *c;

        describe_class(v, klass, sizeof(klass));
        if (v->tracer > 0)
                snprintf(tracer, sizeof(tracer), "traced by %s (pid %d)%s", v->tracer_name, (int)v->tracer,
                         foreign ? ", not gpreemptd: a process has one tracer, so gpreemptd cannot attach" : "");
        else
                snprintf(tracer, sizeof(tracer), "%s", v->tracer == 0 ? "not traced" : "its tracer is unknown");

        /* Only an offline process must be suspendable; for the others a problem is worth a word, no more. */
        if (v->klass == CLASS_OFFLINE)
                status = s == SUSPENDABLE_NO ? DOCTOR_FAILED : s == SUSPENDABLE_UNKNOWN ? DOCTOR_WARNING : DOCTOR_OK;
        else if (v->klass == CLASS_ONLINE)
                status = DOCTOR_OK;
        else
                status = s == SUSPENDABLE_NO ? DOCTOR_WARNING : DOCTOR_OK;

        if (v->klass == CLASS_ONLINE)
                /* watched through debugfs and breakpoints, never attached: its tracer and runtime do not matter */
                c = doctor_add(d, "process", status, "'%s' (%s): gpreemptd watches its queues and never suspends it",
                               v->command, klass);
        else
                c = doctor_add(d, "process", status, "'%s' (%s): %s; %s", v->command, klass, tracer,
                               v->runtime_text);
        if (c)
                c->pid = v->pid;
        if (status == DOCTOR_OK)
                return;
        if (foreign)
                doctor_advise(c, "stop %s (pid %d) or detach it; gpreemptd attaches when it next looks%s",
                              v->tracer_name, (int)v->tracer,
                              v->klass == CLASS_OFFLINE ? "" : " (if this process is meant to be offline)");
        else if (v->runtime_advice[0])
                doctor_advise(c, "%s%s", v->runtime_advice,
                              v->klass == CLASS_OFFLINE ? "" : " (if this process is meant to be offline)");
}

static void check_process(struct doctor *d, pid_t pid)
{
        struct process_facts facts = { 0 };
        struct process_view v = { .pid = pid };
        struct json_object *entry = daemon_entry(d, pid);
        bool have_facts;
        int r;

        r = process_facts_read(d->paths.proc_root, d->paths.slurm_jobs_dir, pid, &facts);
        if (r == -ESRCH)
                return; /* gone since the listing */
        have_facts = r >= 0;
        if (have_facts) {
                snprintf(v.command, sizeof(v.command), "%s", facts.cmdline[0] ? facts.cmdline : "?");
                if (strlen(facts.cmdline) > COMMAND_SHOWN)
                        strcpy(v.command + COMMAND_SHOWN, "...");
        } else {
                comm_of(d, pid, v.command, sizeof(v.command));
        }
        if (have_facts && strcmp(base_name(facts.exe), "gpreemptd") == 0) {
                struct doctor_check *c = doctor_add(d, "process", DOCTOR_OK, "'%s': gpreemptd itself", v.command);

                if (c)
                        c->pid = pid;
                process_facts_done(&facts);
                return;
        }
        classify(d, entry, have_facts ? &facts : NULL, &v);
        read_tracer(d, have_facts ? &facts : NULL, &v);
        judge_runtime(d, entry, &v);
        report(d, &v);
        process_facts_done(&facts);
}

void doctor_check_processes(struct doctor *d)
{
        char kfd_root[PATH_MAX];
        _cleanup_free_ pid_t *pids = NULL;
        struct doctor_check *c;
        size_t n = 0, shown = 0;
        int r;

        r = qf_pathf(kfd_root, sizeof(kfd_root), "%s/class/kfd/kfd", d->paths.sysfs_root);
        if (r >= 0)
                r = qf_sysfs_list_pids(kfd_root, &pids, &n);
        if (r < 0) {
                /* without KFD the gpus check has said so already */
                if (r != -ENOENT) {
                        c = doctor_add(d, "processes", DOCTOR_WARNING, "cannot list %s/proc: %s", kfd_root,
                                       strerror(-r));
                        doctor_advise(c, "check the permissions of /sys/class/kfd");
                }
                return;
        }
        for (size_t i = 0; i < n; i++) {
                size_t before = d->n_checks;

                /* doctor's own KFD process, made by the kfd-device check */
                if (pids[i] == getpid())
                        continue;
                check_process(d, pids[i]);
                shown += d->n_checks > before;
        }
        if (!shown)
                doctor_add(d, "processes", DOCTOR_OK, "no other process uses the GPU now");
}
