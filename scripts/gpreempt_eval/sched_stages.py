# SPDX-License-Identifier: MIT
"""The reaction split into stages, observed from outside the daemon.

For each suspension (the kfdemu-run --trace line of the daemon's
SUSPEND_QUEUES, stamped where the ioctl entered the emulated kernel) and the
online store it answers (the latest kfdemu-app --dispatch-times stamp before
it), the kernel's scheduler events recorded by `perf record` on the
CLOCK_MONOTONIC clock (the clock of both stamps) give:

  store -> wake      the first wake-up of a daemon thread after the store
                     (sched_waking): a write breakpoint's trap, the poll
                     cadence's timer or another thread. The event names the
                     task that was running: a trap wakes the daemon in the
                     online process's context, but so does a timer interrupt
                     that lands while the online process runs, so the count
                     of wake-ups in its context bounds the traps from above
  wake -> running    that thread switched in (sched_switch)
  running -> issuer  the last switch-in of a daemon thread before the ioctl:
                     a hand-off to another thread (a worker), or the loop
                     preempted and switched in again; 0 when it ran straight on
  issuer -> ioctl    from there to the ioctl's entry
  store -> running   store -> wake and wake -> running together, also for a
                     wake-up perf did not record: the daemon's preemption
                     worker, woken by a write breakpoint's trap, switches in
                     with no sched_waking of it, since that wake-up is made
                     inside perf's own handling of the breakpoint's event,
                     where perf drops the tracepoints it would fire
                     ("unrecorded"; seen on this VM's kernel, 6.1)

What is not observable this way: the trap's own exception entry and the perf
overflow handler before the wake-up (inside store -> wake), and what the
daemon did between switching in and the ioctl (its looks, the policy). A
suspension whose daemon thread was already running at the store (a busy poll
loop) has no wake-up of its own and no switch-in before the ioctl: it is
counted apart ("already running").
"""
import bisect
import errno
import os
import re
import select
import signal
import statistics
import subprocess
import time

EVENTS = ("sched:sched_waking", "sched:sched_switch", "sched:sched_process_fork")
# comm prefix of the daemon and of any thread it names (15 characters at most)
DAEMON_COMM = "gpreempt"
FILTERS = {
    "sched:sched_waking": f'comm ~ "{DAEMON_COMM}*"',
    "sched:sched_switch": f'next_comm ~ "{DAEMON_COMM}*"',
    "sched:sched_process_fork": f'parent_comm ~ "{DAEMON_COMM}*"',
}
STAGES = ("store_to_wake", "wake_to_running", "running_to_issuer", "issuer_to_ioctl", "store_to_running")
# "  comm  pid/tid  seconds.nanoseconds: sched:event: fields"
LINE = re.compile(r"^\s*.*?\s+(\d+)/(\d+)\s+(\d+)\.(\d{9}):\s+(sched:\w+):\s+(.*)$")


def perf_missing():
    """Why perf cannot record here, or None."""
    try:
        p = subprocess.run(["perf", "list", "tracepoint"], capture_output=True, text=True, timeout=60)
    except FileNotFoundError:
        return "perf is not installed (scripts/setup installs linux-perf)"
    if "sched:sched_waking" not in p.stdout:
        return "perf lists no sched:sched_waking tracepoint (is tracefs mounted? mount -t tracefs nodev /sys/kernel/tracing)"
    return None


def record_argv(output, control=None):
    """perf record over the whole machine, in-kernel filtered to the daemon's threads; with control
    (ctl, ack FIFOs), its events start disabled until "enable" comes through them."""
    argv = ["perf", "record", "--quiet", "-a", "-k", "mono", "-o", output]
    if control:
        argv += ["--delay", "-1", "--control", f"fifo:{control[0]},{control[1]}"]
    for event in EVENTS:
        argv += ["-e", event, "--filter", FILTERS[event]]
    return argv


class Recording:
    """perf record running, its events enabled, from __enter__ on (perf's control FIFOs say when:
    no event of the run is lost to perf's start-up); __exit__ stops it. error: why it failed, or None."""

    START_TIMEOUT_S = 60

    def __init__(self, output, tmp):
        self.output, self.error = output, None
        self.ctl, self.ack = os.path.join(tmp, "perf-ctl"), os.path.join(tmp, "perf-ack")

    def __enter__(self):
        os.mkfifo(self.ctl)
        os.mkfifo(self.ack)
        self.perf = subprocess.Popen(record_argv(self.output, (self.ctl, self.ack)), stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True)
        try:
            problem = self.enable()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        if problem:
            self.__exit__(None, None, None)
            raise RuntimeError(f"{problem}: {self.error or 'perf said nothing'}")
        return self

    def enable(self):
        """Tells perf to enable its events and waits for its ack; what went wrong, or None."""
        deadline = time.monotonic() + self.START_TIMEOUT_S
        ack = os.open(self.ack, os.O_RDONLY | os.O_NONBLOCK)
        try:
            ctl = None
            while ctl is None and self.perf.poll() is None and time.monotonic() < deadline:
                try:
                    ctl = os.open(self.ctl, os.O_WRONLY | os.O_NONBLOCK)
                except OSError as e:
                    if e.errno != errno.ENXIO:  # ENXIO: perf has not opened its end yet
                        raise
                    time.sleep(0.05)
            if ctl is None:
                return "perf record did not start"
            os.write(ctl, b"enable\n")
            os.close(ctl)
            ready, _, _ = select.select([ack], [], [], max(0.0, deadline - time.monotonic()))
            if not ready or not os.read(ack, 16).startswith(b"ack"):
                return "perf record did not enable its events"
            return None
        finally:
            os.close(ack)

    def __exit__(self, *exc):
        if self.perf.poll() is None:
            self.perf.send_signal(signal.SIGINT)
        stderr = self.perf.communicate(timeout=300)[1]
        if self.perf.returncode not in (0, -signal.SIGINT):
            self.error = f"perf record failed: {stderr.strip()[-300:]}"
        return False


