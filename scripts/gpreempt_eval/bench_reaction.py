# SPDX-License-Identifier: MIT
"""gpreemptd's two key figures on an emulated node (kfdemu), several runs:

  reaction  an online write-index store -> gpreemptd's SUSPEND_QUEUES ioctl
            entering the emulated kernel (kfdemu-run --trace: the preload's
            stamp at ioctl() entry, where a real ioctl is in the kernel);
            p50/p99 over >= 10 000 events per run; target p99 <= 50 us. Also
            shown: up to kfdemu's server receiving the call, which adds the
            emulator's own socket hop
  cpu       the daemon's CPU (/proc/<pid>/stat) while it watches idle online
            queues (8 queues: target <= 2% of a core)

each in the small case (1 GPU, one online process of 8 queues), small8p (1
GPU, 8 online processes of 1 queue: every queue can get a breakpoint) and at
scale (8 GPUs, 64 online processes, 512 queues: reaction p99 within 1.2x of
the small case, CPU <= 5%), and on request small-8gpu (the small case's
online side on the scale case's 8-GPU node: the node's load without the 64
watched processes), with each DetectorMode (auto: write breakpoints,
poll: the poll-only detector), interleaved in one run so that machine load
hits all alike; with --scrape, also without a scraper and with
gpreempt-exporter asked every interval (a Prometheus scrape: one Metrics call
of the daemon each), alternated the same way. Baselines from the same run: the machine's wake-up floor (an
eventfd ping between two processes, as many events), what an armed
breakpoint costs a store of the online process, and for the CPU figures the
daemon with an offline process and nothing online to watch.

usage: scripts/bench-reaction [BUILD-DIR] [--runs N] [--events N] [--rate R]
                              [--seconds S] [--cases small,small8p,scale,small-8gpu]
                              [--detector auto,poll] [--realtime-priority N]
                              [--realtime-cpu-percent N] [--daemon-setting KEY=VALUE]...
                              [--scrape none,1s] [--json]
       scripts/bench-daemon-cpu [BUILD-DIR] [...]   (the cpu figures)

Simulated: kfdemu, not a GPU.
"""
# scripts/bench-reaction and scripts/bench-daemon-cpu run this module:
# python3 -m gpreempt_eval.bench_reaction.
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from . import SOURCE_ROOT as ROOT
from . import host_steal

PROG = "bench-reaction"
CASES = {
    # name: (kfdemu GPUs, idle online processes, queues each)
    "baseline": (1, 0, 8),
    "small": (1, 1, 8),
    "small8p": (1, 8, 1),
    "scale": (8, 64, 8),
    # diagnostic, only when asked for: the small case's online side on the
    # scale case's node (8 GPUs, an offline process on each), which tells
    # the node's load apart from the watching of 64 processes
    "small-8gpu": (8, 1, 8),
}
TARGETS = {
    ("reaction", "small"): "p99 <= 50 us",
    ("reaction", "small8p"): "p99 <= 50 us",
    ("reaction", "scale"): "p99 <= 1.2 x small",
    ("cpu", "small"): "<= 2% of a core",
    ("cpu", "small8p"): "<= 2% of a core",
    ("cpu", "scale"): "<= 5% of a core",
}


def die(message):
    print(f"{PROG}: {message}", file=sys.stderr)
    sys.exit(1)


def build(build_dir, scraped):
    """scraped: the exporter too (a build older than it can still be compared without --scrape)."""
    targets = ["controller/gpreemptd/gpreemptd", "tests/controller/bench-reaction", "tests/controller/bench-floor",
               "tests/kfdemu/app/kfdemu-app", "tests/kfdemu/transport/kfdemu-run"]
    if scraped:
        targets.append("controller/gpreempt-exporter/gpreempt-exporter")
    if not os.path.exists(os.path.join(build_dir, "build.ninja")):
        die(f"{build_dir} is not a meson build directory; run 'meson setup {build_dir}' first.")
    if subprocess.run(["ninja", "-C", build_dir] + targets, stdout=subprocess.DEVNULL).returncode != 0:
        die(f"building the benchmark in {build_dir} failed; run 'ninja -C {build_dir}' to see why.")


def realtime_options(args):
    """bench-reaction's options for the daemon's real-time keys: only those given, the daemon's defaults otherwise."""
    options = []
    if args.realtime_priority is not None:
        options += ["--realtime-priority", str(args.realtime_priority)]
    if args.realtime_cpu_percent is not None:
        options += ["--realtime-cpu-percent", str(args.realtime_cpu_percent)]
    for setting in args.daemon_setting:
        options += ["--daemon-setting", setting]
    return options


