/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <limits.h>
#include <pwd.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "api-names.h"
#include "cleanup.h"
#include "cluster-cgroup.h"
#include "ini-reader.h"
#include "parse-decimal.h"
#include "parse-pid.h"

#define MAIN_FILE "gpreemptd.conf"
#define DROPIN_DIR "workloads.d"
#define MS_MAX UINT64_C(3600000) /* an hour: anything longer is a typo */
/* The control socket is the directory plus "/" API_SOCKET_NAME, and its path,
 * with the terminating NUL, must fit sun_path (unix(7)). */
#define SOCKET_DIR_MAX (sizeof(((struct sockaddr_un *)NULL)->sun_path) - sizeof("/" API_SOCKET_NAME))

enum value_kind {
        VALUE_SEC,       /* seconds in the file, microseconds in memory */
        VALUE_MS,        /* milliseconds in the file, microseconds in memory */
        VALUE_US,
        VALUE_PERCENT,
        VALUE_U32,
        VALUE_SOCKET_DIR, /* an absolute path, at most SOCKET_DIR_MAX characters */
        VALUE_LOG_LEVEL,
        VALUE_DETECTOR_MODE,
};

struct key_spec {
        const char *name;
        enum value_kind kind;
        size_t offset;
        uint64_t min, max;
};

static const struct key_spec daemon_keys[] = {
        { "RuntimeDirectory", VALUE_SOCKET_DIR, offsetof(struct daemon_settings, runtime_dir), 0, 0 },
        { "LogLevel", VALUE_LOG_LEVEL, offsetof(struct daemon_settings, log_level), 0, 0 },
        { "DiscoveryIntervalMs", VALUE_MS, offsetof(struct daemon_settings, discovery_interval_us), 1, 60000 },
        { "IdlePollIntervalUs", VALUE_US, offsetof(struct daemon_settings, idle_poll_interval_us), 1, 1000000 },
        { "IdlePollCpuPercent", VALUE_PERCENT, offsetof(struct daemon_settings, idle_poll_cpu_percent), 0, 100 },
        { "BusyPollIntervalUs", VALUE_US, offsetof(struct daemon_settings, busy_poll_interval_us), 1, 100000 },
        { "DetectorMode", VALUE_DETECTOR_MODE, offsetof(struct daemon_settings, detector_mode), 0, 0 },
        /* SUSPEND_QUEUES grace_period, ~1000 GPU clocks a unit; 0xffffffff means "kernel default". */
        { "GracePeriod", VALUE_U32, offsetof(struct daemon_settings, grace_period), 0, UINT32_MAX },
        { "RealtimePriority", VALUE_U32, offsetof(struct daemon_settings, realtime_priority), 0, 99 },
        { "RealtimeCpuPercent", VALUE_PERCENT, offsetof(struct daemon_settings, realtime_cpu_percent), 1, 100 },
        { "FaultBackoffSec", VALUE_SEC, offsetof(struct daemon_settings, fault_backoff_us), 1, 86400 },
        { "FaultBackoffMaxSec", VALUE_SEC, offsetof(struct daemon_settings, fault_backoff_max_us), 1, 86400 },
        { "MaxPreemptionsPerSecond", VALUE_U32, offsetof(struct daemon_settings, max_preemptions_per_second), 0,
          10000 },
};

/* Policy keys, with the class each belongs to (same order as policy_key_class). */
static const struct key_spec policy_keys[] = {
        { "HoldOffMs", VALUE_MS, offsetof(struct policy_params, hold_off_us), 0, MS_MAX },
        { "CoalesceMs", VALUE_MS, offsetof(struct policy_params, coalesce_us), 0, MS_MAX },
        { "MaxSuspendMs", VALUE_MS, offsetof(struct policy_params, max_suspend_us), 1, MS_MAX },
        { "ShareWindowMs", VALUE_MS, offsetof(struct policy_params, share_window_us), 10, MS_MAX },
        { "MinOfflineSharePercent", VALUE_PERCENT, offsetof(struct policy_params, min_offline_share_percent),
          0, POLICY_MAX_MIN_OFFLINE_SHARE_PERCENT },
};
static const enum workload_class policy_key_class[ELEMENTSOF(policy_keys)] = {
        WORKLOAD_CLASS_ONLINE, WORKLOAD_CLASS_ONLINE, WORKLOAD_CLASS_OFFLINE,
        WORKLOAD_CLASS_OFFLINE, WORKLOAD_CLASS_OFFLINE,
};


