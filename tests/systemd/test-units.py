#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The shipped systemd units under a real systemd (Debian 12's, PID 1 of a
systemd-nspawn container booted from this machine's own /usr), with kfdemu
playing the node. TAP output; run by meson test:

  tests/systemd/test-units.py --build BUILD_DIR

What is installed is what `meson install` installs, bound at its prefix: the
units, sysusers and tmpfiles entries, gpreemptd, gpreemptctl and the library.
Three things stand in for the node, each stated where it is set up:
kfdemu-run as a service of its own (the kernel), an empty /dev/kfd (the
device node udev would create; the preload serves opens of that path), and a
drop-in that gives gpreemptd the preload's environment. Everything else, the
sandbox first, is the shipped unit as written.
"""
import argparse
import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time

results = []


def check(name, ok, detail=""):
    results.append((name, bool(ok), detail))
    return bool(ok)


def report_and_exit(extra_failure=None):
    if extra_failure:
        results.append((extra_failure, False, ""))
    print("1..%d" % len(results))
    for i, (name, ok, detail) in enumerate(results, 1):
        print("%s %d - %s" % ("ok" if ok else "not ok", i, name))
        if detail and not ok:
            for line in detail.rstrip().splitlines():
                print("#   " + line)
    sys.stdout.flush()
    sys.exit(0 if all(ok for _, ok, _ in results) else 1)


def wait_for(predicate, timeout, step=0.05):
    """Poll until predicate() is true (returned); None after timeout."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            return None
        time.sleep(step)


def meson_options(build):
    out = subprocess.run(["meson", "introspect", build, "--buildoptions"],
                         check=True, capture_output=True, text=True).stdout
    return {o["name"]: o["value"] for o in json.loads(out)}


class Container:
    """A booted systemd-nspawn container of this machine's /usr."""

    def __init__(self, name, binds, log_path):
        self.log = open(log_path, "w")
        cmd = ["systemd-nspawn", "-D", "/", "--volatile=yes", "--register=no", "--keep-unit",
               "--private-network", "-M", name, "--console=passive",
               # gpreemptd.service keeps CAP_PERFMON for its breakpoints; nspawn
               # leaves it out of a container unless asked.
               "--capability=CAP_PERFMON",
               # nspawn's own seccomp filter, which a node does not have, refuses
               # these two (@debug) unless asked: the daemon's breakpoints
               # and kfdemu's copy of a debugger's event fd need them.
               "--system-call-filter=perf_event_open pidfd_getfd"]
        cmd += ["--bind-ro=%s:%s" % (src, dst) for src, dst in binds]
        # basic.target: the machine's own installed services stay down.
        cmd += ["-b", "systemd.firstboot=off", "systemd.unit=basic.target"]
        self.nspawn = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=self.log,
                                       stderr=subprocess.STDOUT, start_new_session=True)
        self.pid1 = wait_for(self._find_pid1, 20)
        if not self.pid1:
            raise RuntimeError("systemd-nspawn started no systemd (see %s)" % log_path)

    def _find_pid1(self):
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open("/proc/%s/stat" % entry) as f:
                    stat = f.read()
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2:].split()
            if int(fields[1]) == self.nspawn.pid and stat[stat.index("(") + 1:stat.rindex(")")] == "systemd":
                return int(entry)
        if self.nspawn.poll() is not None:
            raise RuntimeError("systemd-nspawn exited with %d" % self.nspawn.returncode)
        return None

    def run(self, command, timeout=30, check_rc=False):
        """Run a shell command inside the container; (rc, stdout, stderr)."""
        p = subprocess.run(["nsenter", "-t", str(self.pid1), "-a", "--", "/bin/sh", "-c", command],
                           capture_output=True, text=True, timeout=timeout)
        if check_rc and p.returncode != 0:
            raise RuntimeError("%s: exit %d\n%s%s" % (command, p.returncode, p.stdout, p.stderr))
        return p.returncode, p.stdout, p.stderr

    def out(self, command, timeout=30):
        return self.run(command, timeout, check_rc=True)[1]

    def show(self, unit, prop):
        return self.out("systemctl show -p %s --value %s" % (prop, unit)).strip()

    def stop(self):
        if self.nspawn.poll() is None:
            os.killpg(self.nspawn.pid, signal.SIGTERM)
            try:
                self.nspawn.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(self.nspawn.pid, signal.SIGKILL)
                self.nspawn.wait()
        self.log.close()