def read_events(data):
    """The events of a perf.data file: parse_events() of its perf script text."""
    p = subprocess.run(["perf", "script", "-i", data, "--ns", "-F", "comm,pid,tid,time,event,trace"],
                       capture_output=True, text=True, check=True)
    return parse_events(p.stdout)


def parse_events(text):
    """(wakings, switch-ins, forks) of perf script's text: lists of (ns, waker tgid, wakee tid), (ns, tid),
    (parent tid, child tid)."""
    wakings, switches, forks = [], [], []
    for line in text.splitlines():
        m = LINE.match(line)
        if not m:
            continue
        tgid, ns, event, fields = int(m[1]), int(m[3]) * 1000000000 + int(m[4]), m[5], m[6]
        values = dict(re.findall(r"(\w+)=(\S+)", fields))
        if event == "sched:sched_waking":
            wakings.append((ns, tgid, int(values["pid"])))
        elif event == "sched:sched_switch":
            switches.append((ns, int(values["next_pid"])))
        else:
            forks.append((int(values["pid"]), int(values["child_pid"])))
    return wakings, switches, forks


def daemon_threads(daemon_pid, forks):
    """The daemon's main thread and every thread one of its threads started."""
    threads = {daemon_pid}
    for parent, child in forks:
        if parent in threads:
            threads.add(child)
    return threads


def read_suspensions(trace, daemon_pid):
    """The entry stamps of the daemon's SUSPEND_QUEUES calls, sorted."""
    marker = f" SUSPEND_QUEUES caller {daemon_pid} "
    with open(trace) as f:
        return sorted(int(line.split(" entered ")[1].split()[0]) for line in f if marker in line)


def read_stores(dispatch_times):
    """(sorted store stamps, the storing process's pid)."""
    stamps, pid = [], None
    with open(dispatch_times) as f:
        for line in f:
            fields = line.split()
            stamps.append(int(fields[0]))
            pid = int(fields[1])
    return sorted(stamps), pid


def percentiles(values):
    if not values:
        return None
    values = sorted(values)
    return {"p50_us": values[len(values) // 2] / 1e3, "p99_us": values[len(values) * 99 // 100] / 1e3,
            "events": len(values)}


def analyse(data, trace, dispatch_times, daemon_pid):
    """The stages of one run (a dict), or raises ValueError saying what is missing."""
    return split(read_events(data), read_stores(dispatch_times), read_suspensions(trace, daemon_pid), daemon_pid)


def split(events, online, suspensions, daemon_pid):
    """The stages of each suspension (sorted entry stamps) after the store before it; events: parse_events()'s;
    online: (sorted store stamps, the storing process's pid), as read_stores() gives them."""
    wakings, switches, forks = events
    threads = daemon_threads(daemon_pid, forks)
    wakings = sorted(w for w in wakings if w[2] in threads)
    switches = sorted(s[0] for s in switches if s[1] in threads)
    waking_times = [w[0] for w in wakings]
    stores, online_pid = online
    if not stores or not suspensions:
        raise ValueError("no online store or no suspension was recorded")
    if not switches:
        raise ValueError("perf recorded no switch-in of the daemon's threads")
    stages = {s: [] for s in STAGES}
    woken_by = {"online_process": 0, "other": 0, "unrecorded": 0, "already_running": 0}
    for entered in suspensions:
        i = bisect.bisect_left(stores, entered + 1) - 1
        if i < 0 or entered - stores[i] >= 50000000:
            continue
        store = stores[i]
        w = bisect.bisect_left(waking_times, store)
        woke = wakings[w][0] if w < len(wakings) and wakings[w][0] <= entered else None
        running_at = bisect.bisect_left(switches, woke if woke is not None else store)
        if running_at == len(switches) or switches[running_at] > entered:
            woken_by["already_running"] += 1
            continue
        running, issuer = switches[running_at], switches[bisect.bisect_left(switches, entered + 1) - 1]
        stages["store_to_running"].append(running - store)
        stages["running_to_issuer"].append(issuer - running)
        stages["issuer_to_ioctl"].append(entered - issuer)
        if woke is None:
            woken_by["unrecorded"] += 1  # switched in with no wake-up recorded: see the module's docstring
            continue
        woken_by["online_process" if wakings[w][1] == online_pid else "other"] += 1
        stages["store_to_wake"].append(woke - store)
        stages["wake_to_running"].append(running - woke)
    return {"stages": {s: percentiles(v) for s, v in stages.items()}, "woken_by": woken_by,
            "daemon_threads": len(threads), "suspensions": len(suspensions)}


def summarise(runs):
    """Median (min, max) over runs of each stage's p50 and p99, and the wake-up sources' totals."""
    out = {"runs": len(runs), "stages": {}, "woken_by": {}}
    for s in STAGES:
        for q in ("p50_us", "p99_us"):
            values = [r["stages"][s][q] for r in runs if r["stages"][s]]
            if values:
                out["stages"].setdefault(s, {})[q] = {"median": statistics.median(values), "min": min(values),
                                                      "max": max(values), "runs": len(values)}
    for k in ("online_process", "other", "unrecorded", "already_running"):
        out["woken_by"][k] = sum(r["woken_by"][k] for r in runs)
    return out
