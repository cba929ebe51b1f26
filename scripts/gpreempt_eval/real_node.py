# SPDX-License-Identifier: MIT
"""The evaluation on a real AMD GPU node: the scenarios of
scripts/gpreempt_eval/workloads.json played by timed-kernels (HIP), without
and with gpreemptd, interleaved; the same tables and plots as
scripts/evaluate. Run as root (gpreemptd attaches to the offline job with
ptrace and reads debugfs); nothing else may use the GPU meanwhile.

  scripts/real-node/evaluate [--out DIR] [--gpreemptd PATH] [--runs N]
                             [--seconds S] [--only SCENARIO]... [--realtime]

scripts/real-node/evaluate runs this module: python3 -m gpreempt_eval.real_node.
"""
import argparse
import os
import shutil
import subprocess
import sys

from . import SCRIPTS_DIR, run_interruptible
from . import report
from . import runner

# scripts/real-node: timed-kernels and the script that builds it.
HERE = os.path.join(SCRIPTS_DIR, "real-node")


def main():
    p = argparse.ArgumentParser(prog="evaluate", description="Evaluate gpreempt on a real AMD GPU node.")
    p.add_argument("--out", default="evaluation-real-node")
    p.add_argument("--build", default=os.path.join(runner.SOURCE_ROOT, "build"))
    p.add_argument("--gpreemptd", help="default: the build's, else the one on PATH")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--seconds", type=float, default=60, help="online service per pass (default: %(default)s)")
    p.add_argument("--only", action="append", help="run only this scenario (repeatable)")
    p.add_argument("--realtime", action="store_true", help="run the workloads and the daemon at SCHED_FIFO")
    args = p.parse_args()

    out_bin = os.path.join(args.build, "real-node")
    subprocess.run([os.path.join(HERE, "build"), out_bin], check=True)
    app = os.path.join(out_bin, "timed-kernels")
    if not os.access(app, os.X_OK):
        print("real-node: nothing to run without timed-kernels (see the message above).", file=sys.stderr)
        return 2
    gpreemptd = args.gpreemptd or os.path.join(args.build, "controller/gpreemptd/gpreemptd")
    if not os.access(gpreemptd, os.X_OK):
        gpreemptd = shutil.which("gpreemptd")
    node = runner.RealNode(app, gpreemptd)
    problem = node.daemon_problem()
    if problem:
        print("real-node: the passes with gpreemptd do NOT run: " + problem, file=sys.stderr)

    workloads = runner.load_workloads()
    scenarios = [s for s in workloads["scenarios"] if not args.only or s["name"] in args.only]
    os.makedirs(args.out, exist_ok=True)
    rows = []
    for run_index in range(args.runs):
        for sc in scenarios:
            variants = ["baseline"] + (["gpreempt"] if sc.get("gpreempt") and not problem else [])
            if run_index % 2:
                variants.reverse()
            for v in variants:
                row = runner.run_pass(node, workloads, sc, v, args.seconds, realtime=args.realtime,
                                      log_copy=report.request_log_path(args.out, len(rows), sc["name"], v))
                row["run"] = run_index
                rows.append(row)
                print("  %-22s %-9s %s" % (sc["name"], v, row["error"] or "done"), file=sys.stderr, flush=True)
    results = report.write_all(args.out, rows, workloads, {"runs": args.runs}, args.realtime, problem, emulated=False)
    print(results["text"])
    return 0 if not any(r["error"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(run_interruptible(main))
