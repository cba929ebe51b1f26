/* SPDX-License-Identifier: MIT */
#include "api.h"

#include <errno.h>
#include <grp.h>
#include <json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gpreempt/gpreempt.h>

#include "api-metrics.h"
#include "cleanup.h"
#include "detector.h"
#include "held-session.h"
#include "log.h"
#include "manager.h"
#include "parse-pid.h"
#include "preemption-worker.h"
#include "process-facts.h"
#include "workload-match.h"

static const char description[] =
        "# gpreemptd: gives online GPU work the GPU by suspending offline processes' queues.\n"
        "interface io.gpreempt\n"
        "\n"
        "# suspends_in_flight, resumes_in_flight: calls on the process not yet returned\n"
        "# from the kernel (on a hardware-scheduled GPU each waits for a preemption).\n"
        "type Process (\n"
        "  pid: int,\n"
        "  managed: bool,\n"
        "  class: ?string,\n"
        "  workload: ?string,\n"
        "  registered: bool,\n"
        "  held: bool,\n"
        "  terminating: bool,\n"
        "  stopped_by: ?string,\n"
        "  frozen: bool,\n"
        "  gpus: []int,\n"
        "  queues: int,\n"
        "  watched_queues: int,\n"
        "  online_queues: ?[]OnlineQueue,\n"
        "  attached: bool,\n"
        "  runtime: ?string,\n"
        "  attach_error: ?string,\n"
        "  suspended_gpus: []int,\n"
        "  suspends: int,\n"
        "  resumes: int,\n"
        "  suspends_in_flight: int,\n"
        "  resumes_in_flight: int\n"
        ")\n"
        "\n"
        "# How an online queue's work is noticed: a hardware write breakpoint on its\n"
        "# write index, or polling (poll_reason says why not a breakpoint). read_via:\n"
        "# process_vm_readv, or proc_pid_mem where that cannot reach its memory (GTT\n"
        "# mapped VM_PFNMAP). read_error: its memory could not be read either way (the\n"
        "# errno's name); it then counts as busy.\n"
        "type OnlineQueue (\n"
        "  gpu_id: int,\n"
        "  write_pointer_address: int,\n"
        "  watch: string,\n"
        "  poll_reason: ?string,\n"
        "  read_via: string,\n"
        "  read_error: ?string\n"
        ")\n"
        "\n"
        "# reset_events: the GPU's KFD SMI reset events are subscribed; false: a reset\n"
        "# there is seen only by the calls it fails (the daemon's log says why).\n"
        "type Gpu (\n"
        "  gpu_id: int,\n"
        "  online_busy: bool,\n"
        "  offline_suspended: bool,\n"
        "  suspends: int,\n"
        "  resumes_idle: int,\n"
        "  resumes_max_suspend: int,\n"
        "  resumes_share: int,\n"
        "  resumes_fault: int,\n"
        "  suspended_usec: int,\n"
        "  backoff: Backoff,\n"
        "  reset_events: bool\n"
        ")\n"
        "\n"
        "# A GPU's fault back-off: active while preemption there is stopped after a\n"
        "# fault (until_usec: CLOCK_MONOTONIC, remaining_usec), reason the fault that\n"
        "# started the current or last one (null before any) with its errno name;\n"
        "# faults: every fault seen; rate_limited: suspensions MaxPreemptionsPerSecond= refused.\n"
        "type Backoff (\n"
        "  active: bool,\n"
        "  reason: ?string,\n"
        "  error: ?string,\n"
        "  until_usec: int,\n"
        "  remaining_usec: int,\n"
        "  faults: int,\n"
        "  rate_limited: int\n"
        ")\n"
        "\n"
        "type Match (workload: string, file: string, line: int, matched: bool, reason: string)\n"
        "\n"
        "# Every process using the GPU, every GPU's policy state and counters.\n"
        "# realtime_priority: the loop's SCHED_FIFO priority in effect now (0: normal);\n"
        "# realtime_wanted: RealtimePriority=; realtime_error: why that is not in effect;\n"
        "# realtime_cpu_percent: RealtimeCpuPercent=, the share of a core the loop may use\n"
        "# at SCHED_FIFO before it is put at normal priority until it uses less;\n"
        "# realtime_demotions: how many times that happened since the daemon started.\n"
        "# kfd_present: false on a node without KFD (amdgpu not loaded, or no AMD GPU).\n"
        "method Status() -> (processes: []Process, gpus: []Gpu, kfd_present: bool, workloads: int, reloads: int,\n"
        "                    uptime_usec: int,\n"
        "                    realtime_priority: int, realtime_wanted: int, realtime_error: ?string,\n"
        "                    realtime_cpu_percent: int, realtime_demotions: int)\n"
        "\n"
        "# A metric's label set, e.g. {\"gpu_id\": \"1234\", \"class\": \"offline\"}; a histogram's\n"
        "# buckets are cumulative: count is how many observations were at most le seconds.\n"
        "type MetricBucket (le: float, count: int)\n"
        "type MetricSample (labels: [string]string, value: ?float, buckets: ?[]MetricBucket, count: ?int,\n"
        "                   sum: ?float)\n"
        "# One metric family, named as Prometheus names them (gpreempt_ prefix, base units,\n"
        "# _total counters); histogram samples carry buckets, count and sum instead of value.\n"
        "type MetricFamily (name: string, type: (counter, gauge, histogram), help: string,\n"
        "                   samples: []MetricSample)\n"
        "\n"
        "# The daemon's counters, for gpreempt-exporter (Prometheus) and gpreemptctl top.\n"
        "# Series are per GPU and workload; per_process: per live process instead, with\n"
        "# a pid label (a series per process: mind the cardinality).\n"
        "method Metrics(per_process: ?bool) -> (families: []MetricFamily)\n"
        "\n"
        "# Suspends the process's queues on every GPU until Resume, within the offline\n"
        "# bounds (MaxSuspendMs, MinOfflineSharePercent) so its watchdogs do not fire, and\n"
        "# within MaxPreemptionsPerSecond= (root only). GpuBackingOff while one of its GPUs\n"
        "# backs off after a fault (remaining_usec: until when).\n"
        "# Answers once the suspension is made (or, within a run slice or the rate limit, is\n"
        "# due): NoSuchProcess if the process exits first, NotAttached if it is let go,\n"
        "# OperationFailed if the kernel refuses.\n"
        "method Suspend(pid: int) -> ()\n"
        "# Ends a Suspend: the process is back under the policy (root only); answers once\n"
        "# its queues are resumed, with the errors of Suspend.\n"
        "method Resume(pid: int) -> ()\n"
        "# Classifies the process and the processes it starts by hand, overriding the\n"
        "# configuration, from now until it exits, through exec and before they use the\n"
        "# GPU; name (printable ASCII, at most 64 bytes, e.g. a batch job's id) is shown\n"
        "# as their workload (root only).\n"
        "method Register(pid: int, class: string, name: ?string) -> ()\n"
        "# Hands the process and those it started back to the configuration (root only).\n"
        "method Unregister(pid: int) -> ()\n"
        "# Checks the configuration on disk; with pid, explains which workload matches it.\n"
        "method VerifyConfig(pid: ?int) -> (valid: bool, errors: []string, workloads: []string,\n"
        "                                   matches: ?[]Match, workload: ?string, class: ?string)\n"
        "# Re-reads the configuration; sessions are kept (root only).\n"
        "method Reload() -> ()\n"
        "\n"
        "error PermissionDenied ()\n"
        "error InternalError ()\n"
        "# The connection is over a budget of connections (idle ones close after a minute):\n"
        "# user: this user's own; unprivileged: the one users who are neither root nor in the\n"
        "# read group share; all: every connection the daemon serves. limit: the budget's size.\n"
        "error TooManyConnections (limit: int, scope: (user, unprivileged, all))\n"
        "error NoSuchProcess (pid: int)\n"
        "error NotOffline (pid: int)\n"
        "error NotRegistered (pid: int)\n"
        "# Resume of a process no operator holds: nothing changed, its GPUs' policies decide.\n"
        "error NotHeld (pid: int)\n"
        "error NotAttached (pid: int, reason: string)\n"
        "error OperationFailed (pid: int, reason: string)\n"
        "error GpuBackingOff (pid: int, gpu_id: int, reason: string, remaining_usec: int)\n"
        "error InvalidConfiguration (errors: []string)\n";

