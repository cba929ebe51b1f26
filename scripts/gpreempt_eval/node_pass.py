# SPDX-License-Identifier: MIT
"""One pass of one scenario, run *inside* an emulated node (kfdemu-run) or on
a real GPU node: start the offline job, optionally gpreemptd, then the online
service for the measured window; collect what each reported.

Usage: python3 -m gpreempt_eval.node_pass SPEC.json RESULT.json
       (the spec is written by runner.py, which starts it so)

The offline job's throughput is measured over the online window only (its
queues' read indices before and after, from SIGUSR1 reports), so warm-up and
teardown do not dilute it. gpreemptd's suspend/resume log lines are stamped
as they arrive; transitions and time suspended come from them.
"""
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

from . import Interrupted, ignore_interruptions, raise_on_sigterm

READY_TIMEOUT_S = 30.0
# The daemon logs "Process PID: N queues suspended|resumed on ..." per transition.
DAEMON_EVENT = re.compile(r"Process (\d+): \d+ queues (suspended|resumed) on")


class LineReader:
    """Collects a child's output lines, each stamped with CLOCK_MONOTONIC."""

    def __init__(self, stream):
        self.lines = []
        self.cond = threading.Condition()
        self.thread = threading.Thread(target=self._run, args=(stream,), daemon=True)
        self.thread.start()

    def _run(self, stream):
        for raw in stream:
            with self.cond:
                self.lines.append((time.monotonic(), raw.rstrip("\n")))
                self.cond.notify_all()
        with self.cond:
            self.lines.append((time.monotonic(), None))
            self.cond.notify_all()

    def wait_for(self, predicate, start, timeout):
        """The first line at or after index `start` that satisfies predicate."""
        deadline = time.monotonic() + timeout
        with self.cond:
            i = start
            while True:
                while i < len(self.lines):
                    stamp, line = self.lines[i]
                    if line is None:
                        return None, i
                    if predicate(line):
                        return line, i + 1
                    i += 1
                left = deadline - time.monotonic()
                if left <= 0:
                    return None, i
                self.cond.wait(left)


class HostProbe:
    """How late the host ran this (real-time) process's thread during the
    pass: a pass in which it could not be scheduled for many milliseconds
    measured the host, not the model."""

    PERIOD_S = 0.001

    def __init__(self):
        self.max_delay_s = 0.0
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self.stopped.is_set():
            t = time.monotonic()
            time.sleep(self.PERIOD_S)
            self.max_delay_s = max(self.max_delay_s, time.monotonic() - t - self.PERIOD_S)

    def stop(self):
        self.stopped.set()
        self.thread.join()
        return self.max_delay_s


def start_app(argv, env=None):
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    out, err = LineReader(p.stdout), LineReader(p.stderr)
    line, _ = out.wait_for(lambda l: l.startswith("READY"), 0, READY_TIMEOUT_S)
    if line is None:
        p.kill()
        p.wait()
        raise RuntimeError("%s did not become ready: %s" % (argv[0], "; ".join(l for _, l in err.lines if l)))
    return p, out, err


def report(proc, out, after):
    """Ask kfdemu-app for its report (SIGUSR1) and return it with its index."""
    proc.send_signal(signal.SIGUSR1)
    line, nxt = out.wait_for(lambda l: l.startswith("{"), after, READY_TIMEOUT_S)
    if line is None:
        raise RuntimeError("the offline job did not answer SIGUSR1 with a report")
    return json.loads(line), nxt


def dispatched(rep):
    return sum(q["read_dispatch_id"] for q in rep["queues"])


def stop(proc, out, err, what):
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise RuntimeError("%s did not stop within 60 s of SIGTERM" % what)
    out.thread.join(5)
    err.thread.join(5)
    finals = [json.loads(l) for _, l in out.lines if l and l.startswith("{") and '"final":true' in l]
    if proc.returncode != 0:
        raise RuntimeError("%s exited with status %d: %s" % (what, proc.returncode,
                                                             "; ".join(l for _, l in err.lines if l)))
    return finals[-1] if finals else None