enum section_kind {
        SECTION_NONE,
        SECTION_DAEMON,
        SECTION_ONLINE,
        SECTION_OFFLINE,
        SECTION_WORKLOAD,
        SECTION_IGNORED, /* after an error in the header: its keys are not checked again */
};

/* Workload keys other than the policy keys: Name, Class, then the Match* keys. */
#define WORKLOAD_KEY_NAME 0
#define WORKLOAD_KEY_CLASS 1
#define WORKLOAD_KEY_MATCH0 2
#define WORKLOAD_KEY_POLICY0 (WORKLOAD_KEY_MATCH0 + _MATCH_KEY_MAX)
#define SECTION_KEYS_MAX (WORKLOAD_KEY_POLICY0 + ELEMENTSOF(policy_keys))

struct parse_state {
        struct config *config;
        struct diag *diag;
        bool main_file;
        enum section_kind section;
        unsigned section_line;
        /* line on which each key of the current section was set, to refuse duplicates */
        unsigned key_line[SECTION_KEYS_MAX];
        /* line of each one-of-a-kind section's header: a second one would escape that rule */
        unsigned header_line[SECTION_WORKLOAD];
        struct workload *workload; /* the [Workload] being read, already in config->workloads */
        bool class_set;
        bool too_many_reported;
};

static int parse_unsigned(const char *s, uint64_t min, uint64_t max, uint64_t *ret)
{
        uint64_t v;
        int r = parse_decimal(s, max, &v);

        if (r < 0)
                return r;
        if (v < min)
                return -ERANGE;
        *ret = v;
        return 0;
}

/* Stores value into base + spec->offset, or names what is wrong with it. */
static void set_value(const struct key_spec *spec, void *base, const char *value, const char *file,
                      unsigned line, struct diag *diag)
{
        void *dest = (char *)base + spec->offset;
        uint64_t v;

        switch (spec->kind) {
        case VALUE_SEC:
        case VALUE_MS:
        case VALUE_US:
        case VALUE_PERCENT:
        case VALUE_U32:
                if (parse_unsigned(value, spec->min, spec->max, &v) < 0) {
                        static const char *const units[] = {
                                [VALUE_SEC] = "seconds", [VALUE_MS] = "milliseconds", [VALUE_US] = "microseconds",
                                [VALUE_PERCENT] = "percent", [VALUE_U32] = "units",
                        };
                        diag_add(diag, file, line,
                                 "%s=%s: expected a whole number of %s from %" PRIu64 " to %" PRIu64,
                                 spec->name, value, units[spec->kind], spec->min, spec->max);
                        return;
                }
                if (spec->kind == VALUE_SEC)
                        *(uint64_t *)dest = v * 1000000;
                else if (spec->kind == VALUE_MS)
                        *(uint64_t *)dest = v * 1000;
                else if (spec->kind == VALUE_US)
                        *(uint64_t *)dest = v;
                else if (spec->kind == VALUE_PERCENT)
                        *(unsigned *)dest = (unsigned)v;
                else
                        *(uint32_t *)dest = (uint32_t)v;
                return;
        case VALUE_SOCKET_DIR: {
                char *copy;

                if (value[0] != '/') {
                        diag_add(diag, file, line, "%s=%s: expected an absolute path", spec->name, value);
                        return;
                }
                if (strlen(value) > SOCKET_DIR_MAX) {
                        diag_add(diag, file, line,
                                 "%s=%s: longer than %zu characters; the control socket's path, this directory "
                                 "followed by \"/" API_SOCKET_NAME "\", must fit the %zu bytes of a unix socket "
                                 "address",
                                 spec->name, value, SOCKET_DIR_MAX,
                                 sizeof(((struct sockaddr_un *)NULL)->sun_path));
                        return;
                }
                copy = strdup(value);
                if (!copy) {
                        diag_add(diag, file, line, "%s=: out of memory", spec->name);
                        return;
                }
                free(*(char **)dest);
                *(char **)dest = copy;
                return;
        }
        case VALUE_LOG_LEVEL:
                for (int l = 0; l < _LOG_LEVEL_MAX; l++)
                        if (strcmp(value, log_level_to_string(l)) == 0) {
                                *(enum log_level *)dest = l;
                                return;
                        }
                diag_add(diag, file, line,
                         "%s=%s: expected one of error, warning, notice, info, debug", spec->name, value);
                return;
        case VALUE_DETECTOR_MODE:
                for (int mode = 0; mode < _DETECTOR_MODE_MAX; mode++)
                        if (strcmp(value, detector_mode_to_string(mode)) == 0) {
                                *(enum detector_mode *)dest = mode;
                                return;
                        }
                diag_add(diag, file, line,
                         "%s=%s: expected auto (write breakpoints where the kernel grants them), "
                         "breakpoint (the same, warning when refused) or poll", spec->name, value);
                return;
        }
}

