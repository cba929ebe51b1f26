# SPDX-License-Identifier: MIT
"""gpreempt's measurement and analysis code: the evaluation, the soak, the
benchmarks and what they share. Run an entry point as a module with the
scripts directory on the path, as its launcher in scripts/ does:

  PYTHONPATH=scripts python3 -P -m gpreempt_eval.evaluate --help

scripts/README.md lists the entry points and the rule they follow (bash
orchestrates, Python measures).
"""
import contextlib
import os
import signal
import subprocess
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
    """SIGTERM, as raise_on_interruption() turns it into an exception: what
    was started is ended on the way out, as on Ctrl-C (KeyboardInterrupt). A
    BaseException, so that no handler of ordinary errors takes it."""


def raise_on_interruption():
    """Python's default for SIGTERM ends the process at once: no finally
    runs, so the processes it started (a daemon that suspended offline work,
    the jobs of a pass) would be left running. SIGTERM raises Interrupted
    and SIGINT KeyboardInterrupt; the first of either ignores both from then
    on, so that a second (Ctrl-C reaches the whole process group, and the
    parent sends SIGTERM too) cannot cut short the clean-up the first began.
    A SIGINT ignored on entry (a background job) stays ignored."""
    def interrupted(signum, frame):
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, signal.SIG_IGN)
        if signum == signal.SIGINT:
            raise KeyboardInterrupt
        raise Interrupted("interrupted by SIGTERM")
    signal.signal(signal.SIGTERM, interrupted)
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        signal.signal(signal.SIGINT, interrupted)


def run_interruptible(main):
    """An entry point that starts passes: SIGTERM ends it as Ctrl-C does,
    the pass under way ended on the way out (runner.run_to_the_end() says
    how); either exits 1."""
    raise_on_interruption()
    try:
        return main()
    except (Interrupted, KeyboardInterrupt):
        return 1


@contextlib.contextmanager
def interruptions_deferred():
    """A block that a signal must not cut short (a clean-up, or a child
    started and not yet held where the clean-up will find it): SIGINT and
    SIGTERM that arrive meanwhile are raised when it ends, as
    raise_on_interruption() would have raised them. Signals already
    ignored stay so."""
    held = []
    handlers = {}
    for sig in (signal.SIGINT, signal.SIGTERM):
        if signal.getsignal(sig) is not signal.SIG_IGN:
            handlers[sig] = signal.signal(sig, lambda signum, frame: held.append(signum))
    try:
        yield
    finally:
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
        if held:
            if held[0] == signal.SIGINT:
                raise KeyboardInterrupt
            raise Interrupted("interrupted by SIGTERM")


def end_process(proc, timeout_s):
    """SIGTERM to proc (a subprocess.Popen) unless it has exited, then
    SIGKILL after timeout_s; returns whether it ended within that."""
    if proc.poll() is None:
        proc.terminate()
    try:
        proc.wait(timeout=timeout_s)
        return True
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return False
