#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The shipped systemd units under a real systemd (Debian 12's, PID 1 of a
systemd-nspawn container booted from this machine's own /usr), with kfdemu
playing the node. TAP output; run by meson test:

  tests/systemd/test-units.py --build BUILD_DIR

What is installed is what `meson install` installs, bound at its prefix: the
units, sysusers and tmpfiles entries, gpreemptd, gpreemptctl, gpreempt-exporter
and the library.
Two things stand in for the node, each stated where it is set up:
kfdemu-run --system-wide as a service of its own (the kernel, whose sysfs,
debugfs and /dev/kfd it mounts for the whole container), and a drop-in that
gives gpreemptd the preload's environment. Everything else, the sandbox
first, is the shipped unit as written.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from nspawn import (Container, EmulatedNode, Tap, daemon_status, exit_on_sigterm, held_back,  # noqa: E402
                    missing_man_pages, node_options, require_root_and_tools, status_gpu,
                    status_process, suspend_attached, wait_for)

tap = Tap()
check = tap.check


def meson_options(build):
    out = subprocess.run(["meson", "introspect", build, "--buildoptions"],
                         check=True, capture_output=True, text=True).stdout
    return {o["name"]: o["value"] for o in json.loads(out)}


def test_no_kfd(c):
    """Before any KFD exists: the daemon starts, says so, and the socket
    keeps listening, also for a daemon stopped between calls (a service
    that is skipped or fails at each start would make the socket hit its
    trigger limit and stop listening for good)."""
    rc, text, err = c.run("gpreemptctl status", timeout=15)
    check("without /dev/kfd, gpreemptctl status is answered", rc == 0, text + err + c.journal("gpreemptd"))
    check("... and says this node has no KFD", "No KFD" in text, text)
    check("... and the socket still listens",
          c.show("gpreemptd.socket", "ActiveState") == "active",
          c.out("systemctl status --no-pager gpreemptd.socket || true"))
    answers = 0
    for _ in range(3):
        c.out("systemctl stop gpreemptd.service")
        rc, text, err = c.run("gpreemptctl status", timeout=15)
        answers += rc == 0 and "No KFD" in text
    check("... and answers again, each time, after the daemon was stopped (3 times)",
          answers == 3 and c.show("gpreemptd.socket", "ActiveState") == "active",
          text + err + c.journal("gpreemptd"))
    c.out("systemctl stop gpreemptd.service")


def test_activation(c):
    check("gpreemptd is not running before anyone asks",
          c.show("gpreemptd.service", "ActiveState") == "inactive")
    status = daemon_status(c)
    check("gpreemptctl status socket-activates gpreemptd", status is not None,
          c.journal("gpreemptd"))
    check("systemd saw READY=1 (Type=notify: active only after it)",
          c.show("gpreemptd.service", "ActiveState") == "active"
          and c.show("gpreemptd.service", "SubState") == "running")
    check("... and the daemon's STATUS= text",
          "processes" in c.show("gpreemptd.service", "StatusText"),
          c.show("gpreemptd.service", "StatusText"))


def test_sandbox_suspends(c, node):
    """The shipped sandbox lets the daemon do its work: attach another
    user's process, watch an online queue with a breakpoint, suspend and
    resume."""
    off = node.start_app("offline", "sd-offline", "--continuous --kernel-us 2000", user="nobody")
    attached = wait_for(lambda: (status_process(c, off) or {}).get("attached"), 10)
    check("the sandboxed daemon attaches an offline process of another user", attached,
          json.dumps(status_process(c, off)) + c.journal("gpreemptd"))
    on = node.start_app("online", "sd-online", "--continuous --kernel-us 1000")
    # listed before its queues are watched: online_queues is null until then
    online = wait_for(lambda: (status_process(c, on) or {}).get("online_queues") and status_process(c, on), 10) or {}
    watches = [q.get("watch") for q in online.get("online_queues") or []]
    check("... watches the online queue with a hardware breakpoint (CAP_PERFMON, perf_event_open)",
          watches == ["breakpoint"], json.dumps(online))
    suspended = wait_for(lambda: (status_gpu(c) or {}).get("offline_suspended"), 10)
    check("... suspends the offline queues while the online process has work", suspended,
          json.dumps(daemon_status(c)))
    _, held, resumed, free = node.hold_and_release("offline", "online")
    check("... held back while the online one has work, running once it is idle "
          "(%d, then %d kernels a second)" % (held, free),
          held_back(held, 1.0, free, 1.0) and resumed, json.dumps(daemon_status(c)))
    return off


