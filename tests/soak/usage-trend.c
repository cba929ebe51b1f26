/* SPDX-License-Identifier: MIT */
#include "usage-trend.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"

/* Open descriptors of pid. Counting this very process includes the
 * directory's own descriptor: a constant, so the trend is unaffected. */
static int count_fds(pid_t pid, unsigned *ret)
{
        _cleanup_closedir_ DIR *d = NULL;
        char path[64];
        struct dirent *e;
        unsigned n = 0;

        snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
        d = opendir(path);
        if (!d)
                return NEG_ERRNO();
        errno = 0;
        while ((e = readdir(d)))
                if (e->d_name[0] != '.')
                        n++;
        if (errno)
                return NEG_ERRNO();
        *ret = n;
        return 0;
}

static int read_rss_kib(pid_t pid, uint64_t *ret)
{
        _cleanup_fclose_ FILE *f = NULL;
        char path[64], line[256];

        snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
        f = fopen(path, "re");
        if (!f)
                return NEG_ERRNO();
        while (fgets(line, sizeof(line), f))
                if (sscanf(line, "VmRSS: %" SCNu64, ret) == 1)
                        return 0;
        return -ENODATA;
}

int usage_series_init(struct usage_series *s, const char *name, pid_t pid, size_t capacity)
{
        *s = (struct usage_series){ .name = name, .pid = pid, .capacity = capacity };
        s->samples = calloc(capacity, sizeof(*s->samples));
        return s->samples ? 0 : -ENOMEM;
}

void usage_series_done(struct usage_series *s)
{
        free(s->samples);
        s->samples = NULL;
        s->n_samples = s->capacity = 0;
}

int usage_series_sample(struct usage_series *s, uint64_t at)
{
        struct usage_sample sample = { .at = at };
        int r;

        if (s->n_samples == s->capacity)
                return -ENOSPC;
        if ((r = count_fds(s->pid, &sample.fds)) < 0 || (r = read_rss_kib(s->pid, &sample.rss_kib)) < 0)
                return r;
        s->samples[s->n_samples++] = sample;
        return 0;
}

void usage_series_verdict(const struct usage_series *s, uint64_t warmup_at, uint64_t kept_bytes,
                          struct usage_verdict *ret)
{
        struct usage_verdict v = { .n_samples = s->n_samples, .rss_judged = USAGE_JUDGE_RSS };
        size_t first_after = s->n_samples, n_after;
        unsigned settled = UINT32_MAX;
        uint64_t peak = 0;

        if (s->n_samples == 0) {
                snprintf(v.problem, sizeof(v.problem), "%s (pid %d) was never sampled", s->name,
                         (int)s->pid);
                *ret = v;
                return;
        }
        v.fds_first = s->samples[0].fds;
        v.fds_last = s->samples[s->n_samples - 1].fds;
        v.rss_first = s->samples[0].rss_kib;
        v.rss_last = s->samples[s->n_samples - 1].rss_kib;
        for (size_t i = 0; i < s->n_samples; i++) {
                if (s->samples[i].fds > v.fds_max)
                        v.fds_max = s->samples[i].fds;
                if (s->samples[i].rss_kib > v.rss_max)
                        v.rss_max = s->samples[i].rss_kib;
                if (first_after == s->n_samples && s->samples[i].at >= warmup_at)
                        first_after = i;
        }
        n_after = s->n_samples - first_after;
        if (n_after < USAGE_LEAK_WINDOW + 1) {
                snprintf(v.problem, sizeof(v.problem),
                         "%s (pid %d): only %zu samples after warm-up: run longer or sample more often",
                         s->name, (int)s->pid, n_after);
                *ret = v;
                return;
        }
        v.fds_baseline = s->samples[first_after].fds;
        v.rss_baseline = s->samples[first_after].rss_kib;
        v.rss_allowed_growth = USAGE_RSS_TOLERANCE_KIB + kept_bytes / 1024u;
        for (size_t i = s->n_samples - USAGE_LEAK_WINDOW; i < s->n_samples; i++)
                if (s->samples[i].fds < settled)
                        settled = s->samples[i].fds;
        for (size_t i = first_after; i < s->n_samples; i++)
                if (s->samples[i].rss_kib > peak)
                        peak = s->samples[i].rss_kib;
        if (settled > v.fds_baseline)
                snprintf(v.problem, sizeof(v.problem),
                         "%s (pid %d) holds %u more file descriptors than after warm-up (%u -> %u)",
                         s->name, (int)s->pid, settled - v.fds_baseline, v.fds_baseline, settled);
        else if (v.rss_judged && peak - v.rss_baseline > v.rss_allowed_growth) /* peak >= baseline */
                snprintf(v.problem, sizeof(v.problem),
                         "%s (pid %d) grew by %" PRIu64 " KiB after warm-up (%" PRIu64 " -> %" PRIu64
                         " KiB; %" PRIu64 " KiB allowed)",
                         s->name, (int)s->pid, peak - v.rss_baseline, v.rss_baseline, peak,
                         v.rss_allowed_growth);
        *ret = v;
}