/* Refuses a key given twice in one section; returns true if this is its first time. */
static bool claim_key(struct parse_state *st, size_t index, const char *key, const char *file,
                      unsigned line)
{
        if (st->key_line[index]) {
                diag_add(st->diag, file, line, "%s= is already set on line %u of this section", key,
                         st->key_line[index]);
                return false;
        }
        st->key_line[index] = line;
        return true;
}

static ssize_t find_key(const struct key_spec *table, size_t n, const char *key)
{
        for (size_t i = 0; i < n; i++)
                if (strcmp(table[i].name, key) == 0)
                        return (ssize_t)i;
        return -1;
}

static void finish_workload(struct parse_state *st, const char *file)
{
        struct workload *w = st->workload;
        bool any_match = false;

        if (!w)
                return;
        st->workload = NULL;

        if (!w->name)
                diag_add(st->diag, file, w->line, "[Workload] has no Name=");
        if (!st->class_set)
                diag_add(st->diag, file, w->line, "[Workload]%s%s has no Class= (online or offline)",
                         w->name ? " " : "", w->name ? w->name : "");
        for (int k = 0; k < _MATCH_KEY_MAX; k++)
                any_match = any_match || w->match[k].line;
        if (!any_match)
                diag_add(st->diag, file, w->line,
                         "[Workload]%s%s has no Match*= key, so it would match no process; "
                         "use MatchExecutable=* to match every process",
                         w->name ? " " : "", w->name ? w->name : "");
        if (!st->class_set)
                return;
        for (size_t i = 0; i < ELEMENTSOF(policy_keys); i++) {
                unsigned line = st->key_line[WORKLOAD_KEY_POLICY0 + i];

                if (line && policy_key_class[i] != w->class)
                        diag_add(st->diag, file, line, "%s= applies to Class=%s workloads, this one is %s",
                                 policy_keys[i].name, workload_class_to_string(policy_key_class[i]),
                                 workload_class_to_string(w->class));
        }
}

/* The back-off's two lengths, given in [Daemon], must make sense together. */
static void finish_daemon(struct parse_state *st, const char *file)
{
        const struct daemon_settings *d = &st->config->daemon;
        unsigned base_line = st->key_line[find_key(daemon_keys, ELEMENTSOF(daemon_keys), "FaultBackoffSec")];
        unsigned max_line = st->key_line[find_key(daemon_keys, ELEMENTSOF(daemon_keys), "FaultBackoffMaxSec")];

        if (st->section != SECTION_DAEMON || (!base_line && !max_line))
                return;
        if (d->fault_backoff_max_us < d->fault_backoff_us)
                diag_add(st->diag, file, max_line ? max_line : base_line,
                         "FaultBackoffMaxSec=%" PRIu64 " is shorter than FaultBackoffSec=%" PRIu64
                         ": the longest back-off must be at least the first",
                         d->fault_backoff_max_us / 1000000, d->fault_backoff_us / 1000000);
}

static void finish_section(struct parse_state *st, const char *file)
{
        finish_workload(st, file);
        finish_daemon(st, file);
}