class Node:
    """The emulated node inside the container and the daemon's view of it."""

    def __init__(self, c, build):
        self.c = c
        self.build = build
        self.preload_env = {
            "LD_PRELOAD": os.path.join(build, "tests/kfdemu/transport/libkfdemu-preload.so"),
            "KFDEMU_SOCKET": "/run/kfdemu/kfdemu.sock",
            "KFDEMU_ROOT": "/run/kfdemu",
        }
        asan = os.environ.get("ASAN_OPTIONS")
        if asan:
            # a sanitizer build: its runtime then comes after the preload
            self.preload_env["ASAN_OPTIONS"] = asan
            self.preload_env["UBSAN_OPTIONS"] = os.environ.get("UBSAN_OPTIONS", "")

    def start_kernel(self):
        run = os.path.join(self.build, "tests/kfdemu/transport/kfdemu-run")
        self.c.out("systemd-run -q --unit=kfdemu %s --root /run/kfdemu --gpus 1 -- sleep infinity" % run)
        wait_for(lambda: self.c.run("test -S /run/kfdemu/kfdemu.sock")[0] == 0, 10)
        # udev gives /dev/kfd mode 0666 on Debian; kfdemu's socket, the way
        # in, is the root's only until made so
        self.c.out("chmod 0755 /run/kfdemu && chmod 0666 /run/kfdemu/kfdemu.sock && touch /dev/kfd")
        env = " ".join("%s=%s" % kv for kv in self.preload_env.items())
        self.c.out("mkdir -p /run/systemd/system/gpreemptd.service.d && "
                   "printf '[Service]\\nEnvironment=%s\\n' > /run/systemd/system/gpreemptd.service.d/50-kfdemu.conf"
                   " && systemctl daemon-reload" % env)

    def start_app(self, unit, kernel_name, args, user=None):
        props = " ".join("-E %s=%s" % kv for kv in self.preload_env.items())
        if user:
            props += " -p User=%s" % user
        app = os.path.join(self.build, "tests/kfdemu/app/kfdemu-app")
        self.c.out("mkdir -p -m 1777 /run/apps && systemd-run -q --unit=%s %s %s --kernel-name %s "
                   "--report none --dispatch-times /run/apps/%s %s"
                   % (unit, props, app, kernel_name, unit, args))
        pid = wait_for(lambda: int(self.c.show(unit, "MainPID") or 0), 10)
        return pid

    def dispatches(self, unit):
        rc, out, _ = self.c.run("wc -l < /run/apps/%s" % unit)
        return int(out) if rc == 0 and out.strip() else 0

    def progress(self, unit, seconds):
        before = self.dispatches(unit)
        time.sleep(seconds)
        return self.dispatches(unit) - before

    def status(self):
        rc, out, _ = self.c.run("gpreemptctl status --json", timeout=15)
        if rc != 0:
            return None
        try:
            return json.loads(out)
        except ValueError:
            return None

    def process(self, pid):
        s = self.status() or {}
        for p in s.get("processes", []):
            if p.get("pid") == pid:
                return p
        return None

    def gpu(self):
        s = self.status() or {}
        gpus = s.get("gpus", [])
        return gpus[0] if gpus else None


def journal(c, unit, lines=30):
    return c.run("journalctl -u %s --no-pager -n %d -o cat" % (unit, lines))[1]


def test_no_kfd(c):
    """Before any KFD exists: the daemon starts, says so, and the socket
    survives being asked (a skipped service would make it hit its trigger
    limit and stop listening for good)."""
    answers = 0
    text = ""
    for _ in range(8):
        rc, text, err = c.run("gpreemptctl status", timeout=15)
        answers += rc == 0
    check("without /dev/kfd, gpreemptctl status is answered, each time",
          answers == 8, text + err + journal(c, "gpreemptd"))
    check("... and says this node has no KFD", "No KFD" in text, text)
    check("... and the socket still listens",
          c.show("gpreemptd.socket", "ActiveState") == "active",
          c.out("systemctl status --no-pager gpreemptd.socket || true"))
    c.out("systemctl stop gpreemptd.service")


def test_activation(c, node):
    check("gpreemptd is not running before anyone asks",
          c.show("gpreemptd.service", "ActiveState") == "inactive")
    status = node.status()
    check("gpreemptctl status socket-activates gpreemptd", status is not None,
          journal(c, "gpreemptd"))
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
    attached = wait_for(lambda: (node.process(off) or {}).get("attached"), 10)
    check("the sandboxed daemon attaches an offline process of another user", attached,
          json.dumps(node.process(off)) + journal(c, "gpreemptd"))
    on = node.start_app("online", "sd-online", "--continuous --kernel-us 1000")
    online = wait_for(lambda: node.process(on), 10) or {}
    watches = [q.get("watch") for q in online.get("online_queues", [])]
    check("... watches the online queue with a hardware breakpoint (CAP_PERFMON, perf_event_open)",
          watches == ["breakpoint"], json.dumps(online))
    suspended = wait_for(lambda: (node.gpu() or {}).get("offline_suspended"), 10)
    check("... suspends the offline queues while the online process has work", suspended,
          json.dumps(node.status()))
    stalled = node.progress("offline", 0.5)
    check("... and the offline process really stops (%d kernels in 0.5 s)" % stalled, stalled <= 2)
    c.out("systemctl stop online")
    resumed = wait_for(lambda: not (node.gpu() or {}).get("offline_suspended", True), 10)
    moved = node.progress("offline", 0.5)
    check("... and resumes them once the online process is idle (%d kernels in 0.5 s)" % moved,
          resumed and moved >= 20, json.dumps(node.status()))
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