static struct json_object *int_array(const uint32_t *v, size_t n)
{
        struct json_object *a = json_object_new_array();

        for (size_t i = 0; i < n; i++)
                json_object_array_add(a, json_object_new_int64(v[i]));
        return a;
}

static void add_string_or_null(struct json_object *o, const char *key, const char *value)
{
        json_object_object_add(o, key, value ? json_object_new_string(value) : NULL);
}

/* NULL for a process that is not watched as online. */
static struct json_object *online_queues_json(const struct detector *d, const struct tracked_process *p)
{
        struct detector_queue_status queues[DETECTOR_MAX_QUEUES_PER_PROCESS];
        size_t n = p->n_watched_queues ? detector_process_queues(d, p->pid, queues, ELEMENTSOF(queues)) : 0;
        struct json_object *a;

        if (n == 0)
                return NULL;
        a = json_object_new_array();
        for (size_t i = 0; i < n; i++) {
                struct json_object *q = json_object_new_object();

                json_object_object_add(q, "gpu_id", json_object_new_int64(queues[i].gpu_id));
                json_object_object_add(q, "write_pointer_address",
                                       json_object_new_int64((int64_t)queues[i].write_pointer_address));
                json_object_object_add(q, "watch", json_object_new_string(queues[i].breakpoint ? "breakpoint" : "poll"));
                add_string_or_null(q, "poll_reason", queues[i].poll_reason);
                json_object_object_add(q, "read_via",
                                       json_object_new_string(queues[i].read_proc_mem ? "proc_pid_mem"
                                                                                      : "process_vm_readv"));
                add_string_or_null(q, "read_error",
                                   queues[i].read_error ? strerrorname_np(-queues[i].read_error) : NULL);
                json_object_array_add(a, q);
        }
        return a;
}

