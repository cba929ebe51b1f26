# SPDX-License-Identifier: MIT
"""Evaluate gpreempt on kfdemu: the real node's scenarios without gpreempt
(calibration), with gpreemptd, and sweeps of the preemption cost and of the
daemon's bounds. docs/evaluation.md explains what is measured and how.

  scripts/evaluate [--quick | --full] [--out DIR] [--build DIR] [--runs N] [--only SCENARIO]...
                   [--node-config KEY=VALUE]... [--online-host-wait-us US]
  scripts/evaluate --report-only --out DIR

--quick (the default) runs every scenario once, briefly, and checks the
calibration and the targets; --full repeats the scenarios (interleaved) and
adds the sweeps. Exit status: 0 all checks passed, 1 a check missed or a pass
failed, 2 bad usage or missing build.

scripts/evaluate runs this module: python3 -m gpreempt_eval.evaluate.
"""
import argparse
import os
import sys
import time

from . import report, run_interruptible
from . import runner

# Seconds of online service per pass. The high-load scenario has an offline
# iteration of ~0.5 s, so its passes are the longest; the alone scenario's
# P99 is the reference of the targets, so it gets enough requests that a
# few host hiccups cannot move it. Beside batch 256 the latencies are
# spread thinly around their median (a third of the requests wait for no
# round, the rest for anything up to 14 ms), so a few requests more or
# less below 5 ms moved the P50 of an 8 s pass from 6.1 to 4.8 ms (1 quick
# run in 13): its passes get 600 requests.
# The standard scenario's 8 s gave 80 requests, so a single request the
# host held up made a pass be repeated (runner.host_disturbed_too_much):
# 20 s gives 200, as in --full.
#
# retry_budget_s: what repeating the passes the host disturbed may add to
# the whole evaluation (runner.RetryBudget); the quick one stays within
# the test suite's 30 minute limit for it.
QUICK = {"runs": 1, "seconds": {"alone": 20, "standard": 20, "high-load": 15, "high-load-b256": 30,
                                 "matmul-alone": 6, "matmul-offline-alone": 5, "matmul": 8},
         "preempt_sweep_us": [], "policy_sweep": [], "retry_budget_s": 900}
FULL = {"runs": 3, "seconds": {"alone": 20, "standard": 20, "high-load": 45, "high-load-b256": 30,
                                "matmul-alone": 15, "matmul-offline-alone": 15, "matmul": 30},
        "preempt_sweep_us": [50, 200, 1000, 2000, 5000, 10000], "retry_budget_s": 3600,
        "policy_sweep": [
            {"label": "hold-off 1 ms", "hold_off_ms": 1},
            {"label": "hold-off 5 ms", "hold_off_ms": 5},
            {"label": "hold-off 10 ms", "hold_off_ms": 10},
            {"label": "max suspend 20 ms, share 10%", "max_suspend_ms": 20},
            {"label": "max suspend 500 ms, share 50%", "min_share_percent": 50},
        ]}
SWEEP_SCENARIO = "high-load"
SWEEP_SECONDS = 20


def parse_args():
    p = argparse.ArgumentParser(prog="evaluate", description="Evaluate gpreempt on kfdemu (simulated GPU).")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--quick", dest="mode", action="store_const", const="quick", help="CI: each scenario once")
    mode.add_argument("--full", dest="mode", action="store_const", const="full", help="repeats and sweeps")
    p.add_argument("--out", default="evaluation-results", help="where results go (default: %(default)s)")
    p.add_argument("--build", default=os.path.join(runner.SOURCE_ROOT, "build"),
                   help="the meson build directory (default: %(default)s)")
    p.add_argument("--runs", type=int, help="repeat each scenario this many times")
    p.add_argument("--only", action="append", help="run only this scenario (repeatable)")
    p.add_argument("--node-config", action="append", default=[], metavar="KEY=VALUE",
                   help="a [GPU0] key of kfdemu-run(1) for every pass, e.g. ReadIndexAdvance=dispatch "
                        "(repeatable; the preemption-cost sweep keeps PreemptCostModel=constant)")
    p.add_argument("--online-host-wait-us", type=float, default=0, metavar="US",
                   help="end each online request with a barrier-AND the host releases US microseconds after "
                        "its kernels are done (kfdemu-app --host-wait-us), as a HIP stream waiting on a host "
                        "callback does: the online queue then looks busy to gpreemptd while the GPU is idle")
    p.add_argument("--gate", choices=("all", "ci"), default="all",
                   help="what decides the exit status: all = calibration and every target of "
                        "docs/evaluation.md §2; ci = calibration, online P99 <= 10 ms and offline >= 85%% "
                        "(the 1.10 x bound is still reported)")
    p.add_argument("--report-only", action="store_true",
                   help="run nothing: rewrite the tables and plots from OUT/passes.json")
    args = p.parse_args()
    args.mode = args.mode or "quick"
    if args.online_host_wait_us < 0:
        p.error("--online-host-wait-us %g: give a time in microseconds, 0 or more" % args.online_host_wait_us)
    for key in args.node_config:
        if "=" not in key or "\n" in key or key.startswith("["):
            p.error("--node-config %r: expected KEY=VALUE, a key of kfdemu-run(1)'s [GPUn] sections" % key)
    return args


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def describe(row):
    if row["error"]:
        return "FAILED: " + row["error"]
    parts = []
    if row.get("online_p99_ms") is not None:
        parts.append("online P50 %.2f P99 %.2f max %.2f ms" % (row["online_p50_ms"], row["online_p99_ms"],
                                                                 row["online_max_ms"]))
    if row.get("offline_it_s") is not None:
        parts.append("offline %.3f it/s" % row["offline_it_s"])
    if row.get("transitions") is not None:
        parts.append("%d transitions, suspended %.0f%%" % (row["transitions"], 100 * row["suspended_share"]))
    if row.get("daemon_cpu_share") is not None:
        parts.append("gpreemptd CPU %.1f%%" % (100 * row["daemon_cpu_share"]))
    return ", ".join(parts)


