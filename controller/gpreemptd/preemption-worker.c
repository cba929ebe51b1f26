/* SPDX-License-Identifier: MIT */
#include "preemption-worker.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "explain-sentence.h"
#include "log.h"
#include "mailbox.h"
#include "monotonic-clock.h"
#include "poll-watch.h"
#include "trap-key.h"

/* A slot's atomic: 0 no mark, a mark's generation, or taken by a trap. */
#define TRAP_MARK_TAKEN UINT64_MAX
/* Events taken from the trap set per epoll_wait(). */
#define TRAP_EVENTS 16

enum message_kind {
        /* commands, main → worker; those with a result come back as their report */
        COMMAND_ATTACH,         /* → REPORT_ATTACHED */
        COMMAND_SET_SUSPENDED,  /* → REPORT_CALL_DONE */
        COMMAND_SET_GRACE_PERIOD,
        COMMAND_END,            /* → REPORT_DETACHED */
        COMMAND_SERVICE_PTRACE,
        COMMAND_MARK,
        COMMAND_WATCH_BREAKPOINT,
        COMMAND_FORGET_BREAKPOINT,
        COMMAND_QUIT,
        /* reports, worker → main */
        REPORT_ATTACHED,
        REPORT_CALL_DONE,
        REPORT_QUEUE_CREATED,
        REPORT_QUEUES_CHANGED,
        REPORT_RUNTIME_CHANGED,
        REPORT_ENDED,
        REPORT_STOP_CHANGED,
        REPORT_TERMINATING,
        REPORT_ERROR,
        REPORT_DETACHED,
        REPORT_TRAP,
        REPORT_WATCH_LOST,
};

/* A mark as the worker keeps it. */
struct trap_mark {
        uint32_t gpu_id;
        uint64_t generation; /* the slot's atomic holds it while the mark is valid */
        uint64_t purpose;
        struct worker_session **sessions;
        size_t n_sessions;
        struct poll_watch *watch; /* its GPU's polled queues, read here while the mark is valid, or NULL */
};

/* A breakpoint as the worker keeps it: its own duplicates of the fds. */
struct breakpoint_copy {
        uint64_t key;
        pid_t pid;
        int *fds;
        size_t n_fds;
};

/* A command, or a report; a command with a result travels back as it, so a result never needs memory. */
struct message {
        struct mailbox_item item;
        enum message_kind kind;
        struct worker_session *ws;
        bool has_state;
        struct held_session_state state; /* the session's after what is reported */
        int error;
        char *why;
        uint32_t grace_period;
        struct worker_call call;
        struct worker_trap trap;
        struct trap_mark mark; /* COMMAND_MARK's, its sessions and watch owned until the worker takes them */
        size_t slot;
        uint64_t mark_generation; /* REPORT_WATCH_LOST's: the mark whose watch it was */
        struct breakpoint_copy breakpoint; /* COMMAND_*_BREAKPOINT's, its fds owned until the worker takes them */
        union {
                struct {
                        uint32_t gpu_id, queue_id;
                        bool suspended;
                } queue;
                size_t caught;
                enum gp_runtime_state runtime_state;
                enum held_session_end how;
                int stop_signal;
                enum gp_op op;
        } event;
};

struct worker_session {
        struct preemption_worker *worker;
        pid_t pid;
        /* the owner's, on the main loop */
        void *userdata; /* NULL once the owner ended it */
        bool attached;
        struct held_session_state state;
        unsigned in_flight[2]; /* [suspend] */
        _Atomic unsigned trap_calls_in_flight; /* made on traps and not yet dispatched: the worker counts them up */
        struct message *end; /* its COMMAND_END, made with it: ending never fails */
        /* the worker's */
        struct held_session *session;
        bool gone;                 /* the target exited or exec'd: no calls on it */
        bool terminating_reported;
};

struct preemption_worker {
        struct mailbox commands, reports;
        const struct worker_session_callbacks *callbacks;
        void *userdata;
        pthread_t thread;
        bool thread_started;
        struct message *quit; /* made with the worker: stopping it never fails */
        _Atomic uint64_t trap_marks[WORKER_TRAP_SLOTS];
        /* the main loop's */
        sd_event_source *report_source;
        uint64_t mark_generation;
        bool stopping; /* in preemption_worker_free(): traps are of no more interest */
        /* the worker's */
        sd_event *event;
        sd_event_source *command_source;
        int trap_fd; /* the owner's; holds the worker's loop's fd too, under TRAP_KEY_NONE */
        bool loop_in_trap_set;
        struct trap_mark marks[WORKER_TRAP_SLOTS];
        struct breakpoint_copy *breakpoints;
        size_t n_breakpoints;
        struct gp_context_opts gp_opts;
        char *kfd_path;
        struct gp_context *gp;
        struct worker_session **live; /* attached and not yet ended */
        size_t n_live;
};

static void trap_mark_done(struct trap_mark *mark)
{
        free(mark->sessions);
        poll_watch_free(mark->watch);
        *mark = (struct trap_mark){ 0 };
}

static void breakpoint_copy_done(struct breakpoint_copy *b)
{
        for (size_t i = 0; i < b->n_fds; i++)
                close(b->fds[i]);
        free(b->fds);
        *b = (struct breakpoint_copy){ 0 };
}

