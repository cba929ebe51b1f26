/* SPDX-License-Identifier: MIT */
/*
 * Wait lists of parked calls: the emulated kernel's wait queues and
 * semaphore waiters. FIFO, like the kernel's (down() wakes the longest
 * waiter first).
 */
#include "kfd-priv.h"

void kfd_waitlist_add_tail(struct emu_call **head, struct emu_call *call, enum kfd_wait_kind kind)
{
        struct emu_call **tail = head;

        while (*tail)
                tail = &(*tail)->next_waiter;
        call->next_waiter = NULL;
        call->wait_kind = kind;
        *tail = call;
}

bool kfd_waitlist_remove(struct emu_call **head, struct emu_call *call)
{
        for (struct emu_call **link = head; *link; link = &(*link)->next_waiter) {
                if (*link == call) {
                        *link = call->next_waiter;
                        call->next_waiter = NULL;
                        call->wait_kind = KFD_WAIT_NONE;
                        return true;
                }
        }
        return false;
}

struct emu_call *kfd_waitlist_pop(struct emu_call **head)
{
        struct emu_call *call = *head;

        if (call)
                kfd_waitlist_remove(head, call);
        return call;
}
