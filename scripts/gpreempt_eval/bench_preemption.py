# SPDX-License-Identifier: MIT
"""What a preemption costs on this node, in one command, as root:

  suspend/resume  the wall time (p50/p99) of SUSPEND_QUEUES and RESUME_QUEUES
                  on one target process, for each --queues count, the target
                  idle (its queues empty) and busy (kernels always running),
                  and the CPU time the calling thread spent inside each call
                  (gpreemptctl bench)
  online delay    the latency (p50/p99) of an online process's small kernels
                  beside a busy offline target: running, suspended and
                  resumed every --hold/--gap (as gpreemptd would), and held
                  suspended throughout (gpreemptctl hold)
  read index      how long after a request's completion signal (its end
                  timestamp) the queue's read index showed it done, sampled
                  from outside as gpreemptd's detector reads it (gpreemptctl
                  bench --watch-read-index); negative: it advanced first

and the kfdemu node-configuration keys those figures correspond to, so that
kfdemu can be recalibrated from a real node's output.

  scripts/real-node/bench-preemption [--kfdemu] [--build DIR] [--queues 1,4,16]
                                     [--cycles N] [--seconds S] [--json]

On a real node the targets are timed-kernels (scripts/real-node/build, with
hipcc); with --kfdemu the command runs itself inside an emulated node
(kfdemu-run, the evaluation's preemption costs) with kfdemu-app as the
targets, and prints the modelled values.
"""
# scripts/real-node/bench-preemption runs this module: python3 -m gpreempt_eval.bench_preemption.
import argparse
import bisect
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time

from . import SCRIPTS_DIR, child_env, module_argv
from . import runner

PROG = "bench-preemption"
BUSY_KERNEL_US = 2000
ONLINE_KERNEL_US = 100
ONLINE_RATE = 100
READY_TIMEOUT_S = 60
EXIT_PRECONDITION = 2


class Failure(Exception):
    """A condition that stops the benchmark, with what to do about it."""


def die(message, status=EXIT_PRECONDITION):
    print(f"{PROG}: {message}", file=sys.stderr)
    sys.exit(status)


class Targets:
    """The programs a run starts: the GPU workload program and gpreemptctl."""

    def __init__(self, app, gpreemptctl, emulated):
        self.app, self.gpreemptctl, self.emulated = app, gpreemptctl, emulated

    def start(self, queues, busy=True, rate=None, seconds=None, latency_log=None, dispatch_times=None):
        """A target process, once it printed READY: (Popen, pid)."""
        argv = [self.app, "--gpu", "0", "--queues", str(queues), "--json"]
        if rate:
            argv += ["--rate", str(rate), "--kernel-us", str(ONLINE_KERNEL_US), "--duration", str(seconds)]
        elif busy:
            argv += ["--continuous", "--kernel-us", str(BUSY_KERNEL_US)]
        else:
            # one request at the start, the next 1000 s away: queues that stay empty
            argv += ["--rate", "0.001", "--kernel-us", str(ONLINE_KERNEL_US), "--duration", "100000"]
        if latency_log:
            argv += ["--latency-log", latency_log]
        if dispatch_times:
            argv += ["--dispatch-times", dispatch_times]
        p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            ready, _, _ = select.select([p.stdout], [], [], max(0.0, deadline - time.monotonic()))
            line = p.stdout.readline() if ready else ""
            if line.startswith("READY pid="):
                time.sleep(0.2)  # the idle target's one request ends, the busy one's kernels run
                return p, int(line.split()[1].split("=")[1])
            if ready and not line:
                break
        p.kill()
        error = p.communicate()[1].strip().splitlines()
        raise Failure(f"the target {os.path.basename(self.app)} never became ready (it printed no READY line): "
                      f"{error[-1] if error else 'no message'}")

    def ctl(self, *args):
        """gpreemptctl's JSON answer, or Failure with its own message."""
        p = subprocess.run([self.gpreemptctl, *args], capture_output=True, text=True)
        if p.returncode != 0:
            lines = p.stderr.strip().splitlines()
            raise Failure(f"gpreemptctl {args[0]} failed (exit {p.returncode}): "
                          f"{lines[0] if lines else 'no message'}")
        return json.loads(p.stdout)


def stop(process):
    process.terminate()
    out = process.communicate(timeout=60)[0]
    lines = [line for line in out.splitlines() if line.startswith("{")]
    return json.loads(lines[-1]) if lines else None


