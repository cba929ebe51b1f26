# SPDX-License-Identifier: MIT
"""The demo: the high-load scenario of docs/evaluation.md §1 on kfdemu
(ResNet-18 batch 1 at 20 requests/s beside ResNet-50 batch 1024 training),
first without and then with gpreemptd, printed side by side.

  scripts/demo [--seconds S]
  PYTHONPATH=scripts python3 -P -m gpreempt_eval.demo [--build DIR] [--seconds S]
"""
import argparse
import os
import sys

from . import run_interruptible, runner

SCENARIO = "high-load"


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", default=os.path.join(runner.SOURCE_ROOT, "build"))
    p.add_argument("--seconds", type=float, default=15, help="online service per pass (default: %(default)s)")
    args = p.parse_args()
    build = runner.Build(args.build)
    workloads = runner.load_workloads()
    scenario = next(s for s in workloads["scenarios"] if s["name"] == SCENARIO)
    realtime = runner.can_run_realtime()
    problem = build.daemon_problem()

    print("gpreempt demo: %s, on kfdemu, an emulated AMD GPU node (MI308X model)." % scenario["describes"])
    passes = [("without gpreempt", "baseline")] + ([] if problem else [("with gpreemptd", "gpreempt")])
    rows = []
    for label, variant in passes:
        print("  running %s (%.0f s) ..." % (label, args.seconds), flush=True)
        row = runner.run_pass(build, workloads, scenario, variant, args.seconds, realtime=realtime)
        if row["error"]:
            print("demo: the pass %s failed: %s" % (label, row["error"]), file=sys.stderr)
            return 1
        rows.append((label, row))

    real = scenario["real"]
    print()
    print("%-28s" % "" + "".join("%18s" % label for label, _ in rows) + "%18s" % "real MI308X")
    for name, key, real_value in (("online latency P50 (ms)", "online_p50_ms", real.get("online_p50_ms")),
                                  ("online latency P95 (ms)", "online_p95_ms", scenario["also_real"]["online_p95_ms"]),
                                  ("online latency P99 (ms)", "online_p99_ms", real.get("online_p99_ms")),
                                  ("online latency max (ms)", "online_max_ms", scenario["also_real"]["online_max_ms"]),
                                  ("offline training (it/s)", "offline_it_s", real.get("offline_it_s"))):
        print("%-28s" % name + "".join("%18.2f" % row[key] for _, row in rows) + "%18.2f" % real_value)
    if len(rows) > 1:
        gp = rows[1][1]
        print("%-28s%18s%18d" % ("suspend/resume transitions", "-", gp["transitions"]))
        print("%-28s%18s%17.1f%%" % ("offline time suspended", "-", 100 * gp["suspended_share"]))
    print()
    print("These numbers are simulated: kfdemu's GPU time model ran the workload models of "
          "scripts/gpreempt_eval/workloads.json (calibrated against the real MI308X column without gpreempt); "
          "no GPU was used. Latencies are model time (the emulated GPU's timestamps). "
          "'real MI308X' was measured without gpreempt.")
    if problem:
        print("The pass with gpreempt did not run: it needs gpreemptd (%s)." % problem)
    else:
        print("With gpreemptd the offline job keeps %.0f%% of its throughput while the online P99 goes from "
              "%.1f ms to %.1f ms." % (100 * rows[1][1]["offline_it_s"] / rows[0][1]["offline_it_s"],
                                       rows[0][1]["online_p99_ms"], rows[1][1]["online_p99_ms"]))
    print("scripts/evaluate runs every scenario, checks the calibration and the targets, and draws the plots.")
    return 0


if __name__ == "__main__":
    sys.exit(run_interruptible(main))
