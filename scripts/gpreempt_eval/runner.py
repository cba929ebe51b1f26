# SPDX-License-Identifier: MIT
"""Runs scenario passes on an emulated node and turns them into rows.

A pass is one scenario, one variant (baseline: without gpreempt; gpreempt:
with gpreemptd) and one GPU configuration, run by node_pass.py (python3 -m
gpreempt_eval.node_pass) inside `kfdemu-run --config`. Everything runs under
SCHED_FIFO when the caller may (root or CAP_SYS_NICE): the modelled GPU time
is exact whatever the host does, but the applications' own wake-ups are real
and a busy 2-core host would otherwise add milliseconds to the latencies
they measure.
"""
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time

from . import child_env, interruptions_deferred, module_argv
from . import host_steal
from . import request_log

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_ROOT = os.path.dirname(os.path.dirname(HERE))
RT_PRIORITY = 10
# An interrupted pass ends its online service and its daemon (30 s each, then killed) and its
# offline job (60 s, then killed) before it exits.
PASS_END_TIMEOUT_S = 180

# The modelled preemption: the defaults of tests/kfdemu/gpu/config-default.c,
# split in the same proportions when the sweep scales the total.
DEFAULT_PREEMPT = {"preempt_us": 200, "cwsr_save_us": 300, "cwsr_restore_us": 100}


def load_workloads():
    with open(os.path.join(HERE, "workloads.json")) as f:
        return json.load(f)


def can_run_realtime():
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(RT_PRIORITY))
    except PermissionError:
        return False
    os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
    return True


def daemon_problem(gpreemptd):
    """Why gpreemptd cannot take part, or None when it can."""
    if not gpreemptd or not os.access(gpreemptd, os.X_OK):
        return "%s was not built" % (gpreemptd or "gpreemptd")
    r = subprocess.run([gpreemptd, "--help"], capture_output=True, text=True)
    if r.returncode != 0:
        return "%s --help failed: %s" % (gpreemptd, r.stderr.strip())
    return None


class Build:
    """An emulated node: kfdemu and the binaries of a build directory."""

    emulated = True

    def __init__(self, build_dir):
        self.dir = os.path.abspath(build_dir)
        self.kfdemu_run = os.path.join(self.dir, "tests/kfdemu/transport/kfdemu-run")
        self.app = os.path.join(self.dir, "tests/kfdemu/app/kfdemu-app")
        self.gpreemptd = os.path.join(self.dir, "controller/gpreemptd/gpreemptd")
        for path in (self.kfdemu_run, self.app):
            if not os.access(path, os.X_OK):
                raise SystemExit("%s is missing: build the tree first (scripts/setup, or meson compile -C %s)"
                                 % (path, build_dir))

    def daemon_problem(self):
        return daemon_problem(self.gpreemptd)

    def command(self, tmp, preempt, argv, node_keys=()):
        """`argv` run inside an emulated node with the given preemption costs
        and further [GPU0] keys of kfdemu-run(1) ("Key=Value" strings)."""
        config_path = os.path.join(tmp, "node.conf")
        with open(config_path, "w") as f:
            f.write(node_config(preempt, node_keys))
        return [self.kfdemu_run, "--config", config_path, "--root", os.path.join(tmp, "node"), "--"] + argv


class RealNode:
    """A real AMD GPU node: the HIP workload program and a gpreemptd binary.
    Its preemption cost is the hardware's: rows carry 0 for "not modelled"."""

    emulated = False

    def __init__(self, app, gpreemptd):
        self.app, self.gpreemptd = app, gpreemptd

    def daemon_problem(self):
        return daemon_problem(self.gpreemptd)

    def command(self, tmp, preempt, argv, node_keys=()):
        return argv


def preempt_split(total_us):
    """Scale the default preemption (unmap + CWSR save + restore) to total_us."""
    default_total = sum(DEFAULT_PREEMPT.values())
    return {k: max(1, round(v * total_us / default_total)) for k, v in DEFAULT_PREEMPT.items()}


def preempt_total_us(preempt):
    return sum(preempt.values())


def node_config(preempt, node_keys=()):
    return ("[GPU0]\nPreemptMicroseconds=%d\nCwsrSaveMicroseconds=%d\nCwsrRestoreMicroseconds=%d\n"
            % (preempt["preempt_us"], preempt["cwsr_save_us"], preempt["cwsr_restore_us"])
            + "".join(key + "\n" for key in node_keys))


# The sweep scales one total cost, which only the constant model has.
CONSTANT_COST_MODEL = ("PreemptCostModel=constant",)