static struct json_object *process_json(const struct manager *m, const struct tracked_process *p)
{
        struct json_object *o = json_object_new_object();
        const struct held_session_state *state = p->session ? worker_session_state(p->session) : NULL;
        uint32_t suspended[MANAGER_MAX_GPUS];
        size_t n_suspended = 0;
        bool attached;

        for (size_t i = 0; state && i < p->queues.n_gpu_ids; i++)
                if (held_session_state_is_suspended(state, p->queues.gpu_ids[i]))
                        suspended[n_suspended++] = p->queues.gpu_ids[i];
        json_object_object_add(o, "pid", json_object_new_int(p->pid));
        json_object_object_add(o, "managed", json_object_new_boolean(p->managed));
        add_string_or_null(o, "class", p->managed ? workload_class_to_string(p->class) : NULL);
        add_string_or_null(o, "workload", p->workload);
        json_object_object_add(o, "cluster", cluster_identity_to_json(&p->cluster));
        json_object_object_add(o, "registered", json_object_new_boolean(p->registered));
        json_object_object_add(o, "held", json_object_new_boolean(p->held));
        json_object_object_add(o, "terminating", json_object_new_boolean(p->terminating));
        if (p->stop_signal) {
                char name[16];

                snprintf(name, sizeof(name), "SIG%s", sigabbrev_np(p->stop_signal));
                json_object_object_add(o, "stopped_by", json_object_new_string(name));
        }
        json_object_object_add(o, "frozen", json_object_new_boolean(p->frozen));
        json_object_object_add(o, "gpus", int_array(p->queues.gpu_ids, p->queues.n_gpu_ids));
        json_object_object_add(o, "queues", json_object_new_int64((int64_t)p->queues.n_queues));
        json_object_object_add(o, "watched_queues", json_object_new_int64((int64_t)p->n_watched_queues));
        json_object_object_add(o, "online_queues", online_queues_json(m->detector, p));
        attached = p->session && worker_session_attached(p->session);
        json_object_object_add(o, "attached", json_object_new_boolean(attached));
        add_string_or_null(o, "runtime", attached ? gp_runtime_state_to_string(state->runtime_state) : NULL);
        add_string_or_null(o, "attach_error", p->session_error);
        json_object_object_add(o, "suspended_gpus", int_array(suspended, n_suspended));
        json_object_object_add(o, "suspends", json_object_new_int64(attached ? (int64_t)state->counts.suspends : 0));
        json_object_object_add(o, "resumes", json_object_new_int64(attached ? (int64_t)state->counts.resumes : 0));
        /* calls the worker has not reported done: a long kernel wait shows here */
        json_object_object_add(o, "suspends_in_flight",
                               json_object_new_int64(p->session ? worker_session_in_flight(p->session, true) : 0));
        json_object_object_add(o, "resumes_in_flight",
                               json_object_new_int64(p->session ? worker_session_in_flight(p->session, false) : 0));
        return o;
}

