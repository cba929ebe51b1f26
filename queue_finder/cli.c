/* SPDX-License-Identifier: MIT */
/*
 * queue_finder: which GPU hardware queues does a process own, on which GPU,
 * and what are they doing. Reads every source the node offers (see
 * queue_finder.1.scd), joins them, and prints a table, JSON, or a gpreemptd
 * workload snippet.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "fileio.h"
#include "join.h"
#include "nspid.h"
#include "parse-pid.h"
#include "report.h"
#include "snapshot.h"
#include "sources.h"

#define DEFAULT_KFD_ROOT "/sys/class/kfd/kfd"
#define DEFAULT_DEBUGFS_ROOT "/sys/kernel/debug/kfd"
#define DEFAULT_PROC_ROOT "/proc"
/* What parse_pid() accepts, for error messages. */
#define PID_RANGE "a decimal number from 1 to " STRINGIFY(GP_PID_MAX_LIMIT)
#define STRINGIFY(x) STRINGIFY_VALUE(x)
#define STRINGIFY_VALUE(x) #x

enum source_index {
        SRC_TOPOLOGY,
        SRC_SYSFS,
        SRC_MQDS,
        SRC_HQDS,
        SRC_LOG,
        SRC_SNAPSHOT,
        N_SOURCES,
};

struct options {
        bool json;
        bool live;
        const char *kfd_root;
        const char *debugfs_root;
        const char *proc_root;
        const char *mqds_file;
        const char *hqds_file;
        const char *log_file;
        bool has_log_pid;
        pid_t log_pid;          /* as the log names it, in --pid-ns */
        pid_t log_pid_host;
        const char *pid_ns;
        bool snapshot;
        bool emit_config;
        enum qf_workload_class config_class;
        /* one more than can be given: the process of --log-pid is asked
         * about too */
        pid_t pids[QF_MAX_PROCESSES + 1];
        size_t n_pids;
};

/* Everything read, freed in one place. */
struct state {
        struct qf_diags warnings;
        struct qf_source_status sources[N_SOURCES];
        struct qf_gpu *gpus;
        size_t n_gpus;
        struct qf_sysfs_process *sysfs;
        size_t n_sysfs;
        struct qf_mqds mqds;
        struct qf_hqds hqds;
        struct qf_log log;
        bool have_log;
        struct qf_snapshot *snapshots;
        size_t n_snapshots;
        struct qf_result result;
        char mqds_path[4096], hqds_path[4096];
};

static void state_clear(struct state *s)
{
        qf_result_clear(&s->result);
        for (size_t i = 0; i < s->n_sysfs; i++)
                qf_sysfs_process_clear(&s->sysfs[i]);
        free(s->sysfs);
        free(s->gpus);
        qf_mqds_clear(&s->mqds);
        qf_hqds_clear(&s->hqds);
        qf_log_clear(&s->log);
        for (size_t i = 0; i < s->n_snapshots; i++)
                qf_snapshot_clear(&s->snapshots[i]);
        free(s->snapshots);
        qf_diags_clear(&s->warnings);
}

static void help(void)
{
        printf("Usage: queue_finder [OPTIONS] [PID...]\n"
               "\n"
               "Show the GPU hardware queues of processes on an AMD GPU node, joined across\n"
               "KFD sysfs, debugfs mqds/hqds and HIP/CLR logs. Without PIDs, every process\n"
               "found is shown.\n"
               "\n"
               "Options:\n"
               "  -h, --help                 show this help\n"
               "  -j, --json                 print JSON (schema: queue_finder(1))\n"
               "      --log FILE|-           read a HIP/CLR log (AMD_LOG_LEVEL>=3); - is stdin\n"
               "      --log-pid PID          the process that wrote the log, for its lines that name\n"
               "                             no process (AMD_LOG_LEVEL=3 prints no pid)\n"
               "      --mqds FILE            read a saved debugfs mqds dump instead of the live one\n"
               "      --hqds FILE            read a saved debugfs hqds dump instead of the live one\n"
               "      --no-live              read only the files given, nothing from this node\n"
               "      --snapshot             attach to each process for the debug-trap queue snapshot\n"
               "                             (root; not while gpreemptd or a debugger holds it)\n"
               "      --pid-ns PID|PATH      the PIDs given are in this pid namespace (a pid in it,\n"
               "                             or /proc/<pid>/ns/pid), also for containers nested in it\n"
               "      --emit-config CLASS    print gpreemptd [Workload] sections, CLASS online|offline\n"
               "      --sysfs-root DIR       KFD sysfs directory (default " DEFAULT_KFD_ROOT ")\n"
               "      --debugfs-root DIR     KFD debugfs directory (default " DEFAULT_DEBUGFS_ROOT ")\n"
               "      --proc-root DIR        procfs (default " DEFAULT_PROC_ROOT ")\n");
}