def daemon_config(policy):
    return """[Daemon]
# Every suspend and resume is logged (at info or debug level, as the
# daemon's versions differ); node_pass.py counts them from the log.
LogLevel=debug
# Watch new processes at once, so the online service's first requests are
# already protected in a short pass.
DiscoveryIntervalMs=10

[Online]
HoldOffMs={hold_off_ms}

[Offline]
MaxSuspendMs={max_suspend_ms}
MinOfflineSharePercent={min_share_percent}

[Workload]
Name=eval-online
Class=online
MatchCommandLine=*--kernel-name eval-online*

[Workload]
Name=eval-offline
Class=offline
MatchCommandLine=*--kernel-name eval-offline*
""".format(**policy)


DEFAULT_POLICY = {"hold_off_ms": 2, "max_suspend_ms": 500, "min_share_percent": 10}


def git_describe():
    r = subprocess.run(["git", "-C", SOURCE_ROOT, "describe", "--always", "--dirty"], capture_output=True, text=True)
    return r.stdout.strip() if r.returncode == 0 else "unknown"


COMMIT = git_describe()


def scratch_parent():
    """Where a pass keeps its files, kfdemu's rendered sysfs and debugfs
    among them: tmpfs when the host has one. kfdemu writes those files from
    inside ioctls and reads; on a disk-backed /tmp under I/O load a suspend
    that rewrote them took 5-15 ms instead of its modelled 0.5 ms, and the
    online service waited for it."""
    return "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None


def app_argv(node, workload, role, rate=None, latency_log=None):
    argv = [node.app, "--json", "--gpu", "0", "--kernel-name", "eval-" + role,
            "--kernels-per-request", str(workload["kernels_per_request"]),
            "--kernel-us", str(workload["kernel_us"]), "--workgroups", str(workload["workgroups"])]
    if latency_log:
        argv += ["--latency-log", latency_log]
    if workload.get("host_wait_us"):
        argv += ["--host-wait-us", str(workload["host_wait_us"])]
    if node.emulated:
        # The workload models assume the runtime keeps ahead of the GPU
        # (a ResNet-18 request is 2.5 ms of back-to-back kernels). With a
        # doorbell per kernel, an emulated host slower than 50 us per launch
        # (a futex wake-up each, on two busy cores) would set the kernels'
        # pace in model time instead; one doorbell per request keeps the
        # host's time to the request's first publication, which is measured.
        argv.append("--doorbell-per-request")
    return argv + (["--rate", str(rate)] if rate else ["--continuous"])


# Latencies are model time, which the host cannot stretch, except in the
# passages of a request that run on host time (request_log.host_disturbed).
# A pass is kept when the requests the host disturbed there are no more
# than those above the P99's rank: then the P99 is the latency of an
# undisturbed request (of a slightly higher quantile of them, so it errs
# high, never low). Otherwise it is run again, up to PASS_ATTEMPTS times,
# after a pause that grows with each attempt: on a shared VM the host's
# disturbances come in bursts (hypervisor steal of seconds to minutes, with
# real-time threads stalled for 30-1300 ms), and three attempts in a row
# fell into one burst several times on 2026-11-22 while the same commit
# passed minutes later. The criterion for keeping a pass is unchanged. The
# host probe's longest stall and the hypervisor's steal during the pass are
# reported beside, so a "too busy" verdict shows its cause.
#
# scripts/evaluate gives the whole evaluation a RetryBudget: a pass is then
# tried up to PASS_ATTEMPTS_WITH_BUDGET times while the budget lasts (pauses
# up to RETRY_PAUSE_MAX_S), so a burst of several minutes can be waited out
# while the evaluation's length stays bounded. On 2026-11-22 a fresh-clone CI
# run failed after 6 attempts of one pass, with 0.3-8 s of steal in each.
PASS_ATTEMPTS = 6
PASS_ATTEMPTS_WITH_BUDGET = 12
RETRY_PAUSE_S = 5
RETRY_PAUSE_MAX_S = 60


class RetryBudget:
    """Wall time the retries of all passes of one evaluation may take
    together (pauses and repeated passes)."""

    def __init__(self, seconds):
        self.left_s = seconds

    def spend(self, seconds):
        self.left_s -= seconds


def may_retry(attempt, budget):
    """Whether a pass that failed its `attempt`-th try gets another."""
    if budget is None:
        return attempt < PASS_ATTEMPTS
    return attempt < PASS_ATTEMPTS_WITH_BUDGET and budget.left_s > 0


def host_disturbed_too_much(row):
    n = row.get("online_requests", 0)
    return row.get("host_disturbed_requests", 0) > n - math.ceil(0.99 * n)


