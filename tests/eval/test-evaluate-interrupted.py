#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""scripts/evaluate interrupted while a pass with gpreemptd runs: by SIGTERM
to it alone (a service manager, `timeout`), and by SIGINT to its process
group (Ctrl-C). Either way the pass under way ends its daemon first, then
its jobs, evaluate says so and exits 1 within seconds, and nothing it
started is left running, nor its scratch directory. TAP output:

  PYTHONPATH=scripts:tests/python tests/eval/test-evaluate-interrupted.py SOURCE_DIR BUILD_DIR
"""
import glob
import os
import signal
import subprocess
import sys
import tempfile
import time

from gpreempt_eval import runner
from tap import check, finish

SOURCE, BUILD = sys.argv[1], sys.argv[2]
DAEMON = os.path.realpath(os.path.join(BUILD, "controller", "gpreemptd", "gpreemptd"))


def marked_processes(mark):
    """(pid, exe) of the live processes whose environment holds mark: what
    evaluate started, whatever session each runs in (the pass puts its
    programs in sessions of their own), and still found once reparented."""
    found = []
    for environ in glob.glob("/proc/[0-9]*/environ"):
        d = os.path.dirname(environ)
        try:
            with open(environ, "rb") as f:
                if mark not in f.read().split(b"\0"):
                    continue
            with open(os.path.join(d, "stat"), "rb") as f:
                if f.read().rsplit(b")", 1)[1].split()[0] == b"Z":
                    continue
            found.append((int(os.path.basename(d)), os.readlink(os.path.join(d, "exe"))))
        except (OSError, IndexError):
            continue
    return found


def wait_until(predicate, timeout_s):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    return predicate()


def interrupt_during_a_pass(how, tmp):
    scratch_before = set(glob.glob(os.path.join(runner.scratch_parent(), "gpreempt-eval-*")))
    err_path = os.path.join(tmp, how + ".err")
    mark = ("GPREEMPT_TEST_MARK=%s-%d" % (how, os.getpid())).encode()
    env = dict(os.environ, GPREEMPT_TEST_MARK=mark.decode().split("=", 1)[1])
    with open(err_path, "w") as err:
        ev = subprocess.Popen([os.path.join(SOURCE, "scripts", "evaluate"), "--quick", "--runs", "1",
                               "--build", BUILD, "--only", "high-load", "--out", os.path.join(tmp, how)],
                              stdout=subprocess.DEVNULL, stderr=err, start_new_session=True, env=env)
    # the baseline pass first, then the one with gpreemptd: interrupted once the daemon runs
    daemon = wait_until(lambda: [p for p in marked_processes(mark) if p[1] == DAEMON], 180)
    check("%s: the pass with gpreemptd started" % how, daemon, open(err_path).read())
    time.sleep(2)
    if how == "SIGTERM":
        ev.send_signal(signal.SIGTERM)
    else:
        os.killpg(ev.pid, signal.SIGINT)
    t = time.monotonic()
    try:
        rc = ev.wait(timeout=60)
    except subprocess.TimeoutExpired:
        ev.kill()
        rc = ev.wait()
    took = time.monotonic() - t
    text = open(err_path).read()
    check("%s: evaluate exits 1 within 30 s" % how, rc == 1 and took < 30, "status %d after %.1f s" % (rc, took))
    check("%s: it says the pass ended its processes, the daemon first" % how,
          "the pass under way ended: interrupted by %s; the pass's processes were ended, the daemon first"
          % how in text, text)
    left = wait_until(lambda: not marked_processes(mark), 10)
    check("%s: nothing it started is left running" % how, left, marked_processes(mark))
    for pid, _ in marked_processes(mark):
        os.kill(pid, signal.SIGKILL)
    scratch_left = set(glob.glob(os.path.join(runner.scratch_parent(), "gpreempt-eval-*"))) - scratch_before
    check("%s: its scratch directory is removed" % how, not scratch_left, scratch_left)


with tempfile.TemporaryDirectory(prefix="test-evaluate-interrupted-") as tmp:
    interrupt_during_a_pass("SIGTERM", tmp)
    interrupt_during_a_pass("SIGINT", tmp)
finish()
