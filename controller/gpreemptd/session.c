/* SPDX-License-Identifier: MIT */
#include "session.h"

#include <errno.h>
#include <signal.h>
#include <sys/wait.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include <gpreempt/gpreempt.h>
#include "log.h"
#include "manager.h"

struct session {
        struct manager *manager;
        bool terminating;
        struct tracked_process *process;
        struct gp_target *target;
        sd_event_source *event_source;
        /* GPUs whose queues this session has suspended (so new queues there are suspended too) */
        uint32_t suspended_gpus[MANAGER_MAX_GPUS];
        size_t n_suspended_gpus;
        bool all_suspended; /* a whole-process suspension (gpreemptctl suspend) */
        bool gone;
        uint64_t suspends, resumes;
};

static void log_from_library(enum gp_log_level level, const char *message, void *userdata)
{
        if (level <= GP_LOG_ERR)
                log_error("libgpreempt: %s", message);
        else if (level <= GP_LOG_WARNING)
                log_warning("libgpreempt: %s", message);
        else if (level <= GP_LOG_INFO)
                log_info("libgpreempt: %s", message);
        else
                log_debug("libgpreempt: %s", message);
}

static char *explain(int error, enum gp_op op, pid_t pid, int runtime_state, const struct gp_context *gp)
{
        struct gp_explain_opts opts = { .sz = sizeof(opts), .error = error, .op = op, .pid = pid,
                                        .runtime_state = runtime_state };
        char *sentence = NULL;

        if (gp)
                gp_context_kfd_version(gp, &opts.kfd_major, &opts.kfd_minor);
        if (gp_explain(&opts, &sentence) < 0)
                sentence = strdup(strerror(-error));
        return sentence;
}

static int open_context(struct manager *m, char **ret_error)
{
        struct gp_context_opts opts = {
                .sz = sizeof(opts),
                .log_fn = log_from_library,
                .log_level = log_get_level() >= LOG_LEVEL_DEBUG ? GP_LOG_DEBUG : GP_LOG_INFO,
                .kfd_path = m->paths.kfd_device,
        };
        int r;

        if (m->gp)
                return 0;
        r = gp_context_new(&opts, &m->gp);
        if (r < 0 && ret_error)
                *ret_error = explain(r, GP_OP_OPEN, 0, -1, NULL);
        return r;
}

static void remember_gpu(struct session *s, uint32_t gpu_id, bool suspended)
{
        for (size_t i = 0; i < s->n_suspended_gpus; i++)
                if (s->suspended_gpus[i] == gpu_id) {
                        if (!suspended)
                                s->suspended_gpus[i] = s->suspended_gpus[--s->n_suspended_gpus];
                        return;
                }
        if (suspended && s->n_suspended_gpus < MANAGER_MAX_GPUS)
                s->suspended_gpus[s->n_suspended_gpus++] = gpu_id;
}

static void on_target_event(struct gp_target *target, const struct gp_event *e, void *userdata)
{
        struct session *s = userdata;
        pid_t pid = s->process->pid;

        switch (e->type) {
        case GP_EVENT_QUEUE_NEW:
                /*
                 * A queue created on a suspended GPU runs until suspended: do it
                 * now (kfd-interface.md §4.4). A held process is suspended by its
                 * hold alone (manager.c: gpu_apply).
                 */
                if (s->process->held ? s->all_suspended
                                     : session_is_suspended(s, e->gpu_id) ||
                                               manager_gpu_suspended(s->manager, e->gpu_id)) {
                        struct gp_queue_opts opts = { .sz = sizeof(opts), .queue_ids = &e->queue_id, .n_queue_ids = 1,
                                                      .grace_period = s->manager->config->daemon.grace_period };
                        struct gp_queue_report report;
                        int r = gp_target_suspend(s->target, &opts, &report);

                        if (r < 0)
                                log_warning_errno(r, "Process %d: could not suspend its new queue %u on GPU %u",
                                                  (int)pid, e->queue_id, e->gpu_id);
                        else {
                                remember_gpu(s, e->gpu_id, true);
                                log_info("Process %d: new queue %u on suspended GPU %u suspended", (int)pid,
                                         e->queue_id, e->gpu_id);
                        }
                }
                manager_process_queues_changed(s->manager, s->process);
                break;
        case GP_EVENT_QUEUE_DELETED:
                manager_process_queues_changed(s->manager, s->process);
                break;
        case GP_EVENT_RUNTIME:
                log_notice("Process %d: GPU runtime now %s", (int)pid, gp_runtime_state_to_string(e->runtime_state));
                break;
        case GP_EVENT_STOPPED:
                log_debug("Process %d: stopped by signal %d", (int)pid, e->stop_signal);
                break;
        case GP_EVENT_EXITED:
        case GP_EVENT_EXECED:
                s->gone = true;
                break;
        }
}

static int on_event_fd(sd_event_source *source, int fd, uint32_t revents, void *userdata)
{
        struct session *s = userdata;
        struct manager *m = s->manager;
        int r = gp_target_process_events(s->target);

        if (r < 0 && r != -GP_ERR_TARGET_GONE)
                log_warning_errno(r, "Process %d: reading its debug events failed", (int)s->process->pid);
        if (s->gone || r == -GP_ERR_TARGET_GONE)
                manager_remove_process(m, s->process);
        return 0;
}