def test_realtime(c, node):
    status = node.status() or {}
    if can_raise_limits(c) or hard_rtprio_limit(c) not in ("0",):
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
    status = node.status() or {}
    check("the unit's syscall filter lets sched_setscheduler through (SCHED_FIFO with CAP_SYS_NICE added)",
          status.get("realtime_priority") == 1, json.dumps(status))
    c.out("rm /run/systemd/system/gpreemptd.service.d/60-nice.conf && systemctl daemon-reload "
          "&& systemctl restart gpreemptd.service")


def test_reload(c, node):
    pid = c.show("gpreemptd.service", "MainPID")
    before = (node.status() or {}).get("reloads", -1)
    c.out("systemctl reload gpreemptd.service")
    after = wait_for(lambda: (node.status() or {}).get("reloads", -1) > before, 5)
    check("systemctl reload re-reads the configuration in the same process",
          after and c.show("gpreemptd.service", "MainPID") == pid, journal(c, "gpreemptd"))
    c.out("printf '[Workload]\\nClass=sometimes\\n' > /etc/gpreempt/workloads.d/90-broken.conf")
    c.run("systemctl reload gpreemptd.service")
    time.sleep(0.3)
    status = node.status() or {}
    check("a reload with a broken file keeps the daemon and the configuration it had",
          c.show("gpreemptd.service", "ActiveState") == "active" and status.get("workloads") == 2
          and c.show("gpreemptd.service", "MainPID") == pid,
          json.dumps(status) + journal(c, "gpreemptd"))
    check("... and says which file and line", "90-broken.conf:2" in journal(c, "gpreemptd", 10),
          journal(c, "gpreemptd", 10))
    c.out("rm /etc/gpreempt/workloads.d/90-broken.conf && systemctl reload gpreemptd.service")


def test_sigkill(c, node, off):
    c.out("gpreemptctl suspend %d" % off)
    stalled = node.progress("offline", 0.3)
    check("gpreemptctl suspend holds the offline process (%d kernels in 0.3 s)" % stalled, stalled <= 2)
    old = c.show("gpreemptd.service", "MainPID")
    restarts = int(c.show("gpreemptd.service", "NRestarts"))
    c.out("systemctl kill -s SIGKILL --kill-who=main gpreemptd.service")
    # RestartSec=1s: look before the new instance is up
    time.sleep(0.1)
    moved = node.progress("offline", 0.3)
    check("after SIGKILL of the daemon, nothing stays suspended (%d kernels in 0.3 s)" % moved, moved >= 10)
    back = wait_for(lambda: c.show("gpreemptd.service", "SubState") == "running"
                    and c.show("gpreemptd.service", "MainPID") not in ("0", old), 10)
    check("... and Restart=on-failure brings it back",
          back and int(c.show("gpreemptd.service", "NRestarts")) == restarts + 1,
          journal(c, "gpreemptd"))


def test_watchdog(c, node, off):
    wait_for(lambda: (node.process(off) or {}).get("attached"), 10)
    old = c.show("gpreemptd.service", "MainPID")
    restarts = int(c.show("gpreemptd.service", "NRestarts"))
    c.out("gpreemptctl suspend %d" % off)
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
          journal(c, "gpreemptd", 40))
    moved = node.progress("offline", 0.3)
    check("... and what the stuck instance held runs again (%d kernels in 0.3 s)" % moved, moved >= 10)


def test_stop(c, node, off):
    wait_for(lambda: (node.process(off) or {}).get("attached"), 10)
    c.out("gpreemptctl suspend %d" % off)
    c.out("systemctl stop gpreemptd.service")
    moved = node.progress("offline", 0.3)
    tracer = c.out("grep TracerPid /proc/%d/status" % off).split()[1]
    check("systemctl stop resumes and detaches (%d kernels in 0.3 s, TracerPid %s)" % (moved, tracer),
          moved >= 10 and tracer == "0")
    result = c.show("gpreemptd.service", "Result")
    check("... and the daemon exits cleanly (Result=%s)" % result, result == "success", journal(c, "gpreemptd"))
    check("... and the socket keeps listening for the next start",
          c.show("gpreemptd.socket", "ActiveState") == "active")


