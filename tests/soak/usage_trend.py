# SPDX-License-Identifier: MIT
"""File descriptors and resident memory of processes, sampled over a soak,
and the verdict on their trend. docs/soak.md states the rule; the C cycle
soak (usage-trend.c) applies the same one.

After warm-up the counts must not grow:
  - fds: the baseline is the count at the end of warm-up; a leak is an fd
    count above it in each of the last LEAK_WINDOW samples (an fd that a
    process opens for a moment, e.g. gpreemptd reading /proc, may be caught
    by one sample; a leaked one is in all of them).
  - RSS: the largest sample after warm-up may exceed the baseline by
    RSS_TOLERANCE_KIB plus what the process is known to keep on purpose
    (kfdemu-app stores every request's latency: KEPT_BYTES_PER_REQUEST).
    An AddressSanitizer build keeps freed memory in quarantine, so there
    only the fds are judged (LeakSanitizer looks for leaks at exit).
"""
import os

LEAK_WINDOW = 3
# 1 MiB: RSS moves by whole pages as malloc's heap grows and is trimmed and
# as stacks are touched; a leak of 8 bytes per transition over an hour of
# the high-load scenario (~144 000 transitions) is 1.1 MiB.
RSS_TOLERANCE_KIB = 1024
# kfdemu-app keeps every request's latency (8 bytes), in an array that
# realloc may move, leaving the old copy in the heap.
KEPT_BYTES_PER_REQUEST = 16


def fd_count(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise OSError("/proc/%d/status has no VmRSS line" % pid)


class Series:
    """One process's samples: (seconds since start, fds, RSS KiB)."""

    def __init__(self, name, pid):
        self.name, self.pid, self.samples = name, pid, []

    def sample(self, t):
        self.samples.append((t, fd_count(self.pid), rss_kib(self.pid)))

    def verdict(self, warmup_s, kept_bytes=0, judge_rss=True):
        """A summary dict; its "problem" is None when the trend is flat."""
        fds = [s[1] for s in self.samples]
        rss = [s[2] for s in self.samples]
        after = [s for s in self.samples if s[0] >= warmup_s]
        out = {"pid": self.pid, "samples": len(self.samples),
               "fds": {"first": fds[0], "last": fds[-1], "max": max(fds)},
               "rss_kib": {"first": rss[0], "last": rss[-1], "max": max(rss)}, "problem": None}
        if len(after) < LEAK_WINDOW + 1:
            out["problem"] = ("only %d samples after the %.0f s warm-up: run longer or sample more often"
                              % (len(after), warmup_s))
            return out
        base_fds, base_rss = after[0][1], after[0][2]
        allowed_kib = RSS_TOLERANCE_KIB + kept_bytes // 1024
        out["fds"]["baseline"], out["rss_kib"]["baseline"] = base_fds, base_rss
        out["rss_kib"]["allowed_growth"], out["rss_kib"]["judged"] = allowed_kib, judge_rss
        settled = min(s[1] for s in after[-LEAK_WINDOW:])
        peak = max(s[2] for s in after)
        if settled > base_fds:
            out["problem"] = ("%s (pid %d) holds %d more file descriptors than after warm-up (%d -> %d)"
                              % (self.name, self.pid, settled - base_fds, base_fds, settled))
        elif judge_rss and peak - base_rss > allowed_kib:
            out["problem"] = ("%s (pid %d) grew by %d KiB after warm-up (%d -> %d KiB; %d KiB allowed)"
                              % (self.name, self.pid, peak - base_rss, base_rss, peak, allowed_kib))
        return out
