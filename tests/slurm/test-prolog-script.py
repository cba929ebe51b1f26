#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""controller/slurm/gpreempt-slurm-job run as slurmd runs it (a clean
environment, SLURM_* variables), on the values a job's owner chooses: a
comment in UTF-8 is recorded; one the record cannot hold (a line break,
more than a record's line) is left out and said on stderr; the script never
fails. The real cluster test (test-slurm.py) runs it under slurmd. TAP:

  tests/slurm/test-prolog-script.py SCRIPT
"""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from tap import check, finish  # noqa: E402

SCRIPT = sys.argv[1]


def run(jobs_dir, context, **slurm):
    env = {"PATH": "/usr/bin:/bin", "GPREEMPT_SLURM_JOBS_DIR": jobs_dir, "SLURM_SCRIPT_CONTEXT": context,
           "SLURM_JOB_ID": "10", "SLURM_JOB_QOS": "normal"}
    env.update({"SLURM_JOB_" + k.upper(): v for k, v in slurm.items()})
    env = {k: v.encode("utf-8", "surrogateescape") for k, v in env.items()}
    return subprocess.run(["sh", SCRIPT], env=env, capture_output=True, timeout=30)


def record(jobs_dir):
    try:
        with open(os.path.join(jobs_dir, "10"), "rb") as f:
            return f.read()
    except FileNotFoundError:
        return None


with tempfile.TemporaryDirectory(prefix="test-prolog-script-") as tmp:
    jobs = os.path.join(tmp, "jobs")

    p = run(jobs, "prolog_slurmd", comment="café gpreempt=offline", partition="gpu")
    text = record(jobs) or b""
    check("a comment in UTF-8 is recorded as written", p.returncode == 0 and
          "\nComment=café gpreempt=offline\n".encode() in text and b"\nPartition=gpu\n" in text and not p.stderr,
          (p.returncode, text, p.stderr))

    p = run(jobs, "prolog_slurmd", comment="first\nClass=online", partition="gpu")
    text = record(jobs) or b""
    check("a comment with a line break is left out, and said", p.returncode == 0 and b"Comment=" not in text and
          b"Class=online" not in text and b"Partition=gpu" in text and b"control character" in p.stderr,
          (p.returncode, text, p.stderr))

    p = run(jobs, "prolog_slurmd", comment="x" * 5000)
    text = record(jobs) or b""
    check("a comment longer than a record's line is left out, and said", p.returncode == 0 and
          b"Comment=" not in text and b"longer than the 4096 bytes" in p.stderr, (p.returncode, len(text), p.stderr))

    p = run(jobs, "prolog_slurmd", comment="y" * (4096 - len("Comment=")))
    check("a comment that just fits is recorded", p.returncode == 0 and
          b"\nComment=" + b"y" * (4096 - len("Comment=")) + b"\n" in (record(jobs) or b""), p.stderr)

    p = run(jobs, "epilog_slurmd")
    check("the Epilog removes the record", p.returncode == 0 and record(jobs) is None, p.stderr)
finish()