def daemon_settings(args):
    return ", ".join([f"{key}={'default' if value is None else value}"
                      for key, value in (("RealtimePriority", args.realtime_priority),
                                         ("RealtimeCpuPercent", args.realtime_cpu_percent))] + args.daemon_setting)


def parse_scrape(text):
    """--scrape's value: "none", or an interval such as "1s" or "250ms", as ms (None for none)."""
    if text == "none":
        return None
    for suffix, factor in (("ms", 1), ("s", 1000)):
        if text.endswith(suffix) and text[:-len(suffix)].isdigit() and 10 <= int(text[:-len(suffix)]) * factor:
            return int(text[:-len(suffix)]) * factor
    die(f"--scrape '{text}' is neither none nor an interval of 10ms or more such as 1s or 250ms")


def scrape_options(build_dir, scrape):
    if scrape == "none":
        return []
    return ["--scrape-exporter", os.path.join(build_dir, "controller/gpreempt-exporter/gpreempt-exporter"),
            "--scrape-interval-ms", str(parse_scrape(scrape))]


def run_case(build_dir, case, detector, scrape, mode, args):
    """One case's figures, with the hypervisor's steal during it as a
    percentage of the machine's CPU time (0 on bare metal), or (None, error)."""
    gpus, procs, queues = CASES[case]
    steal_before, start = host_steal.steal_ms(), time.monotonic()
    with tempfile.NamedTemporaryFile(prefix="gpreempt-trace-") as trace:
        cmd = [os.path.join(build_dir, "tests/kfdemu/transport/kfdemu-run"), "--gpus", str(gpus),
               "--trace", trace.name, "--",
               os.path.join(build_dir, "tests/controller/bench-reaction"),
               os.path.join(build_dir, "controller/gpreemptd/gpreemptd"),
               os.path.join(build_dir, "tests/kfdemu/app/kfdemu-app"),
               "--trace", trace.name, "--mode", detector,
               "--gpus", str(gpus), "--online-processes", str(procs), "--queues", str(queues), "--json",
               *realtime_options(args), *scrape_options(build_dir, scrape),
               "--events", str(args.events if mode == "reaction" else 0),
               "--rate", str(args.rate),
               "--idle-seconds", str(args.seconds if mode == "cpu" else 0)]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.events / 10 + args.seconds + 900)
    if p.returncode != 0:
        return None, (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1]
    r = json.loads(p.stdout.strip().splitlines()[-1])
    r["steal_percent"] = (host_steal.steal_ms() - steal_before) / ((time.monotonic() - start) * 1000 *
                                                                   os.cpu_count()) * 100
    return r, None


def run_floor(build_dir, what, n):
    p = subprocess.run([os.path.join(build_dir, "tests/controller/bench-floor"), what, str(n)],
                       capture_output=True, text=True, timeout=n / 100 + 300)
    if p.returncode != 0:
        return None, (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1]
    return json.loads(p.stdout.strip().splitlines()[-1]), None


def spread(values):
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "runs": len(values)}


def fmt(s, unit=""):
    return f"{s['median']:.1f}{unit} ({s['min']:.1f}-{s['max']:.1f})"


