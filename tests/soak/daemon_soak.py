# SPDX-License-Identifier: MIT
"""The daemon soak, run *inside* an emulated node (scripts/soak --daemon
starts it under kfdemu-run): the high-load scenario with gpreemptd for the
whole duration, sampling the file descriptors and RSS of gpreemptd, the
kfdemu server and both applications; then the daemon's status and log, its
SIGTERM, and checks that nothing is left suspended.

Usage: PYTHONPATH=scripts python3 tests/soak/daemon_soak.py SPEC.json RESULT.json
       (scripts/soak writes the spec and starts it so)

The scenario's processes are started and read with the evaluation's pass
machinery (scripts/gpreempt_eval/node_pass.py), so the soak runs what the
evaluation measures. It imports gpreempt_eval from PYTHONPATH, and
usage_trend from its own directory, the one Python puts first when it runs
a file.
"""
import json
import os
import signal
import subprocess
import sys
import time

import usage_trend
from gpreempt_eval import node_pass

# After the daemon is gone the offline job must run again on every queue;
# one of its kernels lasts ~56 ms, so this leaves it dozens of them.
PROGRESS_CHECK_S = 3.0
DAEMON_STOP_TIMEOUT_S = 30


def log(msg):
    print("soak: " + msg, file=sys.stderr, flush=True)


def parent_and_comm(pid):
    with open("/proc/%d/stat" % pid) as f:
        stat = f.read()
    # The comm may hold spaces and parentheses: the fields follow the last ')'.
    return int(stat[stat.rindex(")") + 2:].split()[1]), stat[stat.index("(") + 1:stat.rindex(")")]


def server_pid():
    """kfdemu-run serves the node itself: the nearest ancestor of that name."""
    pid = os.getpid()
    while pid > 1:
        pid = parent_and_comm(pid)[0]
        if pid > 1 and parent_and_comm(pid)[1] == "kfdemu-run":
            return pid
    raise RuntimeError("daemon_soak.py must run inside an emulated node (kfdemu-run): no kfdemu-run among its "
                       "ancestors")


