#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""scripts/gpreempt_eval/bench_reaction.py against its floors, on made-up
runs: the reaction over the eventfd floor, and over the trap floor where
breakpoints are used or the poll floor with polling only, run by run, the
lines that report it, and scripts/bench-compare's rows of them. TAP output. The
package comes from PYTHONPATH (meson test sets it):

  PYTHONPATH=scripts:tests/python tests/eval/test-bench-reaction-floors.py
"""
import argparse
import json
import os
import tempfile

from gpreempt_eval import bench_compare, bench_reaction
from tap import check, finish


def reaction_run(run, p50, p99):
    """One run's figures as bench-reaction --json prints them, those the summary does not judge made up."""
    r = {"run": run, "reaction_p50_us": p50, "reaction_p99_us": p99, "idle_queues": 8, "idle_queues_watched": 8,
         "idle_queues_breakpoint": 8, "steal_percent": 0.0, "realtime_demotions": 0, "reaction_events": 300,
         "during_resume_events": 0, "busy_cpu_percent": 1.0, "requests": 300, "suspensions": 300,
         "deferred_suspensions": 0}
    for k in ("to_server", "wakeup_to_ioctl", "outside_resume"):
        r[f"{k}_p50_us"], r[f"{k}_p99_us"] = p50, p99
    return r


floors = {"wakeup": {0: {"wakeup_p50_us": 5.0, "wakeup_p99_us": 20.0},
                     1: {"wakeup_p50_us": 6.0, "wakeup_p99_us": 30.0},
                     2: {"wakeup_p50_us": 7.0, "wakeup_p99_us": 40.0}},
          "trap": {0: {"trap_p50_us": 30.0, "trap_p99_us": 50.0},
                   1: {"trap_p50_us": 32.0, "trap_p99_us": 60.0}},  # run 2 without a trap floor (it failed)
          "poll": {0: {"poll_p50_us": 40.0, "poll_p99_us": 50.0},
                   2: {"poll_p50_us": 45.0, "poll_p99_us": 40.0}},  # run 1 without a poll floor
          "store": []}
runs = [reaction_run(0, 40.0, 100.0), reaction_run(1, 44.0, 90.0), reaction_run(2, 50.0, 80.0)]
args = argparse.Namespace(seconds=60)
auto = bench_reaction.case_summary("reaction", "small", "auto", "none", 100, runs, floors, args)
poll = bench_reaction.case_summary("reaction", "small", "poll", "none", 100, runs, floors, args)

check("eventfd floor: p99 ratio run by run, median of 5.0, 3.0, 2.0",
      auto["p99_over_floor"] == {"median": 3.0, "min": 2.0, "max": 5.0, "runs": 3}, auto.get("p99_over_floor"))
check("eventfd floor: p50 difference run by run, median of 35, 38, 43",
      auto["p50_above_floor"] == {"median": 38.0, "min": 35.0, "max": 43.0, "runs": 3}, auto.get("p50_above_floor"))
check("trap floor: p99 ratio over the runs that have one, median of 2.0, 1.5",
      auto["p99_over_trap_floor"] == {"median": 1.75, "min": 1.5, "max": 2.0, "runs": 2},
      auto.get("p99_over_trap_floor"))
check("trap floor: p50 difference over the runs that have one, median of 10, 12",
      auto["p50_above_trap_floor"] == {"median": 11.0, "min": 10.0, "max": 12.0, "runs": 2},
      auto.get("p50_above_trap_floor"))
check("poll-only: judged against the eventfd floor, not the trap floor",
      "p99_over_floor" in poll and "p99_over_trap_floor" not in poll and "p50_above_trap_floor" not in poll)
check("poll floor: p99 ratio over the runs that have one, median of 2.0, 2.0",
      poll.get("p99_over_poll_floor") == {"median": 2.0, "min": 2.0, "max": 2.0, "runs": 2},
      poll.get("p99_over_poll_floor"))
check("poll floor: no p50 figure (a store lands anywhere in a wait)", "p50_above_poll_floor" not in poll)
check("breakpoints: no poll floor", "p99_over_poll_floor" not in auto)

summary = {"cases": [auto, poll]}
floors_and_lines = bench_reaction.above_own_floor_lines(summary)
check("one line above its own floor per case, with the floor",
      [floor for floor, _ in floors_and_lines] == ["trap", "poll"], floors_and_lines)
lines = [line for _, line in floors_and_lines]
check("one line above its own floor per case", len(lines) == 2 and lines[0].startswith("small auto: ")
      and lines[1].startswith("small poll: ") and "p99 / poll floor p99 2.00x (2.00-2.00)" in lines[1], lines)
check("the line gives both figures with their spread",
      "p50 - trap floor p50 11.0 us (10.0-12.0)" in lines[0] and "p99 / trap floor p99 1.75x (1.50-2.00)" in lines[0],
      lines)
check("the issue's verdicts stay against the eventfd floor",
      [v for v in bench_reaction.verdicts(summary, "reaction", argparse.Namespace(daemon_setting=[]))
       if "floor" in v] == ["small auto: p99 / floor p99 3.00x (2.00-5.00), target <= 1.2x: MISSED",
                            "small auto: p50 - floor p50 38.0 us (35.0-43.0), target <= 5 us: MISSED"])

with tempfile.TemporaryDirectory() as tmp:
    report = os.path.join(tmp, "a-reaction-1.json")
    with open(report, "w") as f:
        json.dump({"mode": "reaction", **summary}, f)
    collected = bench_compare.collect([report])
check("bench-compare: the trap floor's rows for the breakpoint case",
      collected.get(("small", "auto", "p99_over_trap_floor")) == [1.75]
      and collected.get(("small", "auto", "p50_above_trap_floor")) == [11.0], collected)
check("bench-compare: none for the poll-only case, which has the poll floor's",
      ("small", "poll", "p99_over_trap_floor") not in collected and ("small", "poll", "p99_over_floor") in collected
      and collected.get(("small", "poll", "p99_over_poll_floor")) == [2.0])

finish()