static void free_message(struct mailbox_item *item)
{
        struct message *msg = (struct message *)item;

        breakpoint_copy_done(&msg->breakpoint);
        free(msg->why);
        free(msg->call.why);
        trap_mark_done(&msg->mark);
        free(msg);
}

/* ---- the worker's side ---- */

/* A report about ws, with the session's state after what it reports. */
static void stamp_report(struct worker_session *ws, struct message *msg, enum message_kind kind)
{
        msg->kind = kind;
        msg->ws = ws;
        if (ws && ws->session) {
                held_session_get_state(ws->session, &msg->state);
                msg->has_state = true;
        }
}

static void post_report(struct worker_session *ws, struct message *msg, enum message_kind kind)
{
        stamp_report(ws, msg, kind);
        mailbox_post(&ws->worker->reports, &msg->item);
}

/* A report of the session's own: lost only when there is no memory for it, which is said. */
static struct message *new_event_report(struct worker_session *ws)
{
        struct message *msg = calloc(1, sizeof(*msg));

        if (!msg)
                log_error("Process %d: out of memory; an event of its debug session is lost", (int)ws->pid);
        return msg;
}

static void on_queue_created(struct held_session *s, uint32_t gpu_id, uint32_t queue_id, bool suspended,
                             void *userdata)
{
        struct worker_session *ws = userdata;
        struct message *msg = new_event_report(ws);

        if (!msg)
                return;
        msg->event.queue.gpu_id = gpu_id;
        msg->event.queue.queue_id = queue_id;
        msg->event.queue.suspended = suspended;
        post_report(ws, msg, REPORT_QUEUE_CREATED);
}

static void on_queues_changed(struct held_session *s, size_t caught, void *userdata)
{
        struct worker_session *ws = userdata;
        struct message *msg = new_event_report(ws);

        if (!msg)
                return;
        msg->event.caught = caught;
        post_report(ws, msg, REPORT_QUEUES_CHANGED);
}

static void on_runtime_changed(struct held_session *s, enum gp_runtime_state state, void *userdata)
{
        struct worker_session *ws = userdata;
        struct message *msg = new_event_report(ws);

        if (!msg)
                return;
        msg->event.runtime_state = state;
        post_report(ws, msg, REPORT_RUNTIME_CHANGED);
}

static void on_ended(struct held_session *s, enum held_session_end how, void *userdata)
{
        struct worker_session *ws = userdata;
        struct message *msg = new_event_report(ws);

        ws->gone = true;
        if (!msg)
                return;
        msg->event.how = how;
        post_report(ws, msg, REPORT_ENDED);
}

static void on_stop_changed(struct held_session *s, int stop_signal, void *userdata)
{
        struct worker_session *ws = userdata;
        struct message *msg = new_event_report(ws);

        if (!msg)
                return;
        msg->event.stop_signal = stop_signal;
        post_report(ws, msg, REPORT_STOP_CHANGED);
}

static void on_error(struct held_session *s, int error, enum gp_op op, void *userdata)
{
        struct worker_session *ws = userdata;
        struct message *msg = new_event_report(ws);

        if (!msg)
                return;
        msg->error = error;
        msg->event.op = op;
        post_report(ws, msg, REPORT_ERROR);
}

static const struct held_session_callbacks session_callbacks = {
        .queue_created = on_queue_created,
        .queues_changed = on_queues_changed,
        .runtime_changed = on_runtime_changed,
        .ended = on_ended,
        .stop_changed = on_stop_changed,
        .error = on_error,
};

static void do_attach(struct preemption_worker *w, struct message *msg)
{
        struct worker_session *ws = msg->ws;
        struct worker_session **grown;
        int r = 0;

        if (!w->gp) {
                r = gp_context_new(&w->gp_opts, &w->gp);
                if (r < 0) {
                        w->gp = NULL;
                        msg->why = explain_sentence(r, GP_OP_OPEN, 0, -1, NULL);
                }
        }
        grown = r >= 0 ? realloc(w->live, (w->n_live + 1) * sizeof(*grown)) : NULL;
        if (r >= 0 && !grown)
                r = -ENOMEM;
        if (grown)
                w->live = grown;
        if (r >= 0) {
                /* discovery found it in KFD's own list: it uses the GPU */
                r = held_session_attach(w->gp, w->event, ws->pid, msg->grace_period, false, &session_callbacks, ws,
                                        &ws->session);
                if (r < 0)
                        msg->why = explain_sentence(r, GP_OP_ATTACH, ws->pid, -1, w->gp);
        }
        if (r >= 0)
                w->live[w->n_live++] = ws;
        msg->error = r;
        post_report(ws, msg, REPORT_ATTACHED);
}

/*
 * A call that met a fault the owner takes for the GPU's (-ETIME, ERROR bits,
 * -EIO: the owner's gpu_faulted()) leaves no trap free to suspend there
 * before the owner, which learns of it only from the call's report, starts
 * the GPU's back-off: the marks on the call's GPUs are dropped here. A mark
 * a trap holds is left to it; the owner finds the others gone
 * (WORKER_UNMARK_NONE).
 */