def main():
    ap = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("build_dir", nargs="?", default="build")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--events", type=int, default=10000, help="suspensions per reaction run")
    ap.add_argument("--rate", type=float, default=100,
                    help="online requests per second while measuring reaction (default 100: most find the GPU resumed)")
    ap.add_argument("--seconds", type=int, default=60, help="length of each CPU measurement")
    ap.add_argument("--cases", default=None, help="comma-separated: small,small8p,scale,small-8gpu (default: the first three; cpu adds baseline)")
    ap.add_argument("--detector", default="auto,poll", help="comma-separated DetectorMode= values to compare")
    ap.add_argument("--realtime-priority", type=int, default=None,
                    help="the daemon's RealtimePriority= (default: the daemon's, SCHED_FIFO 1; 0: normal scheduling)")
    ap.add_argument("--realtime-cpu-percent", type=int, default=None,
                    help="the daemon's RealtimeCpuPercent= (default: the daemon's; 100: no cap)")
    ap.add_argument("--daemon-setting", action="append", default=[], metavar="KEY=VALUE",
                    help="another line of the daemon's [Daemon] section, e.g. DiscoveryIntervalMs=1000 (repeatable)")
    ap.add_argument("--scrape", default="none",
                    help="comma-separated: none, or how often gpreempt-exporter asks the daemon (1s, 250ms); "
                         "several are alternated within each run (default: none)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--mode", choices=("reaction", "cpu"), default="reaction",
                    help="which figures (scripts/bench-daemon-cpu is --mode cpu)")
    args = ap.parse_args()
    mode = args.mode
    build_dir = os.path.join(ROOT, args.build_dir) if not os.path.isabs(args.build_dir) else args.build_dir
    cases = (args.cases or ("baseline,small,small8p,scale" if mode == "cpu" else "small,small8p,scale")).split(",")
    detectors = args.detector.split(",")
    scrapes = args.scrape.split(",")
    for scrape in scrapes:
        parse_scrape(scrape)
    for c in cases:
        if c not in CASES:
            die(f"unknown case '{c}': choose from {', '.join(CASES)}")
    for d in detectors:
        if d not in ("auto", "breakpoint", "poll"):
            die(f"unknown --detector '{d}': choose from auto, breakpoint, poll")
    if args.realtime_priority is not None and not 0 <= args.realtime_priority <= 99:
        die("--realtime-priority must be 0..99")
    if args.realtime_cpu_percent is not None and not 1 <= args.realtime_cpu_percent <= 100:
        die("--realtime-cpu-percent must be 1..100")
    for setting in args.daemon_setting:
        if "=" not in setting or setting.startswith("=") or any(c in setting for c in "\r\n["):
            die(f"--daemon-setting '{setting}' is not one KEY=VALUE line of the [Daemon] section")
    if args.runs < 1 or args.events < 0 or args.seconds < 1:
        die("--runs must be 1 or more, --events 0 or more, --seconds 1 or more")
    build(build_dir, any(scrape != "none" for scrape in scrapes))

    keys = [(c, d, sc) for c in cases for d in (detectors if c != "baseline" else detectors[:1]) for sc in scrapes]
    results = {k: [] for k in keys}
    floors = {"wakeup": [], "store": []}
    failures = []
    for run in range(args.runs):
        for what, n in (("wakeup", max(args.events, 1000)), ("store", 100000)):
            if mode == "cpu" and what == "wakeup":
                continue
            r, error = run_floor(build_dir, what, n)
            if r is None:
                failures.append(f"run {run + 1} floor {what}: {error}")
                continue
            floors[what].append(r)
        for key in keys:
            case, detector, scrape = key
            r, error = run_case(build_dir, case, detector, scrape, mode, args)
            label = f"run {run + 1}/{args.runs} {case} {detector} scrape {scrape}"
            if r is None:
                failures.append(f"{label}: {error}")
                print(f"{label}: failed: {error}", file=sys.stderr)
                continue
            results[key].append(r)
            if mode == "cpu":
                print(f"{label}: {r['idle_cpu_percent']:.2f}% of a core, steal {r['steal_percent']:.1f}%",
                      file=sys.stderr)
            else:
                print(f"{label}: {r['reaction_events']} events, p50 {r['reaction_p50_us']:.1f} us, "
                      f"p99 {r['reaction_p99_us']:.1f} us, steal {r['steal_percent']:.1f}%, "
                      f"{r['realtime_demotions']} demotions", file=sys.stderr)

    summary = {"simulated": "kfdemu", "mode": mode, "runs": args.runs, "realtime_priority": args.realtime_priority,
               "realtime_cpu_percent": args.realtime_cpu_percent,
               "daemon_settings": args.daemon_setting, "cases": [], "failures": failures}
    if floors["wakeup"]:
        summary["wakeup_floor"] = {k: spread([r[k] for r in floors["wakeup"]])
                                   for k in ("wakeup_p50_us", "wakeup_p99_us", "wakeup_events")}
    if floors["store"]:
        summary["breakpoint_store_cost"] = {k: spread([r[k] for r in floors["store"]])
                                            for k in ("store_plain_ns", "store_armed_ns", "store_disarmed_ns")}
    for (case, detector, scrape), rs in results.items():
        if not rs:
            continue
        c = {"case": case, "detector": detector, "scrape": scrape, "queues": rs[0]["idle_queues"],
             "watched": spread([r["idle_queues_watched"] for r in rs]),
             "breakpoint": spread([r["idle_queues_breakpoint"] for r in rs]),
             "steal_percent": spread([r["steal_percent"] for r in rs]),
             "realtime_demotions": spread([r["realtime_demotions"] for r in rs])}
        if mode == "cpu":
            c["cpu_percent"] = spread([r["idle_cpu_percent"] for r in rs])
            c["seconds"] = args.seconds
        else:
            for k in ("reaction_p50", "reaction_p99", "to_server_p50", "to_server_p99", "wakeup_to_ioctl_p50",
                      "wakeup_to_ioctl_p99", "outside_resume_p50", "outside_resume_p99"):
                c[k] = spread([r[k + "_us"] for r in rs])
            c["events"] = spread([r["reaction_events"] for r in rs])
            c["during_resume_events"] = spread([r["during_resume_events"] for r in rs])
            c["busy_cpu_percent"] = spread([r["busy_cpu_percent"] for r in rs])
        summary["cases"].append(c)
    if mode == "reaction":
        by = {(c["case"], c["detector"], c["scrape"]): c for c in summary["cases"]}
        for d in detectors:
            if ("small", d, scrapes[0]) in by and ("scale", d, scrapes[0]) in by:
                summary[f"scale_over_small_p99_{d}"] = (by[("scale", d, scrapes[0])]["reaction_p99"]["median"] /
                                                        by[("small", d, scrapes[0])]["reaction_p99"]["median"])
    if args.json:
        print(json.dumps(summary, indent=2))
        return 0 if not failures else 3

    print(f"simulated on kfdemu, {args.runs} runs, median (min-max) over runs, "
          f"{daemon_settings(args)}, load average {os.getloadavg()[0]:.1f} at the end")
    if mode == "cpu":
        print(f"{'case':9} {'mode':6} {'scrape':>6} {'queues':>6} {'bp':>4} {'CPU % of a core':>22} {'steal %':>7}  target")
        for c in summary["cases"]:
            print(f"{c['case']:9} {c['detector']:6} {c['scrape']:>6} {c['queues']:6} {c['breakpoint']['median']:4.0f} "
                  f"{fmt(c['cpu_percent']):>22} {c['steal_percent']['median']:7.1f}  "
                  f"{TARGETS.get((mode, c['case']), 'baseline')}")
    else:
        print("reaction: write-index store -> SUSPEND_QUEUES ioctl entering the (emulated) kernel; "
              "'server': -> kfdemu's server receiving it (+ the emulator's socket hop); 'in resume': writes that "
              "landed while the daemon was inside RESUME_QUEUES (the kernel's wait for the preemption), and the "
              "others' p50/p99; 'CPU %': the daemon's, of a core, while serving the requests; 'steal %': the "
              "hypervisor's share of the machine's CPU time during the case (0 on bare metal); 'demoted': how "
              "often RealtimeCpuPercent= put the loop at normal priority; 'scrape': how often gpreempt-exporter asked "
              "the daemon for its metrics (none: no scraper)")
        print(f"{'case':9} {'mode':6} {'scrape':>6} {'queues':>6} {'bp':>4} {'events':>6} {'p50 us':>20} {'p99 us':>22} "
              f"{'server p50/p99':>16} {'wakeup->ioctl':>14} {'in resume':>9} {'others p50/p99':>15} {'CPU %':>6} {'steal %':>7} {'demoted':>7}  target")
        for c in summary["cases"]:
            print(f"{c['case']:9} {c['detector']:6} {c['scrape']:>6} {c['queues']:6} {c['breakpoint']['median']:4.0f} "
                  f"{c['events']['median']:6.0f} {fmt(c['reaction_p50']):>20} {fmt(c['reaction_p99']):>22} "
                  f"{c['to_server_p50']['median']:8.1f}/{c['to_server_p99']['median']:<7.1f} "
                  f"{c['wakeup_to_ioctl_p50']['median']:6.1f}/{c['wakeup_to_ioctl_p99']['median']:<7.1f} "
                  f"{c['during_resume_events']['median']:9.0f} "
                  f"{c['outside_resume_p50']['median']:7.1f}/{c['outside_resume_p99']['median']:<7.1f} "
                  f"{c['busy_cpu_percent']['median']:6.1f} {c['steal_percent']['median']:7.1f} "
                  f"{c['realtime_demotions']['median']:7.0f}  {TARGETS.get((mode, c['case']), '')}")
        for d in detectors:
            if f"scale_over_small_p99_{d}" in summary:
                print(f"scale p99 / small p99 ({d}): {summary[f'scale_over_small_p99_{d}']:.2f}x  [target <= 1.2x]")
        if "wakeup_floor" in summary:
            w = summary["wakeup_floor"]
            print(f"wake-up floor (eventfd ping between two processes, {w['wakeup_events']['median']:.0f} events): "
                  f"p50 {fmt(w['wakeup_p50_us'], ' us')}, p99 {fmt(w['wakeup_p99_us'], ' us')}")
    if "breakpoint_store_cost" in summary:
        b = summary["breakpoint_store_cost"]
        print(f"a store of the online process: {fmt(b['store_plain_ns'], ' ns')} without a breakpoint, "
              f"{fmt(b['store_armed_ns'], ' ns')} with one armed (each traps), "
              f"{fmt(b['store_disarmed_ns'], ' ns')} disarmed")
    for f in failures:
        print(f"failed: {f}")
    return 0 if not failures else 3


if __name__ == "__main__":
    sys.exit(main())