static void on_section(void *userdata, const char *file, unsigned line, const char *name)
{
        struct parse_state *st = userdata;
        enum section_kind kind;
        struct workload *grown;

        finish_section(st, file);
        memset(st->key_line, 0, sizeof(st->key_line));
        st->section_line = line;
        st->section = SECTION_IGNORED;

        if (strcmp(name, "Workload") == 0) {
                struct config *c = st->config;

                if (c->n_workloads >= CONFIG_MAX_WORKLOADS) {
                        if (!st->too_many_reported)
                                diag_add(st->diag, file, line, "more than %d workloads are configured",
                                         CONFIG_MAX_WORKLOADS);
                        st->too_many_reported = true;
                        return;
                }
                grown = realloc(c->workloads, (c->n_workloads + 1) * sizeof(*grown));
                if (!grown) {
                        diag_add(st->diag, file, line, "out of memory");
                        return;
                }
                c->workloads = grown;
                st->workload = &c->workloads[c->n_workloads++];
                *st->workload = (struct workload){ .line = line, .file = strdup(file) };
                st->class_set = false;
                st->section = SECTION_WORKLOAD;
                return;
        }

        if (!st->main_file) {
                diag_add(st->diag, file, line,
                         "[%s] is not allowed in a drop-in: drop-ins hold only [Workload] sections", name);
                return;
        }
        if (strcmp(name, "Daemon") == 0)
                kind = SECTION_DAEMON;
        else if (strcmp(name, "Online") == 0)
                kind = SECTION_ONLINE;
        else if (strcmp(name, "Offline") == 0)
                kind = SECTION_OFFLINE;
        else {
                diag_add(st->diag, file, line,
                         "unknown section [%s]; expected [Daemon], [Online], [Offline] or [Workload]", name);
                return;
        }
        if (st->header_line[kind]) {
                diag_add(st->diag, file, line, "[%s] is already given on line %u: give its settings in one [%s] section",
                         name, st->header_line[kind], name);
                return;
        }
        st->header_line[kind] = line;
        st->section = kind;
}

static int add_match_value(struct match_rule *rule, const char *value)
{
        char **grown = realloc(rule->values, (rule->n_values + 1) * sizeof(*grown));
        if (!grown)
                return -ENOMEM;
        rule->values = grown;
        rule->values[rule->n_values] = strdup(value);
        if (!rule->values[rule->n_values])
                return -ENOMEM;
        rule->n_values++;
        return 0;
}

/* NAME=GLOB: NAME as the shell and env(1) accept one. */
static const char *check_environment_match(const char *v)
{
        const char *eq = strchr(v, '=');

        if (!eq || eq == v)
                return "expected NAME=GLOB, e.g. GPREEMPT_CLASS=offline";
        if (isdigit((unsigned char)v[0]))
                return "a variable name does not start with a digit";
        for (const char *p = v; p < eq; p++)
                if (!isalnum((unsigned char)*p) && *p != '_')
                        return "expected a variable name of letters, digits and '_' before '='";
        return NULL;
}

/*
 * Checks one value of a Match*= key; returns NULL if good, else why not.
 * A MatchPod= value is rewritten in place to the API server's form.
 */
