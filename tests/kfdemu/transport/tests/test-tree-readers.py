#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Every reader sees the same emulated tree inside kfdemu-run --gpus 2: ls,
glob(3), nftw(3), find, Python's glob and os.walk, and the same glob/nftw
program linked statically, none of which kfdemu's preload sees. Run as
root (a mount namespace of the run's own) and as nobody (through a user
namespace); the tree never shows outside the run. TAP output:

  test-tree-readers.py KFDEMU_RUN TREE_READER TREE_READER_STATIC

Inside the run (--inside) it prints what each reader saw, as JSON.
"""
import glob
import json
import os
import pwd
import subprocess
import sys

sys.dont_write_bytecode = True

GPU_IDS = "/sys/class/kfd/kfd/topology/nodes/*/gpu_id"
NODES = "/sys/class/kfd/kfd/topology/nodes"
# Where a walk goes: the KFD's sysfs (by its real path; /sys/class/kfd/kfd
# is a symlink to it), debugfs, amdgpu's parameters and the render nodes.
WALKED = ["/sys/devices/virtual/kfd/kfd", "/sys/kernel/debug/kfd", "/sys/module/amdgpu/parameters", "/dev/dri"]


def mounts_under_sys_and_dev(pid):
    """Where process pid's mount namespace has mounts under /sys and /dev."""
    with open("/proc/%d/mountinfo" % pid) as f:
        points = [line.split()[4] for line in f]
    return sorted(p for p in points if p.split("/")[1] in ("sys", "dev"))


def lines(argv):
    return subprocess.run(argv, check=True, capture_output=True, text=True).stdout.splitlines()


def first_line(path):
    with open(path) as f:
        return f.readline().rstrip("\n")


def os_walk(roots):
    seen = []
    for root in roots:
        for top, dirs, files in os.walk(root):
            if top == root:
                seen.append(top)
            seen += [os.path.join(top, name) for name in dirs + files]
    return seen


def inside(reader, static_reader, outer_pid):
    """What each reader sees, from inside the run."""
    seen = {
        "ls": lines(["ls", NODES]),
        "glob(3)": lines([reader, "glob", GPU_IDS]),
        "glob(3), static": lines([static_reader, "glob", GPU_IDS]),
        "Python glob": ["%s %s" % (p, first_line(p)) for p in glob.glob(GPU_IDS)],
        "nftw(3)": lines([reader, "walk"] + WALKED),
        "nftw(3), static": lines([static_reader, "walk"] + WALKED),
        "find": lines(["find"] + WALKED),
        "Python os.walk": os_walk(WALKED),
        "user namespace": os.readlink("/proc/self/ns/user"),
        "outside mounts": mounts_under_sys_and_dev(outer_pid),
    }
    json.dump(seen, sys.stdout)


class Tap:
    def __init__(self):
        self.n = 0
        self.failed = 0

    def check(self, name, ok, detail=""):
        self.n += 1
        self.failed += not ok
        print("%s %d - %s" % ("ok" if ok else "not ok", self.n, name))
        if not ok and detail:
            print("\n".join("# " + line for line in str(detail).splitlines()))

    def finish(self):
        print("1..%d" % self.n)
        sys.exit(1 if self.failed else 0)


def as_user(pw):
    def drop():
        os.setgroups([])
        os.setresgid(pw.pw_gid, pw.pw_gid, pw.pw_gid)
        os.setresuid(pw.pw_uid, pw.pw_uid, pw.pw_uid)
    return drop


def run_as(tap, who, pw, kfdemu_run, reader, static_reader):
    env = dict(os.environ)
    if pw:
        # nobody's own environment: no runtime directory of root's
        env.pop("XDG_RUNTIME_DIR", None)
        env["HOME"] = pw.pw_dir
    # Debian's Python: the one running this test may sit where nobody cannot read
    argv = [kfdemu_run, "--gpus", "2", "--", "/usr/bin/python3", os.path.abspath(__file__), "--inside",
            reader, static_reader, str(os.getpid())]
    outside_before = mounts_under_sys_and_dev(os.getpid())
    p = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60,
                       preexec_fn=as_user(pw) if pw else None)
    tap.check("as %s: kfdemu-run --gpus 2 runs the readers" % who, p.returncode == 0, p.stdout + p.stderr)
    if p.returncode != 0:
        return
    seen = json.loads(p.stdout)

    tap.check("as %s: ls lists the CPU node and two GPU nodes" % who, seen["ls"] == ["0", "1", "2"], seen["ls"])
    expected = sorted(seen["Python glob"])
    tap.check("as %s: Python's glob finds each node's gpu_id" % who, len(expected) == 3, expected)
    for reader in ("glob(3)", "glob(3), static"):
        tap.check("as %s: %s finds the same files with the same gpu_ids" % (who, reader),
                  sorted(seen[reader]) == expected, "%s\nexpected:\n%s" % (seen[reader], expected))

    walked = sorted(seen["find"])
    tap.check("as %s: find walks the KFD's sysfs, debugfs, amdgpu's parameters and /dev/dri" % who,
              all(p in walked for p in ("/sys/devices/virtual/kfd/kfd/topology/nodes/2/gpu_id",
                                        "/sys/kernel/debug/kfd/mqds",
                                        "/sys/module/amdgpu/parameters/sched_policy", "/dev/dri")),
              walked)
    for reader in ("nftw(3)", "nftw(3), static", "Python os.walk"):
        tap.check("as %s: %s walks the same tree" % (who, reader), sorted(seen[reader]) == walked,
                  "%s\nexpected:\n%s" % (sorted(seen[reader]), walked))

    own_userns = seen["user namespace"] != os.readlink("/proc/self/ns/user")
    tap.check("as %s: %s" % (who, "through a user namespace of its own" if pw else "without a user namespace"),
              own_userns == bool(pw), seen["user namespace"])
    tap.check("as %s: nothing is mounted under /sys or /dev outside the run" % who,
              seen["outside mounts"] == outside_before,
              "%s\nbefore the run:\n%s" % (seen["outside mounts"], outside_before))


def main():
    if len(sys.argv) == 5 and sys.argv[1] == "--inside":
        inside(sys.argv[2], sys.argv[3], int(sys.argv[4]))
        return
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    tap = Tap()
    kfdemu_run, reader, static_reader = (os.path.abspath(p) for p in sys.argv[1:])
    if os.geteuid() != 0:
        print("Bail out! run as root (as CI does): the test runs kfdemu-run as root and as nobody")
        sys.exit(1)
    ldd = subprocess.run(["ldd", static_reader], capture_output=True, text=True)
    tap.check("tree-reader-static is linked statically (ldd: not a dynamic executable)",
              "not a dynamic executable" in ldd.stdout + ldd.stderr, ldd.stdout + ldd.stderr)
    run_as(tap, "root", None, kfdemu_run, reader, static_reader)
    run_as(tap, "nobody", pwd.getpwnam("nobody"), kfdemu_run, reader, static_reader)
    tap.finish()


if __name__ == "__main__":
    main()
