# SPDX-License-Identifier: MIT
"""How much a stalled host still leaks into the evaluation's latencies.

Runs the high-load scenario without and with gpreemptd, each pass once on a
quiet host and once while a real-time hog takes both cores away at regular
intervals (a stand-in for the hypervisor descheduling this VM), and prints
the online P50/P99/max in model time (GPU timestamps) and on the wall clock.
Passes are interleaved (quiet, stalled, quiet, ...) so the host's drift
falls on both.

  PYTHONPATH=scripts python3 -P -m gpreempt_eval.stall_leak [--build DIR] [--runs N] [--seconds S]
                                                          [--stall-ms MS] [--every-ms MS]
"""
import argparse
import multiprocessing
import os
import statistics
import sys
import time

from . import run_interruptible, runner

HOG_PRIORITY = 50   # above the evaluation's SCHED_FIFO priority (runner.RT_PRIORITY)


def hog(cpu, stall_s, every_s, stop):
    """Takes `cpu` for stall_s every every_s, at a real-time priority the
    evaluation's threads cannot preempt. The hogs of all CPUs keep to the
    same grid of CLOCK_MONOTONIC, so the whole host stalls at once, as a
    descheduled VM does, instead of the threads moving to a free CPU."""
    os.sched_setaffinity(0, {cpu})
    os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(HOG_PRIORITY))
    while not stop.is_set():
        start = (time.monotonic() // every_s + 1) * every_s
        time.sleep(max(0.0, start - time.monotonic()))
        while time.monotonic() < start + stall_s:
            pass


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", default=os.path.join(runner.SOURCE_ROOT, "build"))
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--seconds", type=float, default=15)
    p.add_argument("--stall-ms", type=float, default=30)
    # Not a multiple of the online period (50 ms), so the stalls fall on
    # every phase of the arrivals rather than always on the same one.
    p.add_argument("--every-ms", type=float, default=730)
    args = p.parse_args()
    if not runner.can_run_realtime():
        print("stall_leak: needs SCHED_FIFO (root or CAP_SYS_NICE) for the hog and the passes", file=sys.stderr)
        return 2
    build = runner.Build(args.build)
    workloads = runner.load_workloads()
    scenario = next(s for s in workloads["scenarios"] if s["name"] == "high-load")
    variants = ["baseline"] + ([] if build.daemon_problem() else ["gpreempt"])
    results = {}
    for run in range(args.runs):
        for variant in variants:
            for stalled in (False, True):
                stop = multiprocessing.Event()
                hogs = [multiprocessing.Process(target=hog, args=(cpu, args.stall_ms / 1e3, args.every_ms / 1e3, stop))
                        for cpu in sorted(os.sched_getaffinity(0))] if stalled else []
                for h in hogs:
                    h.start()
                # A stalled pass is kept however many requests the host
                # disturbed: the stalls are the point.
                row = runner.run_pass_once(build, workloads, scenario, variant, args.seconds, None, None, True, None)
                stop.set()
                for h in hogs:
                    h.join()
                if row["error"]:
                    print("stall_leak: %s pass failed: %s" % (variant, row["error"]), file=sys.stderr)
                    return 1
                results.setdefault((variant, stalled), []).append(row)
                print("run %d %-8s %-7s model P99 %.2f max %.2f, wall P99 %.2f max %.2f ms, host probe %.0f ms, %d requests disturbed"
                      % (run + 1, variant, "stalled" if stalled else "quiet", row["online_p99_ms"], row["online_max_ms"],
                         row["online_wall_p99_ms"], row["online_wall_max_ms"], row["host_max_delay_ms"],
                         row["host_disturbed_requests"]), flush=True)
    print("\nhigh-load, %d run(s) of %.0f s, stalls of %.0f ms on both cores every %.0f ms; median (min-max) in ms"
          % (args.runs, args.seconds, args.stall_ms, args.every_ms))
    for (variant, stalled), rows in results.items():
        cells = []
        for key in ("online_p50_ms", "online_p99_ms", "online_max_ms", "online_wall_p99_ms", "online_wall_max_ms"):
            vals = [r[key] for r in rows]
            cells.append("%s %.2f (%.2f-%.2f)" % (key.replace("online_", "").replace("_ms", ""),
                                                    statistics.median(vals), min(vals), max(vals)))
        print("  %-8s %-7s %s" % (variant, "stalled" if stalled else "quiet", ", ".join(cells)))
    return 0


if __name__ == "__main__":
    sys.exit(run_interruptible(main))
