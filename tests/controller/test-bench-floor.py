#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tests/controller/bench-floor, the reaction benchmark's baselines, run
briefly: each floor prints one JSON object with as many events as asked and
p50 <= p99 (the poll floor's waits no shorter than asked), and bad arguments
get the usage (exit 2). TAP output.

  PYTHONPATH=tests/python tests/controller/test-bench-floor.py BUILD/tests/controller/bench-floor
"""
import json
import subprocess
import sys

from tap import check, finish

EVENTS = 50


def run(*args):
    return subprocess.run([sys.argv[1], *args], capture_output=True, text=True, timeout=60)


for floor, extra in (("wakeup", ()), ("trap", ()), ("poll", ()), ("poll", ("100",))):
    p = run(floor, str(EVENTS), *extra)
    try:
        figures = json.loads(p.stdout)
    except ValueError:
        figures = {}
    detail = f"exit {p.returncode}, stdout {p.stdout.strip()!r}, stderr {p.stderr.strip()!r}"
    check(f"{floor}: one JSON object", p.returncode == 0 and bool(figures), detail)
    check(f"{floor}: {EVENTS} events", figures.get(f"{floor}_events") == EVENTS, detail)
    p50, p99 = figures.get(f"{floor}_p50_us"), figures.get(f"{floor}_p99_us")
    check(f"{floor}: 0 < p50 <= p99", isinstance(p50, float) and isinstance(p99, float) and 0 < p50 <= p99, detail)
    if floor == "poll":
        interval = int(extra[0]) if extra else 20
        check(f"poll {interval}: no wait shorter than the interval, and a CPU share",
              figures.get("poll_interval_us") == interval and isinstance(p50, float) and p50 >= interval and
              0 <= figures.get("poll_cpu_percent", -1) <= 100, detail)

for args in ((), ("trap",), ("trap", "0"), ("trap", "5x"), ("trap", "200001"), ("tarp", "5"), ("trap", "5", "20"),
             ("poll", "5", "0"), ("poll", "5", "1000001"), ("poll", "5", "20", "1")):
    p = run(*args)
    check(f"{' '.join(args) or 'no arguments'}: the usage, exit 2",
          p.returncode == 2 and p.stderr.startswith("usage: bench-floor wakeup|trap|store N") and not p.stdout,
          f"exit {p.returncode}, stderr {p.stderr.strip()!r}")

finish()