static void drop_marks_after_fault(struct preemption_worker *w, const struct worker_call *call)
{
        if (call->result != -ETIME && call->result != -EIO && !call->n_error)
                return;
        for (size_t i = 0; i < WORKER_TRAP_SLOTS; i++) {
                struct trap_mark *mark = &w->marks[i];
                uint64_t generation = mark->generation;

                if (!generation || (call->gpu_id && mark->gpu_id != call->gpu_id) ||
                    !atomic_compare_exchange_strong(&w->trap_marks[i], &generation, 0))
                        continue;
                trap_mark_done(mark);
        }
}

/* Makes msg's call on its session; the caller reports it. */
static void run_call(struct preemption_worker *w, struct message *msg)
{
        struct worker_session *ws = msg->ws;
        struct worker_call *call = &msg->call;
        struct gp_queue_report report = { 0 };

        if (!ws->session || ws->gone) {
                /* the attach failed, or the target is gone: its end is reported, or was */
                call->result = ws->session ? -GP_ERR_TARGET_GONE : -ENOTCONN;
                return;
        }
        call->entered_ns = monotonic_clock_ns();
        call->result = held_session_set_suspended(ws->session, call->gpu_id ? &call->gpu_id : NULL,
                                                  call->gpu_id ? 1 : 0, call->suspend, &report);
        call->returned_ns = monotonic_clock_ns();
        call->n_done = report.n_done;
        call->n_error = report.n_error;
        if (call->result < 0 && call->result != -EIO)
                call->why = explain_sentence(call->result, call->suspend ? GP_OP_SUSPEND : GP_OP_RESUME, ws->pid,
                                             (int)held_session_runtime_state(ws->session), w->gp);
        drop_marks_after_fault(w, call);
}

static void do_set_suspended(struct preemption_worker *w, struct message *msg)
{
        run_call(w, msg);
        post_report(msg->ws, msg, REPORT_CALL_DONE);
}

/* A report chain, posted at once: the owner's loop wakes after the calls, not between them. */
struct report_chain {
        struct mailbox_item *first, *last;
};

static void chain_append(struct report_chain *c, struct message *msg)
{
        msg->item.next = NULL;
        if (c->last)
                c->last->next = &msg->item;
        else
                c->first = &msg->item;
        c->last = &msg->item;
}

static struct trap_mark *find_mark(struct preemption_worker *w, uint32_t gpu_id, size_t *ret_slot)
{
        for (size_t i = 0; i < WORKER_TRAP_SLOTS; i++)
                if (w->marks[i].generation && w->marks[i].gpu_id == gpu_id) {
                        *ret_slot = i;
                        return &w->marks[i];
                }
        return NULL;
}

static bool disarm_writer(struct preemption_worker *w, uint64_t key);

/* Takes the mark in slot if it is still valid (the owner has not cleared or replaced it). */
static bool take_mark(struct preemption_worker *w, size_t slot)
{
        uint64_t generation = w->marks[slot].generation;

        return generation && atomic_compare_exchange_strong(&w->trap_marks[slot], &generation, TRAP_MARK_TAKEN);
}

/*
 * A mark just taken: its sessions are suspended on its GPU, in order, the
 * first call timed from the report's seen_ns; the calls' reports go to
 * chain after the report's.
 */
static void suspend_marked(struct preemption_worker *w, size_t slot, struct message *report,
                           struct report_chain *chain)
{
        const struct trap_mark *mark = &w->marks[slot];

        report->trap.suspended = true;
        report->trap.slot = slot;
        report->trap.purpose = mark->purpose;
        for (size_t i = 0; i < mark->n_sessions; i++) {
                struct message *msg = calloc(1, sizeof(*msg));

                if (!msg) {
                        log_error("Process %d: out of memory; its queues are not suspended on a trap",
                                  (int)mark->sessions[i]->pid);
                        continue;
                }
                msg->ws = mark->sessions[i];
                atomic_fetch_add(&msg->ws->trap_calls_in_flight, 1);
                msg->call = (struct worker_call){ .gpu_id = mark->gpu_id, .suspend = true, .on_trap = true,
                                                  .purpose = mark->purpose,
                                                  .seen_ns = report->trap.n_calls ? 0 : report->trap.seen_ns };
                run_call(w, msg);
                stamp_report(msg->ws, msg, REPORT_CALL_DONE);
                chain_append(chain, msg);
                report->trap.n_calls++;
        }
}

static struct message *new_trap_report(const struct worker_trap *trap)
{
        struct message *report = calloc(1, sizeof(*report));

        if (!report)
                return NULL;
        report->kind = REPORT_TRAP;
        report->trap = *trap;
        return report;
}

/*
 * One event of the trap set. A store on a marked GPU whose mark this trap
 * takes suspends the mark's sessions there; the report and the calls' go to
 * chain.
 */
static void take_trap(struct preemption_worker *w, const struct epoll_event *e, uint64_t seen_ns,
                      struct report_chain *chain)
{
        struct message *report = new_trap_report(
                &(struct worker_trap){ .key = e->data.u64, .revents = e->events, .seen_ns = seen_ns });
        size_t slot = 0;

