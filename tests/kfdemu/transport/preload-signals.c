/* SPDX-License-Identifier: MIT */
/*
 * Which signal handler interrupted a sleeping kfd call, and whether it
 * asked for SA_RESTART. The kernel ends an interrupted
 * wait_event_interruptible with -ERESTARTSYS and restarts the syscall when
 * the handler it ran has SA_RESTART (EINTR otherwise); the preload must
 * decide the same, so sigaction and signal are interposed: a handler the
 * application installs runs through a trampoline that notes its flags on
 * the thread, and sigaction reports the application's own handler back.
 */
#include <signal.h>
#include <stdbool.h>

#include "preload.h"

static struct sigaction app_actions[_NSIG];
static volatile sig_atomic_t wrapped[_NSIG];
/* Set when a trampolined handler returns on this thread. */
static __thread volatile sig_atomic_t handler_ran, handler_restarts;

static void trampoline(int sig, siginfo_t *info, void *context)
{
        struct sigaction a = app_actions[sig];

        if (a.sa_flags & SA_RESETHAND)
                wrapped[sig] = 0;
        if (a.sa_flags & SA_SIGINFO)
                a.sa_sigaction(sig, info, context);
        else
                a.sa_handler(sig);
        /* After the handler: one that itself made a kfd call has reset
         * these for its own wait. */
        handler_restarts = (a.sa_flags & SA_RESTART) != 0;
        handler_ran = 1;
}

void preload_signals_before_wait(void)
{
        handler_ran = 0;
}

bool preload_signals_handler_restarts(void)
{
        /* No trampolined handler ran (one installed before the preload
         * loaded, or by glibc internally): EINTR, as before. */
        return handler_ran && handler_restarts;
}

PRELOAD_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
        struct sigaction mine, previous;
        bool was_wrapped, wrap;
        int r;

        if (sig <= 0 || sig >= _NSIG)
                return REAL(sigaction)(sig, act, old);
        was_wrapped = wrapped[sig];
        previous = app_actions[sig];
        wrap = act && act->sa_handler != SIG_DFL && act->sa_handler != SIG_IGN;
        if (wrap) {
                /* The table first: the signal may arrive right after. */
                app_actions[sig] = *act;
                mine = *act;
                mine.sa_flags |= SA_SIGINFO;
                mine.sa_sigaction = trampoline;
        }
        r = REAL(sigaction)(sig, wrap ? &mine : act, old);
        if (r < 0) {
                app_actions[sig] = previous;
                return r;
        }
        if (old && was_wrapped)
                *old = previous;
        if (act)
                wrapped[sig] = wrap;
        return r;
}

/* glibc's signal(): BSD semantics, SA_RESTART, the signal blocked in its handler. */
PRELOAD_EXPORT sighandler_t signal(int sig, sighandler_t handler)
{
        struct sigaction act = { .sa_handler = handler, .sa_flags = SA_RESTART }, old;

        sigemptyset(&act.sa_mask);
        if (sig > 0 && sig < _NSIG)
                sigaddset(&act.sa_mask, sig);
        return sigaction(sig, &act, &old) < 0 ? SIG_ERR : old.sa_handler;
}