def hard_rtprio_limit(c):
    with open("/proc/%d/limits" % c.pid1) as f:
        for line in f:
            if line.startswith("Max realtime priority"):
                return line.split()[4]
    return "0"


def can_raise_limits(c):
    with open("/proc/%d/status" % c.pid1) as f:
        for line in f:
            if line.startswith("CapBnd:"):
                return bool(int(line.split()[1], 16) & (1 << 24))  # CAP_SYS_RESOURCE
    return False


def test_realtime(c):
    status = daemon_status(c) or {}
    if can_raise_limits(c) or hard_rtprio_limit(c) != "0":
        check("the loop runs at SCHED_FIFO under the unit's LimitRTPRIO= and syscall filter",
              status.get("realtime_priority") == 1, json.dumps(status))
        return
    # This machine's hard RLIMIT_RTPRIO is 0 and nothing here holds
    # CAP_SYS_RESOURCE, so systemd cannot apply LimitRTPRIO=99 (a node's
    # PID 1 can). What can be checked is the unit's syscall filter: with
    # CAP_SYS_NICE added, sched_setscheduler must get through it.
    check("where LimitRTPRIO= cannot be applied, the daemon says why",
          status.get("realtime_priority") == 0 and status.get("realtime_error"), json.dumps(status))
    c.out("printf '[Service]\\nCapabilityBoundingSet=CAP_SYS_NICE\\nAmbientCapabilities=CAP_SYS_NICE\\n' "
          "> /run/systemd/system/gpreemptd.service.d/60-nice.conf && systemctl daemon-reload "
          "&& systemctl restart gpreemptd.service")
    status = daemon_status(c) or {}
    check("the unit's syscall filter lets sched_setscheduler through (SCHED_FIFO with CAP_SYS_NICE added)",
          status.get("realtime_priority") == 1, json.dumps(status))
    c.out("rm /run/systemd/system/gpreemptd.service.d/60-nice.conf && systemctl daemon-reload "
          "&& systemctl restart gpreemptd.service")


def test_reload(c):
    pid = c.show("gpreemptd.service", "MainPID")
    before = (daemon_status(c) or {}).get("reloads", -1)
    c.out("systemctl reload gpreemptd.service")
    after = (daemon_status(c) or {}).get("reloads", -1)
    check("systemctl reload returns with the configuration re-read, in the same process",
          after > before and c.show("gpreemptd.service", "MainPID") == pid, c.journal("gpreemptd"))
    c.out("printf '[Workload]\\nClass=sometimes\\n' > /etc/gpreempt/workloads.d/90-broken.conf")
    refused_rc, _, _ = c.run("systemctl reload gpreemptd.service")
    status = daemon_status(c) or {}
    check("a reload with a broken file fails, and keeps the daemon and the configuration it had",
          refused_rc != 0 and c.show("gpreemptd.service", "ActiveState") == "active"
          and status.get("workloads") == 2 and c.show("gpreemptd.service", "MainPID") == pid,
          json.dumps(status) + c.journal("gpreemptd"))
    check("... and says which file and line", "90-broken.conf:2" in c.journal("gpreemptd", 10),
          c.journal("gpreemptd", 10))
    c.out("rm /etc/gpreempt/workloads.d/90-broken.conf && systemctl reload gpreemptd.service")


def test_sigkill(c, node, off):
    suspend_attached(c, off)
    time.sleep(0.2)
    held = node.progress("offline", 1.0)
    old = c.show("gpreemptd.service", "MainPID")
    restarts = int(c.show("gpreemptd.service", "NRestarts"))
    c.out("systemctl kill -s SIGKILL --kill-who=main gpreemptd.service")
    # RestartSec=1s: nothing resumes the job but the kernel, as the daemon dies
    time.sleep(0.1)
    free, freely = node.runs_freely("offline")
    check("gpreemptctl suspend holds the offline process, and after SIGKILL of the daemon nothing "
          "stays suspended (%d kernels in 1 s, then %d in 1 s; free: %d)" % (held, free, node.free_rate),
          held_back(held, 1.0, free, 1.0) and freely)
    back = wait_for(lambda: c.show("gpreemptd.service", "SubState") == "running"
                    and c.show("gpreemptd.service", "MainPID") not in ("0", old), 10)
    check("... and Restart=on-failure brings it back",
          back and int(c.show("gpreemptd.service", "NRestarts")) == restarts + 1,
          c.journal("gpreemptd"))


