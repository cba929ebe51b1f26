/* SPDX-License-Identifier: MIT */
/*
 * Discovery against a sysfs tree the test writes (the layout of
 * /sys/class/kfd/kfd/proc, kfd-interface.md §8.1): what it reports upward
 * as processes appear, exec, vanish and change their queues.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "discovery.h"

/* Fake pids: discovery never signals or opens them. */
#define PID_A 700001
#define PID_B 700002
/* Long enough that no pass starts by itself while a test looks. */
#define INTERVAL_US 10000u

struct fixture {
        char root[64];      /* stands for /sys */
        char proc[128];     /* <root>/class/kfd/kfd/proc */
        sd_event *event;
        struct discovery *discovery;
        char log[1024];     /* what was reported, in order */
        bool refuse;        /* pid_appeared answers false */
        bool busy;
};

static void say(struct fixture *f, const char *what, pid_t pid)
{
        size_t len = strlen(f->log);

        snprintf(f->log + len, sizeof(f->log) - len, "%s%s %d", len ? ", " : "", what, (int)pid);
}

static bool on_appeared(pid_t pid, void *userdata)
{
        struct fixture *f = userdata;

        say(f, "appeared", pid);
        return !f->refuse;
}

static void on_replaced(pid_t pid, void *userdata)
{
        say(userdata, "replaced", pid);
}

static void on_vanished(pid_t pid, void *userdata)
{
        say(userdata, "vanished", pid);
}

static void on_seen(pid_t pid, bool relisted, void *userdata)
{
        say(userdata, relisted ? "relisted" : "seen", pid);
}

static bool on_busy(void *userdata)
{
        return ((struct fixture *)userdata)->busy;
}

static const struct discovery_callbacks callbacks = {
        .pid_appeared = on_appeared,
        .pid_replaced = on_replaced,
        .pid_vanished = on_vanished,
        .pid_seen = on_seen,
        .busy = on_busy,
};

static void run(const char *fmt, ...)
{
        char command[512];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(command, sizeof(command), fmt, ap);
        va_end(ap);
        assert_int_equal(system(command), 0);
}

static void add_process(struct fixture *f, pid_t pid)
{
        run("mkdir -p %s/%d/queues", f->proc, (int)pid);
}

/* A new KFD process under the same pid: a new directory (made before the old one goes, so its inode differs). */
static void exec_process(struct fixture *f, pid_t pid)
{
        run("mv %s/%d %s/old && mkdir -p %s/%d/queues && rm -rf %s/old", f->proc, (int)pid, f->proc, f->proc,
            (int)pid, f->proc);
}

static void add_queue(struct fixture *f, pid_t pid, unsigned queue_id)
{
        run("mkdir -p %s/%d/queues/%u", f->proc, (int)pid, queue_id);
}

/*
 * Runs the loop until a pass has reported something and then nothing is
 * pending any more: the pass has gone over every listed process (the next
 * one is INTERVAL_US away).
 */
static void next_pass(struct fixture *f)
{
        uint64_t now, deadline;

        f->log[0] = '\0';
        sd_event_now(f->event, CLOCK_MONOTONIC, &deadline);
        deadline += 20 * INTERVAL_US;
        for (;;) {
                int r = sd_event_run(f->event, f->log[0] ? 0 : INTERVAL_US);

                assert_true(r >= 0);
                if (f->log[0] && r == 0)
                        return;
                sd_event_now(f->event, CLOCK_MONOTONIC, &now);
                if (now >= deadline)
                        fail_msg("no pass ended; reported so far: \"%s\"", f->log);
        }
}

static int setup(void **state)
{
        struct fixture *f = calloc(1, sizeof(*f));

        assert_non_null(f);
        strcpy(f->root, "/tmp/test-discovery-XXXXXX");
        assert_non_null(mkdtemp(f->root));
        snprintf(f->proc, sizeof(f->proc), "%s/class/kfd/kfd/proc", f->root);
        run("mkdir -p %s", f->proc);
        assert_int_equal(sd_event_new(&f->event), 0);
        assert_int_equal(discovery_new(f->event, f->root, INTERVAL_US, &callbacks, f, &f->discovery), 0);
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        struct fixture *f = *state;

        discovery_free(f->discovery);
        sd_event_unref(f->event);
        run("rm -rf %s", f->root);
        free(f);
        return 0;
}

static void test_first_pass_is_whole_and_at_once(void **state)
{
        struct fixture *f = *state;

        add_process(f, PID_B);
        add_process(f, PID_A);
        add_process(f, getpid()); /* the daemon's own KFD process is never reported */
        discovery_start(f->discovery);
        assert_string_equal(f->log, "appeared 700001, appeared 700002");
        next_pass(f);
        /* the first look at a queue directory counts as relisted: the owner reads it */
        assert_string_equal(f->log, "relisted 700001, relisted 700002");
        next_pass(f);
        assert_string_equal(f->log, "seen 700001, seen 700002");
}

static void test_queues_created_are_relisted(void **state)
{
        struct fixture *f = *state;

        add_process(f, PID_A);
        discovery_start(f->discovery);
        next_pass(f);
        add_queue(f, PID_A, 3);
        next_pass(f);
        assert_string_equal(f->log, "relisted 700001");
        next_pass(f);
        assert_string_equal(f->log, "seen 700001");
}

static void test_exec_replaces_and_appears_again(void **state)
{
        struct fixture *f = *state;

        add_process(f, PID_A);
        discovery_start(f->discovery);
        exec_process(f, PID_A);
        next_pass(f);
        assert_string_equal(f->log, "replaced 700001, appeared 700001");
}