static struct json_object *backoff_json(const struct gpu_backoff_status *b)
{
        struct json_object *o = json_object_new_object();

        json_object_object_add(o, "active", json_object_new_boolean(b->active));
        add_string_or_null(o, "reason", b->reason);
        add_string_or_null(o, "error", b->error ? strerrorname_np(-b->error) : NULL);
        json_object_object_add(o, "until_usec", json_object_new_int64((int64_t)b->until_us));
        json_object_object_add(o, "remaining_usec", json_object_new_int64((int64_t)b->remaining_us));
        json_object_object_add(o, "faults", json_object_new_int64((int64_t)b->faults));
        json_object_object_add(o, "rate_limited", json_object_new_int64((int64_t)b->rate_limited));
        return o;
}

static struct json_object *gpu_json(const struct manager *m, const struct gpu *g)
{
        struct gpu_backoff_status backoff;
        struct json_object *o = json_object_new_object();
        const struct policy_stats *st = &g->policy.stats;

        json_object_object_add(o, "gpu_id", json_object_new_int64(g->gpu_id));
        json_object_object_add(o, "online_busy", json_object_new_boolean(g->policy.online_busy));
        json_object_object_add(o, "offline_suspended", json_object_new_boolean(g->policy.suspended));
        json_object_object_add(o, "suspends", json_object_new_int64((int64_t)st->suspends));
        json_object_object_add(o, "resumes_idle", json_object_new_int64((int64_t)st->resumes[POLICY_RESUMED_IDLE]));
        json_object_object_add(o, "resumes_max_suspend",
                               json_object_new_int64((int64_t)st->resumes[POLICY_RESUMED_MAX_SUSPEND]));
        json_object_object_add(o, "resumes_share", json_object_new_int64((int64_t)st->resumes[POLICY_RESUMED_SHARE]));
        json_object_object_add(o, "resumes_fault", json_object_new_int64((int64_t)st->resumes[POLICY_RESUMED_FAULT]));
        json_object_object_add(o, "suspended_usec",
                               json_object_new_int64((int64_t)policy_suspended_us(&g->policy, manager_now(m))));
        gpu_backoff_status(&g->backoff, manager_now(m), &backoff);
        json_object_object_add(o, "backoff", backoff_json(&backoff));
        /* false: the GPU's KFD SMI events could not be had (the daemon's log says why); resets show in calls alone */
        json_object_object_add(o, "reset_events", json_object_new_boolean(g->smi != NULL));
        return o;
}

static void method_status(struct varlink_call *call, struct json_object *params, void *userdata)
{
        struct manager *m = userdata;
        struct json_object *reply = json_object_new_object();
        struct json_object *procs = json_object_new_array(), *gpus = json_object_new_array();

        for (size_t i = 0; i < m->n_processes; i++)
                json_object_array_add(procs, process_json(m, m->processes[i]));
        for (size_t i = 0; i < m->n_gpus; i++)
                json_object_array_add(gpus, gpu_json(m, &m->gpus[i]));
        json_object_object_add(reply, "processes", procs);
        json_object_object_add(reply, "gpus", gpus);
        json_object_object_add(reply, "kfd_present", json_object_new_boolean(manager_kfd_present(m)));
        json_object_object_add(reply, "workloads", json_object_new_int64((int64_t)m->config->n_workloads));
        json_object_object_add(reply, "reloads", json_object_new_int64((int64_t)m->reloads));
        json_object_object_add(reply, "uptime_usec", json_object_new_int64((int64_t)(manager_now(m) - m->started_us)));
        json_object_object_add(reply, "realtime_priority", json_object_new_int64(m->scheduling.priority));
        json_object_object_add(reply, "realtime_wanted", json_object_new_int64(m->scheduling.wanted));
        if (m->scheduling.error)
                json_object_object_add(reply, "realtime_error",
                                       json_object_new_string(strerror(-m->scheduling.error)));
        json_object_object_add(reply, "realtime_cpu_percent", json_object_new_int64(m->scheduling.cap.percent));
        json_object_object_add(reply, "realtime_demotions", json_object_new_int64((int64_t)m->scheduling.demotions));
        varlink_call_reply(call, reply);
}