static const char *check_match_value(enum match_key key, char *v, long *ret_number)
{
        uint64_t n;

        switch (key) {
        case MATCH_EXECUTABLE:
                if (v[0] != '/' && strchr(v, '/'))
                        return "expected an absolute path (glob) or a file name without '/'";
                return NULL;
        case MATCH_CGROUP:
                return v[0] == '/' ? NULL : "expected a cgroup path (glob) starting with '/'";
        case MATCH_UNIT:
                return strchr(v, '/') ? "expected a unit name (glob) without '/'" : NULL;
        case MATCH_CONTAINER:
                if (strlen(v) < 4)
                        return "expected at least 4 characters of a container id";
                for (const char *p = v; *p; p++)
                        if (!strchr("0123456789abcdefABCDEF", *p) && *p != '-' && *p != '_')
                                return "expected a container id (hexadecimal)";
                return NULL;
        case MATCH_PID: {
                pid_t pid;

                if (parse_pid(v, &pid) < 0)
                        return "expected a process id from 1 to 4194304";
                *ret_number = (long)pid;
                return NULL;
        }
        case MATCH_USER: {
                struct passwd *pw;

                if (parse_unsigned(v, 0, UINT32_MAX - 1, &n) == 0) {
                        *ret_number = (long)n;
                        return NULL;
                }
                pw = getpwnam(v);
                if (!pw)
                        return "no such user";
                *ret_number = (long)pw->pw_uid;
                return NULL;
        }
        case MATCH_ENVIRONMENT:
                return check_environment_match(v);
        case MATCH_KUBERNETES_QOS: {
                int q = kubernetes_qos_from_string(v);

                if (q < 0)
                        return "expected guaranteed, burstable or besteffort";
                *ret_number = q;
                return NULL;
        }
        case MATCH_POD: {
                char uid[KUBERNETES_POD_UID_MAX + 1];

                if (!kubernetes_pod_uid_parse(v, uid))
                        return "expected a pod UID (kubectl get pod NAME -o jsonpath='{.metadata.uid}')";
                strcpy(v, uid); /* never longer: only case and separators change */
                return NULL;
        }
        case MATCH_SLURM_JOB:
                if (parse_unsigned(v, 1, UINT32_MAX, &n) < 0)
                        return "expected a Slurm job id (a number from 1)";
                *ret_number = (long)n;
                return NULL;
        case MATCH_COMMAND_LINE:
        case MATCH_SLURM_PARTITION:
        case MATCH_SLURM_QOS:
        case MATCH_SLURM_ACCOUNT:
        case MATCH_SLURM_COMMENT:
        case _MATCH_KEY_MAX:
                break;
        }
        return NULL;
}

static void set_match(struct parse_state *st, enum match_key key, const char *value, const char *file,
                      unsigned line)
{
        struct match_rule *rule = &st->workload->match[key];
        _cleanup_free_ char *copy = NULL;
        char *save = NULL;

        if (!*value) {
                diag_add(st->diag, file, line, "%s= is empty", match_key_to_string(key));
                return;
        }
        rule->line = line;
        /* A command line has spaces of its own: it is one glob, not a list. */
        if (key == MATCH_COMMAND_LINE) {
                if (add_match_value(rule, value) < 0)
                        diag_add(st->diag, file, line, "out of memory");
                return;
        }
        copy = strdup(value);
        if (!copy) {
                diag_add(st->diag, file, line, "out of memory");
                return;
        }
        for (char *v = strtok_r(copy, " \t", &save); v; v = strtok_r(NULL, " \t", &save)) {
                long number = 0;
                const char *why = check_match_value(key, v, &number);

                if (why) {
                        diag_add(st->diag, file, line, "%s=: \"%s\": %s", match_key_to_string(key), v, why);
                        continue;
                }
                if (rule->n_values >= WORKLOAD_MATCH_VALUES_MAX) {
                        diag_add(st->diag, file, line, "%s= lists more than %d values",
                                 match_key_to_string(key), WORKLOAD_MATCH_VALUES_MAX);
                        return;
                }
                if (key == MATCH_USER || key == MATCH_PID || key == MATCH_SLURM_JOB || key == MATCH_KUBERNETES_QOS) {
                        long *grown = realloc(rule->numbers, (rule->n_values + 1) * sizeof(*grown));
                        if (!grown) {
                                diag_add(st->diag, file, line, "out of memory");
                                return;
                        }
                        rule->numbers = grown;
                        rule->numbers[rule->n_values] = number;
                }
                if (add_match_value(rule, v) < 0) {
                        diag_add(st->diag, file, line, "out of memory");
                        return;
                }
        }
}

