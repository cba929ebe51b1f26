# SPDX-License-Identifier: MIT
"""The Python tests' TAP output: each check kept in order and printed at
the end, with what a failed one saw as a comment; the exit status is 1 if
any failed. The tests import it from PYTHONPATH (tests/python, which meson
test sets)."""
import sys

_results = []


def check(name, ok, detail=""):
    """Keeps one check; detail (anything printable) explains a failure."""
    _results.append((name, bool(ok), str(detail)))


def finish():
    """Prints the plan and the checks, and exits with the verdict."""
    print(f"1..{len(_results)}")
    for i, (name, ok, detail) in enumerate(_results, 1):
        print(f"{'ok' if ok else 'not ok'} {i} - {name}")
        if not ok and detail:
            print("# " + detail.replace("\n", "\n# "))
    sys.exit(0 if all(ok for _, ok, _ in _results) else 1)