static void invalid_parameter(struct varlink_call *call, const char *name)
{
        struct json_object *p = json_object_new_object();

        json_object_object_add(p, "parameter", json_object_new_string(name));
        varlink_call_error(call, "org.varlink.service.InvalidParameter", p);
}

static void method_metrics(struct varlink_call *call, struct json_object *params, void *userdata)
{
        struct json_object *reply, *v;
        bool per_process = false;

        if (json_object_object_get_ex(params, "per_process", &v) && !json_object_is_type(v, json_type_null)) {
                if (!json_object_is_type(v, json_type_boolean)) {
                        invalid_parameter(call, "per_process");
                        return;
                }
                per_process = json_object_get_boolean(v);
        }
        manager_expire_metrics(userdata);
        reply = json_object_new_object();
        json_object_object_add(reply, "families", api_metrics_families(userdata, per_process));
        varlink_call_reply(call, reply);
}

static void error_with_pid(struct varlink_call *call, const char *error, pid_t pid, const char *reason)
{
        struct json_object *p = json_object_new_object();

        json_object_object_add(p, "pid", json_object_new_int(pid));
        if (reason)
                json_object_object_add(p, "reason", json_object_new_string(reason));
        varlink_call_error(call, error, p);
}

/*
 * Reads the pid parameter into *ret_pid (0 when absent and not required).
 * Returns 0, or -EINVAL after answering the call with InvalidParameter.
 */
static int get_pid(struct varlink_call *call, struct json_object *params, bool required, pid_t *ret_pid)
{
        struct json_object *v;
        int64_t pid;

        if (!json_object_object_get_ex(params, "pid", &v) || json_object_is_type(v, json_type_null)) {
                if (required) {
                        invalid_parameter(call, "pid");
                        return -EINVAL;
                }
                *ret_pid = 0;
                return 0;
        }
        pid = json_object_get_int64(v);
        if (!json_object_is_type(v, json_type_int) || !pid_in_range(pid)) {
                invalid_parameter(call, "pid");
                return -EINVAL;
        }
        *ret_pid = (pid_t)pid;
        return 0;
}

/* Finds the tracked process named by the pid parameter, or answers with an error and returns NULL. */
static struct tracked_process *get_process(struct varlink_call *call, struct manager *m, struct json_object *params)
{
        struct tracked_process *p;
        pid_t pid;

        if (get_pid(call, params, true, &pid) < 0)
                return NULL;
        p = manager_find_process(m, pid);
        if (!p)
                error_with_pid(call, "NoSuchProcess", pid, NULL);
        return p;
}

/* Answers GpuBackingOff and returns true when one of p's GPUs backs off (manager_hold() would refuse). */
static bool backing_off(struct varlink_call *call, struct manager *m, const struct tracked_process *p)
{
        const struct gpu *g = manager_gpu_backing_off(m, p);
        struct gpu_backoff_status b;
        struct json_object *e;

        if (!g)
                return false;
        gpu_backoff_status(&g->backoff, manager_now(m), &b);
        e = json_object_new_object();
        json_object_object_add(e, "pid", json_object_new_int(p->pid));
        json_object_object_add(e, "gpu_id", json_object_new_int64(g->gpu_id));
        json_object_object_add(e, "reason", json_object_new_string(b.reason ? b.reason : "unknown"));
        json_object_object_add(e, "remaining_usec", json_object_new_int64((int64_t)b.remaining_us));
        varlink_call_error(call, "GpuBackingOff", e);
        return true;
}

/*
 * A Suspend or Resume whose answer waits for the debugger call it made, so
 * that what the client does next (Status, or relying on the suspension)
 * sees it done.
 */
struct hold_reply {
        struct hold_waiter waiter;
        struct varlink_call *call; /* deferred */
        pid_t pid;
};

static void hold_reply_done(struct hold_waiter *w, int result, const char *why)
{
        struct hold_reply *h = (struct hold_reply *)w;

        if (result == 0)
                varlink_call_reply(h->call, NULL);
        else if (result == -ESRCH)
                error_with_pid(h->call, "NoSuchProcess", h->pid, NULL); /* it exited first */
        else if (result == -ENOTCONN)
                error_with_pid(h->call, "NotAttached", h->pid, why);
        else
                error_with_pid(h->call, "OperationFailed", h->pid, why ? why : strerror(-result));
        free(h);
}

