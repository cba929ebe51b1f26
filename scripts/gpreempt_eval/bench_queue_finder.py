# SPDX-License-Identifier: MIT
"""Benchmark queue_finder's log parser against grep on a real-sized log.

Writes a HIP/CLR AMD_LOG_LEVEL=4 log of 13 million lines (the line count of
the largest real logs) in the formats of ROCm >= 6.2, in one of two mixes:

  real     the captured log tests/data/real/hip-rocm7-amd-log-level4.log
           repeated: 7 % AQL packet lines among API trace lines with colour
           escapes, ShaderName, command and memory lines, and program output,
           as a HIP application writes them (~140 bytes a line, ~1.8 GB).
  packets  a synthetic mix that is 58 % AQL dispatch and barrier lines as long
           as real ones (~420 bytes), plus queue creation, refCount,
           ShaderName, API trace and command lines (~3.8 GB): the most work
           per line for queue_finder, and the most matches for grep.

Then it times, interleaved in the same run so both see the same load,
    queue_finder --no-live --log FILE
    grep -c HWq= FILE
(HWq= is one of the parser's own keys). For each: wall-clock and CPU time
(user + system of the process and its threads, from wait4) as median and
min-max over --runs; then queue_finder's peak RSS in a run of its own (the
constant-memory claim).
The file is read once first so both start from the page cache. The load
average is printed before and after, and beside each command the
hypervisor's steal during its runs (/proc/stat, all CPUs; 0 on bare
metal): on a shared machine they say how much the figures can be trusted. With --pipe it also times
    zcat FILE.gz | queue_finder --no-live --log -
    zcat FILE.gz | grep -c HWq=
the same way (CPU time of the pipeline's two processes). With --baseline
PATH, another queue_finder build (the one before a change) is timed on the
file in the same interleaved runs, so old and new see the same load.

usage: bench-queue-finder [--queue-finder PATH] [--baseline PATH] [--mix real|packets]
                          [--lines N] [--runs N] [--pipe] [--dir DIR] [--json] [--keep]
"""
# scripts/bench-queue-finder runs this module:
# python3 -m gpreempt_eval.bench_queue_finder.

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from . import SCRIPTS_DIR
from . import host_steal

PATTERN = "HWq="
BLOCK_LINES = 100_000


def prefix(level, src, line, usec, pid, tid):
    return f":{level}:{src:<25}:{line:<4}: {usec:010d} us: [pid:{pid} tid: 0x{tid:x}] "


def make_block(rng, pids):
    """BLOCK_LINES lines with the mix of a busy inference log."""
    lines = []
    usec = 20159560448
    queues = {}
    for pid in pids:
        queues[pid] = []
        for q in range(4):
            swq = 0x7F8EDC1A8000 - q * 0x6000 + (pid << 24 & 0xFFF000000)
            hwq = 0x7F8ACD200000 - q * 0x200000 + (pid << 28 & 0xFF0000000)
            queues[pid].append((swq, hwq, q + 1))
    tid = 0x7F8EDC1C4400
    while len(lines) < BLOCK_LINES:
        pid = rng.choice(pids)
        swq, hwq, qid = rng.choice(queues[pid])
        usec += rng.randint(1, 40)
        r = rng.random()
        if r < 0.50:
            wptr = rng.randint(0, 1 << 20)
            lines.append(prefix(4, "rocvirtual.cpp", 1083, usec, pid, tid) +
                         f"SWq=0x{swq:x}, HWq=0x{hwq:x}, id={qid}, Dispatch Header = 0xb02 "
                         f"(type=2, barrier=1, acquire=1, release=1), setup=3, grid=[1024, 1, 1], "
                         f"workgroup=[32, 1, 1], private_seg_size=0, group_seg_size=0, "
                         f"kernel_obj=0x7f8ed23d8800, kernarg_address=0x7f8acce00000, completion_signal=0x0, "
                         f"correlation_id=0, rptr={wptr - 1}, wptr={wptr}")
        elif r < 0.58:
            lines.append(prefix(4, "rocvirtual.cpp", 1267, usec, pid, tid) +
                         f"SWq=0x{swq:x}, HWq=0x{hwq:x}, id={qid}, BarrierAND Header = 0x1503 "
                         f"(type=3, barrier=1, acquire=2, release=2), dep_signal=[0x0, 0x0, 0x0, 0x0, 0x0], "
                         f"completion_signal=0x7f8ad13ff900, rptr=0, wptr=1")
        elif r < 0.68:
            lines.append(prefix(3, "rocvirtual.cpp", 3351, usec, pid, tid) + "ShaderName : _Z12dummy_kernelPii")
        elif r < 0.80:
            lines.append(prefix(3, "hip_module.cpp", 812, usec, pid, tid) +
                         "\x1b[32m hipLaunchKernel ( 0x200d68, {32,1,1}, {32,1,1}, 0x7fffea224e60, 0, "
                         "stream:0x1952020 ) \x1b[0m")
        elif r < 0.975:
            lines.append(prefix(4, "command.cpp", 357, usec, pid, tid) +
                         "Command (KernelExecution) enqueued: 0x2095b30 to queue: 0x1952020")
        elif r < 0.992:
            lines.append(prefix(3, "rocdevice.cpp", 3048, usec, pid, tid) +
                         f"Created SWq=0x{swq:x} to map on HWq=0x{hwq:x} with size 16384 with priority 1, "
                         f"cooperative: 0")
        elif r < 0.996:
            lines.append(prefix(3, "rocdevice.cpp", 3141, usec, pid, tid) + f"acquireQueue refCount: 0x{hwq:x} (1)")
        else:
            lines.append(rng.choice(["/opt/amdgpu/share/libdrm/amdgpu.ids: No such file or directory",
                                     "[LAUNCH] Launching kernels on all streams...",
                                     "epoch 3 step 1200 loss 0.4412"]))
    return "\n".join(lines) + "\n"


