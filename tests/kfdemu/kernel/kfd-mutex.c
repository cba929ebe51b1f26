/* SPDX-License-Identifier: MIT */
/*
 * A kfd_process's two mutexes as a caller can find them: p->mutex (every
 * ioctl of the process and, as target->mutex, every DBG_TRAP op on it,
 * kfd-interface.md §3 step 6) and p->event_mutex (the ops that read or
 * clear exception state, and every raise).
 *
 * The server never sleeps holding them; they are taken for longer than a
 * kernel entry only by a raiser blocked in the event write (kfd-evwrite.c:
 * kfd_dbg_ev_raise writes the byte under event_mutex, and DESTROY_QUEUE,
 * RUNTIME_ENABLE and SET_EXCEPTIONS_ENABLED raise under p->mutex too), or
 * forever by an oops that dies holding p->mutex (kfd-suspend.c). A call
 * that needs a lock taken then sleeps in mutex_lock — uninterruptibly —
 * and runs again from the start of its ioctl once the lock is free.
 */
#include "kfd-priv.h"

bool kfd_lock_wait(struct emu_process *p, unsigned locks, struct emu_call *call)
{
        bool taken = ((locks & KFD_LOCK_MUTEX) && (p->mutex_holders > 0 || p->mutex_poisoned)) ||
                     ((locks & KFD_LOCK_EVENT_MUTEX) && p->event_mutex_holders > 0);

        if (!taken)
                return false;
        kfd_waitlist_add_tail(&p->lock_waiters, call, KFD_WAIT_LOCK);
        call->lock_process = p;
        return true;
}

void kfd_lock_take(struct emu_process *p, unsigned locks)
{
        if (locks & KFD_LOCK_MUTEX)
                p->mutex_holders++;
        if (locks & KFD_LOCK_EVENT_MUTEX)
                p->event_mutex_holders++;
}

/* The waiters run again in arrival order; one that finds a lock still
 * taken sleeps again. */
static void kfd_lock_run_waiters(struct emu_process *p)
{
        struct emu_call *waiters = p->lock_waiters;

        p->lock_waiters = NULL;
        while (waiters) {
                struct emu_call *call = waiters;

                waiters = call->next_waiter;
                call->next_waiter = NULL;
                call->wait_kind = KFD_WAIT_NONE;
                call->lock_process = NULL;
                kfd_ioctl_rerun(call);
        }
}

void kfd_lock_release(struct emu_process *p, unsigned locks)
{
        if (locks & KFD_LOCK_MUTEX)
                p->mutex_holders--;
        if (locks & KFD_LOCK_EVENT_MUTEX)
                p->event_mutex_holders--;
        kfd_lock_run_waiters(p);
}

void kfd_lock_poison(struct emu_process *p)
{
        p->mutex_poisoned = true;
}

void kfd_lock_process_gone(struct emu_process *p)
{
        /* Callers of other processes that slept on p's locks find p gone
         * when they run again; p's own sleepers went with its mm. */
        p->mutex_holders = 0;
        p->event_mutex_holders = 0;
        p->mutex_poisoned = false;
        kfd_lock_run_waiters(p);
}

void kfd_lock_abandon(struct emu_call *call)
{
        kfd_waitlist_remove(&call->lock_process->lock_waiters, call);
        call->lock_process = NULL;
}
