/* SPDX-License-Identifier: MIT */
/*
 * gpreemptctl hold PID...: suspend the processes' GPU queues and keep them
 * suspended, catching queues created meanwhile, until --for ends or SIGINT /
 * SIGTERM arrives; then resume, detach and say what happened.
 *
 * Everything runs on the main thread, which attached the targets: the kernel
 * takes debugger calls only from the tracer thread. If this program dies,
 * even by SIGKILL, the kernel's debugger-exit teardown
 * (kfd_process_notifier_release_internal) resumes every queue it suspended.
 */
#include <errno.h>
#include <getopt.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-event.h>

#include "cleanup.h"
#include "ctl-report.h"
#include "held-session.h"
#include "parse.h"
#include "sources.h"
#include "verbs.h"

/* --gpu can be given this often; more GPUs than any node has. */
#define HOLD_MAX_GPUS HELD_SESSION_MAX_GPUS
#define HOLD_MAX_ERRORS 16

enum held_state {
        HELD_FAILED,          /* never attached */
        HELD_WAITING_RUNTIME, /* attached; its runtime has not enabled debugging yet */
        HELD_ACTIVE,          /* attached with its runtime enabled */
        HELD_GONE,            /* exited or exec'd while held */
};

struct hold;

struct held {
        struct hold *hold;
        pid_t pid;
        struct held_session *session;
        enum held_state state;
        struct held_session_counts counts; /* as the session left them */
        const char *gone_reason;
        char *errors[HOLD_MAX_ERRORS];
        size_t n_errors;
        bool precondition_failed;
};

struct hold {
        struct gp_context *context;
        sd_event *event;
        struct held *held;
        size_t n_held;
        uint32_t gpu_ids[HOLD_MAX_GPUS];
        size_t n_gpu_ids;
        uint32_t grace_period;
        bool before_gpu_use; /* --wait-for-gpu */
        bool json;
};

static void print_help(void)
{
        printf("Usage: gpreemptctl hold PID... [--for DURATION] [--gpu ID]... [--wait-for-gpu] [--json]\n"
               "\n"
               "Suspend the GPU queues of the processes and keep them suspended, also the\n"
               "queues they create meanwhile, until DURATION has passed or SIGINT/SIGTERM\n"
               "arrives; then resume them and detach. A process whose ROCm runtime has not\n"
               "started yet is held from the moment it does. A process that does not use\n"
               "the GPU is refused, unless --wait-for-gpu.\n"
               "\n"
               "  --for DURATION       how long to hold: 500ms, 30s, 5m, 1h (default: until\n"
               "                       interrupted)\n"
               "  --gpu ID             only queues on this GPU (KFD gpu_id); repeatable\n"
               "  --grace-period N     wave time before the context save, in ~1000 GPU\n"
               "                       clocks (default 0)\n"
               "  --wait-for-gpu       the processes have not opened the GPU yet: attach now\n"
               "                       and hold each from when its runtime starts (the kernel\n"
               "                       then keeps GPU state for it even if it never uses the GPU)\n"
               "  --json               print the result as JSON\n"
               "  -h, --help           show this help\n"
               "\n"
               "Exit status: 0 all held and released, 1 usage, 2 nothing could be held,\n"
               "3 some processes or queues were not held, 4 a failure while holding.\n");
}

static void held_add_error(struct held *h, int error, enum gp_op op)
{
        int state = h->session ? (int)held_session_runtime_state(h->session) : -1;
        char *sentence = ctl_report_error(error, op, h->pid, state);

        if (sentence && h->n_errors < HOLD_MAX_ERRORS)
                h->errors[h->n_errors++] = sentence;
        else
                free(sentence);
}

static void held_say(const struct held *h, const char *what)
{
        if (h->hold->json)
                return;
        printf("pid %d: %s\n", (int)h->pid, what);
        fflush(stdout);
}

/* What the session did: live while it lasts, as it left them after. */
static const struct held_session_counts *held_counts(const struct held *h)
{
        return h->session ? held_session_counts(h->session) : &h->counts;
}

