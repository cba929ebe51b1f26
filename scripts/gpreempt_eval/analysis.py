# SPDX-License-Identifier: MIT
"""From pass rows to what the evaluation reports: medians and spreads over
runs, the calibration error against the real node, and the targets of
docs/evaluation.md §2."""
import os
import statistics

from . import request_log

CALIBRATION_TOLERANCE = 0.15
# Targets (docs/evaluation.md §2) for the high-load scenario with gpreemptd.
TARGET_P99_FACTOR = 1.10
TARGET_P99_CAP_MS = 10.0
TARGET_OFFLINE_SHARE = 0.85

METRICS = ["online_p50_ms", "online_p95_ms", "online_p99_ms", "online_max_ms", "online_mean_ms",
           "online_wall_p50_ms", "online_wall_p99_ms", "online_wall_max_ms",
           "online_req_s", "offline_it_s", "transitions_per_s", "suspended_share", "daemon_cpu_share"]


def with_rates(row):
    """Rows of older result files lack the transition rate; derive it."""
    if row.get("transitions") not in (None, "") and row.get("transitions_per_s") in (None, ""):
        row = dict(row, transitions_per_s=float(row["transitions"]) / float(row["duration_s"]))
    return row


def summarize(values):
    """Median and spread (min, max) of the runs' values; None when no run has one."""
    vals = [v for v in values if v is not None and v != ""]
    if not vals:
        return None
    return {"median": statistics.median(vals), "min": min(vals), "max": max(vals), "runs": len(vals)}


def group(rows, **match):
    """The passes that succeeded and match; the daemon's default policy
    unless another is asked for, so the policy sweep stays apart."""
    match.setdefault("policy", "default")
    return [r for r in rows if all(r.get(k) == v for k, v in match.items()) and not r.get("error")]


def summary_of(rows, **match):
    chosen = group(rows, **match)
    return {m: summarize([r.get(m) for r in chosen]) for m in METRICS}


def relative_error(model, real):
    """Error of `model` against a real value or a [low, high] range (0 inside it)."""
    if isinstance(real, list):
        low, high = real
        if low <= model <= high:
            return 0.0
        nearest = low if model < low else high
        return (model - nearest) / nearest
    return (model - real) / real


def calibration(rows, workloads):
    """One entry per calibrated metric of every scenario run without gpreempt."""
    out = []
    for sc in workloads["scenarios"]:
        s = summary_of(rows, scenario=sc["name"], variant="baseline")
        for metric, real in sc["real"].items():
            m = s.get(metric)
            if m is None:
                continue
            err = relative_error(m["median"], real)
            out.append({"scenario": sc["name"], "metric": metric, "real": real, "model_median": m["median"],
                        "model_min": m["min"], "model_max": m["max"], "runs": m["runs"], "error": err,
                        "ok": abs(err) <= CALIBRATION_TOLERANCE})
        for metric, info in sc.get("not_reproduced", {}).items():
            if metric == "why":
                continue
            m = s.get(metric)
            if m is None:
                continue
            out.append({"scenario": sc["name"], "metric": metric, "real": info,
                        "model_median": m["median"], "model_min": m["min"], "model_max": m["max"], "runs": m["runs"],
                        "error": None, "ok": None, "why": sc["not_reproduced"]["why"]})
    return out


def online_alone_p99(rows, scenario):
    """P99 of the scenario's online service alone, measured in the same run."""
    alone = {"high-load": "alone", "high-load-b256": "alone", "standard": "alone", "matmul": "matmul-alone"}
    s = summary_of(rows, scenario=alone.get(scenario, scenario), variant="baseline")["online_p99_ms"]
    return s["median"] if s else None


def targets(rows, scenario, preempt_total_us, variant_rows=None):
    """The targets of docs/evaluation.md §2 for one scenario with gpreemptd at one preemption cost."""
    with_gp = summary_of(variant_rows or rows, scenario=scenario, variant="gpreempt",
                         preempt_total_us=preempt_total_us)
    base = summary_of(rows, scenario=scenario, variant="baseline")
    alone_p99 = online_alone_p99(rows, scenario)
    if not with_gp["online_p99_ms"] or not base["offline_it_s"] or alone_p99 is None:
        return None
    bound = min(TARGET_P99_FACTOR * alone_p99 + preempt_total_us / 1000.0, TARGET_P99_CAP_MS)
    p99 = with_gp["online_p99_ms"]["median"]
    share = with_gp["offline_it_s"]["median"] / base["offline_it_s"]["median"]
    return {"scenario": scenario, "preempt_total_us": preempt_total_us, "alone_p99_ms": alone_p99,
            "p99_bound_ms": bound, "p99_ms": p99, "p99_ok": p99 <= bound,
            "p99_cap_ok": p99 <= TARGET_P99_CAP_MS,
            "offline_share": share, "offline_ok": share >= TARGET_OFFLINE_SHARE}


def requests_of(rows, requests_dir, **match):
    """The per-request records (request_log.read) of the matching passes,
    pooled over runs; passes without a log contribute none."""
    out = []
    for r in group(rows, **match):
        if r.get("request_log"):
            out += request_log.read(os.path.join(requests_dir, r["request_log"]),
                                    r.get("daemon_log") and os.path.join(requests_dir, r["daemon_log"]))
    return out


def ms(requests, column):
    return [q[column] / 1e6 for q in requests]


def tail_breakdown(requests, modelled_ns, share=0.01):
    """Where the time of the slowest `share` of requests goes, against the
    median request: {"parts": [(label, median over all, median over the
    tail)]} in ms. `modelled_ns` is what the model itself charges every
    request (its kernels' alone time plus the preemption cost); the rest
    is the emulated host, gpreemptd's detection and the ioctl's way to the
    emulated GPU."""
    if not requests:
        return None
    ranked = sorted(requests, key=lambda q: q["model_latency_ns"])
    tail = ranked[-max(1, round(share * len(ranked))):]
    parts = [("latency (model time)", lambda q: q["model_latency_ns"]),
             ("scheduled -> first kernel published (emulated host)", lambda q: q["submitted_after_ns"])]
    if any(q.get("suspend_issued_after_ns") is not None for q in ranked):
        parts += [("published -> gpreemptd issues the suspend (detection)",
                   lambda q: q["suspend_issued_after_ns"] - q["submitted_after_ns"]),
                  ("suspend issued -> preemption starts on the GPU (emulated ioctl path and waits)",
                   lambda q: q["model_latency_ns"] - q["suspend_issued_after_ns"] - modelled_ns)]
    else:
        parts.append(("published -> GPU done, beyond the modelled time", lambda q: q["model_latency_ns"]
                      - q["submitted_after_ns"] - modelled_ns))
    parts += [("modelled: preemption and kernels alone", lambda q: modelled_ns),
              ("latency (wall clock)", lambda q: q["wall_latency_ns"])]
    return {"requests": len(ranked), "tail_requests": len(tail),
            "parts": [(label, median_ms(ranked, f), median_ms(tail, f)) for label, f in parts]}


def median_ms(requests, part):
    """Median of part(q) in ms over the requests that have it (a request
    gpreemptd never suspended for has no detection)."""
    values = []
    for q in requests:
        try:
            values.append(part(q))
        except TypeError:
            continue
    return statistics.median(values) / 1e6 if values else None