def tracer_of(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("TracerPid:"):
                return int(line.split()[1])
    return -1


def daemon_status(spec):
    """gpreemptctl status --json over the daemon's own socket."""
    env = dict(os.environ, GPREEMPT_RUNTIME_DIR=spec["gpreemptd"]["runtime_dir"])
    r = subprocess.run([spec["gpreemptctl"], "status", "--json"], capture_output=True, text=True, env=env,
                       timeout=30)
    if r.returncode != 0:
        raise RuntimeError("gpreemptctl status failed (%d): %s" % (r.returncode, (r.stdout + r.stderr).strip()))
    return json.loads(r.stdout)


def active_hqd_problem(spec, pid, n_queues):
    """From outside the process: debugfs hqds (through queue_finder) must
    show every queue of pid mapped; a suspended queue has no active HQD."""
    r = subprocess.run([spec["queue_finder"], "--json", str(pid)], capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        return "queue_finder --json %d failed (%d): %s" % (pid, r.returncode, r.stderr.strip())
    procs = [p for p in json.loads(r.stdout)["processes"] if p["pid"] == pid]
    mqd_queues = [q for p in procs for q in p["queues"] if q["mqd"]]
    mapped = [q for q in mqd_queues if any(h["active"] for h in q["hqds"])]
    if len(mqd_queues) != n_queues or len(mapped) != n_queues:
        return ("debugfs shows %d of the offline job's %d queues mapped (%d MQDs): a queue is left suspended"
                % (len(mapped), n_queues, len(mqd_queues)))
    return None


def stalled_queues(before, after):
    return [q["queue_id"] for q, p in zip(after["queues"], before["queues"])
            if q["read_dispatch_id"] <= p["read_dispatch_id"]]


class Soak:
    def __init__(self, spec):
        self.spec = spec
        self.daemon = self.offline = self.online = None
        self.series = []
        self.t_start = time.monotonic()
        self.problems = []

    def elapsed(self):
        return time.monotonic() - self.t_start

    def sample(self):
        t = self.elapsed()
        for s in self.series:
            try:
                s.sample(t)
            except FileNotFoundError:
                # The online service ends on its own when the soak does.
                if not (self.online and s.pid == self.online[0].pid and self.online[0].poll() is not None):
                    raise

    def check_alive(self):
        for what, proc in (("gpreemptd", self.daemon[0]), ("the offline job", self.offline[0])):
            if proc.poll() is not None:
                raise RuntimeError("%s exited during the soak with status %d" % (what, proc.returncode))

    def transitions(self, t0, t1):
        ev = node_pass.daemon_events(self.daemon[1], self.offline[0].pid, t0, t1)
        return ev["suspends"] + ev["resumes"]

    def progress(self, t0):
        now = time.monotonic()
        latest = {s.name: s.samples[-1] for s in self.series}
        log("%5.0f s of %.0f: %d transitions; fds/RSS MiB %s" % (
            now - t0, self.spec["duration_s"], self.transitions(t0, now),
            ", ".join("%s %d/%.1f" % (n, v[1], v[2] / 1024) for n, v in latest.items())))

    def run_online_window(self):
        """The online service for the soak's duration, sampling meanwhile."""
        spec = self.spec
        self.online = node_pass.start_app(spec["online"] + ["--duration", str(spec["duration_s"])])
        self.series.append(usage_trend.Series("online app", self.online[0].pid))
        t0 = time.monotonic()
        next_progress = t0 + spec["progress_s"]
        while self.online[0].poll() is None:
            self.sample()
            self.check_alive()
            if time.monotonic() >= next_progress:
                self.progress(t0)
                next_progress += spec["progress_s"]
            try:
                self.online[0].wait(timeout=spec["sample_s"])
            except subprocess.TimeoutExpired:
                pass
        t1 = time.monotonic()
        if self.online[0].returncode != 0:
            raise RuntimeError("the online service failed (%d): %s" % (
                self.online[0].returncode, "; ".join(l for _, l in self.online[2].lines if l)))
        self.online[1].thread.join(5)
        finals = [json.loads(l) for _, l in self.online[1].lines if l and l.startswith("{")]
        if not finals:
            raise RuntimeError("the online service printed no report")
        return t0, t1, finals[-1]

    def run(self):
        spec = self.spec
        result = {}
        self.daemon = node_pass.start_daemon(spec)
        self.offline = node_pass.start_app(spec["offline"])
        node_pass.wait_attached(self.daemon[1], self.offline[0].pid)
        self.series = [usage_trend.Series("gpreemptd", self.daemon[0].pid),
                       usage_trend.Series("kfdemu server", server_pid()),
                       usage_trend.Series("offline app", self.offline[0].pid)]
        before, nxt = node_pass.report(self.offline[0], self.offline[1], 0)
        t0, t1, online = self.run_online_window()
        self.sample()
        after, nxt = node_pass.report(self.offline[0], self.offline[1], nxt)
        window = after["elapsed_s"] - before["elapsed_s"]
        kernels = node_pass.dispatched(after) - node_pass.dispatched(before)
        result["window_s"] = t1 - t0
        result["online"] = {"requests": online["requests"], "requests_per_s": online["requests_per_s"],
                            "abandoned": online.get("abandoned"), "latency_ms": online["latency_ms"]}
        result["offline"] = {"iterations_per_s": kernels / spec["offline_kernels_per_request"] / window,
                             "kernels": kernels}

        status = daemon_status(spec)
        self.stop_daemon()
        result["status"] = self.check_status(status)
        result["daemon_log"] = self.check_log()
        result["after_daemon"] = self.check_released(nxt)
        result["usage"] = self.usage_verdicts(online["requests"])
        return result

    def check_status(self, status):
        """The daemon's counters against its log, both complete: the
        online service had ended, so nothing was suspended after the status
        was taken, and the daemon has exited, so its log is read to the end."""
        pid = self.offline[0].pid
        mine = [p for p in status["processes"] if p["pid"] == pid]
        if not mine or not mine[0]["attached"]:
            self.problems.append("gpreemptctl status does not show the offline job (pid %d) attached" % pid)
            return {}
        proc = mine[0]
        logged = node_pass.daemon_events(self.daemon_err, pid, 0.0, float("inf"))
        transitions = sum(g["suspends"] + g["resumes_idle"] + g["resumes_max_suspend"] + g["resumes_share"]
                          for g in status["gpus"])
        out = {"transitions": transitions, "suspends": proc["suspends"], "resumes": proc["resumes"],
               "logged_suspends": logged["suspends"], "suspended_usec": sum(g["suspended_usec"] for g in status["gpus"])}
        if proc["suspends"] == 0:
            self.problems.append("gpreemptd never suspended the offline job during the soak")
        if proc["suspends"] != logged["suspends"]:
            self.problems.append("gpreemptctl status counts %d suspends of pid %d, the daemon's log %d"
                                 % (proc["suspends"], pid, logged["suspends"]))
        return out

    def stop_daemon(self):
        proc, err = self.daemon
        self.daemon, self.daemon_err = None, err
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=DAEMON_STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            self.problems.append("gpreemptd did not exit within %d s of SIGTERM" % DAEMON_STOP_TIMEOUT_S)
        err.thread.join(5)
        self.daemon_lines = [l for _, l in err.lines if l is not None]
        if proc.returncode != 0:
            self.problems.append("gpreemptd exited with status %d after SIGTERM: %s"
                                 % (proc.returncode, "; ".join(self.daemon_lines[-3:])))
        if self.spec.get("daemon_log"):
            with open(self.spec["daemon_log"], "w") as f:
                f.writelines("%.6f %s\n" % (t, l) for t, l in err.lines if l is not None)

    def check_log(self):
        errors = [l for l in self.daemon_lines if l.startswith(("<0>", "<1>", "<2>", "<3>"))]
        warnings = [l for l in self.daemon_lines if l.startswith("<4>")]
        if errors:
            self.problems.append("gpreemptd logged %d errors, first: %s" % (len(errors), errors[0]))
        return {"lines": len(self.daemon_lines), "errors": errors[:10], "warnings": len(warnings),
                "first_warnings": warnings[:5]}

    def check_released(self, nxt):
        """gpreemptd is gone: the offline job must be untraced, mapped and running."""
        pid = self.offline[0].pid
        before, nxt = node_pass.report(self.offline[0], self.offline[1], nxt)
        time.sleep(PROGRESS_CHECK_S)
        after, _ = node_pass.report(self.offline[0], self.offline[1], nxt)
        out = {"tracer_pid": tracer_of(pid), "stalled_queues": stalled_queues(before, after),
               "hqd_problem": active_hqd_problem(self.spec, pid, len(after["queues"]))}
        if out["tracer_pid"] != 0:
            self.problems.append("the offline job is still traced by pid %d after gpreemptd exited" % out["tracer_pid"])
        if out["stalled_queues"]:
            self.problems.append("the offline job made no progress on queues %s in %.0f s after gpreemptd exited"
                                 % (out["stalled_queues"], PROGRESS_CHECK_S))
        if out["hqd_problem"]:
            self.problems.append(out["hqd_problem"])
        return out

    def usage_verdicts(self, online_requests):
        kept = {"online app": online_requests * usage_trend.KEPT_BYTES_PER_REQUEST}
        out = {}
        for s in self.series:
            v = s.verdict(self.spec["warmup_s"], kept.get(s.name, 0), self.spec["judge_rss"])
            if v["problem"]:
                self.problems.append(v["problem"])
            out[s.name] = v
        return out

    def cleanup(self):
        # The daemon first: its SIGTERM resumes what it suspended, so the
        # offline job can then destroy its queues without blocking.
        if self.daemon:
            self.daemon[0].send_signal(signal.SIGTERM)
            self.daemon[0].wait(timeout=DAEMON_STOP_TIMEOUT_S)
        if self.online and self.online[0].poll() is None:
            self.online[0].kill()
            self.online[0].wait()
        if self.offline:
            node_pass.stop(self.offline[0], self.offline[1], self.offline[2], "the offline job")


def main():
    with open(sys.argv[1]) as f:
        spec = json.load(f)
    soak = Soak(spec)
    try:
        try:
            result = soak.run()
        finally:
            soak.cleanup()
    except (RuntimeError, OSError, ValueError, subprocess.TimeoutExpired) as e:
        result = {"error": str(e)}
    result["problems"] = soak.problems
    result["duration_s"] = soak.elapsed()
    with open(sys.argv[2], "w") as f:
        json.dump(result, f)
    return 1 if "error" in result or soak.problems else 0


if __name__ == "__main__":
    sys.exit(main())
