#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""scripts/gpreempt_eval/sched_stages.py: perf script's text parsed, the
daemon's threads found through its forks, and a reaction split into stages,
on made-up events. TAP output. The package comes from PYTHONPATH (meson test
sets it):

  PYTHONPATH=scripts:tests/python tests/eval/test-sched-stages.py
"""

from gpreempt_eval import sched_stages
from tap import check, finish


DAEMON, WORKER, ONLINE, OTHER_DAEMON = 100, 101, 200, 300
S = 1000000000  # a store at 1 s, another at 2 s, in ns


def stamp(ns):
    return f"{ns // 1000000000}.{ns % 1000000000:09d}"


def waking(ns, waker, wakee):
    return (f"  kfdemu-app {waker}/{waker} {stamp(ns)}: sched:sched_waking: comm=gpreemptd pid={wakee} prio=98 "
            f"target_cpu=001")


def switch(ns, to):
    return (f"  swapper/1 0/0 {stamp(ns)}: sched:sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 "
            f"prev_state=R ==> next_comm=gpreemptd next_pid={to} next_prio=98")


text = "\n".join([
    f"  gpreemptd {DAEMON}/{DAEMON} {stamp(S // 2)}: sched:sched_process_fork: comm=gpreemptd pid={DAEMON} "
    f"child_comm=gpreemptd child_pid={WORKER}",
    "a line perf adds that is no event",
    # another gpreemptd on the machine, woken first: not this daemon's
    waking(S + 5000, ONLINE, OTHER_DAEMON),
    switch(S + 6000, OTHER_DAEMON),
    # the trap wakes the loop, which hands the call to its worker
    waking(S + 13000, ONLINE, DAEMON),
    switch(S + 21000, DAEMON),
    waking(S + 30000, DAEMON, WORKER),
    switch(S + 40000, WORKER),
    # a trap wakes the worker inside perf's handler: switched in, no wake-up recorded
    switch(3 * S + 32000, WORKER),
])
events = sched_stages.parse_events(text)
wakings, switches, forks = events
check("parses wakings with their waker, switch-ins and forks",
      len(wakings) == 3 and wakings[1] == (S + 13000, ONLINE, DAEMON) and len(switches) == 4 and
      switches[0] == (S + 6000, OTHER_DAEMON) and forks == [(DAEMON, WORKER)], repr(events))
check("the daemon's threads: its own and those it started",
      sched_stages.daemon_threads(DAEMON, forks) == {DAEMON, WORKER})

# the second suspension's daemon was already running at the store: no wake-up or switch-in between
r = sched_stages.split(events, ([S, 2 * S], ONLINE), [S + 48000, 2 * S + 9000], DAEMON)
stages = {k: v and v["p50_us"] for k, v in r["stages"].items()}
check("store -> wake -> running -> issuer -> ioctl",
      stages == {"store_to_wake": 13.0, "wake_to_running": 8.0, "running_to_issuer": 19.0, "issuer_to_ioctl": 8.0,
                 "store_to_running": 21.0}, repr(stages))
check("woken by the online process once, already running once",
      r["woken_by"] == {"online_process": 1, "other": 0, "unrecorded": 0, "already_running": 1}, repr(r["woken_by"]))
# the trap's wake-up of the worker is not recorded: store -> running and what follows it only
r3 = sched_stages.split(events, ([3 * S], ONLINE), [3 * S + 42000], DAEMON)
stages3 = {k: v and v["p50_us"] for k, v in r3["stages"].items()}
check("a switch-in with no wake-up recorded: store -> running, running -> issuer -> ioctl",
      stages3 == {"store_to_wake": None, "wake_to_running": None, "running_to_issuer": 0.0, "issuer_to_ioctl": 10.0,
                  "store_to_running": 32.0} and r3["woken_by"]["unrecorded"] == 1, repr((stages3, r3["woken_by"])))
check("two daemon threads", r["daemon_threads"] == 2)

try:
    sched_stages.split(events, ([], ONLINE), [S], DAEMON)
    check("no store: a ValueError that says so", False)
except ValueError as e:
    check("no store: a ValueError that says so", "no online store" in str(e), str(e))
try:
    sched_stages.split(([], [], []), ([S], ONLINE), [S + 1], DAEMON)
    check("no switch-in recorded: a ValueError that says so", False)
except ValueError as e:
    check("no switch-in recorded: a ValueError that says so", "no switch-in" in str(e), str(e))

s = sched_stages.summarise([r, r])
check("the summary takes median and spread over runs",
      s["runs"] == 2 and s["stages"]["store_to_wake"]["p50_us"]["median"] == 13.0 and
      s["woken_by"]["already_running"] == 2, repr(s))
check("perf record's command filters each event to the daemon's threads in the kernel",
      sched_stages.record_argv("out.data").count("--filter") == 3 and "-k" in sched_stages.record_argv("x"))
argv = sched_stages.record_argv("out.data", ("ctl", "ack"))
check("with control FIFOs, perf starts disabled and takes its orders through them",
      argv[argv.index("--delay") + 1] == "-1" and argv[argv.index("--control") + 1] == "fifo:ctl,ack", repr(argv))

finish()