/* Suspends every queue on the GPUs asked for; the session then catches the new ones there. */
static void held_suspend(struct held *h)
{
        struct gp_queue_report report;
        int r = held_session_set_suspended(h->session, h->hold->gpu_ids, h->hold->n_gpu_ids, true, &report);

        if (r == -GP_ERR_TARGET_GONE)
                return; /* its end is reported next */
        if (r < 0) {
                held_add_error(h, r, GP_OP_SUSPEND);
                return;
        }
        /* Not yet any queue (on these GPUs): nothing to say until one comes. */
        if (report.n_queues == 0 || h->hold->json)
                return;
        printf("pid %d: suspended %zu queue%s\n", (int)h->pid, report.n_done, report.n_done == 1 ? "" : "s");
        fflush(stdout);
}

static void on_queues_changed(struct held_session *s, size_t caught, void *userdata)
{
        struct held *h = userdata;

        if (caught == 0 || h->hold->json)
                return;
        printf("pid %d: suspended %zu new queue%s\n", (int)h->pid, caught, caught == 1 ? "" : "s");
        fflush(stdout);
}

static void on_runtime_changed(struct held_session *s, enum gp_runtime_state state, void *userdata)
{
        struct held *h = userdata;

        if (h->state != HELD_WAITING_RUNTIME)
                return;
        if (state == GP_RUNTIME_ENABLED) {
                h->state = HELD_ACTIVE;
                held_say(h, "runtime enabled debugging; holding its queues from now on");
                held_suspend(h);
        } else if (state == GP_RUNTIME_ENABLED_BUSY) {
                /* The deferred activation met another process's debug VMID (kfd_dbg_trap_activate). */
                held_add_error(h, -GP_ERR_VMID_BUSY, GP_OP_SUSPEND);
                h->precondition_failed = true;
        } else if (state == GP_RUNTIME_ENABLED_ERROR) {
                held_add_error(h, -GP_ERR_RUNTIME_ERROR, GP_OP_SUSPEND);
                h->precondition_failed = true;
        }
}

static void on_ended(struct held_session *s, enum held_session_end how, void *userdata)
{
        struct held *h = userdata;
        struct hold *hold = h->hold;
        bool any_left = false;

        h->state = HELD_GONE;
        h->gone_reason = how == HELD_SESSION_EXECED ? "exec'd" : "exited";
        if (!hold->json) {
                char what[64];

                snprintf(what, sizeof(what), "%s while held; nothing of it is suspended", h->gone_reason);
                held_say(h, what);
        }
        /* Nothing left to hold: no reason to wait for --for or a signal. */
        for (size_t i = 0; i < hold->n_held; i++)
                any_left |= hold->held[i].state == HELD_ACTIVE || hold->held[i].state == HELD_WAITING_RUNTIME;
        if (!any_left && hold->event)
                (void)sd_event_exit(hold->event, 0);
}

static void on_session_error(struct held_session *s, int error, enum gp_op op, void *userdata)
{
        held_add_error(userdata, error, op);
}

static const struct held_session_callbacks held_callbacks = {
        .queues_changed = on_queues_changed,
        .runtime_changed = on_runtime_changed,
        .ended = on_ended,
        .error = on_session_error,
};

static int on_sigchld(sd_event_source *source, const struct signalfd_siginfo *si, void *userdata)
{
        struct hold *hold = userdata;

        /* SIGCHLD coalesces: look at every target, each until nothing is
         * pending, so no stop is left unserviced (a stopped tracee would
         * wait for us forever), and a target that exited is reaped (its
         * parent waits for the tracer to). */
        for (size_t i = 0; i < hold->n_held; i++)
                if (hold->held[i].session)
                        (void)held_session_service_ptrace(hold->held[i].session);
        return 0;
}

static int on_quit(sd_event_source *source, const struct signalfd_siginfo *si, void *userdata)
{
        return sd_event_exit(sd_event_source_get_event(source), 0);
}

static int on_timeout(sd_event_source *source, uint64_t usec, void *userdata)
{
        return sd_event_exit(sd_event_source_get_event(source), 0);
}