/* The client left: its answer is no longer awaited. */
static void hold_reply_dropped(void *userdata)
{
        struct hold_reply *h = userdata;

        manager_hold_unwait(&h->waiter);
        free(h);
}

/* Answers call once the worker reports the call numbered made on p. */
static void wait_for_call(struct varlink_call *call, struct tracked_process *p, uint64_t made)
{
        struct hold_reply *h = calloc(1, sizeof(*h));

        if (!h || varlink_call_defer(call, hold_reply_dropped, h, &h->call) < 0) {
                free(h);
                varlink_call_error(call, "InternalError", NULL);
                return;
        }
        h->waiter.done = hold_reply_done;
        h->pid = p->pid;
        manager_hold_wait(p, made, &h->waiter);
}

static void hold(struct varlink_call *call, struct json_object *params, struct manager *m, bool on)
{
        struct tracked_process *p = get_process(call, m, params);
        uint64_t made;
        int r;

        if (!p)
                return;
        if (!p->managed || p->class != WORKLOAD_CLASS_OFFLINE) {
                error_with_pid(call, "NotOffline", p->pid, NULL);
                return;
        }
        if (!p->session || !worker_session_attached(p->session)) {
                error_with_pid(call, "NotAttached", p->pid, p->session_error ? p->session_error : "not attached");
                return;
        }
        if (on && p->terminating) {
                error_with_pid(call, "OperationFailed", p->pid,
                               "the process was asked to terminate; it is not suspended again so that it can exit");
                return;
        }
        if (on && backing_off(call, m, p))
                return;
        r = manager_hold(m, p, on, &made);
        if (!on && r == -EALREADY) { /* nothing held to release */
                error_with_pid(call, "NotHeld", p->pid, NULL);
                return;
        }
        if (r < 0) {
                error_with_pid(call, "OperationFailed", p->pid, strerror(-r));
                return;
        }
        log_notice("Process %d: %s by uid %u", (int)p->pid, on ? "held suspended" : "released",
                   (unsigned)varlink_call_peer_uid(call));
        if (made == 0) {
                /* nothing to do now: its hold's slice runs, the rate limit defers it, or it is stopped */
                varlink_call_reply(call, NULL);
                return;
        }
        wait_for_call(call, p, made);
}

static void method_suspend(struct varlink_call *call, struct json_object *params, void *userdata)
{
        hold(call, params, userdata, true);
}

static void method_resume(struct varlink_call *call, struct json_object *params, void *userdata)
{
        hold(call, params, userdata, false);
}

static void method_register(struct varlink_call *call, struct json_object *params, void *userdata)
{
        struct manager *m = userdata;
        struct json_object *v;
        const char *name = NULL;
        pid_t pid;
        int class, r;

        if (!json_object_object_get_ex(params, "class", &v) || !json_object_is_type(v, json_type_string) ||
            (class = workload_class_from_string(json_object_get_string(v))) < 0) {
                invalid_parameter(call, "class");
                return;
        }
        if (json_object_object_get_ex(params, "name", &v) && !json_object_is_type(v, json_type_null)) {
                name = json_object_get_string(v);
                if (!json_object_is_type(v, json_type_string) || !registration_name_is_valid(name)) {
                        invalid_parameter(call, "name");
                        return;
                }
        }
        if (get_pid(call, params, true, &pid) < 0)
                return;
        /* init: every process descends from it, so no lookup ever stops there (registrations.h) */
        if (pid == 1) {
                error_with_pid(call, "OperationFailed", pid,
                               "PID 1 is every process's ancestor: its class would be every process's; register "
                               "the service's own process instead");
                return;
        }
        r = manager_register(m, pid, class, name);
        if (r == -ESRCH)
                error_with_pid(call, "NoSuchProcess", pid, NULL);
        else if (r < 0)
                error_with_pid(call, "OperationFailed", pid,
                               r == -ENOSPC ? "too many registrations; processes registered earlier must exit first"
                                            : strerror(-r));
        else
                varlink_call_reply(call, NULL);
}

