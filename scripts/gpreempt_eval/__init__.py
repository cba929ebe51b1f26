# SPDX-License-Identifier: MIT
"""gpreempt's measurement and analysis code: the evaluation, the soak, the
benchmarks and what they share. Run an entry point as a module with the
scripts directory on the path, as its launcher in scripts/ does:

  PYTHONPATH=scripts python3 -P -m gpreempt_eval.evaluate --help

scripts/README.md lists the entry points and the rule they follow (bash
orchestrates, Python measures).
"""
import os
import signal
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


class Interrupted(BaseException):
    """SIGTERM, as raise_on_sigterm() turns it into an exception: what was
    started is ended on the way out, as on Ctrl-C (KeyboardInterrupt). A
    BaseException, so that no handler of ordinary errors takes it."""


def raise_on_sigterm():
    """Python's default for SIGTERM ends the process at once: no finally
    runs, so the processes it started (a daemon that suspended offline work,
    the jobs of a pass) would be left running."""
    def interrupted(signum, frame):
        raise Interrupted("interrupted by SIGTERM")
    signal.signal(signal.SIGTERM, interrupted)


def run_interruptible(main):
    """An entry point that starts passes: SIGTERM ends it as Ctrl-C does,
    the pass under way ended on the way out (runner.run_to_the_end() says
    how); either exits 1."""
    raise_on_sigterm()
    try:
        return main()
    except (Interrupted, KeyboardInterrupt):
        return 1


def ignore_interruptions():
    """For the clean-up an interruption started: a second signal would
    interrupt it half-way."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)
