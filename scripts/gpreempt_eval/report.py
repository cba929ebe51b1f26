# SPDX-License-Identifier: MIT
"""Writes an evaluation's results: every pass (CSV and JSON), the calibration
and targets (CSV), a summary (JSON), the plots, and report.md whose tables
docs/evaluation.md quotes."""
import csv
import datetime
import json
import os

from . import analysis
from . import plots
from . import runner

# Where the online services' per-request logs go, under the results directory.
REQUESTS_DIR = "requests"
DEFAULT_POLICY_TEXT = "default: hold-off {hold_off_ms} ms, max suspend {max_suspend_ms} ms, share {min_share_percent}%".format(
    **runner.DEFAULT_POLICY)
REAL_NOTE = ("Measured on a real AMD GPU node with scripts/real-node/timed-kernels, which plays the "
             "workload models of scripts/gpreempt_eval/workloads.json; the preemption cost is the hardware's.")
SIMULATED_NOTE = ("All numbers are simulated: kfdemu's GPU time model (an emulated MI308X, "
                  "tests/kfdemu/gpu/) runs the workload models of scripts/gpreempt_eval/workloads.json; "
                  "no GPU was used.")


def write_csv(path, rows):
    keys = []
    for r in rows:
        keys += [k for k in r if k not in keys]
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        w.writerows(rows)


def fmt(v, digits=2):
    if v is None:
        return "-"
    if isinstance(v, list):
        return "%s-%s" % (fmt(v[0], digits), fmt(v[1], digits))
    if isinstance(v, dict):
        return fmt(v["median"], digits) + ("" if v["runs"] < 2 else " (%s-%s)" % (fmt(v["min"], digits),
                                                                                  fmt(v["max"], digits)))
    return ("%%.%df" % digits) % v


def calibration_table(cal):
    lines = ["| scenario | metric | real node | kfdemu median (min-max) | runs | error |",
             "|---|---|---|---|---|---|"]
    for c in cal:
        model = fmt({"median": c["model_median"], "min": c["model_min"], "max": c["model_max"],
                     "runs": c["runs"]}) if c["model_median"] is not None else "-"
        if c["ok"] is None:
            err = "not reproduced: " + c["why"]
        else:
            err = "%+.1f%%%s" % (100 * c["error"], "" if c["ok"] else " **MISS**")
        lines.append("| %s | %s | %s | %s | %d | %s |" % (c["scenario"], c["metric"], fmt(c["real"]), model, c["runs"], err))
    return "\n".join(lines)


def scenario_table(rows, workloads, cost):
    lines = ["| scenario | variant | online P50 | P95 | P99 | max (ms) | P99 wall clock (ms) | offline it/s "
             "| transitions/s | offline suspended |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for sc in workloads["scenarios"]:
        for variant in ("baseline", "gpreempt"):
            s = analysis.summary_of(rows, scenario=sc["name"], variant=variant, preempt_total_us=cost)
            if not any(s.values()):
                continue
            share = s["suspended_share"]
            lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                sc["name"], "without gpreempt" if variant == "baseline" else "with gpreemptd",
                fmt(s["online_p50_ms"]), fmt(s["online_p95_ms"]), fmt(s["online_p99_ms"]),
                fmt(s["online_max_ms"]), fmt(s["online_wall_p99_ms"]), fmt(s["offline_it_s"], 3), fmt(s["transitions_per_s"], 1),
                "-" if not share else "%.1f%%" % (100 * share["median"])))
    return "\n".join(lines)


def targets_table(tgts):
    lines = ["| scenario | preemption cost (us) | online P99 (ms) | bound (ms) | offline vs baseline | verdict |",
             "|---|---|---|---|---|---|"]
    for t in tgts:
        verdict = "met" if t["p99_ok"] and t["offline_ok"] else "**missed** (%s)" % ", ".join(
            w for w, ok in (("P99", t["p99_ok"]), ("offline", t["offline_ok"])) if not ok)
        lines.append("| %s | %d | %.2f | %.2f | %.1f%% | %s |" % (t["scenario"], t["preempt_total_us"], t["p99_ms"],
                                                                 t["p99_bound_ms"], 100 * t["offline_share"], verdict))
    return "\n".join(lines)


