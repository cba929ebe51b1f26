/* SPDX-License-Identifier: MIT */
#include "mailbox.h"

#include <errno.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <unistd.h>

int mailbox_init(struct mailbox *mb)
{
        *mb = (struct mailbox){ .eventfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK) };
        if (mb->eventfd < 0)
                return -errno;
        pthread_mutex_init(&mb->lock, NULL);
        return 0;
}

void mailbox_done(struct mailbox *mb, void (*free_item)(struct mailbox_item *item))
{
        struct mailbox_item *item = mailbox_take_all(mb);

        while (item) {
                struct mailbox_item *next = item->next;

                free_item(item);
                item = next;
        }
        close(mb->eventfd);
        pthread_mutex_destroy(&mb->lock);
}

void mailbox_post(struct mailbox *mb, struct mailbox_item *item)
{
        mailbox_post_chain(mb, item, item);
}

void mailbox_post_chain(struct mailbox *mb, struct mailbox_item *first, struct mailbox_item *last)
{
        static const uint64_t one = 1;
        int was_empty;

        if (!first)
                return;
        last->next = NULL;
        pthread_mutex_lock(&mb->lock);
        was_empty = mb->head == NULL;
        if (mb->tail)
                mb->tail->next = first;
        else
                mb->head = first;
        mb->tail = last;
        pthread_mutex_unlock(&mb->lock);
        /* the receiver reads the eventfd before it takes the items: an item posted after that finds
         * the mailbox empty and wakes it again, so none waits for a later post */
        if (was_empty)
                (void)!write(mb->eventfd, &one, sizeof(one));
}

struct mailbox_item *mailbox_take_all(struct mailbox *mb)
{
        struct mailbox_item *items;
        uint64_t count;

        (void)!read(mb->eventfd, &count, sizeof(count));
        pthread_mutex_lock(&mb->lock);
        items = mb->head;
        mb->head = mb->tail = NULL;
        pthread_mutex_unlock(&mb->lock);
        return items;
}
