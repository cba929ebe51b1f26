#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""gpreemptctl bench on an emulated node (run under kfdemu-run): the cycles,
the read-index watch, an interruption and a target that exits mid-run, each
leaving nothing suspended, and the refusals. TAP output.

  kfdemu-run --gpus 1 -- tests/gpreemptctl/test-bench.py GPREEMPTCTL KFDEMU_APP
"""
import json
import os
import signal
import subprocess
import sys
import time

results = []


def check(name, ok, detail=""):
    results.append((name, ok, detail))


gpreemptctl, app = sys.argv[1], sys.argv[2]


def start(*args):
    """A kfdemu-app, once it printed READY: (Popen, pid)."""
    p = subprocess.Popen([app, "--report", "none", *args], stdout=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    if not line.startswith("READY pid="):
        raise SystemExit(f"Bail out! kfdemu-app did not start: {line!r}")
    return p, int(line.split()[1].split("=")[1])


def ctl(*args):
    return subprocess.run([gpreemptctl, *args], capture_output=True, text=True, timeout=120)


def advances(pid):
    """How often the target's read indices moved in half a second: it runs, nothing of it is suspended."""
    p = ctl("bench", str(pid), "--watch-read-index", "500ms", "--json")
    return len(json.loads(p.stdout)["read_index"]["advances"]) if p.returncode == 0 else -1


busy, busy_pid = start("--continuous", "--queues", "3", "--kernel-us", "200")

p = ctl("bench", str(busy_pid), "--cycles", "10", "--hold", "1ms", "--gap", "1ms", "--json")
r = json.loads(p.stdout) if p.returncode == 0 else {}
check("10 cycles of 3 queues: every call done",
      p.returncode == 0 and r["cycles"] == 10 and r["targets"] == [{"pid": busy_pid, "queues": 3}] and
      all(r[op]["calls"] == 10 and r[op]["queues_done"] == 30 and r[op]["queues_error"] == 0
          for op in ("suspend", "resume")), p.stdout + p.stderr)
check("wall and thread CPU percentiles", p.returncode == 0 and
      0 < r["suspend"]["wall_p50_us"] <= r["suspend"]["wall_p99_us"] <= r["suspend"]["wall_max_us"] and
      0 < r["resume"]["thread_cpu_p50_us"] <= r["resume"]["thread_cpu_p99_us"], p.stdout)
check("the target runs on after the bench", advances(busy_pid) > 0)

p = ctl("bench", str(busy_pid), "--cycles", "3", "--hold", "1ms", "--gap", "1ms")
check("a human table", p.returncode == 0 and "wall p50 us" in p.stdout and "thread CPU p99" in p.stdout and
      p.stdout.count("\nsuspend ") == 1, p.stdout)

# SIGINT mid-run: the cycle under way resumes, then the bench reports what it did
bench = subprocess.Popen([gpreemptctl, "bench", str(busy_pid), "--cycles", "100000", "--hold", "2ms", "--json"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
time.sleep(1)
bench.send_signal(signal.SIGINT)
out, err = bench.communicate(timeout=60)
r = json.loads(out) if bench.returncode == 0 else {}
check("SIGINT: ends early with what it measured", bench.returncode == 0 and 0 < r["cycles"] < 100000 and
      r["suspend"]["calls"] == r["resume"]["calls"], out[-300:] + err)
check("SIGINT: nothing left suspended", advances(busy_pid) > 0)

# a target that exits while measured
short, short_pid = start("--continuous", "--kernel-us", "200", "--duration", "1")
p = ctl("bench", str(short_pid), "--cycles", "100000", "--hold", "1ms", "--gap", "1ms")
short.wait(timeout=60)
check("a target that exits mid-run: exit 4, says so", p.returncode == 4 and str(short_pid) in p.stderr, p.stderr)
short, short_pid = start("--continuous", "--kernel-us", "200", "--duration", "1")
p = ctl("bench", str(short_pid), "--cycles", "100000", "--hold", "1ms", "--gap", "1ms", "--json")
short.wait(timeout=60)
try:
    said = json.loads(p.stdout).get("error", "")
except ValueError:
    said = ""
check("a target that exits mid-run, --json: one document with the reason", p.returncode == 4 and str(short_pid) in said,
      p.stdout + p.stderr)

# the read-index watch on an open-loop target: one packet per request
online, online_pid = start("--rate", "200", "--kernel-us", "100", "--duration", "3")
p = ctl("bench", str(online_pid), "--watch-read-index", "1s", "--json")
w = json.loads(p.stdout)["read_index"] if p.returncode == 0 else {}
indices = [a["read_index"] for a in w.get("advances", [])]
check("the watch sees the read index advance, in order, stamped in order",
      p.returncode == 0 and 100 <= len(indices) <= 300 and indices == sorted(indices) and
      [a["ns"] for a in w["advances"]] == sorted(a["ns"] for a in w["advances"]) and w["poll_p50_us"] > 0,
      p.stdout[:400] + p.stderr)
online.wait(timeout=60)

p = ctl("bench", str(os.getpid()))
check("a process without the GPU: exit 2, says why", p.returncode == 2 and "does not use the GPU" in p.stderr, p.stderr)
gone = subprocess.Popen(["true"])
gone.wait()
p = ctl("bench", str(gone.pid))
check("no such process: exit 2", p.returncode == 2 and "no such process" in p.stderr, p.stderr)
p = ctl("bench", str(gone.pid), "--json")
check("no such process, --json: the reason as JSON on stdout",
      p.returncode == 2 and "no such process" in json.loads(p.stdout or "{}").get("error", ""), p.stdout + p.stderr)
idle, idle_pid = start("--rate", "0.001", "--duration", "100000", "--queues", "1")
p = ctl("bench", str(idle_pid), "--gpu", "1", "--cycles", "1")
check("no queue on the GPUs asked for: exit 2", p.returncode == 2 and "no GPU queue on the GPUs asked for" in p.stderr,
      p.stderr)
idle.terminate()
idle.wait(timeout=60)
for args, what in ((["--cycles", "0", "1"], "--cycles"), (["--hold", "2h", "1"], "--hold"),
                   (["--watch-read-index", "0", "1"], "--watch-read-index"), ([], "expected the PIDs"),
                   (["notapid"], "is not a PID"), (["7", "8", "7"], "process 7 is given twice")):
    p = ctl("bench", *args)
    check(f"usage error: {what}", p.returncode == 1 and what in p.stderr, p.stderr)
p = ctl("bench", "--help")
check("--help", p.returncode == 0 and "--watch-read-index" in p.stdout)

busy.terminate()
busy.wait(timeout=60)
print("1..%d" % len(results))
for i, (name, ok, detail) in enumerate(results, 1):
    print("%s %d - %s" % ("ok" if ok else "not ok", i, name))
    if not ok and detail:
        print("# " + detail.replace("\n", "\n# "))
sys.exit(0 if all(ok for _, ok, _ in results) else 1)
