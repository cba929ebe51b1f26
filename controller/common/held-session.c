/* SPDX-License-Identifier: MIT */
#include "held-session.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

/* Queue ids named by one round of events and not yet suspended. */
#define HELD_SESSION_MAX_NEW_QUEUES 1024

struct new_queue {
        uint32_t gpu_id;
        uint32_t queue_id;
};

/* What one round of events (one gp_target_process_events()) named. */
struct round {
        struct new_queue new_queues[HELD_SESSION_MAX_NEW_QUEUES];
        size_t n_new_queues;
        bool overflowed; /* more new queues than new_queues holds */
        bool deleted;
};

struct held_session {
        struct gp_target *target;
        sd_event_source *event_source;
        const struct held_session_callbacks *callbacks;
        void *userdata;
        pid_t pid;
        uint32_t grace_period;
        /* GPUs whose queues this session has suspended, so that new queues there are suspended too */
        uint32_t suspended_gpus[HELD_SESSION_MAX_GPUS];
        size_t n_suspended_gpus;
        bool all_suspended;
        struct round pending; /* the round of events under way */
        bool ended;
        bool end_reported;
        enum held_session_end end;
        bool terminating;
        int stop_signal;          /* as the last ptrace stops said */
        int reported_stop_signal; /* as the owner was told */
        struct held_session_counts counts;
};

static void report_error(struct held_session *s, int error, enum gp_op op)
{
        if (s->callbacks->error)
                s->callbacks->error(s, error, op, s->userdata);
}

/*
 * Tells the owner, once, that the target is gone. Last thing a caller does
 * with s: the owner may end the session in the callback.
 */
static void report_end(struct held_session *s)
{
        if (!s->ended && gp_target_is_gone(s->target)) {
                s->ended = true;
                s->end = HELD_SESSION_EXITED;
        }
        if (!s->ended || s->end_reported)
                return;
        s->end_reported = true;
        s->event_source = sd_event_source_disable_unref(s->event_source);
        if (s->callbacks->ended)
                s->callbacks->ended(s, s->end, s->userdata);
}

static void remember_gpu(struct held_session *s, uint32_t gpu_id, bool suspended)
{
        for (size_t i = 0; i < s->n_suspended_gpus; i++)
                if (s->suspended_gpus[i] == gpu_id) {
                        if (!suspended)
                                s->suspended_gpus[i] = s->suspended_gpus[--s->n_suspended_gpus];
                        return;
                }
        if (suspended && s->n_suspended_gpus < HELD_SESSION_MAX_GPUS)
                s->suspended_gpus[s->n_suspended_gpus++] = gpu_id;
}

static bool gpu_held(bool all_suspended, const uint32_t *suspended_gpus, size_t n_suspended_gpus, uint32_t gpu_id)
{
        if (all_suspended)
                return true;
        for (size_t i = 0; i < n_suspended_gpus; i++)
                if (suspended_gpus[i] == gpu_id)
                        return true;
        return false;
}

bool held_session_is_suspended(const struct held_session *s, uint32_t gpu_id)
{
        return gpu_held(s->all_suspended, s->suspended_gpus, s->n_suspended_gpus, gpu_id);
}

bool held_session_state_is_suspended(const struct held_session_state *state, uint32_t gpu_id)
{
        return gpu_held(state->all_suspended, state->suspended_gpus, state->n_suspended_gpus, gpu_id);
}

static void on_target_event(struct gp_target *target, const struct gp_event *e, void *userdata)
{
        struct held_session *s = userdata;

        switch (e->type) {
        case GP_EVENT_QUEUE_NEW:
                /* acted on once the round is read: one suspension for all of them */
                if (s->pending.n_new_queues < HELD_SESSION_MAX_NEW_QUEUES)
                        s->pending.new_queues[s->pending.n_new_queues++] = (struct new_queue){ e->gpu_id, e->queue_id };
                else
                        s->pending.overflowed = true;
                break;
        case GP_EVENT_QUEUE_DELETED:
                s->pending.deleted = true;
                break;
        case GP_EVENT_RUNTIME:
                s->counts.runtime_events++;
                if (s->callbacks->runtime_changed)
                        s->callbacks->runtime_changed(s, e->runtime_state, s->userdata);
                break;
        case GP_EVENT_EXITED:
        case GP_EVENT_EXECED:
                s->ended = true;
                s->end = e->type == GP_EVENT_EXECED ? HELD_SESSION_EXECED : HELD_SESSION_EXITED;
                break;
        case GP_EVENT_STOPPED:
                s->stop_signal = e->stop_signal;
                break;
        case GP_EVENT_CONTINUED:
                s->stop_signal = 0;
                break;
        }
}

static int suspend_queues(struct held_session *s, const struct gp_queue_opts *opts, struct gp_queue_report *report)
{
        int r = gp_target_suspend(s->target, opts, report);

        if (r >= 0) {
                s->counts.retries += report->n_retried;
                s->counts.queues_not_suspended += report->n_invalid + report->n_error;
        }
        return r;
}