def measure_calls(targets, queue_counts, cycles, hold, gap):
    """gpreemptctl bench on one target per (queue count, idle/busy)."""
    rows = []
    for queues in queue_counts:
        for busy in (False, True):
            process, pid = targets.start(queues, busy=busy)
            try:
                r = targets.ctl("bench", str(pid), "--cycles", str(cycles), "--hold", hold, "--gap", gap, "--json")
            finally:
                stop(process)
            rows.append({"queues": queues, "target": "busy" if busy else "idle", "suspend": r["suspend"],
                         "resume": r["resume"]})
            print(f"{PROG}: {queues} queue(s), {'busy' if busy else 'idle'}: suspend p50 "
                  f"{r['suspend']['wall_p50_us']:.1f} us, resume p50 {r['resume']['wall_p50_us']:.1f} us",
                  file=sys.stderr)
    return rows


def measure_online_delay(targets, queues, seconds, hold, gap, hold_us, gap_us):
    """The online kernels' latency beside a busy offline target, in each phase."""
    phases = []
    offline, offline_pid = targets.start(queues, busy=True)
    try:
        for phase in ("offline running", "suspend/resume cycles", "offline held suspended"):
            online, _ = targets.start(1, rate=ONLINE_RATE, seconds=seconds)
            if phase == "suspend/resume cycles":
                cycles = max(1, int(seconds * 1e6 / (hold_us + gap_us)))
                targets.ctl("bench", str(offline_pid), "--cycles", str(cycles), "--hold", hold, "--gap", gap,
                            "--json")
            elif phase == "offline held suspended":
                targets.ctl("hold", str(offline_pid), "--for", f"{seconds}s", "--json")
            report = online.communicate(timeout=seconds + 120)[0]
            lines = [line for line in report.splitlines() if line.startswith("{")]
            if online.returncode != 0 or not lines:
                raise Failure(f"the online target ended with status {online.returncode} and no report")
            r = json.loads(lines[-1])
            phases.append({"phase": phase, "requests": r["requests"], "latency_ms": r["latency_ms"]})
            print(f"{PROG}: online kernels, {phase}: p99 {r['latency_ms']['p99']:.3f} ms", file=sys.stderr)
    finally:
        stop(offline)
    return phases


def advance_differences(advances, ends, early_ns):
    """For each completion end time, the first read-index advance from early_ns before it on and before the
    next completion's window, minus the end time (sorted): negative, the read index moved first."""
    times = sorted(a["ns"] for a in advances)
    ends = sorted(ends)
    differences = []
    for k, end in enumerate(ends):
        i = bisect.bisect_left(times, end - early_ns)
        if i < len(times) and (k + 1 == len(ends) or times[i] < ends[k + 1] - early_ns):
            differences.append(times[i] - end)
    return sorted(differences)


def indexed_differences(advances, ends, indices):
    """Each request's first read-index advance past its packet's index (kfdemu-app --dispatch-times gives
    the index, in request order), minus the request's completion time (sorted)."""
    advances = sorted(advances, key=lambda a: a["ns"])
    values = [a["read_index"] for a in advances]
    differences = []
    for end, index in zip(ends, indices):
        i = bisect.bisect_right(values, index)
        # the watch's first look is no advance: a request done before it has none of its own
        if i < len(advances) and (i > 0 or advances[0]["read_index"] == index + 1):
            differences.append(advances[i]["ns"] - end)
    return sorted(differences)


