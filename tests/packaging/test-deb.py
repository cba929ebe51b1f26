#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The Debian packages, built, checked and installed as an operator would.
TAP output; run by meson test:

  tests/packaging/test-deb.py --source SOURCE_DIR --build BUILD_DIR

1. dpkg-buildpackage -us -uc -b on a copy of the tree; lintian --pedantic
   finds nothing (what it would find and is accepted is overridden, with the
   reason, in debian/*.lintian-overrides).
2. A fresh Debian 12 root (debootstrap, kept in BUILD_DIR between runs and
   copied for each) boots under systemd-nspawn, its systemd as PID 1.
3. Installed there without /dev/kfd: nothing starts (the exporter's socket
   neither), the units are enabled,
   the files are where the units and man pages say, and purging removes them.
4. README.md's "On a GPU node" commands, run as written (those with sudo as
   root, sudo dropped; any other as nobody) on the emulated node (kfdemu from BUILD_DIR, as in
   tests/systemd): the online service makes gpreemptd suspend the offline
   job; the undo commands leave nothing suspended.
"""
import argparse
import glob
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "systemd"))
from nspawn import (Container, EmulatedNode, Tap, exit_on_sigterm, held_back,  # noqa: E402
                    missing_man_pages, node_options, require_root_and_tools, status_gpu,
                    status_process, wait_for)

tap = Tap()
check = tap.check

# What the root needs beyond minbase: systemd to boot, and the libraries the
# packages and kfdemu link (the container has no network for apt to fetch them).
ROOT_PACKAGES = ["systemd", "systemd-sysv", "dbus", "libjson-c5", "libdrm-amdgpu1", "libinih1", "libmicrohttpd12"]
UNITS = ("gpreemptd.socket", "gpreemptd.service", "gpreempt-exporter.socket", "gpreempt-exporter.service")
# How each is after installing: the exporter's service is only started by its socket.
UNIT_STATES = {"gpreemptd.socket": ("enabled", "inactive"), "gpreemptd.service": ("enabled", "inactive"),
               "gpreempt-exporter.socket": ("enabled", "inactive"), "gpreempt-exporter.service": ("static", "inactive")}


def copy_tree(source, dest):
    """The files of the tree (git's list when there is one), no build output."""
    if os.path.isdir(os.path.join(source, ".git")):
        files = subprocess.run(["git", "-C", source, "ls-files", "-co", "--exclude-standard"],
                               check=True, capture_output=True, text=True).stdout.splitlines()
    else:
        files = [os.path.relpath(os.path.join(d, f), source) for d, _, fs in os.walk(source) for f in fs]
    for rel in files:
        if rel.split("/")[0].startswith("build"):
            continue
        src = os.path.join(source, rel)
        if not os.path.lexists(src):
            continue  # deleted in the work tree
        os.makedirs(os.path.dirname(os.path.join(dest, rel)), exist_ok=True)
        shutil.copy2(src, os.path.join(dest, rel), follow_symlinks=False)


def build_packages(source, work):
    """README's build commands, run as written (as root, sudo dropped) in a copy of the tree."""
    src = os.path.join(work, "src")
    copy_tree(source, src)
    # the operator answers apt's question (what build-dep installs) with yes
    apt_conf = os.path.join(work, "apt.conf")
    with open(apt_conf, "w") as f:
        f.write('APT::Get::Assume-Yes "true";\n')
    env = dict(os.environ, DEB_BUILD_OPTIONS="nocheck parallel=2", APT_CONFIG=apt_conf,
               DEBIAN_FRONTEND="noninteractive")
    for var in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LD_PRELOAD"):
        env.pop(var, None)
    block = fenced_block(os.path.join(source, "README.md"), "node-build")
    p = subprocess.run(["sh", "-c", re.sub(r"(^|&& )sudo ", r"\1", block)], cwd=src, env=env,
                       capture_output=True, text=True)
    debs = sorted(glob.glob(os.path.join(work, "*.deb")))
    check("README's build command (apt-get build-dep, dpkg-buildpackage -us -uc -b) builds %d packages"
          % len(debs), p.returncode == 0 and debs, (p.stdout + p.stderr)[-4000:])
    return debs


def run_lintian(work):
    changes = glob.glob(os.path.join(work, "*.changes"))
    p = subprocess.run(["lintian", "--pedantic", "-I", "--fail-on", "none"] + changes,
                       capture_output=True, text=True)
    tags = [line for line in p.stdout.splitlines() if re.match(r"^[EWIPX]: ", line)]
    check("lintian --pedantic: no tag left that is not overridden with a reason",
          p.returncode == 0 and changes and not tags, "\n".join(tags) + p.stderr[-2000:])


def debian_mirror():
    for path in ["/etc/apt/sources.list"] + glob.glob("/etc/apt/sources.list.d/*.sources"):
        try:
            with open(path) as f:
                text = f.read()
        except OSError:
            continue
        for uri in re.findall(r"(?:URIs:\s*|deb\s+)(\S+)", text):
            if "/debian" in uri and "security" not in uri:
                return uri
    return "http://deb.debian.org/debian"


def mount_points_under(path):
    """The mount points at or below path in this namespace, deepest first."""
    path = os.path.realpath(path)
    points = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            # field 5 is the mount point, with space, tab, newline and backslash written as octal escapes
            point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), line.split()[4])
            if point == path or point.startswith(path + "/"):
                points.append(point)
    return sorted(points, key=lambda p: p.count("/"), reverse=True)


def unmount_under(path):
    """Lazily unmounts what is mounted below path, so that the tree can be
    removed and copied (debootstrap mounts /proc and /sys in the root it
    makes, and one killed on the way leaves them behind)."""
    for point in mount_points_under(path):
        subprocess.run(["umount", "-l", point], capture_output=True)


def fresh_root(build, work):
    """A copy of a debootstrapped Debian 12 root (made once per build dir and
    ROOT_PACKAGES: the marker holds the list it was made with)."""
    cache = os.path.join(build, "tests", "packaging", "debian-root")
    marker = os.path.join(cache, ".complete")
    wanted = "\n".join(ROOT_PACKAGES) + "\n"
    try:
        with open(marker) as f:
            made = f.read()
    except OSError:
        made = None
    if made != wanted:
        unmount_under(cache)  # a debootstrap killed earlier leaves its /proc and /sys mounted there
        shutil.rmtree(cache, ignore_errors=True)
        os.makedirs(cache)
        try:
            p = subprocess.run(["debootstrap", "--variant=minbase", "--include=" + ",".join(ROOT_PACKAGES),
                                "bookworm", cache, debian_mirror()], capture_output=True, text=True)
        finally:
            unmount_under(cache)
        if p.returncode != 0:
            raise RuntimeError("debootstrap failed:\n" + (p.stdout + p.stderr)[-3000:])
        with open(marker, "w") as f:
            f.write(wanted)
    root = os.path.join(work, "root")
    subprocess.run(["cp", "-a", cache, root], check=True)
    return root


def fenced_block(readme, marker):
    """The commands of the code block after <!-- marker... --> in README.md."""
    with open(readme) as f:
        text = f.read()
    at = text.index("<!-- " + marker)
    block = text[text.index("```", at) + 3:]
    return block[block.index("\n") + 1:block.index("```")]


def commands_of(block):
    """The block's commands: each line, a here-document kept with its command."""
    commands, lines = [], block.splitlines()
    while lines:
        command = lines.pop(0)
        heredoc = re.search(r"<<-?\s*'?\"?(\w+)", command)
        if heredoc:
            while lines:
                line = lines.pop(0)
                command += "\n" + line
                if line == heredoc.group(1):
                    break
        if command.strip():
            commands.append(command)
    return commands


def as_operator(block):
    """The block as an operator without root runs it, stopping at the first
    failure: a command with sudo runs as root (sudo dropped, the test is root),
    one without as nobody, so a command that needs root must say sudo."""
    script = ["set -e"]
    for command in commands_of(block):
        if command.startswith("sudo "):
            script.append(command[len("sudo "):])
        else:
            script.append("runuser -u nobody -- sh -c %s" % shlex.quote(command))
    return "\n".join(script) + "\n"


def test_install_without_kfd(c):
    rc, out, err = c.run("cd /debs/src && apt-get install -y ../gpreempt_*_amd64.deb ../libgpreempt0_*_amd64.deb "
                         "../libgpreempt-dev_*_amd64.deb ../gpreempt-queue-finder_*_amd64.deb", timeout=120)
    check("the packages install into a fresh Debian 12 with nothing fetched", rc == 0, out[-3000:] + err)
    states = {u: (c.run("systemctl is-enabled " + u)[1].strip(), c.show(u, "ActiveState"))
              for u in UNITS}
    check("without /dev/kfd, installing enables the units and starts nothing: %s" % states,
          states == UNIT_STATES)
    check("the gpreempt group and /run/gpreempt exist (sysusers, tmpfiles)",
          c.run("getent group gpreempt && test -d /run/gpreempt")[0] == 0)
    exec_start = c.show("gpreemptd.service", "ExecStart")
    binary = re.search(r"path=(\S+)", exec_start)
    check("ExecStart= names the installed daemon (%s)" % (binary.group(1) if binary else exec_start),
          binary and c.run("test -x " + binary.group(1))[0] == 0)
    pages, missing = missing_man_pages(c, UNITS, "/usr/share/man", ".gz")
    check("each man page the units name is installed", pages and not missing, " ".join(missing))
    check("gpreemptctl, gpreempt-exporter and queue_finder run, the header and pkg-config file are there",
          c.run("gpreemptctl --help && gpreempt-exporter --help && queue_finder --help && "
                "test -f /usr/include/gpreempt/gpreempt.h && "
                "grep -q '^Libs:.* -lgpreempt' /usr/lib/x86_64-linux-gnu/pkgconfig/libgpreempt.pc")[0] == 0,
          c.run("gpreemptctl --help; gpreempt-exporter --help; queue_finder --help")[2])
    rc, out, err = c.run("gpreemptctl status")
    check("gpreemptctl status then says the daemon is not running, and how to start it",
          rc != 0 and "systemctl start" in err, out + err)
    rc, out, err = c.run("systemctl start gpreemptd.socket && gpreemptctl status")
    check("started by hand, the daemon says the node has no KFD", rc == 0 and "No KFD" in out, out + err)
    rc, out, err = c.run("systemctl stop gpreemptd.service gpreemptd.socket && "
                         "apt-get purge -y gpreempt libgpreempt0 libgpreempt-dev gpreempt-queue-finder", timeout=120)
    left = c.run("ls /lib/systemd/system/gpreemptd.* /lib/systemd/system/gpreempt-exporter.* /etc/gpreempt "
                 "/usr/sbin/gpreemptd /usr/sbin/gpreempt-exporter 2>/dev/null")[1]
    check("purging removes the units, the daemon and /etc/gpreempt", rc == 0 and not left.strip(),
          out[-2000:] + err + left)


def test_readme_on_node(c, readme):
    # the operator answers apt's questions with yes
    c.out("echo 'APT::Get::Assume-Yes \"true\";' > /etc/apt/apt.conf.d/90-operator-says-yes")
    node = EmulatedNode(c)
    # the drop-in goes where it outlives daemon-reloads and the package
    node.start(dropin_dir="/etc/systemd/system/gpreemptd.service.d")
    # the jobs the README's workload files describe, on the emulated GPU
    # (their command lines hold the patterns: kfdemu-app ... --kernel-name <name>)
    off = node.start_app("training", "train.py", "--continuous --kernel-us 2000", user="nobody")
    on = node.start_app("inference", "serve.py", "--continuous --kernel-us 1000")
    # the operator's shell on the emulated node: its /dev/kfd is kfdemu's
    shell = "".join("export %s=%s\n" % kv for kv in node.env.items())
    rc, out, err = c.run(shell + as_operator(fenced_block(readme, "node-quickstart")), timeout=180, cwd="/debs/src")
    check("README 'On a GPU node': every command succeeds", rc == 0, out[-3000:] + err[-3000:])
    summary = re.search(r"^\d+ ok, .*failed\.$", out, flags=re.M)
    check("... gpreemptctl doctor finds nothing failed on the emulated node (%s)"
          % (summary.group(0) if summary else "no summary"), summary and " 0 failed" in summary.group(0),
          out[:3000])
    workloads = wait_for(lambda: [(status_process(c, pid) or {}).get("workload") for pid in (on, off)]
                         == ["inference", "training"], 10)
    check("... gpreemptd then gives each job its README workload (inference, training): %s"
          % [(status_process(c, pid) or {}).get("workload") for pid in (on, off)], workloads,
          out[-2000:])
    suspended, held, resumed, free = node.hold_and_release("training", "inference")
    check("... and the offline job is held back while the online one has work, and runs once it is idle "
          "(%d, then %d kernels a second)" % (held, free),
          suspended and resumed and held_back(held, 1.0, free, 1.0), str(status_process(c, off)))
    node.start_app("inference2", "serve.py", "--continuous --kernel-us 1000")
    suspended = wait_for(lambda: (status_gpu(c) or {}).get("offline_suspended"), 10)
    check("... and a second online job has it suspend the offline one again", suspended,
          str(status_gpu(c)))
    rc, out, err = c.run(shell + as_operator(fenced_block(readme, "node-undo")), timeout=120, cwd="/debs/src")
    moved, freely = node.runs_freely("training")
    check("README's undo commands succeed and leave nothing suspended (%d kernels in 1 s; free: %d)"
          % (moved, node.free_rate), rc == 0 and freely and c.run("test -e /usr/sbin/gpreemptd")[0] != 0,
          out[-2000:] + err[-2000:])
    test_remove_while_holding(c, node)


def test_remove_while_holding(c, node):
    """apt remove alone, while gpreemptd holds the offline job: prerm stops it."""
    c.out("cd /debs/src && apt-get install -y ../gpreempt_*_amd64.deb ../libgpreempt0_*_amd64.deb", timeout=120)
    # the README's own workload files outlive the purge (they are the
    # operator's, not conffiles): replace them, or the names repeat
    c.out("rm -f /etc/gpreempt/workloads.d/*.conf && "
          "printf '[Workload]\\nName=inference\\nClass=online\\nMatchCommandLine=*serve.py*\\n\\n"
          "[Workload]\\nName=training\\nClass=offline\\nMatchCommandLine=*train.py*\\n' "
          "> /etc/gpreempt/workloads.d/50-jobs.conf && systemctl reload gpreemptd.service")
    suspended = wait_for(lambda: (status_gpu(c) or {}).get("offline_suspended"), 10)
    rc, out, err = c.run("apt-get remove -y gpreempt", timeout=120)
    moved, freely = node.runs_freely("training")
    # no procps in a minimal root: look for the daemon in /proc
    gone = c.run("for p in /proc/[0-9]*; do [ \"$(cat $p/comm 2>/dev/null)\" != gpreemptd ] || exit 1; done")[0] == 0
    check("reinstalled on the node it holds the offline job, and 'apt-get remove gpreempt' alone stops it "
          "with nothing left suspended (%d kernels in 1 s; free: %d)" % (moved, node.free_rate),
          suspended and rc == 0 and gone and freely and c.show("gpreemptd.socket", "ActiveState") != "active",
          out[-2000:] + err[-2000:])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", required=True, help="the source tree")
    ap.add_argument("--build", required=True, help="the meson build directory (kfdemu; the root's cache)")
    args = ap.parse_args()
    exit_on_sigterm()
    source, build = os.path.realpath(args.source), os.path.realpath(args.build)
    require_root_and_tools(tap, ("dpkg-buildpackage", "lintian", "debootstrap", "systemd-nspawn", "nsenter"))

    with tempfile.TemporaryDirectory(prefix="gpreempt-deb-") as work:
        c = None
        try:
            debs = build_packages(source, work)
            if not debs:
                tap.finish()
            run_lintian(work)
            root = fresh_root(build, work)
            os.makedirs(os.path.join(root, "debs", "src"))
            for deb in debs:
                shutil.copy(deb, os.path.join(root, "debs"))
            c = Container(root, "gpreempt-deb-%d" % os.getpid(), os.path.join(work, "nspawn.log"),
                          extra=node_options(build))
            test_install_without_kfd(c)
            test_readme_on_node(c, os.path.join(source, "README.md"))
        except (RuntimeError, subprocess.SubprocessError, OSError, ValueError) as e:
            check("the test ran to its end", False, str(e) + ("\n" + c.journal("gpreemptd") if c else ""))
        finally:
            if c:
                c.stop()
    tap.finish()


if __name__ == "__main__":
    main()
