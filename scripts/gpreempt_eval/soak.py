# SPDX-License-Identifier: MIT
"""Soak gpreempt on an emulated node (kfdemu): many suspend/resume cycles
through libgpreempt, and/or the high-load scenario with gpreemptd for a long
time, checking that nothing fails, no file descriptor or memory is leaked
and nothing is left suspended. docs/soak.md has the rules and the results.

  scripts/soak [--cycles N] [--daemon [--duration D]] [--json] [--build DIR] [--out DIR]

Without --cycles or --daemon both soaks run at full length (100 000 cycles,
then one hour of the daemon). Exit status: 0 everything held, 1 a soak
failed, 2 bad usage or missing build.
"""
# scripts/soak runs this module: python3 -m gpreempt_eval.soak.
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

from . import SOURCE_ROOT, child_env
from . import runner

DEFAULT_CYCLES = 100000
DEFAULT_DURATION_S = 3600
SCENARIO = "high-load"
CYCLE_GPUS = 2
DAEMON_SOAK = os.path.join(SOURCE_ROOT, "tests", "soak", "daemon_soak.py")
# Beyond its planned length, what a soak may take to start and wind down.
GRACE_S = 300
DURATION_UNITS = {"s": 1, "m": 60, "min": 60, "h": 3600}


def duration(text):
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*(s|m|min|h)?", text.strip())
    if not m or float(m.group(1)) <= 0:
        raise argparse.ArgumentTypeError("%r is not a duration: give a positive number with an optional "
                                         "unit s, m or h (e.g. 20s, 90m, 1h)" % text)
    return float(m.group(1)) * DURATION_UNITS[m.group(2) or "s"]


def cycles(text):
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError("%r is not a number of cycles: give a positive integer" % text)
    return n


def parse_args():
    p = argparse.ArgumentParser(prog="scripts/soak", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cycles", type=cycles, help="suspend/resume cycles of the library soak (default %d)"
                   % DEFAULT_CYCLES)
    p.add_argument("--daemon", action="store_true", help="run the daemon soak (the high-load scenario)")
    p.add_argument("--duration", type=duration, help="length of the daemon soak: 20s, 30m, 1h (default 1h)")
    p.add_argument("--json", action="store_true", help="print the results as one JSON object")
    p.add_argument("--build", default=os.path.join(SOURCE_ROOT, "build"),
                   help="the meson build directory (default: %(default)s)")
    p.add_argument("--out", help="where the daemon's full log is kept (default: BUILD/soak)")
    args = p.parse_args()
    if args.duration is not None and not args.daemon:
        p.error("--duration is the length of the daemon soak: add --daemon")
    if args.cycles is None and not args.daemon:
        args.cycles, args.daemon = DEFAULT_CYCLES, True
    args.duration = args.duration or DEFAULT_DURATION_S
    args.out = args.out or os.path.join(args.build, "soak")
    return args


def log(msg):
    print("soak: " + msg, file=sys.stderr, flush=True)


class MissingBuild(Exception):
    pass


def need(path, what, build_dir):
    if not os.access(path, os.X_OK):
        raise MissingBuild("soak: %s (%s) is missing: build the tree first (meson setup %s && meson compile -C %s)"
                           % (what, path, build_dir, build_dir))
    return path


def run_cycles(build, n, build_dir):
    driver = need(os.path.join(build.dir, "tests/soak/cycle-soak"), "the cycle soak driver", build_dir)
    qf = need(os.path.join(build.dir, "queue_finder/queue_finder"), "queue_finder", build_dir)
    argv = [build.kfdemu_run, "--gpus", str(CYCLE_GPUS), "--", driver, "--cycles", str(n), "--json",
            build.app, qf]
    log("cycle soak: %d suspend/resume cycles through libgpreempt on %d emulated GPUs" % (n, CYCLE_GPUS))
    proc = subprocess.run(argv, stdout=subprocess.PIPE, text=True)
    try:
        result = json.loads(proc.stdout)
    except ValueError:
        result = {"ok": False, "error": "the cycle soak driver exited with status %d and no result"
                  % proc.returncode}
    if proc.returncode != 0 and result.get("ok"):
        result = dict(result, ok=False, error="the cycle soak exited with status %d" % proc.returncode)
    return result


def address_sanitized(build_dir):
    """Whether the build uses AddressSanitizer, whose quarantine of freed
    memory makes RSS grow without a leak (meson's introspection says)."""
    try:
        with open(os.path.join(build_dir, "meson-info", "intro-buildoptions.json")) as f:
            options = json.load(f)
    except (OSError, ValueError):
        return False
    return any(o["name"] == "b_sanitize" and "address" in str(o["value"]) for o in options)


def daemon_spec(build, tmp, duration_s, out_dir):
    workloads = runner.load_workloads()
    scenario = next(s for s in workloads["scenarios"] if s["name"] == SCENARIO)
    w = workloads["workloads"]
    config_dir = os.path.join(tmp, "etc")
    os.makedirs(os.path.join(config_dir, "workloads.d"))
    with open(os.path.join(config_dir, "gpreemptd.conf"), "w") as f:
        f.write(runner.daemon_config(runner.DEFAULT_POLICY))
    # Samples: a few hundred over the run, at most one a second.
    sample_s = max(1.0, duration_s / 360)
    return {"duration_s": duration_s, "warmup_s": duration_s / 10, "sample_s": sample_s,
            "progress_s": max(5.0, duration_s / 60),
            "online": runner.app_argv(build, w[scenario["online"]], "online", scenario["rate"]),
            "offline": runner.app_argv(build, w[scenario["offline"]], "offline"),
            "offline_kernels_per_request": w[scenario["offline"]]["kernels_per_request"],
            "gpreemptd": {"binary": build.gpreemptd, "config_dir": config_dir,
                          "runtime_dir": os.path.join(tmp, "run")},
            "judge_rss": not address_sanitized(build.dir),
            "gpreemptctl": os.path.join(build.dir, "controller/gpreemptctl/gpreemptctl"),
            "queue_finder": os.path.join(build.dir, "queue_finder/queue_finder"),
            "daemon_log": os.path.join(out_dir, "daemon-%s.log" % time.strftime("%Y%m%dT%H%M%S"))}