static void on_workload_entry(struct parse_state *st, const char *file, unsigned line, const char *key,
                              const char *value)
{
        struct workload *w = st->workload;
        ssize_t i;

        if (strcmp(key, "Name") == 0) {
                if (!claim_key(st, WORKLOAD_KEY_NAME, key, file, line))
                        return;
                if (!workload_name_is_valid(value)) {
                        diag_add(st->diag, file, line,
                                 "Name=%s: expected 1 to %d letters, digits or \"-_.@\"", value,
                                 WORKLOAD_NAME_MAX);
                        return;
                }
                w->name = strdup(value);
                if (!w->name)
                        diag_add(st->diag, file, line, "out of memory");
                return;
        }
        if (strcmp(key, "Class") == 0) {
                int c;

                if (!claim_key(st, WORKLOAD_KEY_CLASS, key, file, line))
                        return;
                c = workload_class_from_string(value);
                if (c < 0) {
                        diag_add(st->diag, file, line, "Class=%s: expected online or offline", value);
                        return;
                }
                w->class = c;
                st->class_set = true;
                return;
        }
        for (int k = 0; k < _MATCH_KEY_MAX; k++)
                if (strcmp(key, match_key_to_string(k)) == 0) {
                        if (claim_key(st, WORKLOAD_KEY_MATCH0 + k, key, file, line))
                                set_match(st, k, value, file, line);
                        return;
                }
        i = find_key(policy_keys, ELEMENTSOF(policy_keys), key);
        if (i >= 0) {
                if (!claim_key(st, WORKLOAD_KEY_POLICY0 + i, key, file, line))
                        return;
                set_value(&policy_keys[i], &w->policy, value, file, line, st->diag);
                w->policy_overridden |= 1u << i;
                return;
        }
        diag_add(st->diag, file, line,
                 "unknown key %s= in [Workload]; expected Name=, Class=, Match*= or a policy key", key);
}

static void on_entry(void *userdata, const char *file, unsigned line, const char *key, const char *value)
{
        struct parse_state *st = userdata;
        enum workload_class class;
        ssize_t i;

        switch (st->section) {
        case SECTION_NONE:
                diag_add(st->diag, file, line, "%s= appears before any [Section]", key);
                return;
        case SECTION_IGNORED:
                return;
        case SECTION_WORKLOAD:
                on_workload_entry(st, file, line, key, value);
                return;
        case SECTION_DAEMON:
                i = find_key(daemon_keys, ELEMENTSOF(daemon_keys), key);
                if (i < 0) {
                        diag_add(st->diag, file, line, "unknown key %s= in [Daemon]", key);
                        return;
                }
                if (claim_key(st, i, key, file, line))
                        set_value(&daemon_keys[i], &st->config->daemon, value, file, line, st->diag);
                return;
        case SECTION_ONLINE:
        case SECTION_OFFLINE:
                class = st->section == SECTION_ONLINE ? WORKLOAD_CLASS_ONLINE : WORKLOAD_CLASS_OFFLINE;
                i = find_key(policy_keys, ELEMENTSOF(policy_keys), key);
                if (i < 0) {
                        diag_add(st->diag, file, line, "unknown key %s= in [%s]", key,
                                 class == WORKLOAD_CLASS_ONLINE ? "Online" : "Offline");
                        return;
                }
                if (policy_key_class[i] != class) {
                        diag_add(st->diag, file, line, "%s= belongs in [%s]", key,
                                 class == WORKLOAD_CLASS_ONLINE ? "Offline" : "Online");
                        return;
                }
                if (claim_key(st, i, key, file, line))
                        set_value(&policy_keys[i], &st->config->class_defaults[class], value, file, line,
                                  st->diag);
                return;
        }
}

/*
 * Whether path is a symbolic link that leads nowhere; if so, says so in
 * diag. Such a link is an operator's mistake (a file moved, a package
 * removed), and must not pass for a file that is simply not there, which
 * gives the defaults without a word.
 */
static bool dangling_link(struct diag *diag, const char *path)
{
        char target[PATH_MAX];
        struct stat sb;
        ssize_t n;

        if (stat(path, &sb) == 0 || errno != ENOENT)
                return false;
        n = readlink(path, target, sizeof(target) - 1);
        if (n < 0)
                return false;
        target[n] = '\0';
        diag_add(diag, path, 0, "is a dangling symbolic link: \"%s\" leads nowhere; fix or remove the link", target);
        return true;
}

/*
 * Opens a configuration file for reading, never blocking: O_NONBLOCK makes
 * opening a FIFO without a writer return at once, and anything but a
 * regular file of a bounded size is refused with its path. Loading runs in
 * the daemon's only loop on a reload; a read that blocked there would stop
 * every suspension from ending. Returns -ENOENT quietly for a file that does
 * not exist, other errors (a link to nowhere among them) in diag.
 */