        if (!report) {
                /* the breakpoint stays armed: the next store traps again */
                log_error("Out of memory; a trap of an online queue is lost");
                return;
        }
        chain_append(chain, report);
        if (!(e->events & EPOLLIN))
                return; /* a thread gone */
        if (find_mark(w, trap_key_gpu(e->data.u64), &slot) && take_mark(w, slot))
                suspend_marked(w, slot, report, chain);
        /* after the suspension, which the online request waits for; not marked, or no longer: the owner judges it */
        report->trap.writer_disarmed = disarm_writer(w, e->data.u64);
}

/* Whether the mark in slot is valid and has a watch to poll. */
static bool mark_watched(struct preemption_worker *w, size_t slot)
{
        const struct trap_mark *mark = &w->marks[slot];

        return mark->watch && mark->generation && atomic_load(&w->trap_marks[slot]) == mark->generation;
}

/* When the next poll of a marked GPU's watch is due; UINT64_MAX when none is. */
static uint64_t next_poll_due(struct preemption_worker *w)
{
        uint64_t next = UINT64_MAX;

        for (size_t i = 0; i < WORKER_TRAP_SLOTS; i++)
                if (mark_watched(w, i)) {
                        uint64_t due = poll_watch_next_due(w->marks[i].watch);

                        if (due < next)
                                next = due;
                }
        return next;
}

/* A poll left slot's watch incomplete: the owner's loop looks at its GPU again (watch_lost()). */
static void report_watch_lost(struct preemption_worker *w, size_t slot, struct report_chain *chain)
{
        struct message *report = calloc(1, sizeof(*report));

        if (!report) {
                /* the owner's idle looks see the GPU still, and discovery remakes the mark */
                log_error("Out of memory; online queues the preemption thread can no longer read wait for idle looks");
                return;
        }
        report->kind = REPORT_WATCH_LOST;
        report->slot = slot;
        report->mark_generation = w->marks[slot].generation;
        chain_append(chain, report);
}

/*
 * The watches due at now_ns are polled: one that finds its queues moved
 * takes its mark, as a trap does, and suspends there; its report says it
 * was a poll's, seen when the poll began. A change found after the owner
 * cleared the mark is the owner's to see at its own looks. A poll that
 * could not read a process ends the watch, and says so.
 */
static void poll_marked(struct preemption_worker *w, uint64_t now_ns, struct report_chain *chain)
{
        for (size_t i = 0; i < WORKER_TRAP_SLOTS; i++) {
                _cleanup_free_ struct message *report = NULL;
                uint64_t seen_ns;
                pid_t pid;

                if (!mark_watched(w, i) || poll_watch_next_due(w->marks[i].watch) > now_ns)
                        continue;
                /* the traps taken before may have made calls: the poll is now, not at the wake-up */
                seen_ns = monotonic_clock_ns();
                if (!poll_watch_poll(w->marks[i].watch, seen_ns, &pid)) {
                        if (!poll_watch_complete(w->marks[i].watch))
                                report_watch_lost(w, i, chain);
                        continue;
                }
                report = new_trap_report(&(struct worker_trap){ .polled_pid = pid, .seen_ns = seen_ns });
                if (!report) {
                        /* the next poll finds the change again */
                        log_error("Out of memory; offline work is not suspended on a poll yet");
                        continue;
                }
                if (!take_mark(w, i))
                        continue;
                chain_append(chain, report);
                suspend_marked(w, i, TAKE_PTR(report), chain);
        }
}

/* epoll_pwait2()'s timeout for a poll due at due_ns (CLOCK_MONOTONIC); NULL: none due, wait for an event. */
static struct timespec *poll_timeout(uint64_t due_ns, uint64_t now_ns, struct timespec *ts)
{
        uint64_t wait_ns = due_ns > now_ns ? due_ns - now_ns : 0;

        if (due_ns == UINT64_MAX)
                return NULL;
        *ts = (struct timespec){ .tv_sec = (time_t)(wait_ns / 1000000000), .tv_nsec = (long)(wait_ns % 1000000000) };
        return ts;
}

static struct breakpoint_copy *find_breakpoint(struct preemption_worker *w, uint64_t key)
{
        for (size_t i = 0; i < w->n_breakpoints; i++)
                if (w->breakpoints[i].key == key)
                        return &w->breakpoints[i];
        return NULL;
}

/*
 * A store: the writer's breakpoints on the GPU written are disarmed here,
 * the other processes' left armed (detector_trapped() records it).
 * Returns whether the key was known. A failed DISABLE is the loop's to
 * find: it disarms again, and gives the queue to polling if that fails.
 */
static bool disarm_writer(struct preemption_worker *w, uint64_t key)
{
        struct breakpoint_copy *writer = find_breakpoint(w, key);
        bool failed = false;

        if (!writer)
                return false;
        for (size_t i = 0; i < w->n_breakpoints; i++) {
                const struct breakpoint_copy *b = &w->breakpoints[i];

                if (b->pid != writer->pid || trap_key_gpu(b->key) != trap_key_gpu(key))
                        continue;
                for (size_t f = 0; f < b->n_fds; f++)
                        failed |= ioctl(b->fds[f], PERF_EVENT_IOC_DISABLE, 0) < 0;
        }
        return !failed;
}