def policy_table(rows, cost):
    labels = []
    for r in rows:
        if r["variant"] == "gpreempt" and r["scenario"] == "high-load" and r["policy"] not in labels:
            labels.append(r["policy"])
    base = analysis.summary_of(rows, scenario="high-load", variant="baseline")["offline_it_s"]
    lines = ["| daemon policy | online P50 | P99 | max (ms) | offline vs baseline | transitions/s | offline suspended |",
             "|---|---|---|---|---|---|---|"]
    for label in labels:
        s = analysis.summary_of(rows, scenario="high-load", variant="gpreempt", policy=label, preempt_total_us=cost)
        if not s["online_p99_ms"] or not base:
            continue
        lines.append("| %s | %s | %s | %s | %.1f%% | %s | %.1f%% |" % (
            DEFAULT_POLICY_TEXT if label == "default" else label, fmt(s["online_p50_ms"]), fmt(s["online_p99_ms"]), fmt(s["online_max_ms"]),
            100 * s["offline_it_s"]["median"] / base["median"], fmt(s["transitions_per_s"], 1),
            100 * s["suspended_share"]["median"]))
    return "\n".join(lines)


def request_log_path(out, index, scenario, variant):
    """Where pass number `index` keeps its online service's per-request log
    (the directory is created)."""
    os.makedirs(os.path.join(out, REQUESTS_DIR), exist_ok=True)
    return os.path.join(out, REQUESTS_DIR, "%03d-%s-%s.txt" % (index, scenario, variant))


def latency_figure(rows, workloads, requests_dir, scenario, alone, cost, emulated, runs, path):
    """The per-request latency CDFs of a scenario: online alone, beside the
    offline job without and with gpreemptd (model time), and with gpreemptd
    on the wall clock for comparison. False when no pass logged requests."""
    def of(name, variant):
        return analysis.requests_of(rows, requests_dir, scenario=name, variant=variant, preempt_total_us=cost)

    with_gp = of(scenario, "gpreempt")
    series = [("online alone", analysis.ms(of(alone, "baseline"), "model_latency_ns"), "tab:green", "-"),
              ("beside offline, without gpreempt", analysis.ms(of(scenario, "baseline"), "model_latency_ns"),
               "tab:red", "-"),
              ("beside offline, with gpreemptd", analysis.ms(with_gp, "model_latency_ns"), "tab:blue", "-"),
              ("with gpreemptd, wall clock", analysis.ms(with_gp, "wall_latency_ns"), "tab:blue", ":")]
    if not any(values for _, values, _, _ in series):
        return False
    sc = next(s for s in workloads["scenarios"] if s["name"] == scenario)
    clock = "model time (GPU timestamps)" if emulated else "wall clock"
    plots.latency_cdf(series, "%s: online latency per request, %s, %s; %d run(s) pooled" % (
        scenario, plots.SIMULATED if emulated else plots.REAL, clock, runs), path,
        real=dict(sc["real"], **sc.get("also_real", {})))
    return True


def tail_table(t):
    lines = ["Median over all %d requests and over the slowest %d (the P99 tail), in ms, from the "
             "online service's per-request log and gpreemptd's suspend stamps (both CLOCK_MONOTONIC)."
             % (t["requests"], t["tail_requests"]), "",
             "| part of the request | all (median) | slowest 1% (median) |", "|---|---|---|"]
    lines += ["| %s | %s | %s |" % (label, fmt(every, 3), fmt(slowest, 3)) for label, every, slowest in t["parts"]]
    return "\n".join(lines)


def read_passes(out):
    """The passes an earlier evaluation wrote to `out`."""
    with open(os.path.join(out, "passes.json")) as f:
        return [analysis.with_rates(r) for r in json.load(f)]