/* An error sentence for the user: on stderr, and with --json also as a JSON
 * document on stdout, so tools reading the output learn why there is none. */
static void __attribute__((format(printf, 2, 3))) report_error(bool json, const char *fmt, ...)
{
        _cleanup_free_ char *sentence = NULL;
        va_list ap;
        va_start(ap, fmt);
        int r = vasprintf(&sentence, fmt, ap);
        va_end(ap);
        if (r < 0) {
                fputs("queue_finder: out of memory.\n", stderr);
                return;
        }
        fprintf(stderr, "queue_finder: %s\n", sentence);
        if (!json)
                return;
        struct json_object *doc = json_object_new_object();
        if (doc && json_object_object_add(doc, "schema_version", json_object_new_int(QF_JSON_SCHEMA_VERSION)) == 0 &&
            json_object_object_add(doc, "error", json_object_new_string(sentence)) == 0)
                puts(json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
        json_object_put(doc);
}

/* 0 to run, 1 to exit successfully (help), -EINVAL after printing why not. */
static int parse_options(int argc, char **argv, struct options *o)
{
        enum {
                OPT_LOG = 256,
                OPT_LOG_PID,
                OPT_MQDS,
                OPT_HQDS,
                OPT_NO_LIVE,
                OPT_SNAPSHOT,
                OPT_PID_NS,
                OPT_EMIT,
                OPT_SYSFS,
                OPT_DEBUGFS,
                OPT_PROC,
        };
        static const struct option longopts[] = {
                { "help", no_argument, NULL, 'h' },
                { "json", no_argument, NULL, 'j' },
                { "log", required_argument, NULL, OPT_LOG },
                { "log-pid", required_argument, NULL, OPT_LOG_PID },
                { "mqds", required_argument, NULL, OPT_MQDS },
                { "hqds", required_argument, NULL, OPT_HQDS },
                { "no-live", no_argument, NULL, OPT_NO_LIVE },
                { "snapshot", no_argument, NULL, OPT_SNAPSHOT },
                { "pid-ns", required_argument, NULL, OPT_PID_NS },
                { "emit-config", required_argument, NULL, OPT_EMIT },
                { "sysfs-root", required_argument, NULL, OPT_SYSFS },
                { "debugfs-root", required_argument, NULL, OPT_DEBUGFS },
                { "proc-root", required_argument, NULL, OPT_PROC },
                {},
        };
        *o = (struct options){
                .live = true,
                .kfd_root = DEFAULT_KFD_ROOT,
                .debugfs_root = DEFAULT_DEBUGFS_ROOT,
                .proc_root = DEFAULT_PROC_ROOT,
        };

        for (int c; (c = getopt_long(argc, argv, "hj", longopts, NULL)) >= 0;) {
                switch (c) {
                case 'h':
                        help();
                        return 1;
                case 'j':
                        o->json = true;
                        break;
                case OPT_LOG:
                        if (o->log_file) {
                                report_error(o->json, "--log was given twice; one log is read per run: run once per "
                                                      "log, or concatenate the logs into one (cat A B | queue_finder "
                                                      "--log -).");
                                return -EINVAL;
                        }
                        o->log_file = optarg;
                        break;
                case OPT_LOG_PID:
                        if (o->has_log_pid) {
                                report_error(o->json, "--log-pid was given twice; it names the one process whose "
                                                      "log lines name none: give it once.");
                                return -EINVAL;
                        }
                        if (parse_pid(optarg, &o->log_pid) < 0) {
                                report_error(o->json, "--log-pid takes a process id (" PID_RANGE "), not \"%s\".",
                                             optarg);
                                return -EINVAL;
                        }
                        o->has_log_pid = true;
                        o->log_pid_host = o->log_pid;
                        break;
                case OPT_MQDS:
                        o->mqds_file = optarg;
                        break;
                case OPT_HQDS:
                        o->hqds_file = optarg;
                        break;
                case OPT_NO_LIVE:
                        o->live = false;
                        break;
                case OPT_SNAPSHOT:
                        o->snapshot = true;
                        break;
                case OPT_PID_NS:
                        o->pid_ns = optarg;
                        break;
                case OPT_EMIT:
                        if (strcmp(optarg, "online") == 0)
                                o->config_class = QF_WORKLOAD_ONLINE;
                        else if (strcmp(optarg, "offline") == 0)
                                o->config_class = QF_WORKLOAD_OFFLINE;
                        else {
                                fprintf(stderr, "queue_finder: --emit-config takes \"online\" or \"offline\", not \"%s\".\n",
                                        optarg);
                                return -EINVAL;
                        }
                        o->emit_config = true;
                        break;
                case OPT_SYSFS:
                        o->kfd_root = optarg;
                        break;
                case OPT_DEBUGFS:
                        o->debugfs_root = optarg;
                        break;
                case OPT_PROC:
                        o->proc_root = optarg;
                        break;
                default:
                        fprintf(stderr, "Try 'queue_finder --help' for the options.\n");
                        return -EINVAL;
                }
        }
        if (o->snapshot && !o->live) {
                report_error(o->json, "--snapshot reads live processes and cannot be combined with --no-live.");
                return -EINVAL;
        }
        if (o->has_log_pid && !o->log_file) {
                report_error(o->json, "--log-pid names the process that wrote a log; give the log with --log FILE.");
                return -EINVAL;
        }
        if (o->json && o->emit_config) {
                report_error(false, "--json and --emit-config print different things; choose one.");
                return -EINVAL;
        }
        int stdin_users = 0;
        stdin_users += o->log_file && strcmp(o->log_file, "-") == 0;
        stdin_users += o->mqds_file && strcmp(o->mqds_file, "-") == 0;
        stdin_users += o->hqds_file && strcmp(o->hqds_file, "-") == 0;
        if (stdin_users > 1) {
                report_error(o->json, "only one input can be read from stdin (-).");
                return -EINVAL;
        }
        for (int i = optind; i < argc; i++) {
                if (o->n_pids == QF_MAX_PROCESSES) {
                        report_error(o->json, "at most %d PIDs can be given.", QF_MAX_PROCESSES);
                        return -EINVAL;
                }
                if (parse_pid(argv[i], &o->pids[o->n_pids]) < 0) {
                        report_error(o->json, "\"%s\" is not a process id (" PID_RANGE ").", argv[i]);
                        return -EINVAL;
                }
                /* a pid given twice is one process: its queues once */
                bool again = false;
                for (size_t k = 0; k < o->n_pids && !again; k++)
                        again = o->pids[k] == o->pids[o->n_pids];
                o->n_pids += !again;
        }
        return 0;
}

/* The pid namespace of --pid-ns and its depth below ours. */
struct container_ns {
        struct qf_pid_ns ns;
        size_t level;
};

/* Reading another user's /proc/<pid>/ns/pid needs ptrace access to it. */
static const char *privilege_hint(void)
{
        return geteuid() == 0 ? "" : "; reading other users' namespaces needs root";
}

/* The host pid of pid in --pid-ns; what prefixes the errors. */
static int map_pid(const struct options *o, const struct container_ns *c, const char *what, pid_t pid,
                   pid_t *ret_host)
{
        int r = qf_nspid_to_host(o->proc_root, &c->ns, c->level, pid, ret_host);
        if (r == -ESRCH)
                report_error(o->json,
                             "%sno process has pid %d in pid namespace pid:[%llu] or in a namespace nested in it%s.",
                             what, (int) pid, (unsigned long long) c->ns.ino, privilege_hint());
        else if (r < 0)
                report_error(o->json, "%scannot tell which process has pid %d in pid namespace pid:[%llu]: %s%s.", what,
                             (int) pid, (unsigned long long) c->ns.ino, strerror(-r), privilege_hint());
        return r;
}

/* Container pids given with --pid-ns become host pids, which is what KFD uses. */
static int map_pids(struct options *o, struct container_ns *ret)
{
        if (!o->pid_ns)
                return 0;
        struct container_ns c;
        int r = qf_pid_ns_from_arg(o->proc_root, o->pid_ns, &c.ns);
        if (r < 0) {
                report_error(o->json, "cannot open the pid namespace \"%s\": %s.", o->pid_ns, strerror(-r));
                return r;
        }
        r = qf_pid_ns_level(o->proc_root, &c.ns, &c.level);
        if (r == -ESRCH) {
                report_error(o->json, "no process lives in \"%s\": it is no pid namespace, or one without processes%s.",
                             o->pid_ns, privilege_hint());
                return r;
        }
        if (r < 0) {
                report_error(o->json, "cannot list the processes in %s: %s.", o->proc_root, strerror(-r));
                return r;
        }
        for (size_t i = 0; i < o->n_pids; i++)
                if ((r = map_pid(o, &c, "", o->pids[i], &o->pids[i])) < 0)
                        return r;
        if (o->has_log_pid && (r = map_pid(o, &c, "--log-pid: ", o->log_pid, &o->log_pid_host)) < 0)
                return r;
        *ret = c;
        return 1;
}

/* A containerized application logs its pid as seen in the container: with
 * --pid-ns, the log's pids (and --log-pid, which stands for them, given to
 * the parser as the log names it) are mapped like the arguments. A pid no
 * process in the namespace has (it ended, or the log is from elsewhere)
 * must not pass for the host process that happens to have that number:
 * its queues lose their process, with a warning. */
static void map_log_pids(const struct options *o, const struct container_ns *c, struct state *st)
{
        pid_t from = 0, to = 0;
        for (size_t i = 0; i < st->log.n; i++) {
                struct qf_log_queue *q = &st->log.queues[i];
                if (!q->has_pid)
                        continue;
                if (q->pid != from) {
                        from = q->pid;
                        if (qf_nspid_to_host(o->proc_root, &c->ns, c->level, from, &to) < 0) {
                                to = 0;
                                qf_diag_add(&st->warnings, o->log_file, 0,
                                            "no process has the log's pid %d in pid namespace pid:[%llu] (it ended, "
                                            "or the log is from another namespace); its queues are shown without a "
                                            "process",
                                            (int) from, (unsigned long long) c->ns.ino);
                        }
                }
                q->has_pid = to != 0;
                q->pid = to;
        }
}

/* Why queues of the log have no process, from the form of its ids. */
static const char *why_no_pid(enum qf_log_prefix prefix)
{
        switch (prefix) {
        case QF_LOG_PREFIX_NONE:
                return "its lines carry no pid (clr prints one from AMD_LOG_LEVEL=4 on)";
        case QF_LOG_PREFIX_TID:
                return "ROCm 4.5 names the pid on HIP API lines only";
        default:
                return "some of its queue lines name no pid";
        }
}

/* --log-pid that no line needed is a mistake worth a word; queues left
 * without a process when it was not given get a hint at it. */
static void check_log_pids(const struct options *o, struct state *st)
{
        if (o->has_log_pid) {
                if (st->log.unmarked_pid_lines == 0)
                        qf_diag_add(&st->warnings, o->log_file, 0,
                                    "--log-pid %d was not used: every queue line of the log names its process, "
                                    "or there are none",
                                    (int) o->log_pid);
                return;
        }
        size_t pidless = 0;
        for (size_t i = 0; i < st->log.n; i++)
                pidless += !st->log.queues[i].has_pid;
        if (pidless > 0)
                qf_diag_add(&st->warnings, o->log_file, 0,
                            "%zu queue(s) of the log belong to no known process: %s; if one process wrote the log, "
                            "name it with --log-pid PID",
                            pidless, why_no_pid(st->log.prefix));
}

static int open_input(const char *path)
{
        if (strcmp(path, "-") == 0)
                return STDIN_FILENO;
        return open(path, O_RDONLY | O_CLOEXEC);
}

/* Reads one text source. A file the user named must be readable (an error);
 * the live debugfs file is optional (root only), so failing to open it is
 * only recorded in the source status. */
static int read_text_source(struct state *st, enum source_index idx, const char *path, bool required, bool json,
                            int (*parse)(int, const char *, struct qf_diags *, void *), void *ret)
{
        st->sources[idx].path = path;
        int fd = open_input(path);
        if (fd < 0) {
                st->sources[idx].error = -errno;
                if (!required)
                        return 0;
                report_error(json, "cannot open %s: %s.", path, strerror(errno));
                return -errno;
        }
        int r = parse(fd, path, &st->warnings, ret);
        if (fd != STDIN_FILENO)
                close(fd);
        if (r < 0) {
                st->sources[idx].error = r;
                report_error(json, "reading %s failed: %s.", path, strerror(-r));
                return required ? r : 0;
        }
        return 1;
}

static int parse_mqds_any(int fd, const char *name, struct qf_diags *d, void *ret)
{
        return qf_mqds_parse(fd, name, d, ret);
}

static int parse_hqds_any(int fd, const char *name, struct qf_diags *d, void *ret)
{
        return qf_hqds_parse(fd, name, d, ret);
}

struct log_target {
        const pid_t *unmarked_pid;
        struct qf_log *log;
};

static int parse_log_any(int fd, const char *name, struct qf_diags *d, void *ret)
{
        const struct log_target *t = ret;
        return qf_log_parse(fd, name, t->unmarked_pid, d, t->log);
}

static int read_sysfs(struct state *st, const struct options *o)
{
        st->sources[SRC_SYSFS].path = o->kfd_root;
        _cleanup_free_ pid_t *listed = NULL;
        const pid_t *pids = o->pids;
        size_t n = o->n_pids;
        if (n == 0) {
                int r = qf_sysfs_list_pids(o->kfd_root, &listed, &n);
                if (r < 0) {
                        st->sources[SRC_SYSFS].error = r;
                        return 0;
                }
                pids = listed;
        }
        st->sysfs = calloc(n ? n : 1, sizeof(*st->sysfs));
        if (!st->sysfs)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                int r = qf_sysfs_read_process(o->kfd_root, pids[i], &st->warnings, &st->sysfs[st->n_sysfs]);
                if (r == -ENOMEM)
                        return r;
                if (r == 0)
                        st->n_sysfs++;
        }
        return 0;
}