static void do_watch_breakpoint(struct preemption_worker *w, struct message *msg)
{
        struct breakpoint_copy *grown = realloc(w->breakpoints, (w->n_breakpoints + 1) * sizeof(*grown));

        if (!grown) {
                /* the loop disarms this writer itself: the report says it was not */
                log_warning("Out of memory; the breakpoint's writer is disarmed by the loop");
                free_message(&msg->item);
                return;
        }
        w->breakpoints = grown;
        w->breakpoints[w->n_breakpoints++] = msg->breakpoint;
        msg->breakpoint = (struct breakpoint_copy){ 0 };
        free_message(&msg->item);
}

static void do_forget_breakpoint(struct preemption_worker *w, struct message *msg)
{
        struct breakpoint_copy *b = find_breakpoint(w, msg->breakpoint.key);

        if (b) {
                breakpoint_copy_done(b);
                *b = w->breakpoints[--w->n_breakpoints];
        }
        free_message(&msg->item);
}

/* A mark replaces the slot's last (whose generation the slot no longer holds). */
static void do_mark(struct preemption_worker *w, struct message *msg)
{
        struct trap_mark *mark = &w->marks[msg->slot];

        trap_mark_done(mark);
        *mark = msg->mark;
        msg->mark = (struct trap_mark){ 0 };
        free_message(&msg->item);
}

/* A session that ends is no mark's any more: its handle is freed once its end is reported. */
static void forget_in_marks(struct preemption_worker *w, struct worker_session *ws)
{
        for (size_t i = 0; i < WORKER_TRAP_SLOTS; i++) {
                struct trap_mark *mark = &w->marks[i];

                for (size_t j = 0; j < mark->n_sessions;)
                        if (mark->sessions[j] == ws)
                                memmove(&mark->sessions[j], &mark->sessions[j + 1],
                                        (--mark->n_sessions - j) * sizeof(*mark->sessions));
                        else
                                j++;
        }
}

static void forget_live(struct preemption_worker *w, struct worker_session *ws)
{
        for (size_t i = 0; i < w->n_live; i++)
                if (w->live[i] == ws) {
                        w->live[i] = w->live[--w->n_live];
                        return;
                }
}

/* Detaches (the kernel resumes what the session held suspended) and hands the handle back to be freed. */
static void do_end(struct preemption_worker *w, struct message *msg)
{
        struct worker_session *ws = msg->ws;

        forget_live(w, ws);
        forget_in_marks(w, ws);
        msg->error = held_session_end(ws->session);
        ws->session = NULL;
        post_report(ws, msg, REPORT_DETACHED);
}

static void do_service_ptrace(struct preemption_worker *w)
{
        /* the callbacks only post reports: no session leaves live[] meanwhile */
        for (size_t i = 0; i < w->n_live; i++) {
                struct worker_session *ws = w->live[i];
                struct message *msg;

                if (ws->gone || !held_session_service_ptrace(ws->session))
                        continue;
                if (!held_session_is_terminating(ws->session) || ws->terminating_reported)
                        continue;
                ws->terminating_reported = true;
                msg = new_event_report(ws);
                if (msg)
                        post_report(ws, msg, REPORT_TERMINATING);
        }
}

static int on_commands(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
        struct preemption_worker *w = userdata;
        struct mailbox_item *item = mailbox_take_all(&w->commands);

        while (item) {
                struct message *msg = (struct message *)item;

                item = item->next;
                switch (msg->kind) {
                case COMMAND_ATTACH:
                        do_attach(w, msg);
                        break;
                case COMMAND_SET_SUSPENDED:
                        do_set_suspended(w, msg);
                        break;
                case COMMAND_SET_GRACE_PERIOD:
                        if (msg->ws->session)
                                held_session_set_grace_period(msg->ws->session, msg->grace_period);
                        free_message(&msg->item);
                        break;
                case COMMAND_END:
                        do_end(w, msg);
                        break;
                case COMMAND_SERVICE_PTRACE:
                        do_service_ptrace(w);
                        free_message(&msg->item);
                        break;
                case COMMAND_MARK:
                        do_mark(w, msg);
                        break;
                case COMMAND_WATCH_BREAKPOINT:
                        do_watch_breakpoint(w, msg);
                        break;
                case COMMAND_FORGET_BREAKPOINT:
                        do_forget_breakpoint(w, msg);
                        break;
                case COMMAND_QUIT:
                        /* what the owner did not end: ended now, so that no queue stays suspended */
                        while (w->n_live) {
                                struct worker_session *ws = w->live[0];

                                ws->end->ws = ws;
                                do_end(w, TAKE_PTR(ws->end));
                        }
                        free_message(&msg->item);
                        sd_event_exit(w->event, 0);
                        break;
                default:
                        free_message(&msg->item);
                        break;
                }
        }
        return 0;
}

/*
 * The worker's wait is on the trap set itself, which holds its sd-event
 * loop's fd besides the breakpoints' (detector_trap_fd() says why the set
 * cannot be polled from the loop instead). The traps of a wake-up are
 * taken before the commands that came with them: a trap on a GPU whose
 * mark a command not yet run replaces finds the slot's generation changed
 * and is only reported, which is safe. Then the marks' watches due are
 * polled, and, when its fd was ready, the loop runs every source pending, as
 * sd_event_loop() would (its sources are all io sources, level-triggered: a
 * wake-up for a poll alone leaves it be, which saves a system call a poll);
 * the worker is one thread, so a trap that comes meanwhile (during an
 * attach, or a resume) waits for them.
 */