def measure_read_index(targets, seconds):
    """Read-index advances against each request's completion time from the latency log. On kfdemu that is
    the completion signal's end timestamp, and each request is paired with the advance past its packet
    (--dispatch-times). timed-kernels logs when the host saw the request done and knows no packet index:
    each completion is paired with the first advance from one kernel's length before it on, an
    approximation to check against the real node's first output."""
    with tempfile.TemporaryDirectory(prefix="gpreempt-bench-preemption-") as tmp:
        log, times = os.path.join(tmp, "latency"), os.path.join(tmp, "dispatch-times")
        online, pid = targets.start(1, rate=ONLINE_RATE, seconds=seconds + 2, latency_log=log,
                                    dispatch_times=times if targets.emulated else None)
        try:
            watch = targets.ctl("bench", str(pid), "--watch-read-index", f"{seconds}s", "--json")
        finally:
            online.communicate(timeout=seconds + 120)
        with open(log) as f:
            # scheduled ns, latency to the last kernel's end (model time on kfdemu), ...
            ends = [int(a) + int(b) for a, b, *_ in (line.split() for line in f if not line.startswith("#"))]
        advances = watch["read_index"]["advances"]
        if targets.emulated:
            with open(times) as f:
                indices = [int(line.split()[4]) for line in f]
            differences = indexed_differences(advances, ends, indices)
        else:
            differences = advance_differences(advances, ends, ONLINE_KERNEL_US * 1000)
    if not differences:
        raise Failure("no read-index advance could be paired with a completion")
    return {"samples": len(differences), "p50_us": differences[len(differences) // 2] / 1e3,
            "p99_us": differences[len(differences) * 99 // 100] / 1e3, "min_us": differences[0] / 1e3,
            "early": sum(d < 0 for d in differences), "poll_interval_p50_us": watch["read_index"]["poll_p50_us"],
            "completion": "completion signal end_ts" if targets.emulated else "host saw the request done"}


def kfdemu_keys(rows, read_index):
    """The node-configuration keys (kfdemu-run(1)) the measured figures stand for, by section. On an HWS GPU
    a suspend's ioctl waits for the unmap (PreemptMicroseconds) and, with waves resident, for their context
    save (CwsrSaveMicroseconds); a caller that keeps its CPU through the unmap fence wait spends about its
    wall time in the call (FenceWaitSpins); the read index shows a dispatch done at its end or before it."""
    by = {(r["queues"], r["target"]): r for r in rows}
    queues = min(r["queues"] for r in rows)
    idle, busy = by[(queues, "idle")], by[(queues, "busy")]
    spin = busy["suspend"]["thread_cpu_p50_us"] / max(busy["suspend"]["wall_p50_us"], 1e-9)
    early = read_index["early"] / read_index["samples"]
    return {
        "Node": {"FenceWaitSpins": "yes" if spin > 0.5 else "no"},
        "GPU0": {"PreemptMicroseconds": round(idle["suspend"]["wall_p50_us"]),
                 "CwsrSaveMicroseconds": max(0, round(busy["suspend"]["wall_p50_us"] -
                                                      idle["suspend"]["wall_p50_us"]))},
        # the preemption cost model's keys, where kfdemu has them: the two above drive its constant model
        "cost_model": {"PreemptCostModel": "constant", "ReadIndexAdvance": "dispatch" if early > 0.5 else "completion"},
        "from": f"{queues} queue(s): PreemptMicroseconds = the idle target's suspend p50; CwsrSaveMicroseconds = "
                f"the busy target's suspend p50 minus that; FenceWaitSpins = yes when the calling thread's CPU "
                f"time in the busy suspend is more than half its wall time (it was {spin:.0%}); ReadIndexAdvance = "
                f"dispatch when most read-index advances came before the completion time ({read_index['early']} "
                f"of {read_index['samples']} did). Not measured: CwsrRestoreMicroseconds (no call returns when the "
                "restore ends), the wave-based cost model's rates. On kfdemu the calls also carry the emulator's "
                "own path (docs/benchmarks/preemption.md)",
    }


def print_report(result):
    print(f"{'simulated on kfdemu' if result['emulated'] else 'measured on this node'}: "
          f"{result['cycles']} cycles per row, held {result['hold']}, {result['gap']} apart")
    if result["emulated"]:
        print("kfdemu's model: " + ", ".join(f"{k}={v}" for k, v in result["modelled"].items()))
    print(f"{'queues':>6} {'target':6} {'op':8} {'wall p50 us':>12} {'wall p99 us':>12} {'thread CPU p50 us':>18} "
          f"{'thread CPU p99 us':>18}")
    for r in result["calls"]:
        for op in ("suspend", "resume"):
            s = r[op]
            print(f"{r['queues']:6} {r['target']:6} {op:8} {s['wall_p50_us']:12.1f} {s['wall_p99_us']:12.1f} "
                  f"{s['thread_cpu_p50_us']:18.1f} {s['thread_cpu_p99_us']:18.1f}")
    print(f"online kernels of {ONLINE_KERNEL_US} us at {ONLINE_RATE}/s beside a busy offline target "
          f"(latency to the last kernel's end, ms: the completion signal's timestamp on kfdemu, the host's "
          f"view on a real node):")
    for p in result["online_delay"]:
        lat = p["latency_ms"]
        print(f"  {p['phase']:24} p50 {lat['p50']:8.3f}  p99 {lat['p99']:8.3f}  max {lat['max']:8.3f}  "
              f"({p['requests']} requests)")
    ri = result["read_index"]
    print(f"read index shown done after the request's completion ({ri['completion']}): p50 {ri['p50_us']:.1f} us, "
          f"p99 {ri['p99_us']:.1f} us, min {ri['min_us']:.1f} us; {ri['early']} of {ri['samples']} before it "
          f"(sampled every {ri['poll_interval_p50_us']:.1f} us)")
    print("kfdemu node configuration (kfdemu-run --config) for these figures:")
    keys = result["kfdemu_keys"]
    for section in ("Node", "GPU0"):
        print(f"  [{section}]")
        for k, v in keys[section].items():
            print(f"  {k}={v}")
    print("  and in [GPU0], where kfdemu has the preemption cost model (kfdemu-run(1), PreemptCostModel=):")
    for k, v in keys["cost_model"].items():
        print(f"  {k}={v}")
    print(f"  ({keys['from']})")


def measure(args, targets):
    hold_us, gap_us = args.hold_ms * 1000, args.gap_ms * 1000
    hold, gap = f"{args.hold_ms}ms", f"{args.gap_ms}ms"
    result = {"emulated": targets.emulated, "cycles": args.cycles, "hold": hold, "gap": gap,
              "modelled": dict(runner.DEFAULT_PREEMPT) if targets.emulated else None}
    result["calls"] = measure_calls(targets, args.queues, args.cycles, hold, gap)
    result["online_delay"] = measure_online_delay(targets, args.queues[0], args.seconds, hold, gap, hold_us, gap_us)
    result["read_index"] = measure_read_index(targets, args.seconds)
    result["kfdemu_keys"] = kfdemu_keys(result["calls"], result["read_index"])
    return result


def parse_args(argv):
    ap = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--kfdemu", action="store_true", help="run on an emulated node (kfdemu) of the build")
    ap.add_argument("--build", default=os.path.join(runner.SOURCE_ROOT, "build"),
                    help="the build with gpreemptctl (and kfdemu) (default: build/)")
    ap.add_argument("--gpreemptctl", default=None, help="default: the build's, else the one on PATH")
    ap.add_argument("--app", default=None,
                    help="the target program (default: kfdemu-app with --kfdemu, timed-kernels otherwise)")
    ap.add_argument("--queues", default="1,4,16", help="queue counts of the target (default 1,4,16)")
    ap.add_argument("--cycles", type=int, default=200, help="suspend/resume cycles per row (default 200)")
    ap.add_argument("--hold-ms", type=int, default=5, help="each suspension's length (default 5)")
    ap.add_argument("--gap-ms", type=int, default=5, help="running time between suspensions (default 5)")
    ap.add_argument("--seconds", type=int, default=5, help="each online-delay phase and the read-index watch")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--inside-kfdemu", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    try:
        args.queues = [int(q) for q in args.queues.split(",")]
    except ValueError:
        ap.error(f"--queues '{args.queues}': give queue counts such as 1,4,16")
    if not all(1 <= q <= 64 for q in args.queues):
        ap.error("--queues: each count must be 1..64")
    if not (1 <= args.cycles <= 100000 and 1 <= args.hold_ms <= 1000 and 1 <= args.gap_ms <= 1000
            and 1 <= args.seconds <= 600):
        ap.error("--cycles must be 1..100000, --hold-ms and --gap-ms 1..1000, --seconds 1..600")
    return args


def find_gpreemptctl(args):
    path = args.gpreemptctl or os.path.join(args.build, "controller/gpreemptctl/gpreemptctl")
    if not os.access(path, os.X_OK):
        path = args.gpreemptctl or shutil.which("gpreemptctl")
    if not path or not os.access(path, os.X_OK):
        die(f"no gpreemptctl: build the tree (meson compile -C {args.build}) or install the gpreempt package")
    return path


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    args.build = os.path.abspath(args.build)
    if os.geteuid() != 0:
        die("run it as root (sudo): the benchmark attaches to its targets as a debugger, which needs "
            "CAP_SYS_PTRACE, and reads what only root may read")
    gpreemptctl = find_gpreemptctl(args)
    if args.kfdemu and not args.inside_kfdemu:
        node = runner.Build(args.build)
        with tempfile.TemporaryDirectory(prefix="gpreempt-bench-preemption-") as tmp:
            argv = node.command(tmp, runner.DEFAULT_PREEMPT,
                                module_argv("bench_preemption", "--inside-kfdemu", *sys.argv[1:]))
            return subprocess.run(argv, env=child_env()).returncode
    if args.kfdemu:
        app = args.app or runner.Build(args.build).app
    else:
        kfd = os.environ.get("GPREEMPT_KFD_DEVICE", "/dev/kfd")  # as gpreemptd and gpreemptctl take it
        if not os.path.exists(kfd):
            die(f"no {kfd}: this is not an AMD GPU node with the amdgpu driver loaded (modprobe amdgpu); "
                "give --kfdemu to see what the emulator models instead")
        app = args.app or os.path.join(args.build, "real-node", "timed-kernels")
        if not args.app and not os.access(app, os.X_OK):
            subprocess.run([os.path.join(SCRIPTS_DIR, "real-node", "build"), os.path.dirname(app)], check=False)
    if not os.access(app, os.X_OK):
        die(f"no targets: {app} is not an executable program; on a real node build timed-kernels with "
            "scripts/real-node/build (needs hipcc), or give --app")
    targets = Targets(app, gpreemptctl, emulated=args.kfdemu)
    try:
        result = measure(args, targets)
    except Failure as e:
        die(str(e), status=4)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print_report(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