def run_pass(node, workloads, scenario, variant, duration_s, preempt=None, policy=None, realtime=True,
             log_copy=None, budget=None, node_keys=()):
    """One pass, repeated while the host disturbed too many of its requests
    (see may_retry; `budget`: a RetryBudget, or None for PASS_ATTEMPTS);
    returns a flat row (dict) for the CSV, errors included. The online
    service's per-request log is copied to `log_copy` when given."""
    attempt = 1
    while True:
        steal_before, started = host_steal.steal_ms(), time.monotonic()
        row = run_pass_once(node, workloads, scenario, variant, duration_s, preempt, policy, realtime, log_copy,
                            node_keys)
        row["host_steal_ms"] = round(host_steal.steal_ms() - steal_before)
        row["attempts"] = attempt
        if attempt > 1 and budget is not None:
            budget.spend(time.monotonic() - started)
        if row["error"] or not host_disturbed_too_much(row) or not may_retry(attempt, budget):
            break
        attempt += 1
        pause = min(RETRY_PAUSE_S * (attempt - 1), RETRY_PAUSE_MAX_S)
        print("evaluate: %s %s: the host disturbed %d of %d online requests (hypervisor steal during the pass: "
              "%.0f ms); again in %d s (attempt %d%s)"
              % (scenario["name"], variant, row["host_disturbed_requests"], row["online_requests"],
                 row["host_steal_ms"], pause, attempt,
                 " of %d" % PASS_ATTEMPTS if budget is None else ", %.0f s of retries left" % budget.left_s),
              file=sys.stderr, flush=True)
        time.sleep(pause)
        if budget is not None:
            budget.spend(pause)
    if not row["error"] and host_disturbed_too_much(row):
        row["error"] = ("the host was too busy to measure in each of %d attempts: in the last it held up %d of %d "
                        "online requests by more than %.1f ms outside the model (the longest stall of a real-time "
                        "thread: %.0f ms; hypervisor steal during the pass: %.0f ms)"
                        % (attempt, row["host_disturbed_requests"], row["online_requests"],
                           request_log.HOST_DELAY_LIMIT_NS / 1e6, row["host_max_delay_ms"], row["host_steal_ms"]))
    return row


def run_to_the_end(argv, timeout_s, result_path):
    """Runs a pass's command; returns its exit status and standard error.
    On a timeout, or when this process is interrupted, the pass is told to
    end (SIGTERM: it stops its daemon, which resumes what it suspended, then
    its jobs) and waited for; subprocess.run() would SIGKILL it, and on a
    real node leave its daemon and jobs running."""
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=child_env())
    try:
        _, stderr = proc.communicate(timeout=timeout_s)
    except BaseException as e:
        with interruptions_deferred():
            proc.terminate()
            try:
                proc.communicate(timeout=PASS_END_TIMEOUT_S)  # its stderr read meanwhile: a full pipe would block it
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.communicate()
            if not isinstance(e, subprocess.TimeoutExpired):
                print("evaluate: %s; the pass under way %s" % (str(e) or "interrupted by SIGINT",
                                                                pass_end(result_path)), file=sys.stderr, flush=True)
        raise
    return proc.returncode, stderr


def pass_end(result_path):
    """How an interrupted pass ended, from the result it wrote."""
    try:
        with open(result_path) as f:
            return "ended: " + json.load(f)["error"]
    except (OSError, ValueError, KeyError):
        return "did not say how it ended (killed %d s after SIGTERM?)" % PASS_END_TIMEOUT_S