static void test_unlisted_vanishes_and_forgotten_appears_again(void **state)
{
        struct fixture *f = *state;

        add_process(f, PID_A);
        add_process(f, PID_B);
        discovery_start(f->discovery);
        run("rm -rf %s/%d", f->proc, PID_B);
        next_pass(f);
        assert_string_equal(f->log, "vanished 700002, relisted 700001");
        /* the owner stopped tracking it on its own (it exited): listed again, it is new */
        discovery_forget(f->discovery, PID_A);
        next_pass(f);
        assert_string_equal(f->log, "appeared 700001");
}

static void test_refused_process_is_offered_again(void **state)
{
        struct fixture *f = *state;

        f->refuse = true; /* e.g. the process table is full */
        add_process(f, PID_A);
        discovery_start(f->discovery);
        assert_string_equal(f->log, "appeared 700001");
        next_pass(f);
        assert_string_equal(f->log, "appeared 700001");
        f->refuse = false;
        f->busy = true; /* a pass then takes one process a step: the same findings */
        next_pass(f);
        assert_string_equal(f->log, "appeared 700001");
        next_pass(f);
        assert_string_equal(f->log, "relisted 700001");
}

/* Runs the loop until something is reported: with busy set, one step of a pass, one process. */
static void next_report(struct fixture *f)
{
        f->log[0] = '\0';
        for (int i = 0; i < 100 && !f->log[0]; i++)
                assert_true(sd_event_run(f->event, 2 * INTERVAL_US) >= 0);
        if (!f->log[0])
                fail_msg("nothing was reported");
}

/* Its entry was listed, then removed (the process closed /dev/kfd) before the pass came to it. */
static void test_gone_since_listing_is_not_seen(void **state)
{
        struct fixture *f = *state;

        add_process(f, PID_A);
        add_process(f, PID_B);
        discovery_start(f->discovery);
        next_pass(f);
        f->busy = true;
        next_report(f);
        assert_string_equal(f->log, "seen 700001");
        run("rm -rf %s/%d", f->proc, PID_B);
        next_pass(f);
        assert_string_equal(f->log, "vanished 700002, seen 700001");
}

/* The same for a process new to discovery: the owner is not told of it. */
static void test_new_process_gone_since_listing_is_not_offered(void **state)
{
        struct fixture *f = *state;

        add_process(f, PID_A);
        discovery_start(f->discovery);
        next_pass(f);
        add_process(f, PID_B);
        f->busy = true;
        next_report(f);
        assert_string_equal(f->log, "seen 700001");
        run("rm -rf %s/%d", f->proc, PID_B);
        /* nothing for the rest of this pass; the next one lists A alone */
        next_pass(f);
        assert_string_equal(f->log, "seen 700001");
}

/* amdkfd makes proc/<pid>/ before its queues/ (kfd_create_process): a process met in between is there. */
static void test_listed_before_its_queue_directory(void **state)
{
        struct fixture *f = *state;

        run("mkdir -p %s/%d", f->proc, PID_A);
        discovery_start(f->discovery);
        assert_string_equal(f->log, "appeared 700001");
        next_pass(f);
        assert_string_equal(f->log, "seen 700001");
        add_process(f, PID_A);
        next_pass(f);
        assert_string_equal(f->log, "relisted 700001");
}

/* More queue directories than one getdents64 call returns: a change among any of them counts. */
static void test_long_queue_directory_is_read_whole(void **state)
{
        struct fixture *f = *state;

        add_process(f, PID_A);
        run("cd %s/%d/queues && seq 1 1000 | xargs mkdir", f->proc, PID_A);
        discovery_start(f->discovery);
        next_pass(f);
        assert_string_equal(f->log, "relisted 700001");
        next_pass(f);
        assert_string_equal(f->log, "seen 700001");
        /* spread over the directory, whatever order it lists them in: most come past the first call */
        for (unsigned id = 50; id <= 1000; id += 50) {
                run("rmdir %s/%d/queues/%u", f->proc, PID_A, id);
                next_pass(f);
                assert_string_equal(f->log, "relisted 700001");
        }
}

/* proc/ exists from amdkfd's load on (kfd-interface.md §8.1): without it there is no KFD at all. */
static void test_kfd_gone_and_back(void **state)
{
        struct fixture *f = *state;

        add_process(f, PID_A);
        discovery_start(f->discovery);
        assert_true(discovery_kfd_present(f->discovery));
        run("rm -rf %s/class", f->root);
        next_pass(f);
        assert_string_equal(f->log, "vanished 700001");
        assert_false(discovery_kfd_present(f->discovery));
        /* amdgpu loaded later: an empty proc/, then a process */
        run("mkdir -p %s", f->proc);
        add_process(f, PID_B);
        next_pass(f);
        assert_string_equal(f->log, "appeared 700002");
        assert_true(discovery_kfd_present(f->discovery));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_first_pass_is_whole_and_at_once, setup, teardown),
                cmocka_unit_test_setup_teardown(test_queues_created_are_relisted, setup, teardown),
                cmocka_unit_test_setup_teardown(test_exec_replaces_and_appears_again, setup, teardown),
                cmocka_unit_test_setup_teardown(test_unlisted_vanishes_and_forgotten_appears_again, setup, teardown),
                cmocka_unit_test_setup_teardown(test_refused_process_is_offered_again, setup, teardown),
                cmocka_unit_test_setup_teardown(test_kfd_gone_and_back, setup, teardown),
                cmocka_unit_test_setup_teardown(test_gone_since_listing_is_not_seen, setup, teardown),
                cmocka_unit_test_setup_teardown(test_new_process_gone_since_listing_is_not_offered, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_listed_before_its_queue_directory, setup, teardown),
                cmocka_unit_test_setup_teardown(test_long_queue_directory_is_read_whole, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
