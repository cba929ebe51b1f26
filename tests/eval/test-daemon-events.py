#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""scripts/gpreempt_eval/node_pass.py daemon_events: suspended time and the
longest suspension (what MaxSuspendMs= bounds) from made-up daemon log lines,
clipped to the measured window; process_cpu_s, the daemon's CPU time, against
this process's own clock. TAP output. The package comes from
PYTHONPATH (meson test sets it):

  PYTHONPATH=scripts:tests/python tests/eval/test-daemon-events.py
"""
import os
import time
import types

from gpreempt_eval import node_pass
from tap import check, finish


def log(*events):
    lines = [(t, "Process %d: 2 queues %s on GPU 0" % (pid, kind)) for t, pid, kind in events]
    return types.SimpleNamespace(lines=lines + [(99.0, None)])


err = log((0.5, 7, "suspended"), (1.5, 7, "resumed"), (2.0, 7, "suspended"), (2.1, 8, "suspended"),
          (2.3, 7, "resumed"), (4.0, 7, "suspended"))
ev = node_pass.daemon_events(err, 7, 1.0, 4.5)
check("suspensions are clipped to the window and summed", abs(ev["suspended_s"] - 1.3) < 1e-9, repr(ev))
check("the longest suspension is the longest clipped span", abs(ev["longest_suspend_s"] - 0.5) < 1e-9, repr(ev))
check("transitions count inside the window only", (ev["suspends"], ev["resumes"]) == (2, 2), repr(ev))
check("another process's lines are ignored", node_pass.daemon_events(err, 9, 0, 10)["longest_suspend_s"] == 0.0)

cpu0, own0 = node_pass.process_cpu_s(os.getpid()), time.process_time()
while time.process_time() - own0 < 0.3:
    pass
spent = node_pass.process_cpu_s(os.getpid()) - cpu0
check("a process's CPU time is what it spent, to the clock tick", abs(spent - (time.process_time() - own0)) < 0.05,
      "%.3f s" % spent)

finish()