static void method_unregister(struct varlink_call *call, struct json_object *params, void *userdata)
{
        struct manager *m = userdata;
        pid_t pid;
        int r;

        if (get_pid(call, params, true, &pid) < 0)
                return;
        r = manager_unregister(m, pid);
        if (r == -ENOENT)
                error_with_pid(call, "NotRegistered", pid, NULL);
        else if (r < 0)
                error_with_pid(call, "NoSuchProcess", pid, NULL);
        else
                varlink_call_reply(call, NULL);
}

static struct json_object *diag_json(const struct diag *d)
{
        struct json_object *a = json_object_new_array();

        for (size_t i = 0; i < d->n_messages; i++)
                json_object_array_add(a, json_object_new_string(d->messages[i]));
        if (d->n_dropped) {
                char more[64];

                snprintf(more, sizeof(more), "and %zu more problems", d->n_dropped);
                json_object_array_add(a, json_object_new_string(more));
        }
        return a;
}

static void method_verify_config(struct varlink_call *call, struct json_object *params, void *userdata)
{
        struct manager *m = userdata;
        struct json_object *reply, *names, *matches;
        struct config *c = NULL;
        struct process_facts facts;
        struct diag d = { 0 };
        const struct workload *chosen = NULL;
        pid_t pid;
        int r;

        if (get_pid(call, params, false, &pid) < 0)
                return;
        reply = json_object_new_object();
        r = config_load(m->paths.config_dir, &c, &d);
        json_object_object_add(reply, "valid", json_object_new_boolean(r >= 0));
        json_object_object_add(reply, "errors", diag_json(&d));
        diag_clear(&d);
        names = json_object_new_array();
        for (size_t i = 0; c && i < c->n_workloads; i++)
                json_object_array_add(names, json_object_new_string(c->workloads[i].name));
        json_object_object_add(reply, "workloads", names);
        if (c && pid > 0) {
                r = process_facts_read(m->paths.proc_root, m->paths.slurm_jobs_dir, pid, &facts);
                if (r < 0) {
                        json_object_put(reply);
                        config_free(c);
                        error_with_pid(call, "NoSuchProcess", pid, NULL);
                        return;
                }
                matches = json_object_new_array();
                for (size_t i = 0; i < c->n_workloads; i++) {
                        const struct workload *w = &c->workloads[i];
                        _cleanup_free_ char *reason = NULL;
                        bool matched = workload_match(w, &facts, &reason);

                        if (matched && !chosen)
                                chosen = w;
                        json_object_array_add(matches, workload_match_to_json(w, matched, reason));
                }
                process_facts_done(&facts);
                json_object_object_add(reply, "matches", matches);
                add_string_or_null(reply, "workload", chosen ? chosen->name : NULL);
                add_string_or_null(reply, "class", chosen ? workload_class_to_string(chosen->class) : NULL);
        }
        config_free(c);
        varlink_call_reply(call, reply);
}

static void method_reload(struct varlink_call *call, struct json_object *params, void *userdata)
{
        struct manager *m = userdata;
        struct diag d = { 0 };
        int r = manager_reload(m, &d);

        if (r < 0) {
                struct json_object *p = json_object_new_object();

                json_object_object_add(p, "errors", diag_json(&d));
                diag_clear(&d);
                varlink_call_error(call, "InvalidConfiguration", p);
                return;
        }
        varlink_call_reply(call, NULL);
}

static const struct varlink_method methods[] = {
        { "Status", VARLINK_ACCESS_READ, method_status },
        { "VerifyConfig", VARLINK_ACCESS_READ, method_verify_config },
        { "Metrics", VARLINK_ACCESS_READ, method_metrics },
        { "Suspend", VARLINK_ACCESS_WRITE, method_suspend },
        { "Resume", VARLINK_ACCESS_WRITE, method_resume },
        { "Register", VARLINK_ACCESS_WRITE, method_register },
        { "Unregister", VARLINK_ACCESS_WRITE, method_unregister },
        { "Reload", VARLINK_ACCESS_WRITE, method_reload },
};

const struct varlink_interface api_interface = {
        .name = API_INTERFACE,
        .description = description,
        .methods = methods,
        .n_methods = ELEMENTSOF(methods),
};

gid_t api_read_group(const char *name)
{
        struct group *g = getgrnam(name);

        return g ? g->gr_gid : (gid_t)-1;
}
