# SPDX-License-Identifier: MIT
"""What the tests that run gpreempt under a real systemd share: TAP results,
polling, and a booted systemd-nspawn container driven with nsenter (no
systemd runs on the host, so machinectl and systemctl -M cannot reach it).
"""
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time


class Tap:
    """Checks collected as they run, printed as TAP at the end."""

    def __init__(self):
        self.results = []

    def check(self, name, ok, detail=""):
        self.results.append((name, bool(ok), detail))
        return bool(ok)

    def finish(self, extra_failure=None):
        if extra_failure:
            self.results.append((extra_failure, False, ""))
        print("1..%d" % len(self.results))
        for i, (name, ok, detail) in enumerate(self.results, 1):
            print("%s %d - %s" % ("ok" if ok else "not ok", i, name))
            if detail and not ok:
                for line in detail.rstrip().splitlines():
                    print("#   " + line)
        sys.stdout.flush()
        sys.exit(0 if all(ok for _, ok, _ in self.results) else 1)


def exit_on_sigterm():
    """meson test ends a test that timed out with SIGTERM, which would end
    Python without its finally clauses; the container, in a session of its
    own, would outlive it. Make SIGTERM an exit that runs them."""
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))


def wait_for(predicate, timeout, step=0.2):
    """Poll until predicate() is true (returned); None after timeout."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            return None
        time.sleep(step)


def require_root_and_tools(tap, tools):
    if os.geteuid() != 0:
        tap.finish("runs as root: it boots a container (systemd-nspawn)")
    for tool in tools:
        if not shutil.which(tool):
            tap.finish("%s is missing: scripts/setup installs what the tests need" % tool)


class Container:
    """A booted systemd-nspawn container.

    root "/" boots this machine's own /usr on a throw-away root (--volatile);
    any other root is booted as it is. extra: further nspawn options.
    """

    def __init__(self, root, name, log_path, extra=(), kernel_args=()):
        self.log = open(log_path, "w")
        self.pid1_fd = None
        cmd = ["systemd-nspawn", "-D", root, "--register=no", "--keep-unit", "--private-network",
               "-M", name, "--console=passive"]
        if root == "/":
            cmd.append("--volatile=yes")
        cmd += list(extra)
        cmd += ["-b", "systemd.firstboot=off"] + list(kernel_args)
        self.nspawn = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=self.log,
                                       stderr=subprocess.STDOUT, start_new_session=True)
        try:
            self.pid1 = wait_for(self._find_pid1, 20, step=0.05)
            if not self.pid1:
                raise RuntimeError("systemd-nspawn started no systemd (see %s)" % log_path)
            # held from now on: stop() signals this process, never a later one given the same pid
            self.pid1_fd = os.pidfd_open(self.pid1)
            booted = wait_for(lambda: self.run("systemctl is-system-running")[1].strip()
                              in ("running", "degraded"), 30)
            if not booted:
                raise RuntimeError("the container did not finish booting")
        except BaseException:
            # the caller gets no container to stop
            self.stop()
            raise

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

    def run(self, command, timeout=30, check_rc=False, cwd="/"):
        """Run a shell command inside the container; (rc, stdout, stderr)."""
        p = subprocess.run(["nsenter", "-t", str(self.pid1), "-a", "--", "/bin/sh", "-c",
                            "cd %s && %s" % (shlex.quote(cwd), command)],
                           capture_output=True, text=True, timeout=timeout)
        if check_rc and p.returncode != 0:
            raise RuntimeError("%s: exit %d\n%s%s" % (command, p.returncode, p.stdout, p.stderr))
        return p.returncode, p.stdout, p.stderr

    def out(self, command, timeout=30):
        return self.run(command, timeout, check_rc=True)[1]

    def show(self, unit, prop):
        return self.out("systemctl show -p %s --value %s" % (prop, unit)).strip()

    def journal(self, unit, lines=30):
        return self.run("journalctl -u %s --no-pager -n %d -o cat" % (unit, lines))[1]

    def stop(self):
        if self.nspawn.poll() is None:
            os.killpg(self.nspawn.pid, signal.SIGTERM)
            try:
                self.nspawn.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(self.nspawn.pid, signal.SIGKILL)
                self.nspawn.wait()
        if self.pid1_fd is not None:
            # the container's systemd outlives an nspawn that did not power it off (each run left one
            # behind, reparented to the host's init); killing a PID namespace's init ends the namespace
            try:
                signal.pidfd_send_signal(self.pid1_fd, signal.SIGKILL)
            except ProcessLookupError:
                pass
            os.close(self.pid1_fd)
            self.pid1_fd = None
        self.log.close()


# Where the containers see the build directory (kfdemu and its preload).
# Not its own path: gpreemptd's unit hides /tmp (PrivateTmp=) and /home and
# /root (ProtectHome=), where a checkout may well be.
BUILD_MOUNT = "/opt/gpreempt-build"


def node_options(build):
    """The nspawn options a container standing in for a node needs."""
    return [
        # gpreemptd.service keeps CAP_PERFMON for its breakpoints; nspawn
        # leaves it out of a container unless asked.
        "--capability=CAP_PERFMON",
        # nspawn's own seccomp filter, which a node does not have, refuses
        # these two (@debug) unless asked: the daemon's breakpoints and
        # kfdemu's copy of a debugger's event fd need them.
        "--system-call-filter=perf_event_open pidfd_getfd",
        # kfdemu and its preload
        "--bind-ro=%s:%s" % (build, BUILD_MOUNT)]


class EmulatedNode:
    """kfdemu inside a container, standing in for the GPU, and the
    emulated applications that use it. The container was started with
    node_options()."""

    def __init__(self, c):
        self.c = c
        self.free_rate = 0  # an offline job's kernels a second when nothing holds it
        build = self.build = BUILD_MOUNT
        self.env = {
            "LD_PRELOAD": os.path.join(build, "tests/kfdemu/transport/libkfdemu-preload.so"),
            "KFDEMU_SOCKET": "/run/kfdemu/kfdemu.sock",
        }
        asan = os.environ.get("ASAN_OPTIONS")
        if asan:
            # a sanitizer build: its runtime then comes after the preload
            self.env["ASAN_OPTIONS"] = asan
            self.env["UBSAN_OPTIONS"] = os.environ.get("UBSAN_OPTIONS", "")

    def start(self, dropin_dir="/run/systemd/system/gpreemptd.service.d"):
        """The emulated kernel as a service of its own, its files (/dev/kfd,
        the KFD's sysfs and debugfs) mounted for the whole container as a
        node has them, and a drop-in that gives gpreemptd the preload's
        environment."""
        run = os.path.join(self.build, "tests/kfdemu/transport/kfdemu-run")
        self.c.out("systemd-run -q --unit=kfdemu -E KFDEMU_PRELOAD=%s %s --system-wide --root /run/kfdemu "
                   "--gpus 1 -- sleep infinity" % (self.env["LD_PRELOAD"], run))
        # /dev/kfd is the last of its mounts
        if not wait_for(lambda: self.c.run("test -S /dev/kfd")[0] == 0, 10):
            raise RuntimeError("kfdemu mounted no /dev/kfd:\n" + self.c.journal("kfdemu"))
        # --system-wide opens the socket and its directory to every user,
        # as udev gives /dev/kfd mode 0666 on Debian.
        env = " ".join("%s=%s" % kv for kv in self.env.items())
        self.c.out("mkdir -p %s && printf '[Service]\\nEnvironment=%s\\n' > %s/50-kfdemu.conf"
                   " && systemctl daemon-reload" % (dropin_dir, env, dropin_dir))

    def start_app(self, unit, kernel_name, args, user=None):
        """kfdemu-app as a transient service; its dispatches are counted in /run/apps/<unit>."""
        props = " ".join("-E %s=%s" % kv for kv in self.env.items())
        if user:
            props += " -p User=%s" % user
        app = os.path.join(self.build, "tests/kfdemu/app/kfdemu-app")
        self.c.out("mkdir -p -m 1777 /run/apps && systemd-run -q --unit=%s %s %s --kernel-name %s "
                   "--report none --dispatch-times /run/apps/%s %s"
                   % (unit, props, app, kernel_name, unit, args))
        pid = wait_for(lambda: int(self.c.show(unit, "MainPID") or 0), 10)
        if not pid:
            raise RuntimeError("%s did not start:\n%s" % (unit, self.c.journal(unit)))
        return pid

    def dispatches(self, unit):
        rc, out, _ = self.c.run("wc -l < /run/apps/%s" % unit)
        return int(out) if rc == 0 and out.strip() else 0

    def progress(self, unit, seconds=1.0):
        """Kernels unit dispatched in seconds. kfdemu-app's dispatch file is
        fully buffered (lines arrive some hundred at a time): give it 1 s."""
        before = self.dispatches(unit)
        time.sleep(seconds)
        return self.dispatches(unit) - before

    def hold_and_release(self, offline, online):
        """The offline unit's kernels in 1 s while the online unit has work,
        then, once it is stopped and gpreemptd resumed the offline queues, in
        1 s: (suspended, held, resumed, free). The free rate is kept
        (free_rate) to compare later measurements with."""
        suspended = wait_for(lambda: (status_gpu(self.c) or {}).get("offline_suspended"), 10)
        held = self.progress(offline, 1.0)
        self.c.out("systemctl stop %s" % online)
        resumed = wait_for(lambda: not (status_gpu(self.c) or {}).get("offline_suspended", True), 10)
        free = self.progress(offline, 1.0)
        self.free_rate = free / 1.0
        return suspended, held, resumed, free

    def runs_freely(self, unit):
        """(kernels in 1 s, whether that is at least half the free rate):
        a held job still makes about a tenth of it."""
        moved = self.progress(unit, 1.0)
        return moved, self.free_rate >= 20 and moved >= 0.5 * self.free_rate


def suspend_attached(c, pid):
    """gpreemptctl suspend pid once gpreemptd has attached it (after a
    restart the new instance attaches anew)."""
    if not wait_for(lambda: (status_process(c, pid) or {}).get("attached"), 10, step=0.2):
        raise RuntimeError("gpreemptd did not attach %d: %s" % (pid, json.dumps(status_process(c, pid))))
    c.out("gpreemptctl suspend %d" % pid)


def missing_man_pages(c, units, mandir, suffix=""):
    """(the man: pages the units' Documentation= names, those not installed
    under mandir as manN/page.N<suffix>)."""
    docs = c.out("systemctl show -p Documentation --value %s" % " ".join(units)).split()
    pages = [d.strip('"')[4:] for d in docs if d.strip('"').startswith("man:")]
    missing = [p for p in pages if c.run("test -f %s/man%s/%s.%s%s" % (mandir, p[-2], p[:-3], p[-2], suffix))[0]]
    return pages, missing


def daemon_status(c):
    """gpreemptctl status --json inside the container; None if it fails."""
    rc, out, _ = c.run("gpreemptctl status --json", timeout=15)
    if rc != 0:
        return None
    try:
        return json.loads(out)
    except ValueError:
        return None


def status_process(c, pid):
    for p in (daemon_status(c) or {}).get("processes", []):
        if p.get("pid") == pid:
            return p
    return None


def status_gpu(c):
    gpus = (daemon_status(c) or {}).get("gpus", [])
    return gpus[0] if gpus else None


def held_back(held, held_s, free, free_s):
    """Whether an offline job made at most 40 % of its free rate while held.
    A suspension is not total: the offline bounds give a held job its slices
    (MinOfflineSharePercent= 10 % of every ShareWindowMs=, and a run after
    each MaxSuspendMs=), so a held job is slowed several-fold, not stopped."""
    return free >= 20 and held / held_s <= 0.4 * free / free_s
