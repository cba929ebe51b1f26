#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""scripts/gpreempt_eval/host_steal.py: the steal column read from
/proc/stat-style text, and from this host's. TAP output. The package comes
from PYTHONPATH (meson test sets it):

  PYTHONPATH=scripts:tests/python tests/eval/test-host-steal.py
"""
import os
import tempfile

from gpreempt_eval import host_steal
from tap import check, finish


with tempfile.TemporaryDirectory() as tmp:
    stat = os.path.join(tmp, "stat")
    with open(stat, "w") as f:
        f.write("cpu  10 0 20 300 4 0 5 77 0 0\ncpu0 5 0 10 150 2 0 2 40 0 0\n")
    check("steal column of the all-CPU line", host_steal.steal_ms(stat) == 77 * host_steal.TICK_MS)
    with open(stat, "w") as f:
        f.write("cpu  10 0 20 300\n")
    check("a kernel without the column reads 0", host_steal.steal_ms(stat) == 0)
    check("no such file reads 0", host_steal.steal_ms(os.path.join(tmp, "missing")) == 0)

before = host_steal.steal_ms()
check("this host's steal is a count", before >= 0 and host_steal.steal_ms() >= before)

finish()