/* Every process asked for, or else every process sysfs lists. A failure is
 * a warning with libgpreempt's explanation: the other sources still count. */
static int read_snapshots(struct state *st, const struct options *o)
{
        size_t n = o->n_pids ? o->n_pids : st->n_sysfs;
        st->snapshots = calloc(n ? n : 1, sizeof(*st->snapshots));
        if (!st->snapshots)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                pid_t pid = o->n_pids ? o->pids[i] : st->sysfs[i].pid;
                struct qf_snapshot_error error = { 0 };
                int r = qf_snapshot_read(pid, NULL, &st->snapshots[st->n_snapshots], &error);
                if (r < 0) {
                        _cleanup_free_ char *why = error.reason;
                        if (r == -ENOMEM)
                                return r;
                        st->sources[SRC_SNAPSHOT].error = r;
                        qf_diag_add(&st->warnings, "snapshot", 0, "pid %d: %s", (int) pid,
                                    why ? why : strerror(-r));
                        continue;
                }
                st->n_snapshots++;
        }
        return 0;
}

static int read_sources(struct state *st, const struct options *o)
{
        static const char *const names[N_SOURCES] = { "topology", "sysfs", "mqds", "hqds", "log", "snapshot" };
        for (int i = 0; i < N_SOURCES; i++)
                st->sources[i] = (struct qf_source_status){ .name = names[i], .skipped = true };
        int r;

        if (o->live) {
                st->sources[SRC_TOPOLOGY].skipped = false;
                st->sources[SRC_TOPOLOGY].path = o->kfd_root;
                r = qf_topology_read(o->kfd_root, &st->warnings, &st->gpus, &st->n_gpus);
                if (r == -ENOMEM)
                        return r;
                st->sources[SRC_TOPOLOGY].error = r < 0 ? r : 0;
                for (size_t i = 0; i < st->n_gpus; i++)
                        qf_gpu_name_resolve(&st->gpus[i]);

                st->sources[SRC_SYSFS].skipped = false;
                if ((r = read_sysfs(st, o)) < 0)
                        return r;
        }
        if (o->snapshot) {
                st->sources[SRC_SNAPSHOT].skipped = false;
                if ((r = read_snapshots(st, o)) < 0)
                        return r;
        }

        snprintf(st->mqds_path, sizeof(st->mqds_path), "%s/mqds", o->debugfs_root);
        snprintf(st->hqds_path, sizeof(st->hqds_path), "%s/hqds", o->debugfs_root);
        const char *mqds = o->mqds_file ? o->mqds_file : o->live ? st->mqds_path : NULL;
        const char *hqds = o->hqds_file ? o->hqds_file : o->live ? st->hqds_path : NULL;
        if (mqds) {
                st->sources[SRC_MQDS].skipped = false;
                if ((r = read_text_source(st, SRC_MQDS, mqds, o->mqds_file, o->json, parse_mqds_any, &st->mqds)) < 0)
                        return r;
        }
        if (hqds) {
                st->sources[SRC_HQDS].skipped = false;
                if ((r = read_text_source(st, SRC_HQDS, hqds, o->hqds_file, o->json, parse_hqds_any, &st->hqds)) < 0)
                        return r;
        }
        if (o->log_file) {
                st->sources[SRC_LOG].skipped = false;
                struct log_target t = { .unmarked_pid = o->has_log_pid ? &o->log_pid : NULL, .log = &st->log };
                if ((r = read_text_source(st, SRC_LOG, o->log_file, true, o->json, parse_log_any, &t)) < 0)
                        return r;
                st->have_log = true;
        }
        return 0;
}