static void held_attach(struct held *h)
{
        struct hold *hold = h->hold;
        size_t n_queues;
        int r;

        r = held_session_attach(hold->context, hold->event, h->pid, hold->grace_period, hold->before_gpu_use,
                                &held_callbacks, h,
                                &h->session);
        if (r < 0) {
                h->state = HELD_FAILED;
                h->precondition_failed = true;
                held_add_error(h, r, GP_OP_ATTACH);
                return;
        }

        switch (held_session_runtime_state(h->session)) {
        case GP_RUNTIME_ENABLED:
                h->state = HELD_ACTIVE;
                held_suspend(h);
                if (h->n_errors > 0)
                        h->precondition_failed = true;
                return;
        case GP_RUNTIME_DISABLED:
                /* RUNTIME_ENABLE fails with EEXIST once queues exist: a
                 * process that has queues and no enabled runtime never will
                 * have one (a runtime older than ROCm 5.7). Let SUSPEND say so
                 * in the kernel's words. */
                if (held_session_count_queues(h->session, &n_queues) >= 0 && n_queues > 0) {
                        r = held_session_set_suspended(h->session, NULL, 0, true, NULL);
                        if (r < 0) {
                                h->precondition_failed = true;
                                held_add_error(h, r, GP_OP_SUSPEND);
                                return;
                        }
                }
                h->state = HELD_WAITING_RUNTIME;
                held_say(h, "waiting for its ROCm runtime to enable debugging");
                return;
        default:
                /* attach turns BUSY/ERROR into errors. */
                return;
        }
}

/* Resumes what is held and ends the session; its counts stay for the report. */
static void held_release(struct held *h)
{
        int r;

        if (!h->session)
                return;
        if (h->state == HELD_ACTIVE && held_counts(h)->queues_suspended > 0) {
                r = held_session_set_suspended(h->session, h->hold->gpu_ids, h->hold->n_gpu_ids, false, NULL);
                /* -EIO: some stay suspended in the scheduler; ending the session resumes them */
                if (r < 0 && r != -GP_ERR_TARGET_GONE && r != -EIO)
                        held_add_error(h, r, GP_OP_RESUME);
        }
        h->counts = *held_session_counts(h->session);
        r = held_session_end(h->session);
        h->session = NULL;
        if (r < 0)
                held_add_error(h, r, GP_OP_DETACH);
}

static const char *held_state_name(const struct held *h)
{
        switch (h->state) {
        case HELD_FAILED:
                return "failed";
        case HELD_WAITING_RUNTIME:
                return "waited-for-runtime";
        case HELD_ACTIVE:
                return "held";
        case HELD_GONE:
                return h->gone_reason && strcmp(h->gone_reason, "exec'd") == 0 ? "execed"
                                                                                : "exited";
        }
        return "unknown";
}