static int open_config_file(struct parse_state *st, const char *path, FILE **ret_file)
{
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
        struct stat sb;
        FILE *f;

        if (fd < 0 || fstat(fd, &sb) < 0) {
                int r = -errno;

                if (r == -ENOENT && dangling_link(st->diag, path))
                        return -EINVAL;
                if (r != -ENOENT)
                        diag_add_unreadable(st->diag, path, "cannot be read", r);
                return r;
        }
        if (!S_ISREG(sb.st_mode)) {
                diag_add(st->diag, path, 0,
                         "is not a regular file (a FIFO, directory, device or socket); configuration files must be "
                         "regular files");
                return -EINVAL;
        }
        if (sb.st_size > CONFIG_MAX_FILE_BYTES) {
                diag_add(st->diag, path, 0, "is larger than %d bytes, more than any configuration needs",
                         CONFIG_MAX_FILE_BYTES);
                return -EFBIG;
        }
        f = fdopen(fd, "re");
        if (!f) {
                int r = -errno;

                diag_add_unreadable(st->diag, path, "cannot be read", r);
                return r;
        }
        TAKE_FD(fd); /* the FILE closes it */
        *ret_file = f;
        return 0;
}

static int read_file(struct parse_state *st, const char *path, bool main_file)
{
        static const struct ini_handler handler = { .section = on_section, .entry = on_entry };
        _cleanup_fclose_ FILE *f = NULL;
        int r;

        r = open_config_file(st, path, &f);
        if (r == -ENOENT && main_file)
                return 0; /* every setting has a default */
        if (r == -ENOENT)
                diag_add(st->diag, path, 0, "cannot be read: %s", strerror(ENOENT));
        if (r < 0)
                return r;
        st->main_file = main_file;
        st->section = SECTION_NONE;
        r = ini_read(f, path, &handler, st, st->diag);
        finish_section(st, path);
        if (r < 0)
                diag_add(st->diag, path, 0, "read failed: %s", strerror(-r));
        return r;
}

static int dropin_filter(const struct dirent *de)
{
        return de->d_name[0] != '.' && fnmatch("*.conf", de->d_name, 0) == 0;
}

static void read_dropins(struct parse_state *st, const char *config_dir)
{
        _cleanup_free_ char *dir = NULL;
        struct dirent **entries = NULL;
        int n;

        if (asprintf(&dir, "%s/" DROPIN_DIR, config_dir) < 0) {
                dir = NULL;
                diag_add(st->diag, NULL, 0, "out of memory");
                return;
        }
        /* alphasort: drop-ins apply in lexical order, as systemd's do. */
        n = scandir(dir, &entries, dropin_filter, alphasort);
        if (n < 0) {
                int r = -errno;

                if (r == -ENOENT)
                        dangling_link(st->diag, dir); /* else no drop-ins: fine */
                else
                        diag_add_unreadable(st->diag, dir, "cannot be listed", r);
                return;
        }
        if (n > CONFIG_MAX_DROPINS)
                diag_add(st->diag, dir, 0, "holds %d drop-ins, more than %d", n, CONFIG_MAX_DROPINS);
        for (int i = 0; i < n; i++) {
                _cleanup_free_ char *path = NULL;

                if (i < CONFIG_MAX_DROPINS && asprintf(&path, "%s/%s", dir, entries[i]->d_name) >= 0)
                        read_file(st, path, false);
                else
                        path = NULL;
                free(entries[i]);
        }
        free(entries);
}

static void apply_class_defaults(struct config *c)
{
        for (size_t n = 0; n < c->n_workloads; n++) {
                struct workload *w = &c->workloads[n];
                struct policy_params merged = c->class_defaults[w->class];

                for (size_t i = 0; i < ELEMENTSOF(policy_keys); i++)
                        if (w->policy_overridden & (1u << i))
                                memcpy((char *)&merged + policy_keys[i].offset,
                                       (char *)&w->policy + policy_keys[i].offset,
                                       policy_keys[i].kind == VALUE_PERCENT ? sizeof(unsigned)
                                                                            : sizeof(uint64_t));
                w->policy = merged;
        }
}