def claimed_exposure(unit_path):
    """The exposure score the unit's comments state ("rates what is left at N")."""
    with open(unit_path) as f:
        text = " ".join(line.lstrip("# ").strip() for line in f)
    words = text.split("rates what is left at ", 1)
    return float(words[1].split()[0]) if len(words) == 2 else None


def test_analyze(c, prefix, unit_path):
    rc, out, err = c.run("systemd-analyze verify --man=no gpreemptd.service gpreemptd.socket")
    check("systemd-analyze verify: no complaint about the units", rc == 0 and not err.strip(), out + err)
    docs = c.out("systemctl show -p Documentation --value gpreemptd.service gpreemptd.socket").split()
    pages = [d.strip('"')[4:] for d in docs if d.strip('"').startswith("man:")]
    missing = [p for p in pages if c.run("test -f %s/share/man/man%s/%s.%s" % (
        prefix, p[-2], p[:-3], p[-2]))[0] != 0]
    check("every man page in Documentation= is installed", pages and not missing, " ".join(missing))
    rc, out, err = c.run("systemd-analyze security --no-pager gpreemptd.service")
    score = None
    for line in out.splitlines():
        if "Overall exposure level" in line:
            score = float(line.split("exposure level for gpreemptd.service:")[1].split()[0])
    claimed = claimed_exposure(unit_path)
    check("systemd-analyze security: exposure %s, at most the %s the unit's comments state and justify"
          % (score, claimed), score is not None and claimed is not None and score <= claimed,
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
    build = os.path.realpath(args.build)

    if os.geteuid() != 0:
        report_and_exit("runs as root: it boots a container (systemd-nspawn) and installs into it")
    for tool in ("systemd-nspawn", "nsenter"):
        if subprocess.run(["sh", "-c", "command -v " + tool], capture_output=True).returncode != 0:
            report_and_exit("%s is missing: scripts/setup installs it (systemd-container, util-linux)" % tool)
    options = meson_options(build)
    prefix = options["prefix"]
    if prefix in ("/", "/usr") or not prefix.startswith("/"):
        report_and_exit("the build's prefix is %s: this test binds the installed tree over the prefix, "
                        "which must not be the container's /usr (use the default /usr/local)" % prefix)

    with tempfile.TemporaryDirectory(prefix="gpreempt-systemd-") as tmp:
        stage = os.path.join(tmp, "stage")
        inst = subprocess.run(["meson", "install", "-C", build, "--destdir", stage, "--no-rebuild",
                               "--quiet"], capture_output=True, text=True)
        if inst.returncode != 0:
            report_and_exit("meson install failed: " + inst.stderr.strip())
        binds = [(stage + prefix, prefix), (build, build)]
        c = None
        try:
            c = Container("gpreempt-test-%d" % os.getpid(), binds, os.path.join(tmp, "nspawn.log"))
            booted = wait_for(lambda: c.run("systemctl is-system-running")[1].strip()
                              in ("running", "degraded"), 30, step=0.2)
            if not booted:
                raise RuntimeError("the container did not finish booting")
            # what an operator does after installing into /usr/local
            c.out("ldconfig %s" % os.path.join(prefix, options["libdir"]))
            # a node has debugfs mounted; the container starts without it
            c.out("mountpoint -q /sys/kernel/debug || mount -t debugfs debugfs /sys/kernel/debug")
            check("the package presets enable gpreemptd.socket, listening at boot",
                  c.show("gpreemptd.socket", "ActiveState") == "active")
            test_no_kfd(c)
            node = Node(c, build)
            node.start_kernel()
            c.out("mkdir -p /etc/gpreempt/workloads.d && printf '"
                  "[Workload]\\nName=online\\nClass=online\\nMatchCommandLine=*--kernel-name sd-online*\\n\\n"
                  "[Workload]\\nName=offline\\nClass=offline\\nMatchCommandLine=*--kernel-name sd-offline*\\n'"
                  " > /etc/gpreempt/workloads.d/50-test.conf")
            test_activation(c, node)
            test_debugfs_in_sandbox(c)
            off = test_sandbox_suspends(c, node)
            test_realtime(c, node)
            test_reload(c, node)
            test_sigkill(c, node, off)
            test_watchdog(c, node, off)
            test_stop(c, node, off)
            test_analyze(c, prefix, os.path.join(stage + prefix, "lib/systemd/system/gpreemptd.service"))
        except (RuntimeError, subprocess.TimeoutExpired, OSError) as e:
            check("the test ran to its end", False, str(e) + ("\n" + journal(c, "gpreemptd") if c else ""))
        finally:
            if c:
                c.stop()
    report_and_exit()


if __name__ == "__main__":
    main()
