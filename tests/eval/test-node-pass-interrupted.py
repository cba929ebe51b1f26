#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""scripts/gpreempt_eval/node_pass.py told to end (SIGTERM, as
scripts/evaluate's runner sends it) with no kfdemu-run around it, as on a
real node: what it started must be ended by itself, the daemon before the
offline job. Its processes are stand-ins (fake-pass-process.py). TAP output:

  PYTHONPATH=scripts:tests/python tests/eval/test-node-pass-interrupted.py
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

from gpreempt_eval import child_env, module_argv
from tap import check, finish

FAKE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fake-pass-process.py")


def events(log_path):
    """(role, pid, event, seconds) of the stand-ins, in order."""
    try:
        with open(log_path) as f:
            return [(r, int(p), e, float(t)) for r, p, e, t in (line.split() for line in f)]
    except FileNotFoundError:
        return []


def wait_for(log_path, role, event, timeout_s=30):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if any(r == role and e == event for r, _, e, _ in events(log_path)):
            return True
        time.sleep(0.05)
    return False


def alive(pid):
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except FileNotFoundError:
        return False


def interrupt_pass(tmp, name, offline_args, when):
    """Starts a pass of stand-ins, sends it SIGTERM once `when` (role, event)
    is logged, and checks how it ended."""
    log_path = os.path.join(tmp, name + ".log")
    daemon = os.path.join(tmp, "gpreemptd")
    with open(daemon, "w") as f:
        f.write("#!/bin/sh\nexec %s %s daemon \"$@\"\n" % (sys.executable, FAKE))
    os.chmod(daemon, 0o755)
    spec = {"duration_s": 60, "warmup_s": 0.1, "offline_kernels_per_request": 1,
            "online": [sys.executable, FAKE, "online"],
            "offline": [sys.executable, FAKE, "offline"] + offline_args,
            "gpreemptd": {"binary": daemon, "config_dir": tmp, "runtime_dir": os.path.join(tmp, "run")}}
    spec_path, result_path = os.path.join(tmp, name + ".json"), os.path.join(tmp, name + "-result.json")
    with open(spec_path, "w") as f:
        json.dump(spec, f)
    env = child_env(dict(os.environ, FAKE_LOG=log_path))
    node_pass = subprocess.Popen(module_argv("node_pass", spec_path, result_path), env=env,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                 start_new_session=True)
    started = wait_for(log_path, *when)
    check("%s: the pass reached %s %s" % (name, *when), started, events(log_path))
    node_pass.send_signal(signal.SIGTERM)
    try:
        status = node_pass.wait(timeout=30)
    except subprocess.TimeoutExpired:
        node_pass.kill()
        status = node_pass.wait()
    err = node_pass.stderr.read()
    check("%s: node_pass ends with status 1" % name, status == 1, "status %d: %s" % (status, err))
    try:
        with open(result_path) as f:
            result = json.load(f)
    except (OSError, ValueError) as e:
        result = {"error": "no result: %s" % e}
    check("%s: its result says it was interrupted" % name, "interrupted by SIGTERM" in result.get("error", ""),
          result)
    seen = events(log_path)
    pids = {(r, p) for r, p, e, _ in seen if e == "started"}
    left = [(r, p) for r, p in pids if alive(p)]
    check("%s: everything it started is gone" % name, not left, "%s; log: %s" % (left, seen))
    for _, pid in left:
        os.kill(pid, signal.SIGKILL)
    ended = {r: t for r, _, e, t in seen if e == "sigterm"}
    check("%s: the daemon and the offline job were told to end, the daemon first" % name,
          "daemon" in ended and "offline" in ended and ended["daemon"] < ended["offline"], seen)
    return seen


with tempfile.TemporaryDirectory(prefix="test-node-pass-interrupted-") as tmp:
    seen = interrupt_pass(tmp, "serving", [], ("online", "ready"))
    check("serving: the online service was told to end too",
          any(r == "online" and e == "sigterm" for r, _, e, _ in seen), seen)
    # the offline job not yet ready: the start is interrupted before the pass holds it
    interrupt_pass(tmp, "starting", ["--ready-after", "60"], ("offline", "started"))
finish()