static void *worker_main(void *userdata)
{
        struct preemption_worker *w = userdata;
        int r = 0;

        /* a poll's timeout is BusyPollIntervalUs: the default timer slack (50 µs) would be most of it */
        prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
        while (sd_event_get_state(w->event) != SD_EVENT_FINISHED) {
                struct epoll_event events[TRAP_EVENTS];
                struct report_chain chain = { 0 };
                struct timespec ts;
                bool loop_ready = false;
                uint64_t seen_ns = monotonic_clock_ns();
                int n = epoll_pwait2(w->trap_fd, events, TRAP_EVENTS,
                                     poll_timeout(next_poll_due(w), seen_ns, &ts), NULL);

                if (n < 0 && errno != EINTR) {
                        r = -errno;
                        break;
                }
                seen_ns = monotonic_clock_ns();
                for (int i = 0; i < n; i++)
                        if (events[i].data.u64 != TRAP_KEY_NONE)
                                take_trap(w, &events[i], seen_ns, &chain);
                        else
                                loop_ready = true;
                poll_marked(w, seen_ns, &chain);
                mailbox_post_chain(&w->reports, chain.first, chain.last);
                while (loop_ready && sd_event_get_state(w->event) != SD_EVENT_FINISHED &&
                       (r = sd_event_run(w->event, 0)) > 0)
                        ;
                if (r < 0)
                        break;
        }
        if (r < 0)
                log_error_errno(r, "The preemption worker's loop failed: offline processes are no longer suspended "
                                   "or resumed; restart gpreemptd");
        return NULL;
}

/* ---- the owner's side ---- */

static void dispatch(struct preemption_worker *w, struct message *msg)
{
        const struct worker_session_callbacks *cb = w->callbacks;
        struct worker_session *ws = msg->ws;

        if (msg->kind == REPORT_WATCH_LOST) {
                /* of the mark that still stands: a newer one has a watch of its own */
                if (!w->stopping && atomic_load(&w->trap_marks[msg->slot]) == msg->mark_generation)
                        cb->watch_lost(msg->slot, w->userdata);
                return;
        }
        if (msg->kind == REPORT_TRAP) {
                uint64_t taken = TRAP_MARK_TAKEN;

                /* the owner may mark the slot again from here on */
                if (msg->trap.suspended)
                        atomic_compare_exchange_strong(&w->trap_marks[msg->trap.slot], &taken, 0);
                if (!w->stopping)
                        cb->trapped(&msg->trap, w->userdata);
                return;
        }
        if (msg->has_state)
                ws->state = msg->state;
        if (msg->kind == REPORT_CALL_DONE && msg->call.on_trap)
                atomic_fetch_sub(&ws->trap_calls_in_flight, 1);
        else if (msg->kind == REPORT_CALL_DONE)
                ws->in_flight[msg->call.suspend]--;
        if (msg->kind == REPORT_ATTACHED)
                ws->attached = msg->error >= 0;
        if (msg->kind == REPORT_DETACHED) {
                cb->detached(ws->pid, msg->error, w->userdata);
                free(ws->end);
                free(ws);
                return;
        }
        if (!ws->userdata)
                return; /* ended by the owner: what it did meanwhile is of no more interest */
        switch (msg->kind) {
        case REPORT_ATTACHED:
                cb->attached(ws, msg->error, msg->why, ws->userdata);
                break;
        case REPORT_CALL_DONE:
                cb->call_done(ws, &msg->call, ws->userdata);
                break;
        case REPORT_QUEUE_CREATED:
                cb->queue_created(ws, msg->event.queue.gpu_id, msg->event.queue.queue_id, msg->event.queue.suspended,
                                  ws->userdata);
                break;
        case REPORT_QUEUES_CHANGED:
                cb->queues_changed(ws, msg->event.caught, ws->userdata);
                break;
        case REPORT_RUNTIME_CHANGED:
                cb->runtime_changed(ws, msg->event.runtime_state, ws->userdata);
                break;
        case REPORT_ENDED:
                cb->ended(ws, msg->event.how, ws->userdata);
                break;
        case REPORT_STOP_CHANGED:
                cb->stop_changed(ws, msg->event.stop_signal, ws->userdata);
                break;
        case REPORT_TERMINATING:
                cb->terminating(ws, ws->userdata);
                break;
        case REPORT_ERROR:
                cb->error(ws, msg->error, msg->event.op, ws->userdata);
                break;
        default:
                break;
        }
}

static void dispatch_all(struct preemption_worker *w)
{
        struct mailbox_item *item = mailbox_take_all(&w->reports);

        while (item) {
                struct message *msg = (struct message *)item;

                item = item->next;
                dispatch(w, msg);
                free_message(&msg->item);
        }
}

static int on_reports(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
        dispatch_all(userdata);
        return 0;
}