def packet_blocks():
    rng = random.Random(42)
    return [make_block(rng, [459769, 459770 + i]).encode() for i in range(4)]


def real_blocks(real_log):
    """The captured log repeated to about BLOCK_LINES lines."""
    with open(real_log, "rb") as f:
        data = f.read()
    if not data.endswith(b"\n"):
        data += b"\n"
    per_copy = data.count(b"\n")
    return [data * max(1, BLOCK_LINES // per_copy)]


def write_log(path, total_lines, blocks):
    with open(path, "wb") as f:
        written = 0
        i = 0
        while written < total_lines:
            block = blocks[i % len(blocks)]
            n = block.count(b"\n")
            if written + n > total_lines:
                block = b"".join(block.splitlines(keepends=True)[:total_lines - written])
                n = total_lines - written
            f.write(block)
            written += n
            i += 1


def run(cmd, stdin=None):
    """Starts cmd; returns its Popen."""
    return subprocess.Popen(cmd, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def timed(cmds):
    """Runs a pipeline (a list of argv, each reading the one before): wall
    seconds, CPU seconds of all its processes, and the last one's stdout."""
    start = time.perf_counter()
    procs = []
    for cmd in cmds:
        procs.append(run(cmd, stdin=procs[-1].stdout if procs else None))
        if len(procs) > 1:
            procs[-2].stdout.close()  # the reader holds it now
    out = procs[-1].stdout.read()
    procs[-1].stdout.close()
    # wait4 each process ourselves: Popen.wait would reap it and lose its rusage.
    cpu = 0.0
    for p in procs:
        _, status, ru = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        cpu += ru.ru_utime + ru.ru_stime
        err = p.stderr.read().decode(errors="replace").strip()
        p.stderr.close()
        # grep -c exits 1 when it counts nothing, which is still a count.
        if p.returncode != 0 and not (p.returncode == 1 and os.path.basename(p.args[0]) == "grep"):
            sys.exit(f"bench-queue-finder: {' '.join(p.args)} exited with {p.returncode}: {err}")
    return time.perf_counter() - start, cpu, out


def peak_rss_kib(cmd):
    """The peak resident set of cmd, in a run of its own. ru_maxrss of a
    child forked from this (large) Python process counts the Python pages it
    had before exec, so the program's own high-water mark (VmHWM) is sampled
    every few milliseconds instead; it only grows, so the last sample before
    exit is the peak up to the final few milliseconds."""
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    peak = 0
    while p.poll() is None:
        try:
            with open(f"/proc/{p.pid}/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        peak = max(peak, int(line.split()[1]))
        except (FileNotFoundError, ProcessLookupError, ValueError):
            pass
        time.sleep(0.002)
    return peak


def summary(values):
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def measure(cases, runs):
    """cases: name -> pipeline. Interleaved runs; per name the summaries,
    with the hypervisor's steal during each run (ms, all CPUs)."""
    samples = {name: {"wall": [], "cpu": [], "steal": []} for name in cases}
    outputs = {}
    for _ in range(runs):
        for name, cmds in cases.items():
            steal_before = host_steal.steal_ms()
            wall, cpu, out = timed(cmds)
            samples[name]["steal"].append(host_steal.steal_ms() - steal_before)
            samples[name]["wall"].append(wall)
            samples[name]["cpu"].append(cpu)
            outputs[name] = out
    return {name: {"wall_s": summary(s["wall"]), "cpu_s": summary(s["cpu"]), "steal_ms": summary(s["steal"])}
            for name, s in samples.items()}, outputs


def print_table(title, results, size, qf_name, grep_name):
    print(title)
    print(f"  {'command':<22} {'wall median':>11} {'(min-max)':>15} {'GB/s':>5} {'CPU median':>10} {'(min-max)':>15} "
          f"{'steal ms (max)':>14}")
    for name, r in results.items():
        w, c, st = r["wall_s"], r["cpu_s"], r["steal_ms"]
        print(f"  {name:<22} {w['median']:>10.3f}s {w['min']:>6.3f}-{w['max']:<6.3f}s {size / 1e9 / w['median']:>5.2f} "
              f"{c['median']:>9.3f}s {c['min']:>6.3f}-{c['max']:<6.3f}s {st['median']:>6.0f} ({st['max']:.0f})")
    wall = results[grep_name]["wall_s"]["median"] / results[qf_name]["wall_s"]["median"]
    cpu = results[grep_name]["cpu_s"]["median"] / results[qf_name]["cpu_s"]["median"]
    print(f"  grep / queue_finder: {wall:.2f}x wall, {cpu:.2f}x CPU (medians; above 1 means queue_finder is faster)")
    return {"wall": wall, "cpu": cpu}


def main():
    here = SCRIPTS_DIR
    ap = argparse.ArgumentParser(prog="bench-queue-finder", description=__doc__.splitlines()[0])
    ap.add_argument("--queue-finder", default=None,
                    help="queue_finder executable (default: build/queue_finder/queue_finder, then $PATH)")
    ap.add_argument("--baseline", default=None,
                    help="another queue_finder executable (an older build) timed in the same interleaved runs")
    ap.add_argument("--mix", choices=("real", "packets"), default="real", help="line mix (default: real)")
    ap.add_argument("--real-log", default=os.path.join(here, "..", "tests", "data", "real",
                                                       "hip-rocm7-amd-log-level4.log"),
                    help="the captured log the real mix repeats")
    ap.add_argument("--lines", type=int, default=13_000_000, help="log lines to generate (default 13 million)")
    ap.add_argument("--runs", type=int, default=5, help="timed runs of each command (at least 3)")
    ap.add_argument("--pipe", action="store_true", help="also time both reading a gzip-compressed copy from zcat")
    ap.add_argument("--dir", default=None, help="where to write the log (default: a temporary directory)")
    ap.add_argument("--json", action="store_true", help="print the results as one JSON object instead of tables")
    ap.add_argument("--keep", action="store_true", help="keep the generated log and print its path")
    args = ap.parse_args()
    if args.runs < 3:
        ap.error("--runs must be at least 3 for a median and a spread")
    if args.lines < 1:
        ap.error("--lines must be positive")

    qf = args.queue_finder
    if qf is None:
        built = os.path.join(here, "..", "build", "queue_finder", "queue_finder")
        qf = built if os.access(built, os.X_OK) else shutil.which("queue_finder")
    if not qf or not os.access(qf, os.X_OK):
        sys.exit("bench-queue-finder: no queue_finder executable found; build it or pass --queue-finder PATH.")
    if args.baseline and not os.access(args.baseline, os.X_OK):
        sys.exit(f"bench-queue-finder: --baseline {args.baseline} is not an executable.")
    tools = {name: shutil.which(name) for name in ("grep", "zcat", "gzip")}
    for name in ("grep",) + (("zcat", "gzip") if args.pipe else ()):
        if not tools[name]:
            sys.exit(f"bench-queue-finder: {name} is not installed.")
    if args.mix == "real" and not os.path.isfile(args.real_log):
        sys.exit(f"bench-queue-finder: {args.real_log} not found; pass --real-log PATH or use --mix packets.")

    tmp = tempfile.mkdtemp(prefix="bench-queue-finder-", dir=args.dir)
    log = os.path.join(tmp, "amd-log-level4.log")
    report = {"date": time.strftime("%Y-%m-%d %H:%M:%S %z"), "mix": args.mix, "lines": args.lines, "runs": args.runs,
              "queue_finder": os.path.abspath(qf), "cpus": os.cpu_count()}
    if args.baseline:
        report["baseline"] = os.path.abspath(args.baseline)
    say = (lambda *a: print(*a, file=sys.stderr)) if args.json else print
    try:
        t0 = time.perf_counter()
        write_log(log, args.lines, real_blocks(args.real_log) if args.mix == "real" else packet_blocks())
        size = os.path.getsize(log)
        report["bytes"] = size
        say(f"generated {args.lines} lines ({args.mix} mix), {size / 1e9:.2f} GB in {time.perf_counter() - t0:.1f} s: {log}")

        cases = {"queue_finder": [[qf, "--no-live", "--log", log]],
                 "grep -c": [[tools["grep"], "-c", PATTERN, log]]}
        if args.baseline:
            cases["baseline"] = [[args.baseline, "--no-live", "--log", log]]
        # Warm the page cache and check that both run.
        for cmds in cases.values():
            timed(cmds)
        report["load_before"] = os.getloadavg()
        results, outputs = measure(cases, args.runs)
        report["load_after"] = os.getloadavg()
        report["grep_count"] = int(outputs["grep -c"])
        report["file"] = results
        report["queue_finder_peak_rss_kib"] = peak_rss_kib(cases["queue_finder"][0])

        if args.pipe:
            gz = log + ".gz"
            with open(gz, "wb") as f:
                subprocess.run([tools["gzip"], "-1", "-c", log], stdout=f, check=True)
            os.unlink(log)  # only the compressed copy is read from here on
            pipes = {"zcat | queue_finder": [[tools["zcat"], gz], [qf, "--no-live", "--log", "-"]],
                     "zcat | grep -c": [[tools["zcat"], gz], [tools["grep"], "-c", PATTERN]]}
            for cmds in pipes.values():
                timed(cmds)
            report["pipe_load_before"] = os.getloadavg()
            report["pipe"], _ = measure(pipes, args.runs)
            report["pipe_load_after"] = os.getloadavg()

        if args.json:
            json.dump(report, sys.stdout, indent=2)
            print()
            return
        print(f"grep -c {PATTERN} counted {report['grep_count']} lines; {os.cpu_count()} CPUs; "
              f"load average before {report['load_before'][0]:.2f}, after {report['load_after'][0]:.2f}")
        print_table(f"{args.runs} interleaved runs on the file:", results, size, "queue_finder", "grep -c")
        if args.baseline:
            wall = results["baseline"]["wall_s"]["median"] / results["queue_finder"]["wall_s"]["median"]
            cpu = results["baseline"]["cpu_s"]["median"] / results["queue_finder"]["cpu_s"]["median"]
            print(f"  baseline / queue_finder: {wall:.2f}x wall, {cpu:.2f}x CPU (above 1 means queue_finder is faster)")
        print(f"  queue_finder peak RSS (VmHWM, a separate run): {report['queue_finder_peak_rss_kib'] / 1024:.1f} MiB")
        if args.pipe:
            print(f"load average before {report['pipe_load_before'][0]:.2f}, after {report['pipe_load_after'][0]:.2f}")
            print_table(f"{args.runs} interleaved runs from zcat (CPU: both processes):", report["pipe"], size,
                        "zcat | queue_finder", "zcat | grep -c")
        if args.keep:
            print(f"kept {tmp}")
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
