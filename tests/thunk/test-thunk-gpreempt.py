#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""gpreempt on a program built on Debian's ROCt thunk (libhsakmt 5.2.3):
thunk-aql-target runs kernel dispatches on two AQL queues inside the
emulated node. queue_finder (sysfs; with --snapshot also the debug-trap
snapshot and debugfs mqds/hqds) and `gpreemptctl queues` find its queues.
As the 5.2.3 thunk leaves it, the runtime is never enabled: `gpreemptctl
hold` refuses, saying why and what to do, and the target keeps running.
After the target's own RUNTIME_ENABLE, `gpreemptctl hold` suspends its
queues (its rounds stop) and resumes them (its rounds go on), and
gpreemptd, with the target as offline work, suspends and resumes it while
an online kfdemu-app runs. TAP output; run inside kfdemu-run on the MI210
node:

  test-thunk-gpreempt.py THUNK_AQL_TARGET GPREEMPTCTL QUEUE_FINDER GPREEMPTD KFDEMU_APP
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

sys.dont_write_bytecode = True

QUEUES = 2
KERNEL_US = 2000


class Target:
    """thunk-aql-target running until stopped; counts its rounds."""

    def __init__(self, binary, runtime_enable):
        args = [binary, "--queues", str(QUEUES), "--rounds", "0", "--kernel-us", str(KERNEL_US)]
        if runtime_enable:
            args.append("--runtime-enable")
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
        self.rounds = 0
        self.ready = threading.Event()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        if not self.ready.wait(10):
            raise RuntimeError("thunk-aql-target did not create its queues")

    def _read(self):
        for line in self.proc.stdout:
            if line.startswith("queues "):
                self.ready.set()
            elif line.startswith("round "):
                self.rounds = int(line.split()[1])

    def rounds_in(self, seconds):
        start = self.rounds
        time.sleep(seconds)
        return self.rounds - start

    def log(self):
        with open(self.stderr.name) as f:
            return f.read()

    def stop(self):
        self.proc.terminate()
        self.proc.wait(10)


class Tap:
    def __init__(self):
        self.n = 0
        self.failed = 0

    def check(self, ok, name, detail=""):
        self.n += 1
        self.failed += not ok
        print("%sok %d - %s" % ("" if ok else "not ", self.n, name))
        if not ok and detail:
            for line in str(detail).splitlines():
                print("# " + line)
        sys.stdout.flush()


def run(argv, timeout=30):
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout)


def queue_finder_queues(queue_finder, pid, *options):
    out = json.loads(run([queue_finder, "--json", *options, str(pid)]).stdout)
    return out["processes"][0]["queues"] if out["processes"] else []


def found_by_queue_finder(tap, queue_finder, target):
    """Without the snapshot, two queues of one size cannot be told apart
    in the debugfs dumps: only sysfs names them. The snapshot joins all
    four sources."""
    pid = target.proc.pid
    queues = queue_finder_queues(queue_finder, pid)
    tap.check(sorted(q["queue_id"] for q in queues if "sysfs" in q["sources"]) == list(range(QUEUES)),
              "queue_finder finds the target's queues in sysfs", json.dumps(queues))
    queues = queue_finder_queues(queue_finder, pid, "--snapshot")
    wanted = {"sysfs", "snapshot", "mqds", "hqds"}
    tap.check(sorted(q["queue_id"] for q in queues if wanted <= set(q["sources"])) == list(range(QUEUES)),
              "queue_finder --snapshot joins them with the snapshot and debugfs mqds/hqds", json.dumps(queues))


def found_by_gpreemptctl(tap, gpreemptctl, target, runtime_state):
    out = json.loads(run([gpreemptctl, "queues", str(target.proc.pid), "--json"]).stdout)
    tap.check(out["runtime_state"] == runtime_state and len(out["queues"]) == QUEUES and
              all(q["type"] == "aql" for q in out["queues"]),
              "gpreemptctl queues lists %d AQL queues, runtime %s" % (QUEUES, runtime_state), json.dumps(out))


class Daemon:
    """gpreemptd with the thunk target as offline work and kfdemu-app
    --rate as online work, in directories of its own."""

    WORKLOADS = ("[Workload]\nName=serve\nClass=online\nMatchCommandLine=*--rate*\n"
                 "[Workload]\nName=thunk\nClass=offline\nMatchCommandLine=*thunk-aql-target*\n")

    def __init__(self, gpreemptd):
        self.dir = tempfile.mkdtemp(prefix="thunk-gpreempt-")
        os.makedirs(os.path.join(self.dir, "conf", "workloads.d"))
        with open(os.path.join(self.dir, "conf", "gpreemptd.conf"), "w") as f:
            f.write("[Daemon]\nLogLevel=info\nDiscoveryIntervalMs=20\n")
        with open(os.path.join(self.dir, "conf", "workloads.d", "50-test.conf"), "w") as f:
            f.write(self.WORKLOADS)
        self.runtime_dir = os.path.join(self.dir, "run")
        self.stderr = open(os.path.join(self.dir, "stderr"), "w+")
        self.proc = subprocess.Popen([gpreemptd, "--config-dir", os.path.join(self.dir, "conf"),
                                      "--runtime-dir", self.runtime_dir], stderr=self.stderr)

    def status(self, gpreemptctl):
        env = dict(os.environ, GPREEMPT_RUNTIME_DIR=self.runtime_dir)
        out = subprocess.run([gpreemptctl, "status", "--json"], capture_output=True, text=True, env=env, timeout=30)
        return json.loads(out.stdout) if out.returncode == 0 else None

    def process(self, gpreemptctl, pid):
        status = self.status(gpreemptctl)
        return next((p for p in status["processes"] if p["pid"] == pid), None) if status else None

    def log(self):
        with open(self.stderr.name) as f:
            return f.read()

    def stop(self):
        self.proc.terminate()
        self.proc.wait(30)
        self.stderr.seek(0)
        log = self.stderr.read()
        self.stderr.close()
        shutil.rmtree(self.dir)
        return log