/*
 * A suspension of these GPUs (n_gpu_ids 0: all) covers the new queues of the
 * round under way there: they are not suspended, nor counted, twice.
 */
static void forget_new_queues_on(struct held_session *s, const uint32_t *gpu_ids, size_t n_gpu_ids)
{
        struct round *round = &s->pending;
        size_t kept = 0;

        for (size_t i = 0; i < round->n_new_queues; i++) {
                bool covered = n_gpu_ids == 0;

                for (size_t g = 0; g < n_gpu_ids && !covered; g++)
                        covered = gpu_ids[g] == round->new_queues[i].gpu_id;
                if (!covered)
                        round->new_queues[kept++] = round->new_queues[i];
        }
        round->n_new_queues = kept;
        if (n_gpu_ids == 0)
                round->overflowed = false;
}

/* Whether the queue is among those the report says are suspended. */
static bool reported_done(const struct gp_queue_report *report, uint32_t queue_id)
{
        for (size_t i = 0; i < report->n_queues; i++)
                if (report->queues[i].queue_id == queue_id)
                        return report->queues[i].result == GP_QUEUE_DONE;
        return false;
}

/*
 * The new queues of a round on held GPUs, suspended by their ids so that the
 * others are not preempted again; after an overflow, every held GPU again.
 * suspended[i] says whether round->new_queues[i] was.
 */
static size_t catch_new_queues(struct held_session *s, const struct round *round, bool *suspended)
{
        uint32_t ids[HELD_SESSION_MAX_NEW_QUEUES];
        struct gp_queue_opts opts = { .sz = sizeof(opts), .grace_period = s->grace_period };
        struct gp_queue_report report = { 0 };
        size_t n = 0;
        int r;

        for (size_t i = 0; i < round->n_new_queues; i++)
                if (held_session_is_suspended(s, round->new_queues[i].gpu_id))
                        ids[n++] = round->new_queues[i].queue_id;
        if (round->overflowed && (s->all_suspended || s->n_suspended_gpus)) {
                opts.gpu_ids = s->all_suspended ? NULL : s->suspended_gpus;
                opts.n_gpu_ids = s->all_suspended ? 0 : s->n_suspended_gpus;
        } else if (n) {
                opts.queue_ids = ids;
                opts.n_queue_ids = n;
        } else {
                return 0;
        }
        r = suspend_queues(s, &opts, &report);
        if (r == -GP_ERR_NO_QUEUES || r == -GP_ERR_TARGET_GONE)
                return 0; /* destroyed already, or the target is gone: the round says so */
        if (r < 0) {
                report_error(s, r, GP_OP_SUSPEND);
                return 0;
        }
        /* read now: the report holds only until the next call on the target */
        for (size_t i = 0; i < round->n_new_queues; i++)
                suspended[i] = held_session_is_suspended(s, round->new_queues[i].gpu_id) &&
                               (round->overflowed || reported_done(&report, round->new_queues[i].queue_id));
        s->counts.queues_suspended += report.n_done;
        s->counts.new_queues_caught += report.n_done;
        return report.n_done;
}

/*
 * What a round of events asked for: the new queues suspended where held,
 * then the owner told. The owner may suspend or resume from its callbacks:
 * the round is taken off the session first.
 */
static void finish_round(struct held_session *s)
{
        struct round round;
        bool suspended[HELD_SESSION_MAX_NEW_QUEUES] = { false };
        size_t caught;

        if (!s->pending.n_new_queues && !s->pending.overflowed && !s->pending.deleted)
                return; /* runtime events only, the usual round */
        round = s->pending;
        s->pending = (struct round){ 0 };
        caught = catch_new_queues(s, &round, suspended);
        for (size_t i = 0; i < round.n_new_queues && s->callbacks->queue_created; i++)
                s->callbacks->queue_created(s, round.new_queues[i].gpu_id, round.new_queues[i].queue_id, suspended[i],
                                            s->userdata);
        if (s->callbacks->queues_changed)
                s->callbacks->queues_changed(s, caught, s->userdata);
}

static int on_event_fd(sd_event_source *source, int fd, uint32_t revents, void *userdata)
{
        struct held_session *s = userdata;
        int r = gp_target_process_events(s->target);

        if (r == -GP_ERR_TARGET_GONE && !s->ended) {
                s->ended = true;
                s->end = HELD_SESSION_EXITED;
        } else if (r < 0) {
                report_error(s, r, GP_OP_EVENTS);
        }
        if (!s->ended)
                finish_round(s);
        report_end(s);
        return 0;
}

int held_session_attach(struct gp_context *gp, sd_event *event, pid_t pid, uint32_t grace_period, bool before_gpu_use,
                        const struct held_session_callbacks *callbacks, void *userdata,
                        struct held_session **ret_session)
{
        struct gp_attach_opts opts = { .sz = sizeof(opts), .event_fn = on_target_event,
                                       .before_gpu_use = before_gpu_use };
        struct held_session *s = calloc(1, sizeof(*s));
        int r;