def start_daemon(spec):
    """gpreemptd with the pass's configuration; returns once it said READY=1."""
    d = spec["gpreemptd"]
    notify_dir = tempfile.mkdtemp(prefix="gpreempt-eval-notify-")
    notify_path = os.path.join(notify_dir, "notify")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(notify_path)
    env = dict(os.environ, NOTIFY_SOCKET=notify_path)
    p = subprocess.Popen([d["binary"], "--config-dir", d["config_dir"], "--runtime-dir", d["runtime_dir"]],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    err = LineReader(p.stderr)
    sock.settimeout(READY_TIMEOUT_S)
    try:
        while b"READY=1" not in sock.recv(4096):
            pass
    except socket.timeout:
        p.kill()
        p.wait()
        raise RuntimeError("gpreemptd did not become ready: %s" % "; ".join(l for _, l in err.lines if l))
    finally:
        sock.close()
        os.unlink(notify_path)
        os.rmdir(notify_dir)
    return p, err


def wait_attached(err, pid):
    line, _ = err.wait_for(lambda l: ("Process %d: attached" % pid) in l, 0, READY_TIMEOUT_S)
    if line is None:
        raise RuntimeError("gpreemptd did not attach to the offline job (pid %d): %s"
                           % (pid, "; ".join(l for _, l in err.lines if l)))


def process_cpu_s(pid):
    """CPU time of a process, all its threads: utime + stime, the 14th and
    15th fields of /proc/PID/stat (proc(5)), the command name skipped."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def daemon_events(err, pid, t0, t1):
    """Transitions of `pid`, the time it spent suspended within [t0, t1] and
    its longest suspension there (what MaxSuspendMs= bounds)."""
    events = [(t, m.group(2)) for t, l in err.lines if l for m in [DAEMON_EVENT.search(l)]
              if m and int(m.group(1)) == pid]
    suspended_s, longest_s, since, n_suspend, n_resume = 0.0, 0.0, None, 0, 0

    def close(until):
        nonlocal suspended_s, longest_s
        span = max(0.0, min(until, t1) - max(since, t0))
        suspended_s += span
        longest_s = max(longest_s, span)

    for t, kind in events:
        if kind == "suspended":
            if since is None:
                since = t
            if t0 <= t <= t1:
                n_suspend += 1
        else:
            if since is not None:
                close(t)
            since = None
            if t0 <= t <= t1:
                n_resume += 1
    if since is not None:
        close(t1)
    return {"suspends": n_suspend, "resumes": n_resume, "suspended_s": suspended_s,
            "longest_suspend_s": longest_s}


def run(spec):
    result = {"window_s": None, "online": None, "offline": None, "gpreempt": None}
    offline = daemon = online = None
    try:
        if spec.get("gpreemptd"):
            daemon = start_daemon(spec)
        if spec.get("offline"):
            offline = start_app(spec["offline"])
            if daemon:
                wait_attached(daemon[1], offline[0].pid)
            time.sleep(spec["warmup_s"])
            before, nxt = report(offline[0], offline[1], 0)
        t0 = time.monotonic()
        daemon_cpu0 = process_cpu_s(daemon[0].pid) if daemon else None
        probe = HostProbe()
        if spec.get("online"):
            online = start_app(spec["online"] + ["--duration", str(spec["duration_s"])])
            if online[0].wait() != 0:
                raise RuntimeError("the online service failed: %s" % "; ".join(l for _, l in online[2].lines if l))
            online[1].thread.join(5)
            finals = [json.loads(l) for _, l in online[1].lines if l and l.startswith("{")]
            result["online"] = finals[-1]
        else:
            time.sleep(spec["duration_s"])
        t1 = time.monotonic()
        if daemon:
            result["daemon_cpu_s"] = process_cpu_s(daemon[0].pid) - daemon_cpu0
        result["host_max_delay_ms"] = 1000 * probe.stop()
        result["window_s"] = t1 - t0
        if offline:
            after, _ = report(offline[0], offline[1], nxt)
            dt = after["elapsed_s"] - before["elapsed_s"]
            kernels = dispatched(after) - dispatched(before)
            result["offline"] = {"iterations_per_s": kernels / spec["offline_kernels_per_request"] / dt,
                                 "kernels": kernels, "window_s": dt}
        if daemon and offline:
            result["gpreempt"] = daemon_events(daemon[1], offline[0].pid, t0, t1)
    finally:
        ignore_interruptions()
        if online and online[0].poll() is None:
            online[0].terminate()  # interrupted: it would go on for the rest of its --duration
            online[0].wait()
        # The daemon first: its SIGTERM resumes what it suspended, so the
        # offline job can then destroy its queues without blocking.
        if daemon:
            daemon[0].send_signal(signal.SIGTERM)
            daemon[0].wait(timeout=30)
            daemon[1].thread.join(5)
            if spec.get("daemon_log"):
                with open(spec["daemon_log"], "w") as f:
                    f.writelines("%.6f %s\n" % (t, l) for t, l in daemon[1].lines if l is not None)
            if result.get("gpreempt") is not None:
                result["gpreempt"]["log_errors"] = [l for _, l in daemon[1].lines if l and l.startswith(("<3>", "<2>"))]
        if offline:
            stop(offline[0], offline[1], offline[2], "the offline job")
    return result


def main():
    with open(sys.argv[1]) as f:
        spec = json.load(f)
    raise_on_sigterm()
    try:
        result = run(spec)
    except (RuntimeError, OSError, subprocess.TimeoutExpired) as e:
        result = {"error": str(e)}
    except (Interrupted, KeyboardInterrupt) as e:
        why = str(e) or "interrupted by SIGINT"
        result = {"error": why + "; the pass's processes were ended, the daemon first"}
    with open(sys.argv[2], "w") as f:
        json.dump(result, f)
    return 1 if "error" in result else 0


if __name__ == "__main__":
    sys.exit(main())