def test_watchdog(c, node, off):
    old = c.show("gpreemptd.service", "MainPID")
    restarts = int(c.show("gpreemptd.service", "NRestarts"))
    suspend_attached(c, off)
    c.out("kill -STOP %s" % old)
    started = time.monotonic()
    # WatchdogSec=10s: systemd aborts the stuck loop, the kernel resumes
    # what it held, Restart= starts a new one
    back = wait_for(lambda: c.show("gpreemptd.service", "SubState") == "running"
                    and c.show("gpreemptd.service", "MainPID") not in ("0", old), 40, step=0.25)
    took = time.monotonic() - started
    check("a SIGSTOPped loop is restarted by the watchdog (%.1f s)" % took,
          back and int(c.show("gpreemptd.service", "NRestarts")) == restarts + 1
          and "Watchdog timeout" in c.out("journalctl --no-pager -o cat -u gpreemptd.service -n 40"),
          c.journal("gpreemptd", 40))
    moved, freely = node.runs_freely("offline")
    check("... and what the stuck instance held runs again (%d kernels in 1 s; free: %d)"
          % (moved, node.free_rate), freely)


def test_stop(c, node, off):
    suspend_attached(c, off)
    c.out("systemctl stop gpreemptd.service")
    moved, freely = node.runs_freely("offline")
    tracer = c.out("grep TracerPid /proc/%d/status" % off).split()[1]
    check("systemctl stop resumes and detaches (%d kernels in 1 s, free: %d; TracerPid %s)"
          % (moved, node.free_rate, tracer), freely and tracer == "0")
    result = c.show("gpreemptd.service", "Result")
    check("... and the daemon exits cleanly (Result=%s)" % result, result == "success", c.journal("gpreemptd"))
    check("... and the socket keeps listening for the next start",
          c.show("gpreemptd.socket", "ActiveState") == "active")


SCRAPE = ("python3 -c \"import urllib.request; "
          "print(urllib.request.urlopen('http://127.0.0.1:10179/metrics', timeout=10).read().decode())\"")


def test_exporter(c):
    """gpreempt-exporter.socket: a scrape on loopback starts the exporter,
    which asks gpreemptd over its control socket from inside its sandbox (a
    dynamic user in group gpreempt, PrivateNetwork=yes: the passed socket
    still works)."""
    check("gpreempt-exporter.socket, enabled by preset-all, listens at boot",
          c.show("gpreempt-exporter.socket", "ActiveState") == "active",
          c.out("systemctl status --no-pager gpreempt-exporter.socket || true"))
    check("the exporter is not running before a scrape", c.show("gpreempt-exporter.service", "ActiveState") == "inactive")
    rc, out, err = c.run(SCRAPE, timeout=30)
    check("a scrape of 127.0.0.1:10179/metrics starts the exporter and gets gpreempt_up 1",
          rc == 0 and "gpreempt_up 1" in out, out[-2000:] + err + c.journal("gpreempt-exporter"))
    check("... with the daemon's metrics", "gpreempt_build_info{" in out and "gpreempt_processes{" in out, out[-2000:])
    check("... served by a dynamic user, not root",
          c.show("gpreempt-exporter.service", "DynamicUser") == "yes"
          and c.out("ps -o user= -p %s" % c.show("gpreempt-exporter.service", "MainPID")).strip() != "root")
    c.out("systemctl stop gpreemptd.service gpreemptd.socket")
    rc, out, err = c.run(SCRAPE, timeout=30)
    check("with gpreemptd stopped, the scrape gets gpreempt_up 0", rc == 0 and "gpreempt_up 0" in out,
          out + err + c.journal("gpreempt-exporter"))
    check("... and the exporter's log says why", "gpreemptd is not running" in c.journal("gpreempt-exporter"),
          c.journal("gpreempt-exporter"))
    # as test_activation left it, for the tests after this one
    c.out("systemctl start gpreemptd.socket gpreemptd.service")


def claimed_exposure(unit_path):
    """The exposure score the unit's comments state ("rates what is left at N")."""
    with open(unit_path) as f:
        text = " ".join(line.lstrip("# ").strip() for line in f)
    words = text.split("rates what is left at ", 1)
    return float(words[1].split()[0]) if len(words) == 2 else None


UNITS = ("gpreemptd.service", "gpreemptd.socket", "gpreempt-exporter.service", "gpreempt-exporter.socket")


