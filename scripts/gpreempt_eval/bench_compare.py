# SPDX-License-Identifier: MIT
"""Summarises bench-reaction --json rounds of two builds side by side
(scripts/bench-compare runs them): each figure's median (min-max) over the
rounds, per case, detector mode and build.

  python3 -m gpreempt_eval.bench_compare --label A a-*.json --label B b-*.json
"""
import argparse
import json
import statistics
import sys

# (key in a case, what the row says)
FIGURES = [
    ("reaction_p50", "reaction p50 us"),
    ("reaction_p99", "reaction p99 us"),
    ("p99_over_floor", "p99 / floor p99"),
    ("p50_above_floor", "p50 - floor p50 us"),
    ("p99_over_trap_floor", "p99 / trap floor p99"),
    ("p50_above_trap_floor", "p50 - trap floor p50 us"),
    ("p99_over_poll_floor", "p99 / poll floor p99"),
    ("wakeup_to_ioctl_p99", "wakeup->ioctl p99 us"),
    ("busy_cpu_percent", "CPU % serving"),
    ("cpu_percent", "CPU % idle"),
    ("suspensions_per_request", "suspensions/request"),
    ("deferred_suspensions", "on the policy's clock"),
    ("steal_percent", "steal %"),
]


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="bench-compare")
    parser.add_argument("--label", nargs="+", action="append", required=True,
                        metavar=("LABEL", "JSON"),
                        help="a build's label and its bench-reaction --json files")
    args = parser.parse_args(argv)
    if len(args.label) != 2 or any(len(group) < 2 for group in args.label):
        parser.error("give two --label LABEL FILE... groups")
    return args


def collect(files):
    """{(case, detector, figure): [median of each round]}; serve mode's case names carry the rate"""
    values = {}
    for path in files:
        with open(path) as f:
            report = json.load(f)
        for case in report.get("cases", []):
            for key, _ in FIGURES:
                figure = case.get(key)
                if isinstance(figure, dict) and figure.get("median") is not None:
                    # steal is reported by both modes: keep each mode's apart
                    mode = report.get("mode")
                    figure_key = key if key not in ("steal_percent", "busy_cpu_percent") else f"{key}:{mode}"
                    name = case["case"] if mode != "serve" else f"{case['case']}@{case['rate']:g}/s"
                    where = (name, case.get("detector", "-"), figure_key)
                    values.setdefault(where, []).append(figure["median"])
    return values


def spread(samples):
    if not samples:
        return "-"
    return f"{statistics.median(samples):.1f} ({min(samples):.1f}-{max(samples):.1f}) n={len(samples)}"


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    (label_a, *files_a), (label_b, *files_b) = args.label
    a, b = collect(files_a), collect(files_b)
    names = dict(FIGURES)
    names.update({f"steal_percent:{mode}": f"steal % ({mode})" for mode in ("reaction", "cpu", "serve")})
    names.update({f"busy_cpu_percent:{mode}": f"CPU % serving ({mode})" for mode in ("reaction", "serve")})
    order = {key: i for i, key in enumerate(names)}
    rows = sorted(set(a) | set(b), key=lambda w: (w[0], w[1], order[w[2]]))
    print(f"A: {label_a}\nB: {label_b}\nmedian (min-max) over the rounds; each round alternates A and B")
    print(f"{'case':10} {'detector':9} {'figure':24} {'A':32} {'B':32}")
    for case, detector, key in rows:
        print(f"{case:10} {detector:9} {names[key]:24} {spread(a.get((case, detector, key), [])):32} "
              f"{spread(b.get((case, detector, key), [])):32}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
