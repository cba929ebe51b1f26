# SPDX-License-Identifier: MIT
"""The evaluation's figures, drawn with matplotlib (Debian: python3-matplotlib).
Every title says the numbers are simulated on kfdemu and how many runs the
median is over; error bars are the min-max spread over runs."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)
import matplotlib.ticker  # noqa: E402

from . import analysis  # noqa: E402

SIMULATED = "simulated on kfdemu (emulated MI308X)"
REAL = "measured on a real node"
# The real node's measured percentiles, drawn as markers beside the curves.
REAL_QUANTILES = [("online_p50_ms", 0.50), ("online_p95_ms", 0.95), ("online_p99_ms", 0.99),
                  ("online_max_ms", 1.0)]


def _cdf(values):
    xs = sorted(values)
    return xs, [(i + 1) / len(xs) for i in range(len(xs))]


def latency_cdf(series, title, path, real=None):
    """Per-request online latency CDFs. `series` is a list of (label,
    latencies in ms, color, linestyle), each pooled over runs; `real`
    (metric -> ms) adds the real node's measured percentiles. Left: the
    CDF; right: the tail (1 - CDF on a log scale) where P99 lives."""
    fig, (ax, tail) = plt.subplots(1, 2, figsize=(10.0, 4.2))
    for label, values, color, style in series:
        if not values:
            continue
        xs, ys = _cdf(values)
        ax.step(xs, ys, where="post", color=color, linestyle=style, label="%s (%d requests)" % (label, len(xs)))
        tail.step(xs, [max(1.0 - y, 0.5 / len(xs)) for y in ys], where="post", color=color, linestyle=style)
    points = [(real[m], q) for m, q in REAL_QUANTILES if real and isinstance(real.get(m), (int, float))]
    if points:
        ax.plot([x for x, _ in points], [q for _, q in points], linestyle="none", marker="x", color="black",
                markersize=9, label="real MI308X without gpreempt (P50, P95, P99, max)")
        tail.plot([x for x, q in points if q < 1], [1 - q for _, q in points if q < 1], linestyle="none",
                  marker="x", color="black", markersize=9)
    for a in (ax, tail):
        a.set_xscale("log")
        a.xaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
        a.set_xticks([t for t in (1, 2, 3, 5, 10, 20, 30, 50, 100) if t <= a.get_xlim()[1] * 1.05])
        a.set_xlabel("online request latency (ms, log scale)")
        a.grid(True, which="both", alpha=0.3)
    ax.set_ylabel("fraction of requests at or below")
    tail.set_yscale("log")
    tail.set_ylabel("fraction of requests above (log scale)")
    tail.axhline(0.01, color="tab:gray", linewidth=0.8)
    tail.text(tail.get_xlim()[0], 0.01, " P99", va="bottom", fontsize=8, color="tab:gray")
    ax.legend(fontsize=7, loc="upper left")
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def preempt_sweep(rows, scenario, costs, path):
    """Online P99 and offline throughput (share of baseline) against the
    modelled preemption cost."""
    base = analysis.summary_of(rows, scenario=scenario, variant="baseline")["offline_it_s"]
    alone_p99 = analysis.online_alone_p99(rows, scenario)
    xs, p99, p99_lo, p99_hi, share, bounds, runs = [], [], [], [], [], [], 0
    for cost in costs:
        s = analysis.summary_of(rows, scenario=scenario, variant="gpreempt", preempt_total_us=cost)
        if not s["online_p99_ms"] or not base:
            continue
        runs = max(runs, s["online_p99_ms"]["runs"])
        xs.append(cost)
        p99.append(s["online_p99_ms"]["median"])
        p99_lo.append(s["online_p99_ms"]["median"] - s["online_p99_ms"]["min"])
        p99_hi.append(s["online_p99_ms"]["max"] - s["online_p99_ms"]["median"])
        share.append(100.0 * s["offline_it_s"]["median"] / base["median"])
        if alone_p99 is not None:
            bounds.append(min(analysis.TARGET_P99_FACTOR * alone_p99 + cost / 1000.0, analysis.TARGET_P99_CAP_MS))
    if not xs:
        return False
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(6.4, 6.0), sharex=True)
    a1.errorbar(xs, p99, yerr=[p99_lo, p99_hi], marker="o", color="tab:blue", label="online P99 with gpreemptd")
    if len(bounds) == len(xs):
        a1.plot(xs, bounds, linestyle="--", color="tab:gray", label="target: 1.10 x alone + cost, at most 10 ms")
    a1.set_ylabel("online P99 (ms)")
    a1.legend(fontsize=8)
    a1.grid(True, which="both", alpha=0.3)
    a2.plot(xs, share, marker="o", color="tab:orange", label="offline throughput with gpreemptd")
    a2.axhline(100 * analysis.TARGET_OFFLINE_SHARE, linestyle="--", color="tab:gray", label="target: 85% of baseline")
    a2.set_ylabel("offline throughput\n(% of baseline, same run)")
    a2.set_xscale("log")
    a2.set_xlabel("modelled preemption cost per suspend or resume (us, log scale)")
    a2.legend(fontsize=8)
    a2.grid(True, which="both", alpha=0.3)
    a1.set_title("%s: sweep of the preemption cost, %s,\nmedian of %d run(s), bars: min-max"
                 % (scenario, SIMULATED, runs), fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True
