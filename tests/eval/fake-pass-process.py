#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A stand-in for the processes a pass of scripts/gpreempt_eval/node_pass.py
starts, for tests of how a pass ends on a node without kfdemu-run (whose
leftover-killing would hide what the pass itself failed to end):

  fake-pass-process.py daemon --config-dir DIR --runtime-dir DIR   (gpreemptd)
  fake-pass-process.py offline|online [--ready-after S] [--duration S]  (kfdemu-app)

Each appends "ROLE PID EVENT MONOTONIC_SECONDS" lines to $FAKE_LOG: started,
ready, sigterm, exit. The daemon says READY=1 to $NOTIFY_SOCKET and
"Process N: attached" for every offline stand-in it finds; an app prints
READY, a JSON report on SIGUSR1, and its final report when it ends.
"""
import json
import os
import signal
import socket
import sys
import time

ROLE = sys.argv[1]


def log(event):
    with open(os.environ["FAKE_LOG"], "a") as f:
        f.write("%s %d %s %.6f\n" % (ROLE, os.getpid(), event, time.monotonic()))


def option(name, default):
    return float(sys.argv[sys.argv.index(name) + 1]) if name in sys.argv else default


def on_sigterm(signum, frame):
    log("sigterm")
    if ROLE != "daemon":
        print(json.dumps({"final": True, "queues": []}), flush=True)
    log("exit")
    sys.exit(0)


def offline_stand_ins():
    for entry in os.listdir("/proc"):
        try:
            with open("/proc/%s/cmdline" % entry, "rb") as f:
                args = f.read().split(b"\0")
        except OSError:
            continue
        if len(args) > 2 and args[1].endswith(b"fake-pass-process.py") and args[2] == b"offline":
            yield int(entry)


def daemon():
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    notify.sendto(b"READY=1", os.environ["NOTIFY_SOCKET"])
    log("ready")
    while True:
        for pid in offline_stand_ins():
            print("Process %d: attached" % pid, file=sys.stderr, flush=True)
        time.sleep(0.05)


def app():
    signal.signal(signal.SIGUSR1, lambda signum, frame: print(
        json.dumps({"queues": [{"read_dispatch_id": 0}], "elapsed_s": time.monotonic()}), flush=True))
    time.sleep(option("--ready-after", 0))
    print("READY pid=%d queues=1" % os.getpid(), flush=True)
    log("ready")
    deadline = time.monotonic() + option("--duration", 3600)
    while time.monotonic() < deadline:
        time.sleep(0.05)
    print(json.dumps({"final": True, "requests": 0}), flush=True)
    log("exit")


signal.signal(signal.SIGTERM, on_sigterm)
log("started")
daemon() if ROLE == "daemon" else app()