def write_all(out, rows, workloads, plan, realtime, daemon_problem, emulated=True):
    """Everything an evaluation writes; `emulated` False for a real node."""
    cost = runner.preempt_total_us(runner.DEFAULT_PREEMPT) if emulated else 0
    note = SIMULATED_NOTE if emulated else REAL_NOTE
    write_csv(os.path.join(out, "passes.csv"), rows)
    with open(os.path.join(out, "passes.json"), "w") as f:
        json.dump(rows, f, indent=1)
    cal = analysis.calibration(rows, workloads)
    write_csv(os.path.join(out, "calibration.csv"),
              [dict(c, real=json.dumps(c["real"])) for c in cal])

    tgts = []
    costs = sorted({r["preempt_total_us"] for r in rows if r["variant"] == "gpreempt"})
    for sc in workloads["scenarios"]:
        for swept in costs:
            t = analysis.targets(rows, sc["name"], swept)
            if t:
                tgts.append(t)
    if tgts:
        write_csv(os.path.join(out, "targets.csv"), tgts)
    # The checks: every calibrated metric within tolerance; the targets at
    # the calibrated preemption cost (the sweep explores, it does not judge).
    checked = [t for t in tgts if t["preempt_total_us"] == cost]
    calibration_ok = all(c["ok"] is not False for c in cal) and bool(cal)
    targets_ok = None if not checked else all(t["p99_ok"] and t["offline_ok"] for t in checked)
    # What CI gates (scripts/evaluate --gate ci): the 10 ms cap and the
    # offline share. The 1.10 x alone + cost bound is still computed and
    # reported, not gated: it is met with 0.04-0.2 ms to spare, and most
    # of what decides it is the emulated ioctl path's host time, so a
    # loaded host can tip a single quick run over it (docs/evaluation.md).
    ci_targets_ok = None if not checked else all(t["p99_cap_ok"] and t["offline_ok"] for t in checked)

    requests_dir = os.path.join(out, REQUESTS_DIR)
    figures = []
    for scenario, alone in (("high-load", "alone"), ("matmul", "matmul-alone")):
        name = "latency-cdf-%s.png" % scenario
        if latency_figure(rows, workloads, requests_dir, scenario, alone, cost, emulated, runs=plan["runs"],
                          path=os.path.join(out, name)):
            figures.append(name)
    tails = []
    for sc in workloads["scenarios"]:
        if sc.get("gpreempt"):
            online = workloads["workloads"][sc["online"]]
            modelled_ns = 1000 * (cost + online["kernels_per_request"] * online["kernel_us"])
            tails.append((sc["name"], analysis.tail_breakdown(analysis.requests_of(
                rows, requests_dir, scenario=sc["name"], variant="gpreempt", preempt_total_us=cost), modelled_ns)))
    if len(costs) > 1 and plots.preempt_sweep(rows, "high-load", costs, os.path.join(out, "preempt-sweep.png")):
        figures.append("preempt-sweep.png")

    runs = plan["runs"]
    text = "\n\n".join(filter(None, [
        "# gpreempt evaluation %s\n\n%s Median of %d run(s) per scenario, spread min-max; passes "
        "interleaved without/with gpreemptd; %s; passes run at commit %s; report written %s." % (
            "on kfdemu" if emulated else "on a real AMD GPU node", note, runs, "applications and emulator at SCHED_FIFO" if realtime
            else "normal scheduling priority (host noise included)",
            ", ".join(sorted({r.get("commit", "unknown") for r in rows})),
            datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")),
        ("## Calibration: the baseline (without gpreempt) against the real MI308X node" if emulated else "## The workload programs (without gpreempt) against the MI308X measurements") + "\n\n"
        + calibration_table(cal),
        "## Scenarios\n\n" + scenario_table(rows, workloads, cost),
        ("## With gpreemptd\n\n**The passes with gpreemptd did not run: %s.**" % daemon_problem) if daemon_problem
        else "## Targets of docs/evaluation.md §2 (with gpreemptd)\n\n" + (targets_table(tgts) if tgts else "none run"),
        "\n\n".join("## The tail with gpreemptd: %s\n\n%s" % (name, tail_table(t)) for name, t in tails if t),
        ("## Daemon policy sweep (high-load)\n\n" + policy_table(rows, cost))
        if any(r["policy"] != "default" for r in rows) else "",
        "Figures: " + ", ".join(figures) if figures else "",
    ]))
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write(text + "\n")
    summary = {"note": note, "runs": runs, "realtime": realtime, "gpreemptd_problem": daemon_problem,
               "model": {"workgroup_slots": 640, "preemption_us": runner.DEFAULT_PREEMPT,
                         "source": "tests/kfdemu/gpu/config-default.c"},
               "workloads": workloads["workloads"], "calibration": cal, "targets": tgts,
               "calibration_ok": calibration_ok, "targets_ok": targets_ok,
               "ci_targets_ok": ci_targets_ok, "figures": figures, "tails": dict(tails)}
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    return {"text": text, "calibration_ok": calibration_ok, "targets_ok": targets_ok,
            "ci_targets_ok": ci_targets_ok}
