/* SPDX-License-Identifier: MIT */
/*
 * The hand-over between the daemon's loop and its preemption worker
 * (controller/gpreemptd/mailbox.c): items arrive in the order posted, also
 * from another thread; the eventfd wakes the receiver once per burst, and
 * again for an item posted after it took the others; what is never taken is
 * freed at the end.
 */
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>
#include <cmocka.h>

#include "mailbox.h"

struct numbered {
        struct mailbox_item item; /* first */
        int number;
};

static struct numbered *numbered_new(int number)
{
        struct numbered *n = calloc(1, sizeof(*n));

        assert_non_null(n);
        n->number = number;
        return n;
}

static int freed;

static void count_free(struct mailbox_item *item)
{
        freed++;
        free(item);
}

static bool readable(const struct mailbox *mb)
{
        struct pollfd pfd = { .fd = mb->eventfd, .events = POLLIN };

        return poll(&pfd, 1, 0) == 1;
}

/* Takes every item, checks they are next, next + 1, ...; returns how many. */
static int take_in_order(struct mailbox *mb, int *next)
{
        struct mailbox_item *item = mailbox_take_all(mb);
        int n = 0;

        while (item) {
                struct numbered *got = (struct numbered *)item;

                item = item->next;
                assert_int_equal(got->number, (*next)++);
                free(got);
                n++;
        }
        return n;
}

static void test_burst_is_one_wakeup_in_order(void **state)
{
        struct mailbox mb;
        uint64_t count = 0;
        int next = 0;

        assert_int_equal(mailbox_init(&mb), 0);
        assert_false(readable(&mb));
        for (int i = 0; i < 3; i++)
                mailbox_post(&mb, &numbered_new(i)->item);
        assert_true(readable(&mb));
        /* one write for the three: the box was empty only at the first */
        assert_int_equal(read(mb.eventfd, &count, sizeof(count)), (ssize_t)sizeof(count));
        assert_int_equal(count, 1);
        assert_int_equal(take_in_order(&mb, &next), 3);
        assert_false(readable(&mb));
        /* posted after the take: the receiver is woken again */
        mailbox_post(&mb, &numbered_new(3)->item);
        assert_true(readable(&mb));
        assert_int_equal(take_in_order(&mb, &next), 1);
        assert_null(mailbox_take_all(&mb));
        mailbox_done(&mb, count_free);
}

/* A chain posted behind an item already waiting: taken with it, in order, for the one wake-up of the first. */
static void test_chain_is_posted_at_once(void **state)
{
        struct numbered *chain[3];
        struct mailbox mb;
        uint64_t count = 0;
        int next = 0;

        assert_int_equal(mailbox_init(&mb), 0);
        mailbox_post_chain(&mb, NULL, NULL);
        assert_false(readable(&mb));
        mailbox_post(&mb, &numbered_new(0)->item);
        for (int i = 0; i < 3; i++)
                chain[i] = numbered_new(i + 1);
        chain[0]->item.next = &chain[1]->item;
        chain[1]->item.next = &chain[2]->item;
        mailbox_post_chain(&mb, &chain[0]->item, &chain[2]->item);
        assert_int_equal(read(mb.eventfd, &count, sizeof(count)), (ssize_t)sizeof(count));
        assert_int_equal(count, 1);
        assert_int_equal(take_in_order(&mb, &next), 4);
        mailbox_done(&mb, count_free);
}

#define POSTS 20000

static void *post_many(void *userdata)
{
        struct mailbox *mb = userdata;

        for (int i = 0; i < POSTS; i++)
                mailbox_post(mb, &numbered_new(i)->item);
        return NULL;
}

/* A sender thread and a receiver that sleeps on the eventfd: nothing lost, nothing out of order. */
static void test_another_thread_posts(void **state)
{
        struct mailbox mb;
        pthread_t sender;
        int next = 0;

        assert_int_equal(mailbox_init(&mb), 0);
        assert_int_equal(pthread_create(&sender, NULL, post_many, &mb), 0);
        while (next < POSTS) {
                struct pollfd pfd = { .fd = mb.eventfd, .events = POLLIN };

                assert_int_equal(poll(&pfd, 1, 5000), 1);
                take_in_order(&mb, &next);
        }
        pthread_join(sender, NULL);
        assert_null(mailbox_take_all(&mb));
        mailbox_done(&mb, count_free);
}

static void test_done_frees_what_was_not_taken(void **state)
{
        struct mailbox mb;

        assert_int_equal(mailbox_init(&mb), 0);
        for (int i = 0; i < 5; i++)
                mailbox_post(&mb, &numbered_new(i)->item);
        freed = 0;
        mailbox_done(&mb, count_free);
        assert_int_equal(freed, 5);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_burst_is_one_wakeup_in_order),
                cmocka_unit_test(test_chain_is_posted_at_once),
                cmocka_unit_test(test_another_thread_posts),
                cmocka_unit_test(test_done_frees_what_was_not_taken),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