def test_analyze(c, prefix, unit_dir):
    rc, out, err = c.run("systemd-analyze verify --man=no " + " ".join(UNITS))
    check("systemd-analyze verify: no complaint about the units", rc == 0 and not err.strip(), out + err)
    pages, missing = missing_man_pages(c, UNITS, os.path.join(prefix, "share/man"))
    check("every man page in Documentation= is installed", pages and not missing, " ".join(missing))
    for service in ("gpreemptd.service", "gpreempt-exporter.service"):
        rc, out, err = c.run("systemd-analyze security --no-pager " + service)
        score = None
        for line in out.splitlines():
            if "Overall exposure level" in line:
                score = float(line.split("exposure level for %s:" % service)[1].split()[0])
        claimed = claimed_exposure(os.path.join(unit_dir, service))
        check("systemd-analyze security %s: exposure %s, at most the %s the unit's comments state and justify"
              % (service, score, claimed), score is not None and claimed is not None and score <= claimed,
              out[-3000:] + err)


def test_debugfs_in_sandbox(c):
    """ProtectKernelTunables= keeps debugfs, read-only: all the daemon needs
    of it (it reads kfd/mqds). This machine's kernel refuses every debugfs
    file read even to root, so the read itself is left to a real node."""
    pid = c.show("gpreemptd.service", "MainPID")
    rc, out, err = c.run("nsenter -t %s -m cat /proc/self/mountinfo" % pid)
    mounts = [line.split() for line in out.splitlines()]
    debugfs = [m for m in mounts if m[4] == "/sys/kernel/debug"]
    check("debugfs is mounted, read-only, in the daemon's sandbox",
          rc == 0 and debugfs and debugfs[-1][5].split(",")[0] == "ro", out[-2000:] + err)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", required=True, help="the meson build directory")
    args = ap.parse_args()
    exit_on_sigterm()
    build = os.path.realpath(args.build)

    require_root_and_tools(tap, ("systemd-nspawn", "nsenter"))
    options = meson_options(build)
    prefix = options["prefix"]
    if prefix in ("/", "/usr") or not prefix.startswith("/"):
        tap.finish("the build's prefix is %s: this test binds the installed tree over the prefix, "
                        "which must not be the container's /usr (use the default /usr/local)" % prefix)

    with tempfile.TemporaryDirectory(prefix="gpreempt-systemd-") as tmp:
        stage = os.path.join(tmp, "stage")
        inst = subprocess.run(["meson", "install", "-C", build, "--destdir", stage, "--no-rebuild",
                               "--quiet"], capture_output=True, text=True)
        if inst.returncode != 0:
            tap.finish("meson install failed: " + inst.stderr.strip())
        binds = [(stage + prefix, prefix)]
        c = None
        try:
            c = Container("/", "gpreempt-test-%d" % os.getpid(), os.path.join(tmp, "nspawn.log"),
                          extra=node_options(build) + ["--bind-ro=%s:%s" % b for b in binds],
                # basic.target: the machine's own installed services stay down
                kernel_args=["systemd.unit=basic.target"])
            # what an operator does after installing into /usr/local
            c.out("ldconfig %s" % os.path.join(prefix, options["libdir"]))
            # a node has debugfs mounted; the container starts without it
            c.out("mountpoint -q /sys/kernel/debug || mount -t debugfs debugfs /sys/kernel/debug")
            # the container's /etc starts empty: its first boot runs preset-all,
            # which by Debian's presets enables the units meson installed
            check("gpreemptd.socket, enabled by the first boot's preset-all, listens at boot",
                  c.show("gpreemptd.socket", "ActiveState") == "active")
            test_no_kfd(c)
            node = EmulatedNode(c)
            node.start()
            c.out("mkdir -p /etc/gpreempt/workloads.d && printf '"
                  "[Workload]\\nName=online\\nClass=online\\nMatchCommandLine=*--kernel-name sd-online*\\n\\n"
                  "[Workload]\\nName=offline\\nClass=offline\\nMatchCommandLine=*--kernel-name sd-offline*\\n'"
                  " > /etc/gpreempt/workloads.d/50-test.conf")
            test_activation(c)
            test_exporter(c)
            test_debugfs_in_sandbox(c)
            off = test_sandbox_suspends(c, node)
            test_realtime(c)
            test_reload(c)
            test_sigkill(c, node, off)
            test_watchdog(c, node, off)
            test_stop(c, node, off)
            unit_dir = options["systemd_system_unit_dir"] or os.path.join(prefix, "lib/systemd/system")
            test_analyze(c, prefix, stage + unit_dir)
        except (RuntimeError, subprocess.TimeoutExpired, OSError) as e:
            check("the test ran to its end", False, str(e) + ("\n" + c.journal("gpreemptd") if c else ""))
        finally:
            if c:
                c.stop()
    tap.finish()


if __name__ == "__main__":
    main()