int session_start(struct manager *m, struct tracked_process *p, char **ret_error)
{
        struct gp_attach_opts opts = { .sz = sizeof(opts), .event_fn = on_target_event };
        struct session *s;
        int r;

        r = open_context(m, ret_error);
        if (r < 0)
                return r;
        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->manager = m;
        s->process = p;
        opts.event_userdata = s;
        r = gp_target_attach(m->gp, p->pid, &opts, &s->target);
        if (r < 0) {
                if (ret_error)
                        *ret_error = explain(r, GP_OP_ATTACH, p->pid, -1, m->gp);
                free(s);
                return r;
        }
        r = sd_event_add_io(m->event, &s->event_source, gp_target_event_fd(s->target), EPOLLIN, on_event_fd, s);
        if (r < 0) {
                gp_target_detach(s->target);
                free(s);
                return r;
        }
        log_notice("Process %d: attached (GPU runtime %s)", (int)p->pid,
                   gp_runtime_state_to_string(gp_target_runtime_state(s->target)));
        p->session = s;
        return 0;
}

void session_stop(struct session *s)
{
        int r;

        if (!s)
                return;
        sd_event_source_disable_unref(s->event_source);
        r = gp_target_detach(s->target);
        if (r < 0 && r != -GP_ERR_TARGET_GONE)
                log_warning_errno(r, "Process %d: detaching failed; the kernel resumes its queues when gpreemptd exits",
                                  (int)s->process->pid);
        s->process->session = NULL;
        free(s);
}

int session_set_suspended(struct session *s, uint32_t gpu_id, bool suspend)
{
        struct gp_queue_opts opts = { .sz = sizeof(opts), .grace_period = s->manager->config->daemon.grace_period };
        struct gp_queue_report report = { 0 };
        int r;

        if (gpu_id) {
                opts.gpu_ids = &gpu_id;
                opts.n_gpu_ids = 1;
        }
        r = suspend ? gp_target_suspend(s->target, &opts, &report) : gp_target_resume(s->target, &opts, &report);
        if (r < 0 && r != -GP_ERR_NO_QUEUES) {
                _cleanup_free_ char *why = explain(r, suspend ? GP_OP_SUSPEND : GP_OP_RESUME, s->process->pid,
                                                   (int)gp_target_runtime_state(s->target), s->manager->gp);

                log_error("Process %d: %s", (int)s->process->pid, why ? why : "failed");
                return r;
        }
        if (gpu_id)
                remember_gpu(s, gpu_id, suspend);
        else {
                s->all_suspended = suspend;
                if (!suspend)
                        s->n_suspended_gpus = 0;
        }
        if (suspend)
                s->suspends++;
        else
                s->resumes++;
        if (report.n_error) {
                log_error("Process %d: %zu queues failed to %s in the hardware scheduler", (int)s->process->pid,
                          report.n_error, suspend ? "suspend" : "resume");
                /* a queue left suspended is a failed resume: the caller must not count on it running */
                if (!suspend)
                        return -EIO;
        }
        /* every transition, possibly hundreds a second: counted in Status, logged only for debugging */
        log_debug("Process %d: %zu queues %s on %s%u", (int)s->process->pid, report.n_done,
                 suspend ? "suspended" : "resumed", gpu_id ? "GPU " : "all GPUs", gpu_id);
        return r == -GP_ERR_NO_QUEUES ? 0 : r;
}

bool session_is_suspended(const struct session *s, uint32_t gpu_id)
{
        if (s->all_suspended)
                return true;
        for (size_t i = 0; i < s->n_suspended_gpus; i++)
                if (s->suspended_gpus[i] == gpu_id)
                        return true;
        return false;
}

/*
 * The signal of the target's pending ptrace stop, looked at without consuming
 * the stop (WNOWAIT): libgpreempt services it right after. 0 if none.
 */
static int pending_stop_signal(pid_t pid)
{
        siginfo_t si = { 0 };

        if (waitid(P_PID, (id_t)pid, &si, WSTOPPED | WNOHANG | WNOWAIT | __WALL) < 0)
                return 0;
        if (si.si_pid != pid || si.si_code != CLD_TRAPPED)
                return 0;
        return si.si_status; /* ptrace event stops carry SIGTRAP | event << 8: never a match below */
}

static bool is_termination_signal(int sig)
{
        return sig == SIGTERM || sig == SIGINT || sig == SIGHUP || sig == SIGQUIT;
}

bool session_service_ptrace(struct session *s)
{
        int sig = pending_stop_signal(s->process->pid);
        int r;

        if (is_termination_signal(sig))
                s->terminating = true;
        r = gp_target_service_ptrace(s->target);

        if (r == -GP_ERR_TARGET_GONE)
                s->gone = true;
        return !s->gone && !gp_target_is_gone(s->target);
}

bool session_is_terminating(const struct session *s)
{
        return s->terminating;
}

unsigned session_runtime_state(const struct session *s)
{
        return (unsigned)gp_target_runtime_state(s->target);
}

uint64_t session_suspend_count(const struct session *s)
{
        return s->suspends;
}

uint64_t session_resume_count(const struct session *s)
{
        return s->resumes;
}
