/* SPDX-License-Identifier: MIT */
/*
 * The log parser on real HIP/CLR log excerpts quoted from public issue
 * threads (tests/data/real/logs/README.md names each thread and its ROCm
 * release). The queues each excerpt holds were read off the excerpt by
 * eye, not by running the parser: every queue address, its process, and
 * its packets.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "sources.h"
#include "test-util.h"

#define MAX_QUEUES 8

/* A queue as an excerpt shows it; an address of 0 is one it does not
 * print. */
struct seen_queue {
        pid_t pid;             /* 0: no line names the process */
        uint64_t swq;          /* "Created SWq=", "created hardware queue" (amd_queue_t) */
        uint64_t hwq;          /* ">= 6.2 HWq=" (ring base) */
        uint64_t legacy_hwq;   /* "<= 6.1 HWq=", refCount lines with no creation line */
        uint64_t dispatches, barriers;
        uint64_t max_refcount;
        unsigned long deleted_line; /* "Deleting hardware queue" */
        const char *kernel;    /* ShaderName before the last dispatch; NULL: not checked */
};

struct excerpt {
        const char *file;
        size_t n;
        struct seen_queue queues[MAX_QUEUES];
};

static const struct excerpt excerpts[] = {
        { "spack-27535-dispatch.log", 1, { { .legacy_hwq = 0x7fb360aa6000, .dispatches = 1 } } },
        { "spack-27535-memcpy.log", 1, { { .legacy_hwq = 0x7fb360aa6000, .barriers = 1 } } },
        { "spack-27535-hipmalloc.log", 1, { { .legacy_hwq = 0x7fb360aa6000, .barriers = 1 } } },
        { "spack-27535-launch.log", 1, { { .legacy_hwq = 0x7fb360aa6000, .dispatches = 1, .barriers = 1 } } },
        { "spack-27535-event.log", 1, { { .legacy_hwq = 0x7fb360aa6000, .barriers = 1 } } },
        { "llama.cpp-1087.log",
          1,
          { { .pid = 9174, .legacy_hwq = 0x229000, .dispatches = 1, .kernel = "_ZL7mul_f32PKfS0_Pfii" } } },
        { "rccl-876.log",
          2,
          { { .pid = 1255284, .legacy_hwq = 0x7fcc33b08000, .max_refcount = 1 },
            { .pid = 1255284, .swq = 0x7fcc33b06000, .max_refcount = 1 } } },
        { "ollama-9516.log", 1, { { .swq = 0x7ad5f8056000, .hwq = 0x7ad456a00000, .max_refcount = 1 } } },
        { "hip-3769.log",
          4,
          { { .swq = 0x7fd9ee22c000, .hwq = 0x7fd9c2800000, .max_refcount = 1 },
            { .swq = 0x7fd9ee216000, .hwq = 0x7fd9c2000000, .max_refcount = 1 },
            { .swq = 0x7fd9ee17e000, .hwq = 0x7fd9c0400000, .max_refcount = 2 },
            { .swq = 0x7fd9ee16c000, .hwq = 0x7fd9b0600000, .max_refcount = 2 } } },
        { "legacy-rocm-build-4259.log",
          1,
          { { .pid = 2539, .swq = 0x7fffe01ac000, .hwq = 0x7fffd1400000, .max_refcount = 1 } } },
        { "therock-3313.log", 1, { { .pid = 779, .swq = 0x7f811d512000, .hwq = 0x7b790a200000, .max_refcount = 1 } } },
        { "therock-4604.log",
          1,
          { { .pid = 13124, .swq = 0x00000251006B0000, .hwq = 0x00000251006C0000, .max_refcount = 1 } } },
        { "rocm-2418.log", 1, { { .pid = 350457, .swq = 0x7f02e57cc000, .max_refcount = 1 } } },
        { "rocm-2429.log", 1, { { .pid = 16, .swq = 0x7f53ae300000, .max_refcount = 1 } } },
        { "rocm-2596.log",
          2,
          { { .pid = 3158, .swq = 0x7fbd11443000, .max_refcount = 1 },
            { .pid = 3158, .swq = 0x7fbd11410000, .max_refcount = 1 } } },
        { "rccl-876-workers.log",
          2,
          { { .pid = 1255284, .swq = 0x7fcc3566a000, .max_refcount = 1 },
            { .pid = 1255284, .swq = 0x7fcc33b34000, .max_refcount = 1 } } },
        { "lumi-ai-workshop-04.log", 1, { { .pid = 8088, .legacy_hwq = 0x14b30ee00000, .dispatches = 1 } } },
        { "p1sin-demo.log", 1, { { .pid = 145680, .swq = 0x7fffed28e000, .max_refcount = 1 } } },
        { "rocm-4208.log", 1, { { .pid = 19349, .swq = 0x14dd04c94000, .hwq = 0x14dbfb600000, .max_refcount = 1 } } },
        { "rocm-4208-teardown.log",
          1,
          { { .pid = 3785, .swq = 0x154535a96000, .hwq = 0x154430400000, .barriers = 1, .deleted_line = 15 } } },
        { "rocm-4198.log", 1, { { .swq = 0x7f20902c0000, .hwq = 0x7f20902d0000, .dispatches = 1 } } },
        { "rocm-4394.log", 1, { { .pid = 21983, .swq = 0x7f3342202000, .hwq = 0x7f316c300000, .dispatches = 1 } } },
        { "rocm-4519.log", 1, { { .pid = 461, .swq = 0x7f1072cba000, .hwq = 0x7f0f70600000, .dispatches = 1 } } },
        { "hpctraining-hipstdpar.log", 1, { { .swq = 0x7f8ec8e86000, .hwq = 0x7f8eb5c00000, .max_refcount = 1 } } },
        { "rocm-5051.log",
          1,
          { { .pid = 92169, .swq = 0x7fcf2a564000, .hwq = 0x7fcbe4200000, .dispatches = 1, .barriers = 1 } } },
        { "rocm-5180-good.log", 1, { { .pid = 77513, .swq = 0x7f0bd1848000, .hwq = 0x7f0ab9c00000, .barriers = 1 } } },
        { "rocm-5180-fail.log",
          1,
          { { .pid = 77544, .swq = 0x7fd5bfa36000, .hwq = 0x7fc6a5000000, .barriers = 1, .deleted_line = 17 } } },
        { "rocm-5952.log", 1, { { .pid = 309675, .swq = 0x73e376a26000, .hwq = 0x73e2c8300000, .dispatches = 2 } } },
        { "rocm-5952-copy.log", 1, { { .pid = 309675, .swq = 0x73e376a26000, .hwq = 0x73e2c8300000, .barriers = 1 } } },
        { "rocm-5952-sync.log", 1, { { .pid = 309675, .swq = 0x73e376a26000, .hwq = 0x73e2c8300000, .barriers = 1 } } },
        { "rocm-5952-dep.log",
          1,
          { { .pid = 309675, .swq = 0x73e376a26000, .hwq = 0x73e2c8300000, .dispatches = 1, .barriers = 1 } } },
        { "mi308x-16streams-lifetime.log",
          4,
          { { .swq = 0x7f36633ca000, .hwq = 0x7f3660c00000, .max_refcount = 1, .deleted_line = 64 },
            { .swq = 0x7f36633c4000, .hwq = 0x7f1654e00000, .max_refcount = 1, .deleted_line = 63 },
            { .swq = 0x7f36633b4000, .hwq = 0x7f1654200000, .max_refcount = 1, .deleted_line = 62 },
            { .swq = 0x7f36633a4000, .hwq = 0x7f1649800000, .max_refcount = 1, .deleted_line = 61 } } },
};