        if (!s)
                return -ENOMEM;
        s->pid = pid;
        s->grace_period = grace_period;
        s->callbacks = callbacks;
        s->userdata = userdata;
        opts.event_userdata = s;
        r = gp_target_attach(gp, pid, &opts, &s->target);
        if (r < 0) {
                free(s);
                return r;
        }
        r = sd_event_add_io(event, &s->event_source, gp_target_event_fd(s->target), EPOLLIN, on_event_fd, s);
        if (r < 0) {
                (void)gp_target_detach(s->target);
                free(s);
                return r;
        }
        *ret_session = s;
        return 0;
}

int held_session_end(struct held_session *s)
{
        int r;

        if (!s)
                return 0;
        sd_event_source_disable_unref(s->event_source);
        r = gp_target_detach(s->target);
        free(s);
        return r == -GP_ERR_TARGET_GONE ? 0 : r;
}

void held_session_set_grace_period(struct held_session *s, uint32_t grace_period)
{
        s->grace_period = grace_period;
}

int held_session_set_suspended(struct held_session *s, const uint32_t *gpu_ids, size_t n_gpu_ids, bool suspend,
                               struct gp_queue_report *report)
{
        struct gp_queue_opts opts = { .sz = sizeof(opts), .gpu_ids = n_gpu_ids ? gpu_ids : NULL,
                                      .n_gpu_ids = n_gpu_ids, .grace_period = s->grace_period };
        struct gp_queue_report local = { 0 };
        int r;

        if (!report)
                report = &local;
        *report = (struct gp_queue_report){ 0 };
        if (suspend)
                forget_new_queues_on(s, gpu_ids, n_gpu_ids);
        r = suspend ? suspend_queues(s, &opts, report) : gp_target_resume(s->target, &opts, report);
        if (r < 0 && r != -GP_ERR_NO_QUEUES)
                return r;
        if (n_gpu_ids == 0) {
                s->all_suspended = suspend;
                if (!suspend)
                        s->n_suspended_gpus = 0;
        }
        for (size_t i = 0; i < n_gpu_ids; i++)
                remember_gpu(s, gpu_ids[i], suspend);
        if (suspend) {
                s->counts.suspends++;
                s->counts.queues_suspended = report->n_done;
        } else {
                s->counts.resumes++;
                s->counts.queues_resumed = report->n_done;
        }
        /* a queue left suspended is a failed resumption: the caller must not count on it running */
        return !suspend && report->n_error ? -EIO : 0;
}

int held_session_count_queues(struct held_session *s, size_t *ret_n_queues)
{
        const struct gp_queue *queues;

        return gp_target_snapshot(s->target, &queues, ret_n_queues);
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

bool held_session_service_ptrace(struct held_session *s)
{
        int r;

        /* an ended target too: its exit is ours to reap, or its parent waits for it */
        if (is_termination_signal(pending_stop_signal(s->pid)))
                s->terminating = true;
        r = gp_target_service_ptrace(s->target);
        if (r == -GP_ERR_TARGET_GONE) {
                s->ended = true;
                s->end = HELD_SESSION_EXITED;
        } else if (r < 0) {
                report_error(s, r, GP_OP_PTRACE);
        }
        if (!s->ended && !gp_target_is_gone(s->target)) {
                /* told after the round, not from the library's callback: the owner suspends or resumes in it */
                if (s->stop_signal != s->reported_stop_signal) {
                        s->reported_stop_signal = s->stop_signal;
                        if (s->callbacks->stop_changed)
                                s->callbacks->stop_changed(s, s->stop_signal, s->userdata);
                }
                return true;
        }
        report_end(s);
        return false;
}

bool held_session_is_terminating(const struct held_session *s)
{
        return s->terminating;
}

int held_session_stop_signal(const struct held_session *s)
{
        return s->reported_stop_signal;
}

pid_t held_session_pid(const struct held_session *s)
{
        return s->pid;
}

enum gp_runtime_state held_session_runtime_state(const struct held_session *s)
{
        return gp_target_runtime_state(s->target);
}

const struct held_session_counts *held_session_counts(const struct held_session *s)
{
        return &s->counts;
}

void held_session_get_state(const struct held_session *s, struct held_session_state *ret)
{
        *ret = (struct held_session_state){
                .n_suspended_gpus = s->n_suspended_gpus,
                .all_suspended = s->all_suspended,
                .runtime_state = gp_target_runtime_state(s->target),
                .terminating = s->terminating,
                .stop_signal = s->reported_stop_signal,
                .counts = s->counts,
        };
        memcpy(ret->suspended_gpus, s->suspended_gpus, s->n_suspended_gpus * sizeof(s->suspended_gpus[0]));
}