static void print_results_json(const struct hold *hold)
{
        json_object *root = json_object_new_object();
        json_object *processes = json_object_new_array();

        for (size_t i = 0; i < hold->n_held; i++) {
                const struct held *h = &hold->held[i];
                json_object *p = json_object_new_object();
                json_object *errors = json_object_new_array();

                json_object_object_add(p, "pid", json_object_new_int64(h->pid));
                json_object_object_add(p, "state", json_object_new_string(held_state_name(h)));
                json_object_object_add(p, "queues_suspended",
                                       json_object_new_uint64(held_counts(h)->queues_suspended));
                json_object_object_add(p, "queues_resumed",
                                       json_object_new_uint64(held_counts(h)->queues_resumed));
                json_object_object_add(p, "queues_not_suspended",
                                       json_object_new_uint64(held_counts(h)->queues_not_suspended));
                json_object_object_add(p, "retries", json_object_new_uint64(held_counts(h)->retries));
                json_object_object_add(p, "new_queues_caught",
                                       json_object_new_uint64(held_counts(h)->new_queues_caught));
                json_object_object_add(p, "runtime_events",
                                       json_object_new_uint64(held_counts(h)->runtime_events));
                for (size_t e = 0; e < h->n_errors; e++)
                        json_object_array_add(errors, json_object_new_string(h->errors[e]));
                json_object_object_add(p, "errors", errors);
                json_object_array_add(processes, p);
        }
        json_object_object_add(root, "processes", processes);
        puts(json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
        json_object_put(root);
}

static void print_results_text(const struct hold *hold)
{
        for (size_t i = 0; i < hold->n_held; i++) {
                const struct held *h = &hold->held[i];

                if (h->state == HELD_FAILED) {
                        printf("pid %d: not held\n", (int)h->pid);
                        continue;
                }
                printf("pid %d: %s; %zu queue%s suspended (%zu caught while held, %zu retried, "
                       "%zu not suspendable), %zu resumed, %zu runtime event%s acknowledged, "
                       "%zu error%s\n",
                       (int)h->pid, held_state_name(h), held_counts(h)->queues_suspended,
                       held_counts(h)->queues_suspended == 1 ? "" : "s", held_counts(h)->new_queues_caught, held_counts(h)->retries,
                       held_counts(h)->queues_not_suspended, held_counts(h)->queues_resumed, held_counts(h)->runtime_events,
                       held_counts(h)->runtime_events == 1 ? "" : "s", h->n_errors,
                       h->n_errors == 1 ? "" : "s");
        }
}

static int hold_exit_code(const struct hold *hold)
{
        size_t n_precondition = 0, n_partial = 0, n_failed = 0;

        for (size_t i = 0; i < hold->n_held; i++) {
                const struct held *h = &hold->held[i];

                if (h->precondition_failed)
                        n_precondition++;
                else if (h->n_errors > 0)
                        n_failed++;
                else if (held_counts(h)->queues_not_suspended > 0)
                        n_partial++;
        }
        if (n_precondition == hold->n_held)
                return CTL_EXIT_PRECONDITION;
        if (n_failed > 0)
                return CTL_EXIT_FAILURE;
        if (n_precondition > 0 || n_partial > 0)
                return CTL_EXIT_PARTIAL;
        return CTL_EXIT_OK;
}

static int hold_run(struct hold *hold, uint64_t duration_usec)
{
        sigset_t mask;
        int r;

        /* sd-event reads signals from a signalfd: they must be blocked. */
        sigemptyset(&mask);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGCHLD);
        if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
                return -errno;

        r = sd_event_new(&hold->event);
        if (r < 0)
                return r;
        r = sd_event_add_signal(hold->event, NULL, SIGINT, on_quit, hold);
        if (r >= 0)
                r = sd_event_add_signal(hold->event, NULL, SIGTERM, on_quit, hold);
        if (r >= 0)
                r = sd_event_add_signal(hold->event, NULL, SIGCHLD, on_sigchld, hold);
        if (r >= 0 && duration_usec != UINT64_MAX)
                r = sd_event_add_time_relative(hold->event, NULL, CLOCK_MONOTONIC, duration_usec,
                                               0, on_timeout, hold);
        if (r < 0)
                return r;

        for (size_t i = 0; i < hold->n_held; i++)
                held_attach(&hold->held[i]);
        /* Stops that came during the attaches. */
        on_sigchld(NULL, NULL, hold);

        if (hold_exit_code(hold) != CTL_EXIT_PRECONDITION) {
                if (!hold->json) {
                        printf("holding; interrupt (Ctrl-C) or send SIGTERM to release\n");
                        fflush(stdout);
                }
                r = sd_event_loop(hold->event);
                if (r < 0)
                        return r;
        }

        for (size_t i = 0; i < hold->n_held; i++)
                held_release(&hold->held[i]);
        /* Collect what the detaches left (a last exit status). */
        return 0;
}

static void hold_done(struct hold *hold)
{
        for (size_t i = 0; i < hold->n_held; i++) {
                struct held *h = &hold->held[i];

                (void)held_session_end(h->session);
                for (size_t e = 0; e < h->n_errors; e++)
                        free(h->errors[e]);
        }
        free(hold->held);
        sd_event_unref(hold->event);
        gp_context_free(hold->context);
}

/* A --gpu that names no GPU of this node is a mistake (usually a GPU index
 * or topology node number given for the gpu_id): holding would then
 * suspend nothing and still report success. Without a readable topology
 * there is nothing to check against; attaching reports what is wrong. */
static int check_gpu_ids(const uint32_t *ids, size_t n_ids)
{
        struct qf_diags diags = { 0 };
        _cleanup_free_ struct qf_gpu *gpus = NULL;
        size_t n_gpus = 0;
        int r;

        if (n_ids == 0)
                return CTL_EXIT_OK;
        r = qf_topology_read("/sys/class/kfd/kfd", &diags, &gpus, &n_gpus);
        qf_diags_clear(&diags);
        if (r < 0 || n_gpus == 0)
                return CTL_EXIT_OK;

        for (size_t i = 0; i < n_ids; i++) {
                char known[512] = "";
                size_t len = 0;
                bool found = false;

                for (size_t g = 0; g < n_gpus; g++) {
                        found = found || gpus[g].gpu_id == ids[i];
                        if (len < sizeof(known))
                                len += (size_t)snprintf(known + len, sizeof(known) - len, "%s%u (0x%x)",
                                                        g ? ", " : "", gpus[g].gpu_id, gpus[g].gpu_id);
                }
                if (!found)
                        return ctl_report_usage("hold", "no GPU on this node has gpu_id %u; its gpu_ids are %s.",
                                            ids[i], known);
        }
        return CTL_EXIT_OK;
}