def run_pass_once(node, workloads, scenario, variant, duration_s, preempt, policy, realtime, log_copy, node_keys):
    preempt = preempt or (dict(DEFAULT_PREEMPT) if node.emulated else {k: 0 for k in DEFAULT_PREEMPT})
    policy = policy or dict(DEFAULT_POLICY)
    w = workloads["workloads"]
    row = {"scenario": scenario["name"], "variant": variant, "policy": policy.get("label", "default"), "commit": COMMIT,
           "duration_s": duration_s, "preempt_total_us": preempt_total_us(preempt), **preempt,
           "node_keys": " ".join(node_keys),
           "online_host_wait_us": w[scenario["online"]].get("host_wait_us", 0) if scenario["online"] else 0,
           **{k: v for k, v in policy.items() if k != "label"}}
    with tempfile.TemporaryDirectory(prefix="gpreempt-eval-", dir=scratch_parent()) as tmp:
        spec = {"duration_s": duration_s, "warmup_s": 1.0, "online": None, "offline": None,
                "offline_kernels_per_request": 1, "gpreemptd": None}
        latency_log = os.path.join(tmp, "online-requests.txt")
        if scenario["online"]:
            spec["online"] = app_argv(node, w[scenario["online"]], "online", scenario["rate"], latency_log)
        if scenario["offline"]:
            spec["offline"] = app_argv(node, w[scenario["offline"]], "offline")
            spec["offline_kernels_per_request"] = w[scenario["offline"]]["kernels_per_request"]
        if variant == "gpreempt":
            config_dir = os.path.join(tmp, "etc")
            os.makedirs(os.path.join(config_dir, "workloads.d"))
            with open(os.path.join(config_dir, "gpreemptd.conf"), "w") as f:
                f.write(daemon_config(policy))
            spec["gpreemptd"] = {"binary": node.gpreemptd, "config_dir": config_dir,
                                 "runtime_dir": os.path.join(tmp, "run")}
            spec["daemon_log"] = os.path.join(tmp, "daemon.txt")
        spec_path, result_path = os.path.join(tmp, "spec.json"), os.path.join(tmp, "result.json")
        with open(spec_path, "w") as f:
            json.dump(spec, f)
        argv = node.command(tmp, preempt, module_argv("node_pass", spec_path, result_path), node_keys)
        if realtime:
            argv = ["chrt", "-f", str(RT_PRIORITY)] + argv
        try:
            returncode, stderr = run_to_the_end(argv, duration_s + 180, result_path)
        except subprocess.TimeoutExpired:
            result = {"error": "the pass did not end within %d s of its planned length" % 180}
        except OSError as e:
            result = {"error": "%s could not be started: %s" % (argv[0], e)}
        else:
            try:
                with open(result_path) as f:
                    result = json.load(f)
            except (OSError, ValueError):
                result = {"error": "%s exited with status %d: %s" % (argv[0], returncode, stderr.strip()[-500:])}
        if scenario["online"] and "error" not in result:
            keep_logs(row, latency_log, spec.get("daemon_log"), log_copy)
    return flatten(row, result)


def keep_logs(row, latency_log, daemon_log, log_copy):
    """Counts the requests the host disturbed and keeps the per-request log
    (and the daemon's, whose suspend stamps split the tail) as `log_copy`."""
    row["host_disturbed_requests"] = request_log.host_disturbed(request_log.read(latency_log, daemon_log))
    if not log_copy:
        return
    shutil.copyfile(latency_log, log_copy)
    row["request_log"] = os.path.basename(log_copy)
    if daemon_log:
        kept = os.path.splitext(log_copy)[0] + "-daemon.txt"
        shutil.copyfile(daemon_log, kept)
        row["daemon_log"] = os.path.basename(kept)


def flatten(row, result):
    row["error"] = result.get("error", "")
    row["host_max_delay_ms"] = result.get("host_max_delay_ms")
    online, offline, gp = result.get("online"), result.get("offline"), result.get("gpreempt")
    if online:
        # Model time (the emulated GPU's timestamps; on a real node the
        # program's own clock); the wall-clock figures beside them.
        lat, wall = online["latency_ms"], online.get("wall_latency_ms")
        row.update({"online_requests": online["requests"], "online_req_s": online["requests_per_s"],
                    "online_p50_ms": lat["p50"], "online_p95_ms": lat["p95"], "online_p99_ms": lat["p99"],
                    "online_max_ms": lat["max"], "online_mean_ms": lat["mean"]})
        if wall:
            row.update({"online_wall_p50_ms": wall["p50"], "online_wall_p99_ms": wall["p99"],
                        "online_wall_max_ms": wall["max"]})
    if offline:
        row["offline_it_s"] = offline["iterations_per_s"]
    if gp:
        row.update({"transitions": gp["suspends"] + gp["resumes"], "suspends": gp["suspends"],
                    "transitions_per_s": (gp["suspends"] + gp["resumes"]) / result["window_s"],
                    "suspended_s": gp["suspended_s"], "longest_suspend_ms": 1000 * gp["longest_suspend_s"],
                    "suspended_share": gp["suspended_s"] / result["window_s"] if result.get("window_s") else None,
                    "daemon_errors": len(gp["log_errors"])})
        if result.get("daemon_cpu_s") is not None and result.get("window_s"):
            row["daemon_cpu_share"] = result["daemon_cpu_s"] / result["window_s"]
        if gp["log_errors"] and not row["error"]:
            row["error"] = "gpreemptd logged errors: " + "; ".join(gp["log_errors"][:3])
        if gp["suspends"] == 0 and online and online["requests"] > 0 and not row["error"]:
            row["error"] = ("gpreemptd never suspended the offline job while the online service ran "
                            "(did it find the online queues? run with LogLevel=debug)")
    return row
