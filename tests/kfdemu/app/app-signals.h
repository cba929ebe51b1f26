/* SPDX-License-Identifier: MIT */
/*
 * kfdemu-app's signal handling. Signals are delivered for real (handlers,
 * not signalfd), so a ptrace tracer sees a signal-delivery stop for each and
 * a test can check in the signal log that every one arrived after the
 * tracer re-injected it. Worker threads block all signals; the main thread
 * and the idle threads (--threads) take them.
 */
#pragma once

#include <signal.h>
#include <stdbool.h>

struct app_signal_events {
        bool stop;     /* SIGTERM or SIGINT */
        bool report;   /* SIGUSR1 */
};

/* Installs the handlers. signal_log may be NULL. ret_wake_fd becomes
 * readable whenever a signal arrived (read end of a non-blocking pipe). */
int app_signals_install(const char *signal_log, int *ret_wake_fd);

/* Returns the events since the last call and clears them (stop stays set). */
struct app_signal_events app_signals_take(void);

/* Whether SIGTERM or SIGINT came, without consuming anything. */
bool app_signals_stop_requested(void);

/* Something other than a signal wants the main loop to wake up. */
void app_signals_wake(void);

/* Empties the wake pipe. */
void app_signals_drain(void);