static bool same_queue(const struct qf_log_queue *q, const struct seen_queue *e)
{
        return q->has_amd_queue == (e->swq != 0) && (!e->swq || q->amd_queue == e->swq) &&
               q->has_ring_base == (e->hwq != 0) && (!e->hwq || q->ring_base == e->hwq) &&
               q->has_legacy_hwq == (e->legacy_hwq != 0) && (!e->legacy_hwq || q->legacy_hwq == e->legacy_hwq);
}

static void check_excerpt(const struct excerpt *x)
{
        char path[4096];
        snprintf(path, sizeof(path), "logs/%s", x->file);
        struct qf_diags d = { 0 };
        struct qf_log l;
        int fd = test_open_shared(path);
        assert_int_equal(qf_log_parse(fd, x->file, NULL, &d, &l), 0);
        close(fd);
        if (l.n != x->n)
                fail_msg("%s: %zu queues found, the excerpt holds %zu", x->file, l.n, x->n);
        /* Each parsed queue stands for one expected queue at most. */
        bool used[MAX_QUEUES] = { false };
        for (size_t i = 0; i < x->n; i++) {
                const struct seen_queue *e = &x->queues[i];
                const struct qf_log_queue *q = NULL;
                for (size_t k = 0; k < l.n && !q; k++)
                        if (!used[k] && same_queue(&l.queues[k], e)) {
                                used[k] = true;
                                q = &l.queues[k];
                        }
                if (!q)
                        fail_msg("%s: queue %zu of the excerpt not found", x->file, i);
                assert_int_equal(q->has_pid, e->pid != 0);
                assert_int_equal(q->pid, e->pid);
                assert_int_equal(q->dispatches, e->dispatches);
                assert_int_equal(q->barriers, e->barriers);
                assert_int_equal(q->max_refcount, e->max_refcount);
                assert_int_equal(q->deleted_line, e->deleted_line);
                if (e->kernel)
                        assert_string_equal(q->last_kernel, e->kernel);
        }
        if (d.n != 0)
                fail_msg("%s: unexpected warning at line %lu: %s", x->file, d.items[0].line, d.items[0].message);
        qf_diags_clear(&d);
        qf_log_clear(&l);
}

static void test_excerpt(void **state)
{
        check_excerpt(*state);
}

/* One test per excerpt, named after its file. */
int main(void)
{
        enum { N = sizeof(excerpts) / sizeof(*excerpts) };
        struct CMUnitTest tests[N];
        for (size_t i = 0; i < N; i++)
                tests[i] = (struct CMUnitTest){ .name = excerpts[i].file, .test_func = test_excerpt,
                                                .initial_state = (void *) &excerpts[i] };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
