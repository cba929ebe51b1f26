# SPDX-License-Identifier: MIT
"""gpreempt's measurement and analysis code: the evaluation, the soak, the
benchmarks and what they share. Run an entry point as a module with the
scripts directory on the path, as its launcher in scripts/ does:

  PYTHONPATH=scripts python3 -P -m gpreempt_eval.evaluate --help

scripts/README.md lists the entry points and the rule they follow (bash
orchestrates, Python measures).
"""
import os
import sys

# The directory that holds this package: what PYTHONPATH must name.
SCRIPTS_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCE_ROOT = os.path.dirname(SCRIPTS_DIR)


def module_argv(module, *args):
    """The command that runs this package's `module` (e.g. "node_pass") as
    `python3 -m`, with this interpreter and, as the launchers start it, -P
    (the working directory not on the path) when this process has it; run
    it with child_env()."""
    safe_path = ["-P"] if getattr(sys.flags, "safe_path", False) else []
    return [sys.executable, *safe_path, "-m", "%s.%s" % (__name__, module), *args]


def child_env(env=None):
    """`env` (default: this process's environment) with the scripts
    directory first on PYTHONPATH, so that a child Python program, a module
    of this package or a test program importing it, finds the package
    however this process was started."""
    env = dict(os.environ if env is None else env)
    rest = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p != SCRIPTS_DIR]
    env["PYTHONPATH"] = os.pathsep.join([SCRIPTS_DIR] + rest)
    return env