static int send_command(struct worker_session *ws, struct preemption_worker *w, enum message_kind kind,
                        struct message *msg)
{
        if (!msg)
                msg = calloc(1, sizeof(*msg));
        if (!msg)
                return -ENOMEM;
        msg->kind = kind;
        msg->ws = ws;
        mailbox_post(&w->commands, &msg->item);
        return 0;
}

/* A thread that takes no signal (the owner's loop takes them from a signalfd) and runs at SCHED_OTHER. */
static int start_thread(struct preemption_worker *w)
{
        struct sched_param normal = { .sched_priority = 0 };
        pthread_attr_t attr;
        sigset_t all, saved;
        int r;

        r = -pthread_attr_init(&attr);
        if (r < 0)
                return r;
        r = -pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED);
        if (r >= 0)
                r = -pthread_attr_setschedpolicy(&attr, SCHED_OTHER);
        if (r >= 0)
                r = -pthread_attr_setschedparam(&attr, &normal);
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &saved);
        if (r >= 0)
                r = -pthread_create(&w->thread, &attr, worker_main, w);
        pthread_sigmask(SIG_SETMASK, &saved, NULL);
        pthread_attr_destroy(&attr);
        if (r < 0)
                return r;
        w->thread_started = true;
        pthread_setname_np(w->thread, "gpreemptd-trace");
        return 0;
}

int preemption_worker_new(sd_event *main_event, int64_t priority, int trap_fd, const struct gp_context_opts *opts,
                          const struct worker_session_callbacks *callbacks, void *worker_userdata,
                          struct preemption_worker **ret_worker)
{
        struct preemption_worker *w = calloc(1, sizeof(*w));
        int r;

        if (!w)
                return -ENOMEM;
        w->callbacks = callbacks;
        w->userdata = worker_userdata;
        w->gp_opts = *opts;
        w->trap_fd = trap_fd;
        w->commands.eventfd = w->reports.eventfd = -1;
        w->quit = calloc(1, sizeof(*w->quit));
        r = !w->quit || (opts->kfd_path && !(w->kfd_path = strdup(opts->kfd_path))) ? -ENOMEM : 0;
        w->gp_opts.kfd_path = w->kfd_path;
        if (r >= 0)
                r = mailbox_init(&w->commands);
        if (r >= 0)
                r = mailbox_init(&w->reports);
        /* made here, run only by the thread from its start on */
        if (r >= 0)
                r = sd_event_new(&w->event);
        if (r >= 0)
                r = sd_event_add_io(w->event, &w->command_source, w->commands.eventfd, EPOLLIN, on_commands, w);
        if (r >= 0 && epoll_ctl(trap_fd, EPOLL_CTL_ADD, sd_event_get_fd(w->event),
                                &(struct epoll_event){ .events = EPOLLIN, .data.u64 = TRAP_KEY_NONE }) < 0)
                r = -errno;
        w->loop_in_trap_set = r >= 0;
        if (r >= 0)
                r = sd_event_add_io(main_event, &w->report_source, w->reports.eventfd, EPOLLIN, on_reports, w);
        if (r >= 0)
                r = sd_event_source_set_priority(w->report_source, priority);
        if (r >= 0)
                r = start_thread(w);
        if (r < 0) {
                preemption_worker_free(w);
                return r;
        }
        *ret_worker = w;
        return 0;
}

void preemption_worker_free(struct preemption_worker *w)
{
        if (!w)
                return;
        w->stopping = true;
        if (w->thread_started) {
                send_command(NULL, w, COMMAND_QUIT, TAKE_PTR(w->quit));
                pthread_join(w->thread, NULL);
                /* the detach of every session is reported; the rest is of no more interest */
                dispatch_all(w);
        }
        sd_event_source_disable_unref(w->report_source);
        sd_event_source_disable_unref(w->command_source);
        for (size_t i = 0; i < WORKER_TRAP_SLOTS; i++)
                trap_mark_done(&w->marks[i]);
        for (size_t i = 0; i < w->n_breakpoints; i++)
                breakpoint_copy_done(&w->breakpoints[i]);
        free(w->breakpoints);
        if (w->gp)
                gp_context_free(w->gp);
        if (w->loop_in_trap_set)
                epoll_ctl(w->trap_fd, EPOLL_CTL_DEL, sd_event_get_fd(w->event), NULL);
        sd_event_unref(w->event);
        if (w->commands.eventfd >= 0)
                mailbox_done(&w->commands, free_message);
        if (w->reports.eventfd >= 0)
                mailbox_done(&w->reports, free_message);
        free(w->quit);
        free(w->live);
        free(w->kfd_path);
        free(w);
}

int worker_session_attach(struct preemption_worker *w, pid_t pid, uint32_t grace_period, void *userdata,
                          struct worker_session **ret_session)
{
        struct worker_session *ws = calloc(1, sizeof(*ws));
        struct message *msg = calloc(1, sizeof(*msg));

        if (ws)
                ws->end = calloc(1, sizeof(*ws->end));
        if (!ws || !msg || !ws->end) {
                if (ws)
                        free(ws->end);
                free(ws);
                free(msg);
                return -ENOMEM;
        }
        ws->worker = w;
        ws->pid = pid;
        ws->userdata = userdata;
        msg->grace_period = grace_period;
        send_command(ws, w, COMMAND_ATTACH, msg);
        *ret_session = ws;
        return 0;
}

