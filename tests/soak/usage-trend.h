/* SPDX-License-Identifier: MIT */
/*
 * File descriptors and resident memory of a process, sampled over a soak,
 * and the verdict on their trend (the rule of docs/soak.md, which the
 * daemon soak's usage_trend.py applies too):
 *   - the baseline is the first sample at or after the end of warm-up;
 *   - fds: a leak is a count above the baseline in each of the last
 *     USAGE_LEAK_WINDOW samples (a descriptor open for a moment may be
 *     caught by one sample, a leaked one is in all of them);
 *   - RSS: the largest sample after warm-up may exceed the baseline by
 *     USAGE_RSS_TOLERANCE_KIB plus what the process keeps on purpose.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define USAGE_LEAK_WINDOW 3
/* RSS moves by whole pages as malloc's heap grows and is trimmed and as
 * stacks are touched; 1 MiB is a leak of 11 bytes per cycle over the 90 000
 * cycles after warm-up of the full soak. */
#define USAGE_RSS_TOLERANCE_KIB 1024u
/* kfdemu-app keeps every request's latency (8 bytes), in an array that
 * realloc may move, leaving the old copy in the heap: 16 bytes a request. */
#define USAGE_KEPT_BYTES_PER_REQUEST 16u

/* AddressSanitizer keeps freed memory in quarantine and its allocator
 * grows RSS on its own: in such a build only the fds are judged, and
 * LeakSanitizer looks for leaks at exit. */
#if defined(__SANITIZE_ADDRESS__)
#define USAGE_JUDGE_RSS false
#else
#define USAGE_JUDGE_RSS true
#endif

struct usage_sample {
        uint64_t at; /* the soak's own clock: cycles done */
        unsigned fds;
        uint64_t rss_kib;
};

struct usage_series {
        const char *name;
        pid_t pid;
        struct usage_sample *samples;
        size_t n_samples, capacity;
};

struct usage_verdict {
        size_t n_samples;
        unsigned fds_first, fds_last, fds_max, fds_baseline;
        uint64_t rss_first, rss_last, rss_max, rss_baseline, rss_allowed_growth;
        bool rss_judged;
        /* Empty when the trend is flat, else what grew. */
        char problem[256];
};

/* Room for `capacity` samples, allocated now so that sampling never
 * allocates while the soak measures this very process. */
int usage_series_init(struct usage_series *s, const char *name, pid_t pid, size_t capacity);
void usage_series_done(struct usage_series *s);
/* Reads /proc/<pid>/fd and VmRSS; -ENOSPC when the series is full. */
int usage_series_sample(struct usage_series *s, uint64_t at);
/* kept_bytes: what the process is allowed to keep on purpose after warm-up. */
void usage_series_verdict(const struct usage_series *s, uint64_t warmup_at, uint64_t kept_bytes,
                          struct usage_verdict *ret);