static void check_unique_names(const struct config *c, struct diag *diag)
{
        for (size_t i = 0; i < c->n_workloads; i++)
                for (size_t j = 0; j < i; j++)
                        if (c->workloads[i].name && c->workloads[j].name &&
                            strcmp(c->workloads[i].name, c->workloads[j].name) == 0) {
                                diag_add(diag, c->workloads[i].file, c->workloads[i].line,
                                         "workload name \"%s\" is already used at %s:%u",
                                         c->workloads[i].name, c->workloads[j].file,
                                         c->workloads[j].line);
                                break;
                        }
}

static struct config *config_new(void)
{
        struct config *c = calloc(1, sizeof(*c));

        if (!c)
                return NULL;
        c->daemon = (struct daemon_settings){
                .log_level = LOG_LEVEL_NOTICE,
                .discovery_interval_us = 100000,
                /* as documented (gpreemptd.conf(5), README "Detector cadence"): each
                 * idle look is a wakeup, so half the interval is twice the idle wakeups */
                .idle_poll_interval_us = 1000,
                .idle_poll_cpu_percent = 2,
                .busy_poll_interval_us = 20,
                .grace_period = 0,
                /* ahead of normal threads only: the loop's wake-up for an online
                 * request then does not wait behind them on a loaded node
                 * (docs/benchmarks/reaction.md, "RealtimePriority= 0 against 1") */
                .realtime_priority = 1,
                /* a loop that cannot keep its busy cadence never sleeps: at three
                 * quarters of a core at most it leaves room for the node's other
                 * threads, and stays above what the busy cadence costs at scale,
                 * where a cap it crosses alternates the loop between priorities
                 * (docs/benchmarks/reaction.md, "the CPU cap's default") */
                .realtime_cpu_percent = 75,
                /* a failed preemption is rare and a second one may reset the GPU under the
                 * online service: a pause longer than the kernel's own preemption timeout,
                 * doubling to ten minutes for a GPU that keeps failing (gpreemptd.conf(5)) */
                .fault_backoff_us = 10 * UINT64_C(1000000),
                .fault_backoff_max_us = 600 * UINT64_C(1000000),
                /* one suspension per online burst, with room for bursts to bunch up at
                 * several times the evaluation's request rate, while a service of many short
                 * bursts cannot make the policy's coalescing bound (a thousand a second) into
                 * as many device-wide unmaps (gpreemptd.conf(5)) */
                .max_preemptions_per_second = 50,
        };
        c->daemon.runtime_dir = strdup(API_DEFAULT_RUNTIME_DIR);
        for (int k = 0; k < _WORKLOAD_CLASS_MAX; k++)
                c->class_defaults[k] = policy_params_default();
        if (!c->daemon.runtime_dir) {
                free(c);
                return NULL;
        }
        return c;
}

DEFINE_TRIVIAL_CLEANUP_FUNC(struct config *, config_free);

int config_load(const char *config_dir, struct config **ret_config, struct diag *diag)
{
        _cleanup_(config_freep) struct config *c = NULL;
        _cleanup_free_ char *main_path = NULL;
        struct parse_state st;
        size_t errors_before = diag_count(diag);
        bool had_unreadable = diag->unreadable;

        c = config_new();
        if (!c)
                return -ENOMEM;
        if (asprintf(&main_path, "%s/" MAIN_FILE, config_dir) < 0) {
                main_path = NULL;
                return -ENOMEM;
        }
        st = (struct parse_state){ .config = c, .diag = diag };
        /* a directory that is not there gives the defaults; one that is a link to nowhere is a mistake */
        if (!dangling_link(diag, config_dir)) {
                read_file(&st, main_path, true);
                read_dropins(&st, config_dir);
        }
        check_unique_names(c, diag);
        if (diag->unreadable && !had_unreadable)
                return -EACCES;
        if (diag_count(diag) > errors_before)
                return -EINVAL;
        apply_class_defaults(c);
        *ret_config = TAKE_PTR(c);
        return 0;
}

void config_free(struct config *c)
{
        if (!c)
                return;
        for (size_t i = 0; i < c->n_workloads; i++)
                workload_done(&c->workloads[i]);
        free(c->workloads);
        free(c->daemon.runtime_dir);
        free(c);
}