void worker_session_end(struct worker_session *ws)
{
        ws->userdata = NULL;
        send_command(ws, ws->worker, COMMAND_END, TAKE_PTR(ws->end));
}

int worker_session_set_suspended(struct worker_session *ws, uint32_t gpu_id, bool suspend, uint64_t purpose,
                                 uint64_t seen_ns)
{
        struct message *msg = calloc(1, sizeof(*msg));

        if (!msg)
                return -ENOMEM;
        msg->call = (struct worker_call){ .gpu_id = gpu_id, .suspend = suspend, .purpose = purpose,
                                          .seen_ns = seen_ns };
        ws->in_flight[suspend]++;
        return send_command(ws, ws->worker, COMMAND_SET_SUSPENDED, msg);
}

int worker_session_set_grace_period(struct worker_session *ws, uint32_t grace_period)
{
        struct message *msg = calloc(1, sizeof(*msg));

        if (!msg)
                return -ENOMEM;
        msg->grace_period = grace_period;
        return send_command(ws, ws->worker, COMMAND_SET_GRACE_PERIOD, msg);
}

int worker_mark_suspend_on_trap(struct preemption_worker *w, size_t slot, uint32_t gpu_id, uint64_t purpose,
                                struct worker_session *const *sessions, size_t n_sessions, struct poll_watch *watch)
{
        _cleanup_(poll_watch_freep) struct poll_watch *owned = watch;
        struct message *msg;
        uint64_t was = atomic_load(&w->trap_marks[slot]);

        if (was == TRAP_MARK_TAKEN)
                return -EBUSY;
        msg = calloc(1, sizeof(*msg));
        if (!msg)
                return -ENOMEM;
        msg->slot = slot;
        msg->mark = (struct trap_mark){ .gpu_id = gpu_id, .generation = ++w->mark_generation, .purpose = purpose,
                                        .n_sessions = n_sessions, .watch = TAKE_PTR(owned) };
        msg->mark.sessions = malloc((n_sessions ? n_sessions : 1) * sizeof(*msg->mark.sessions));
        if (!msg->mark.sessions) {
                free_message(&msg->item);
                return -ENOMEM;
        }
        if (n_sessions)
                memcpy(msg->mark.sessions, sessions, n_sessions * sizeof(*sessions));
        /* only a trap changes a mark but the owner's, and only to taken */
        if (!atomic_compare_exchange_strong(&w->trap_marks[slot], &was, msg->mark.generation)) {
                free_message(&msg->item);
                return -EBUSY;
        }
        return send_command(NULL, w, COMMAND_MARK, msg);
}

enum worker_unmark worker_unmark_suspend_on_trap(struct preemption_worker *w, size_t slot)
{
        uint64_t was = atomic_load(&w->trap_marks[slot]);

        while (was != 0 && was != TRAP_MARK_TAKEN)
                if (atomic_compare_exchange_weak(&w->trap_marks[slot], &was, 0))
                        return WORKER_UNMARKED;
        return was == 0 ? WORKER_UNMARK_NONE : WORKER_UNMARK_TOO_LATE;
}

int worker_watch_breakpoint(struct preemption_worker *w, uint64_t key, pid_t pid, const int *fds, size_t n_fds)
{
        struct message *msg = calloc(1, sizeof(*msg));

        if (!msg)
                return -ENOMEM;
        msg->breakpoint = (struct breakpoint_copy){ .key = key, .pid = pid };
        msg->breakpoint.fds = malloc((n_fds ? n_fds : 1) * sizeof(int));
        if (!msg->breakpoint.fds) {
                free_message(&msg->item);
                return -ENOMEM;
        }
        for (; msg->breakpoint.n_fds < n_fds; msg->breakpoint.n_fds++) {
                int fd = fcntl(fds[msg->breakpoint.n_fds], F_DUPFD_CLOEXEC, 3);

                if (fd < 0) {
                        int r = -errno;

                        free_message(&msg->item);
                        return r;
                }
                msg->breakpoint.fds[msg->breakpoint.n_fds] = fd;
        }
        return send_command(NULL, w, COMMAND_WATCH_BREAKPOINT, msg);
}

int worker_forget_breakpoint(struct preemption_worker *w, uint64_t key)
{
        struct message *msg = calloc(1, sizeof(*msg));

        if (!msg)
                return -ENOMEM;
        msg->breakpoint.key = key;
        return send_command(NULL, w, COMMAND_FORGET_BREAKPOINT, msg);
}

int preemption_worker_service_ptrace(struct preemption_worker *w)
{
        return send_command(NULL, w, COMMAND_SERVICE_PTRACE, NULL);
}

bool worker_session_attached(const struct worker_session *ws)
{
        return ws->attached;
}

const struct held_session_state *worker_session_state(const struct worker_session *ws)
{
        return &ws->state;
}

unsigned worker_session_in_flight(const struct worker_session *ws, bool suspend)
{
        /* a trap's suspension is in flight from the worker's start of it on, before the owner hears of it */
        return ws->in_flight[suspend] + (suspend ? atomic_load(&ws->trap_calls_in_flight) : 0);
}