def attached_entry(daemon, gpreemptctl, pid):
    """The daemon's status entry of pid once it has attached (or None)."""
    deadline = time.monotonic() + 10
    entry = None
    while time.monotonic() < deadline and not (entry and entry.get("attached")):
        time.sleep(0.1)
        entry = daemon.process(gpreemptctl, pid)
    return entry


def managed_by_the_daemon(tap, target_binary, gpreemptctl, gpreemptd, kfdemu_app):
    daemon = Daemon(gpreemptd)
    target = Target(target_binary, runtime_enable=False)
    try:
        entry = attached_entry(daemon, gpreemptctl, target.proc.pid)
        env = dict(os.environ, GPREEMPT_RUNTIME_DIR=daemon.runtime_dir)
        table = subprocess.run([gpreemptctl, "status"], capture_output=True, text=True, env=env, timeout=30).stdout
        tap.check(entry is not None and entry.get("runtime") == "disabled" and
                  "not suspendable: its ROCm runtime never enabled debugging (run it with ROCm 5.7 or newer)" in table,
                  "gpreemptctl status says the daemon cannot suspend it without the runtime, and what to do",
                  json.dumps(entry) + "\n" + table)
        # each online burst asks for a suspension that fails the same way
        for _ in range(3):
            subprocess.run([kfdemu_app, "--rate", "200", "--kernel-us", "1000", "--duration", "0.3"],
                           stdout=subprocess.DEVNULL, check=True, timeout=30)
            time.sleep(0.3)
        said = [line for line in daemon.log().splitlines()
                if "Process %d:" % target.proc.pid in line and "debugging" in line]
        tap.check(len(said) == 1, "gpreemptd says once, not at every online burst, that it cannot suspend it",
                  "\n".join(said))
    finally:
        target.stop()
    target = Target(target_binary, runtime_enable=True)
    try:
        entry = attached_entry(daemon, gpreemptctl, target.proc.pid)
        tap.check(entry is not None and entry["class"] == "offline" and entry.get("runtime") == "enabled",
                  "gpreemptd manages the thunk target as offline work", json.dumps(entry))
        subprocess.run([kfdemu_app, "--rate", "200", "--kernel-us", "1000", "--duration", "1"],
                       stdout=subprocess.DEVNULL, check=True, timeout=30)
        time.sleep(0.2)
        entry = daemon.process(gpreemptctl, target.proc.pid) or {}
        tap.check(entry.get("suspends", 0) > 0 and entry.get("resumes") == entry.get("suspends"),
                  "while online work runs, gpreemptd suspends it and resumes it each time", json.dumps(entry))
        tap.check(target.rounds_in(0.5) > 0, "once the online work is over its rounds go on")
    finally:
        target.stop()
        log = daemon.stop()
    if tap.failed:
        print("# gpreemptd's log:\n" + "\n".join("# " + line for line in log.splitlines()[-20:]))


def main():
    target_binary, gpreemptctl, queue_finder, gpreemptd, kfdemu_app = sys.argv[1:6]
    tap = Tap()
    print("1..14")

    # As the 5.2.3 thunk leaves a process: no RUNTIME_ENABLE.
    target = Target(target_binary, runtime_enable=False)
    try:
        tap.check(target.rounds_in(0.3) > 0, "the thunk target's dispatches complete")
        found_by_queue_finder(tap, queue_finder, target)
        found_by_gpreemptctl(tap, gpreemptctl, target, "disabled")
        hold = run([gpreemptctl, "hold", str(target.proc.pid), "--for", "500ms"])
        said = hold.stderr + hold.stdout
        tap.check(hold.returncode != 0 and "never enabled debugging" in said and "ROCm 5.7 or newer" in said,
                  "gpreemptctl hold refuses it, saying the runtime never enabled debugging and what to run instead",
                  "exit %d\n%s" % (hold.returncode, said))
        tap.check(target.rounds_in(0.3) > 0, "the refused target keeps running")
    finally:
        target.stop()

    # The same program after its own RUNTIME_ENABLE.
    target = Target(target_binary, runtime_enable=True)
    try:
        found_by_gpreemptctl(tap, gpreemptctl, target, "enabled")
        hold = subprocess.Popen([gpreemptctl, "hold", str(target.proc.pid), "--for", "2s"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(0.7)
        held = target.rounds_in(0.8)
        out, err = hold.communicate(timeout=30)
        tap.check(hold.returncode == 0 and held == 0,
                  "gpreemptctl hold suspends its queues: no round completes while held",
                  "exit %d, %d rounds while held\n%s%s" % (hold.returncode, held, out, err))
        tap.check(target.rounds_in(0.5) > 0, "after the hold its rounds go on")
    finally:
        target.stop()

    managed_by_the_daemon(tap, target_binary, gpreemptctl, gpreemptd, kfdemu_app)
    return 1 if tap.failed else 0


if __name__ == "__main__":
    sys.exit(main())
