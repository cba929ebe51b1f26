/* SPDX-License-Identifier: MIT */
/*
 * A first-in first-out hand-over between two threads, each item owned by
 * whoever holds it: the sender allocates it and posts it, the receiver
 * takes it and frees it. An eventfd wakes the receiver's loop; it is
 * written only when the mailbox was empty, so a burst of items costs one
 * wake-up and the receiver takes them all at once, in order.
 */
#pragma once

#include <pthread.h>

/* Embedded first in each message. */
struct mailbox_item {
        struct mailbox_item *next;
};

struct mailbox {
        pthread_mutex_t lock;
        struct mailbox_item *head, *tail;
        int eventfd; /* readable while items wait; poll it from the receiver's loop */
};

/* Returns 0 or -errno (no eventfd). */
int mailbox_init(struct mailbox *mb);
/* Frees what was never taken with free_item, and closes the eventfd. */
void mailbox_done(struct mailbox *mb, void (*free_item)(struct mailbox_item *item));
/* Appends item (never fails: the item is allocated by the sender) and wakes the receiver. */
void mailbox_post(struct mailbox *mb, struct mailbox_item *item);
/*
 * Appends the items from first to last, linked by ->next, at once: the
 * receiver takes all of them or none, with one wake-up (no-op when first is
 * NULL).
 */
void mailbox_post_chain(struct mailbox *mb, struct mailbox_item *first, struct mailbox_item *last);
/* Every item waiting, oldest first (NULL: none); follow ->next. */
struct mailbox_item *mailbox_take_all(struct mailbox *mb);
