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
import contextlib
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

from . import Interrupted, end_process, interruptions_deferred, raise_on_interruption

READY_TIMEOUT_S = 30.0
# gpreemptd's unit gives it this long to stop (TimeoutStopSec=), the online service too.
DAEMON_STOP_TIMEOUT_S = 30
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


# A program started whose start failed or was interrupted gets this long to end.
START_END_TIMEOUT_S = 30


def spawn_app(argv, env=None):
    """(process, stdout, stderr) of a program just started: the caller holds
    it from here on, to end it however the pass ends, before it is ready
    (a signal meanwhile waits until the caller has it). In a session of its
    own: Ctrl-C reaches the pass, which ends its programs in their order."""
    with interruptions_deferred():
        p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                             start_new_session=True)
        return p, LineReader(p.stdout), LineReader(p.stderr)


def wait_ready(app, what):
    line, _ = app[1].wait_for(lambda l: l.startswith("READY"), 0, READY_TIMEOUT_S)
    if line is None:
        raise RuntimeError("%s did not become ready: %s" % (what, "; ".join(l for _, l in app[2].lines if l)))


def start_app(argv, env=None):
    """spawn_app() and wait_ready(), for a caller that ends nothing else
    first: a program whose start fails or is interrupted is ended here."""
    app = spawn_app(argv, env)
    try:
        wait_ready(app, argv[0])
    except BaseException:
        with interruptions_deferred():
            end_process(app[0], START_END_TIMEOUT_S)
        raise
    return app


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


@contextlib.contextmanager
def notify_socket():
    """A socket for the daemon's sd_notify() messages, and its address."""
    notify_dir = tempfile.mkdtemp(prefix="gpreempt-eval-notify-")
    path = os.path.join(notify_dir, "notify")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    try:
        sock.bind(path)
        sock.settimeout(READY_TIMEOUT_S)
        yield sock, path
    finally:
        sock.close()
        if os.path.exists(path):
            os.unlink(path)
        os.rmdir(notify_dir)


def spawn_daemon(spec, notify_path):
    """gpreemptd with the pass's configuration, just started (as spawn_app())."""
    d = spec["gpreemptd"]
    env = dict(os.environ, NOTIFY_SOCKET=notify_path)
    with interruptions_deferred():
        p = subprocess.Popen([d["binary"], "--config-dir", d["config_dir"], "--runtime-dir", d["runtime_dir"]],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env,
                             start_new_session=True)
        return p, LineReader(p.stderr)


def wait_daemon_ready(sock, daemon):
    try:
        while b"READY=1" not in sock.recv(4096):
            pass
    except socket.timeout:
        raise RuntimeError("gpreemptd did not become ready: %s" % "; ".join(l for _, l in daemon[1].lines if l))


def start_daemon(spec):
    """spawn_daemon() and wait_daemon_ready(), as start_app() is for a program."""
    with notify_socket() as (sock, path):
        daemon = spawn_daemon(spec, path)
        try:
            wait_daemon_ready(sock, daemon)
        except BaseException:
            with interruptions_deferred():
                end_process(daemon[0], START_END_TIMEOUT_S)
            raise
    return daemon


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
            with notify_socket() as (sock, path):
                daemon = spawn_daemon(spec, path)
                wait_daemon_ready(sock, daemon)
        if spec.get("offline"):
            offline = spawn_app(spec["offline"])
            wait_ready(offline, "the offline job")
            if daemon:
                wait_attached(daemon[1], offline[0].pid)
            time.sleep(spec["warmup_s"])
            before, nxt = report(offline[0], offline[1], 0)
        t0 = time.monotonic()
        daemon_cpu0 = process_cpu_s(daemon[0].pid) if daemon else None
        probe = HostProbe()
        if spec.get("online"):
            online = spawn_app(spec["online"] + ["--duration", str(spec["duration_s"])])
            wait_ready(online, "the online service")
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
        end_pass(spec, result, online, daemon, offline)
    return result


def end_pass(spec, result, online, daemon, offline):
    """Ends what the pass started, each step whatever the one before did:
    the online service (interrupted, it would go on for the rest of its
    --duration), then the daemon, whose SIGTERM resumes what it suspended,
    so that the offline job, last, can destroy its queues without blocking.
    A signal meanwhile is raised once all of it is done."""
    with interruptions_deferred():
        end_pass_steps(spec, result, online, daemon, offline)


def end_pass_steps(spec, result, online, daemon, offline):
    try:
        if online:
            end_process(online[0], DAEMON_STOP_TIMEOUT_S)
        if daemon and not end_process(daemon[0], DAEMON_STOP_TIMEOUT_S):
            raise RuntimeError("gpreemptd did not exit within %d s of SIGTERM; killed" % DAEMON_STOP_TIMEOUT_S)
    finally:
        try:
            if daemon:
                keep_daemon_log(spec, result, daemon[1])
        finally:
            if offline:
                stop(offline[0], offline[1], offline[2], "the offline job")


def keep_daemon_log(spec, result, err):
    err.thread.join(5)
    if spec.get("daemon_log"):
        with open(spec["daemon_log"], "w") as f:
            f.writelines("%.6f %s\n" % (t, l) for t, l in err.lines if l is not None)
    if result.get("gpreempt") is not None:
        result["gpreempt"]["log_errors"] = [l for _, l in err.lines if l and l.startswith(("<3>", "<2>"))]


def main():
    with open(sys.argv[1]) as f:
        spec = json.load(f)
    raise_on_interruption()
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
