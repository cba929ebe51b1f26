#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""scripts/real-node/bench-preemption on an emulated node: it runs, prints
the modelled values and the kfdemu keys they stand for, and refuses what it
cannot measure with a message that says what to do. TAP output.

  PYTHONPATH=scripts:tests/python tests/eval/test-bench-preemption.py SOURCE_ROOT BUILD_DIR
"""
import json
import os
import subprocess
import sys
from tap import check, finish


source_root, build = sys.argv[1], sys.argv[2]
command = os.path.join(source_root, "scripts", "real-node", "bench-preemption")
modelled = {"preempt_us": 200, "cwsr_save_us": 300, "cwsr_restore_us": 100}   # runner.DEFAULT_PREEMPT


def run(*args, env=None, user=None):
    argv = [command, "--build", build, *args]
    if user:
        argv = ["setpriv", "--reuid", user, "--regid", "nogroup", "--clear-groups", *argv]
    return subprocess.run(argv, capture_output=True, text=True, timeout=600, env={**os.environ, **(env or {})})


p = run("--kfdemu", "--cycles", "20", "--seconds", "1", "--queues", "1,2", "--json")
check("runs on kfdemu", p.returncode == 0, p.stderr[-800:])
result = json.loads(p.stdout) if p.returncode == 0 else {}
rows = {(r["queues"], r["target"]): r for r in result.get("calls", [])}
check("a row per queue count, idle and busy", sorted(rows) == [(1, "busy"), (1, "idle"), (2, "busy"), (2, "idle")],
      str(sorted(rows)))
for (queues, target), r in sorted(rows.items()):
    s, u = r["suspend"], r["resume"]
    # HWS: the emulated ioctl returns once the unmap fence would signal, PreemptMicroseconds after the call
    check(f"{queues} queue(s) {target}: every call suspended every queue, no faster than the model's unmap",
          s["calls"] == 20 and s["queues_done"] == 20 * queues and u["queues_done"] == 20 * queues and
          s["wall_p50_us"] >= modelled["preempt_us"] and s["wall_p99_us"] >= s["wall_p50_us"], json.dumps(s))
    check(f"{queues} queue(s) {target}: the thread's CPU time in the call is measured and below its wall time",
          0 < s["thread_cpu_p50_us"] <= s["wall_p99_us"] and 0 < u["thread_cpu_p50_us"], json.dumps(u))
phases = [p["phase"] for p in result.get("online_delay", [])]
check("the online kernels' latency in each phase",
      phases == ["offline running", "suspend/resume cycles", "offline held suspended"] and
      all(p["requests"] > 0 and p["latency_ms"]["p99"] > 0 for p in result["online_delay"]), str(phases))
ri = result.get("read_index", {})
# kfdemu writes the read index when the packet completes, after its end timestamp
check("read-index advances paired with completion signals, none before them",
      ri.get("samples", 0) > 0 and ri.get("early", 1) == 0 and ri.get("min_us", -1) >= 0, json.dumps(ri))
keys = result.get("kfdemu_keys", {})
gpu = keys.get("GPU0", {})
check("the kfdemu keys the figures stand for",
      gpu.get("PreemptMicroseconds", 0) >= modelled["preempt_us"] and gpu.get("CwsrSaveMicroseconds", -1) >= 0 and
      keys.get("Node", {}).get("FenceWaitSpins") in ("yes", "no") and
      keys.get("cost_model") == {"PreemptCostModel": "constant", "ReadIndexAdvance": "completion"}, json.dumps(keys))
check("the modelled values are printed", result.get("modelled") == modelled, json.dumps(result.get("modelled")))

p = run("--kfdemu", "--cycles", "5", "--seconds", "1", "--queues", "1")
check("a human table with the keys", p.returncode == 0 and "PreemptMicroseconds=" in p.stdout and
      "[Node]" in p.stdout and "FenceWaitSpins=" in p.stdout and
      "thread CPU p50 us" in p.stdout and "simulated on kfdemu" in p.stdout, p.stdout[-800:] + p.stderr[-400:])

p = run(env={"GPREEMPT_KFD_DEVICE": "/nonexistent/kfd"})
check("no KFD device: exit 2, says what to do", p.returncode == 2 and "no /nonexistent/kfd" in p.stderr and
      "--kfdemu" in p.stderr, p.stderr)
p = run("--kfdemu", "--app", "/nonexistent/app")
check("no targets: exit 2, names the program", p.returncode == 2 and "no targets: /nonexistent/app" in p.stderr,
      p.stderr)
p = run("--kfdemu", user="nobody")
check("not root: exit 2, says to run it as root", p.returncode == 2 and "run it as root" in p.stderr, p.stderr)
p = run("--kfdemu", "--queues", "1,x")
check("bad --queues: a usage error", p.returncode == 2 and "--queues" in p.stderr, p.stderr)
p = run("--help")
check("--help", p.returncode == 0 and "PreemptMicroseconds" not in p.stderr and "--kfdemu" in p.stdout, p.stdout[:300])

finish()