def run_daemon(build, duration_s, out_dir, build_dir):
    problem = build.daemon_problem()
    if problem:
        raise MissingBuild("soak: the daemon soak needs gpreemptd: %s" % problem)
    need(os.path.join(build.dir, "controller/gpreemptctl/gpreemptctl"), "gpreemptctl", build_dir)
    need(os.path.join(build.dir, "queue_finder/queue_finder"), "queue_finder", build_dir)
    os.makedirs(out_dir, exist_ok=True)
    log("daemon soak: the %s scenario with gpreemptd for %.0f s" % (SCENARIO, duration_s))
    with tempfile.TemporaryDirectory(prefix="gpreempt-soak-", dir=runner.scratch_parent()) as tmp:
        spec = daemon_spec(build, tmp, duration_s, out_dir)
        spec_path, result_path = os.path.join(tmp, "spec.json"), os.path.join(tmp, "result.json")
        with open(spec_path, "w") as f:
            json.dump(spec, f)
        argv = build.command(tmp, runner.DEFAULT_PREEMPT, [sys.executable, DAEMON_SOAK, spec_path, result_path])
        try:
            # daemon_soak.py imports this package: child_env() puts it on PYTHONPATH.
            proc = subprocess.run(argv, timeout=duration_s + GRACE_S, env=child_env())
            with open(result_path) as f:
                result = json.load(f)
        except subprocess.TimeoutExpired:
            result = {"error": "the daemon soak did not end within %d s of its planned length" % GRACE_S}
        except (OSError, ValueError):
            result = {"error": "kfdemu-run exited with status %d and no result" % proc.returncode}
    result["daemon_log_file"] = spec["daemon_log"]
    result["ok"] = "error" not in result and not result.get("problems")
    return result


def print_usage_table(usage):
    print("  %-14s %7s %-16s %-22s" % ("process", "samples", "fds first/last/max", "RSS KiB first/last/max"))
    for name, v in usage.items():
        print("  %-14s %7d %-16s %-22s" % (name, v["samples"], "%d/%d/%d" % (v["fds"]["first"], v["fds"]["last"],
                                                                              v["fds"]["max"]),
                                           "%d/%d/%d" % (v["rss_kib"]["first"], v["rss_kib"]["last"],
                                                         v["rss_kib"]["max"])))


def print_cycles(r):
    print("cycle soak: %s" % ("PASSED" if r.get("ok") else "FAILED: " + r.get("error", "see above")))
    if "cycles_done" in r:
        print("  %d of %d cycles in %.1f s (%.0f cycles/s), %d queues on %d GPUs, %d progress checks"
              % (r["cycles_done"], r["cycles"], r["duration_s"], r["cycles_per_s"], r["queues"], r["gpus"],
                 r["progress_checks"]))
        print_usage_table(r["usage"])


def print_daemon(r):
    print("daemon soak: %s" % ("PASSED" if r["ok"] else "FAILED"))
    for p in ([r["error"]] if "error" in r else []) + r.get("problems", []):
        print("  problem: " + p)
    if "online" in r:
        lat = r["online"]["latency_ms"]
        print("  %.0f s; online %d requests (%.1f/s), latency ms P50 %.2f P95 %.2f P99 %.2f max %.2f"
              % (r["window_s"], r["online"]["requests"], r["online"]["requests_per_s"], lat["p50"], lat["p95"],
                 lat["p99"], lat["max"]))
        print("  offline %.3f it/s; transitions %d (%.1f/s); daemon log: %d lines, %d warnings, %d errors"
              % (r["offline"]["iterations_per_s"], r["status"].get("transitions", 0),
                 r["status"].get("transitions", 0) / r["window_s"], r["daemon_log"]["lines"],
                 r["daemon_log"]["warnings"], len(r["daemon_log"]["errors"])))
        print_usage_table(r["usage"])
        if not all(v["rss_kib"].get("judged", True) for v in r["usage"].values()):
            print("  RSS not judged: an AddressSanitizer build keeps freed memory in quarantine "
                  "(LeakSanitizer checks for leaks at exit)")
    print("  daemon log kept in %s" % r["daemon_log_file"])


def main():
    args = parse_args()
    results = {"commit": runner.COMMIT, "started": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    try:
        # runner.Build exits with its own message when kfdemu is not built.
        try:
            build = runner.Build(args.build)
        except SystemExit as e:
            raise MissingBuild("soak: " + str(e))
        if args.cycles:
            results["cycles"] = run_cycles(build, args.cycles, args.build)
        if args.daemon:
            results["daemon"] = run_daemon(build, args.duration, args.out, args.build)
    except MissingBuild as e:
        print(e, file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        # The soaks got the terminal's SIGINT too and cleaned up after themselves.
        log("interrupted")
        return 1
    results["ok"] = all(results[k]["ok"] for k in ("cycles", "daemon") if k in results)
    if args.json:
        print(json.dumps(results, indent=1))
    else:
        if "cycles" in results:
            print_cycles(results["cycles"])
        if "daemon" in results:
            print_daemon(results["daemon"])
        print("soak: %s" % ("everything held" if results["ok"] else "FAILED"))
    return 0 if results["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