def checks_ok(results, gate):
    targets = results["targets_ok"] if gate == "all" else results["ci_targets_ok"]
    return bool(results["calibration_ok"]) and targets is not False


def main():
    args = parse_args()
    plan = dict(QUICK if args.mode == "quick" else FULL)
    if args.runs:
        plan["runs"] = args.runs
    build = runner.Build(args.build)
    workloads = runner.load_workloads()
    if args.online_host_wait_us:
        for sc in workloads["scenarios"]:
            if sc["online"]:
                workloads["workloads"][sc["online"]]["host_wait_us"] = args.online_host_wait_us
    scenarios = [s for s in workloads["scenarios"] if not args.only or s["name"] in args.only]
    realtime = runner.can_run_realtime()
    daemon_problem = build.daemon_problem()
    os.makedirs(args.out, exist_ok=True)
    if args.report_only:
        rows = report.read_passes(args.out)
        plan["runs"] = max(r["run"] for r in rows) + 1
        results = report.write_all(args.out, rows, workloads, plan, realtime, daemon_problem)
        print(results["text"])
        return 0 if not any(r["error"] for r in rows) and checks_ok(results, args.gate) else 1
    log("evaluate: %s mode, %d run(s); every number is simulated on kfdemu (emulated MI308X)" % (args.mode, plan["runs"]))
    if not realtime:
        log("evaluate: not allowed to use SCHED_FIFO: host scheduling noise will add to the latencies")
    if daemon_problem:
        log("evaluate: the passes with gpreemptd do NOT run: " + daemon_problem)

    rows = []
    budget = runner.RetryBudget(plan["retry_budget_s"])

    def run(scenario, variant, seconds, **kw):
        t = time.monotonic()
        kw.setdefault("node_keys", tuple(args.node_config))
        row = runner.run_pass(build, workloads, scenario, variant, seconds, realtime=realtime,
                              log_copy=report.request_log_path(args.out, len(rows), scenario["name"], variant),
                              budget=budget, **kw)
        row["run"] = run_index
        rows.append(row)
        log("  %-22s %-9s %-28s %s (%.0f s)" % (scenario["name"], variant, row["policy"], describe(row),
                                                time.monotonic() - t))

    for run_index in range(plan["runs"]):
        log("run %d of %d" % (run_index + 1, plan["runs"]))
        for sc in scenarios:
            variants = ["baseline"] + (["gpreempt"] if sc.get("gpreempt") and not daemon_problem else [])
            # Interleaved, and in alternating order, so drift of the host
            # between passes falls on both variants alike.
            if run_index % 2:
                variants.reverse()
            for v in variants:
                run(sc, v, plan["seconds"][sc["name"]])
        sweep_sc = next((s for s in scenarios if s["name"] == SWEEP_SCENARIO), None)
        if sweep_sc and not daemon_problem:
            for cost in plan["preempt_sweep_us"]:
                run(sweep_sc, "gpreempt", SWEEP_SECONDS, preempt=runner.preempt_split(cost),
                    node_keys=tuple(args.node_config) + runner.CONSTANT_COST_MODEL)
            for policy in plan["policy_sweep"]:
                run(sweep_sc, "gpreempt", SWEEP_SECONDS, policy=dict(runner.DEFAULT_POLICY, **policy))

    results = report.write_all(args.out, rows, workloads, plan, realtime, daemon_problem)
    print(results["text"])
    failed = [r for r in rows if r["error"]]
    ok = not failed and checks_ok(results, args.gate)
    if args.gate == "ci" and results["targets_ok"] is False:
        log("evaluate: the 1.10 x alone + preemption cost P99 bound is MISSED (reported, not gated by --gate ci)")
    log("evaluate: results in %s; %s" % (args.out, "all checks passed" if ok else "CHECKS MISSED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(run_interruptible(main))