static int print_report(struct state *st, const struct options *o)
{
        struct qf_report rep = {
                .result = &st->result,
                .gpus = st->gpus,
                .n_gpus = st->n_gpus,
                .log = st->have_log ? &st->log : NULL,
                .sources = st->sources,
                .n_sources = N_SOURCES,
                .warnings = &st->warnings,
        };
        int r;
        if (o->json) {
                struct json_object *doc = NULL;
                if ((r = qf_report_json(&rep, &doc)) < 0)
                        return r;
                const char *text = json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PRETTY |
                                                                               JSON_C_TO_STRING_NOSLASHESCAPE);
                r = text && puts(text) >= 0 ? 0 : -EIO;
                json_object_put(doc);
                return r;
        }
        if (o->emit_config)
                return qf_report_config(stdout, &rep, o->config_class);
        return qf_report_table(stdout, &rep);
}

/* When only some processes are asked about, the one --log-pid names is one
 * of them: else the queues it is given would be left out of the report. */
static void ask_about_log_pid(struct options *o)
{
        if (!o->has_log_pid || o->n_pids == 0)
                return;
        for (size_t i = 0; i < o->n_pids; i++)
                if (o->pids[i] == o->log_pid_host)
                        return;
        o->pids[o->n_pids++] = o->log_pid_host;
}