int verb_hold(const struct ctl_globals *globals, int argc, char **argv)
{
        enum { OPT_FOR = 0x100, OPT_GPU, OPT_GRACE, OPT_WAIT_FOR_GPU, OPT_JSON };
        static const struct option options[] = {
                { "for", required_argument, NULL, OPT_FOR },
                { "gpu", required_argument, NULL, OPT_GPU },
                { "grace-period", required_argument, NULL, OPT_GRACE },
                { "wait-for-gpu", no_argument, NULL, OPT_WAIT_FOR_GPU },
                { "json", no_argument, NULL, OPT_JSON },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        struct hold hold = { 0 };
        _cleanup_free_ pid_t *pids = NULL;
        size_t n_pids, bad;
        uint64_t duration_usec = UINT64_MAX;
        int c, r, exit_code;

        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0) {
                switch (c) {
                case OPT_FOR:
                        if (parse_duration(optarg, &duration_usec) < 0)
                                return ctl_report_usage("hold",
                                                    "'%s' is not a duration (e.g. 500ms, 30s, "
                                                    "5m, 1h, infinity).",
                                                    optarg);
                        break;
                case OPT_GPU:
                        if (hold.n_gpu_ids >= HOLD_MAX_GPUS)
                                return ctl_report_usage("hold", "more than %d --gpu options.",
                                                    HOLD_MAX_GPUS);
                        if (parse_u32(optarg, &hold.gpu_ids[hold.n_gpu_ids]) < 0)
                                return ctl_report_usage("hold",
                                                    "'%s' is not a GPU id (the decimal KFD "
                                                    "gpu_id, see 'gpreemptctl queues').",
                                                    optarg);
                        hold.n_gpu_ids++;
                        break;
                case OPT_GRACE:
                        if (parse_u32(optarg, &hold.grace_period) < 0)
                                return ctl_report_usage("hold", "'%s' is not a grace period.",
                                                    optarg);
                        break;
                case OPT_WAIT_FOR_GPU:
                        hold.before_gpu_use = true;
                        break;
                case OPT_JSON:
                        hold.json = true;
                        break;
                case 'h':
                        print_help();
                        return CTL_EXIT_OK;
                default:
                        return ctl_report_bad_option("hold", argc, argv, options);
                }
        }
        if (optind >= argc)
                return ctl_report_usage("hold", "no process id given.");
        r = check_gpu_ids(hold.gpu_ids, hold.n_gpu_ids);
        if (r != CTL_EXIT_OK)
                return r;

        n_pids = (size_t)(argc - optind);
        pids = calloc(n_pids, sizeof(*pids));
        if (!pids)
                return ctl_report_usage("hold", "out of memory.");
        r = parse_pids(argv + optind, n_pids, pids, &bad);
        if (r == -EEXIST)
                return ctl_report_usage("hold", "process %d is given twice.", (int)pids[bad]);
        if (r < 0)
                return ctl_report_usage("hold", "'%s' is not a process id.", argv[optind + (int)bad]);
        hold.held = calloc(n_pids, sizeof(*hold.held));
        if (!hold.held)
                return ctl_report_usage("hold", "out of memory.");
        hold.n_held = n_pids;
        for (size_t i = 0; i < hold.n_held; i++) {
                hold.held[i].hold = &hold;
                hold.held[i].pid = pids[i];
        }

        r = ctl_open_context(globals, &hold.context);
        if (r < 0) {
                _cleanup_free_ char *sentence = ctl_report_error(r, GP_OP_OPEN, 0, -1);

                if (hold.json)
                        ctl_report_json_error(sentence);
                free(hold.held);
                return CTL_EXIT_PRECONDITION;
        }

        r = hold_run(&hold, duration_usec);
        if (r < 0) {
                fprintf(stderr, "gpreemptctl: the event loop failed: %s.\n", strerror(-r));
                hold_done(&hold);
                return CTL_EXIT_FAILURE;
        }
        if (hold.json)
                print_results_json(&hold);
        else
                print_results_text(&hold);
        exit_code = hold_exit_code(&hold);
        hold_done(&hold);
        return exit_code;
}
