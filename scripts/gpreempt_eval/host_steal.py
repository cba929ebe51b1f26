# SPDX-License-Identifier: MIT
"""CPU time a hypervisor took from this machine: the steal column of
/proc/stat, 0 on bare metal.

On the shared development VM the host's disturbances come in bursts that
show here: passes whose online requests the host disturbed had 1-32 s of
steal over their 30-60 s (2 vCPUs), the number of disturbed requests
growing with it, while undisturbed passes had almost none. Idle seconds
are no guide to the next pass: steal is taken from vCPUs that want to run,
and a pass started after 5 idle seconds without steal still had 5.5 s of
it."""
import os

# /proc/stat counts in USER_HZ ticks.
TICK_MS = 1000.0 / os.sysconf("SC_CLK_TCK")


def steal_ms(stat_path="/proc/stat"):
    """Steal over all CPUs since boot, in ms; 0 where the kernel keeps none."""
    try:
        with open(stat_path) as f:
            fields = f.readline().split()
    except OSError:
        return 0.0
    # "cpu user nice system idle iowait irq softirq steal ..."
    return int(fields[8]) * TICK_MS if len(fields) > 8 and fields[0] == "cpu" else 0.0