static int run(const struct options *o, const struct container_ns *c)
{
        struct state st = { 0 };
        int r = read_sources(&st, o);
        if (r >= 0 && c)
                map_log_pids(o, c, &st);
        if (r >= 0 && st.have_log)
                check_log_pids(o, &st);
        if (r >= 0) {
                const struct qf_inputs in = {
                        .sysfs = st.sysfs,
                        .n_sysfs = st.n_sysfs,
                        .snapshots = st.snapshots,
                        .n_snapshots = st.n_snapshots,
                        .mqds = &st.mqds,
                        .mqds_name = st.sources[SRC_MQDS].path,
                        .hqds = &st.hqds,
                        .log = &st.log,
                        .log_name = o->log_file,
                        .pids = o->pids,
                        .n_pids = o->n_pids,
                };
                r = qf_join(&in, &st.result);
        }
        if (r >= 0) {
                for (size_t i = 0; i < st.result.n_processes; i++)
                        qf_process_identify(o->proc_root, &st.result.processes[i]);
                r = print_report(&st, o);
        }
        if (r == -ENOMEM)
                report_error(o->json, "out of memory.");
        else if (r == -EIO)
                report_error(false, "cannot write the output.");
        state_clear(&st);
        return r;
}

int main(int argc, char **argv)
{
        _cleanup_free_ struct options *o = malloc(sizeof(*o));
        if (!o) {
                fprintf(stderr, "queue_finder: out of memory.\n");
                return EXIT_FAILURE;
        }
        int r = parse_options(argc, argv, o);
        if (r != 0)
                return r > 0 ? EXIT_SUCCESS : EXIT_FAILURE;
        struct container_ns c;
        r = map_pids(o, &c);
        if (r < 0)
                return EXIT_FAILURE;
        ask_about_log_pid(o);
        return run(o, r > 0 ? &c : NULL) < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
