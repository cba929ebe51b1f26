/* SPDX-License-Identifier: MIT */
/*
 * Stops of sleeping callers. A task asleep in down_interruptible (the
 * runtime-enable wait) wakes with -EINTR for any pending signal, a stop
 * (SIGSTOP, a group stop, PTRACE_INTERRUPT) included, before any handler
 * runs; the preload's ppoll never sees a stop (the kernel restarts it
 * after SIGCONT). So while such a caller sleeps, the server looks at its
 * state on a slow timer and lets kernel/ end the wait of a stopped one.
 * Idle nodes arm no timer.
 */
#include "server.h"

/* Slow enough to cost nothing, fast enough for a debugger's stop. */
#define STOP_WATCH_PERIOD_US 20000

static int on_stop_watch(sd_event_source *source, uint64_t usec, void *userdata)
{
        struct kfdemu_server *server = userdata;

        pthread_mutex_lock(&server->node.lock);
        server->stop_watch = sd_event_source_disable_unref(server->stop_watch);
        emu_interrupt_stopped_sleepers(&server->node);
        stop_watch_update(server);
        pthread_mutex_unlock(&server->node.lock);
        return 0;
}

void stop_watch_update(struct kfdemu_server *server)
{
        if (server->stop_watch || !emu_has_stop_sensitive_sleepers(&server->node))
                return;
        /* An accuracy of 0 would mean sd-event's default, 250 ms. */
        if (sd_event_add_time_relative(server->event, &server->stop_watch, CLOCK_MONOTONIC, STOP_WATCH_PERIOD_US,
                                       STOP_WATCH_PERIOD_US / 4, on_stop_watch, server) < 0)
                server_log(server, "cannot watch sleeping callers for stops: a stop will not interrupt them");
}

void stop_watch_stop(struct kfdemu_server *server)
{
        server->stop_watch = sd_event_source_disable_unref(server->stop_watch);
}
