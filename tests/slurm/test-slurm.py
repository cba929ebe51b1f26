#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""gpreempt on a real single-node Slurm cluster (Debian 12's slurm-wlm and
munge), started here, on an emulated GPU node. TAP output; run by meson test
inside kfdemu-run, so that every job's kfdemu-app reaches the emulated GPU:

  kfdemu-run --gpus 1 -- test-slurm.py GPREEMPTD GPREEMPTCTL KFDEMU-APP SPANK-PLUGIN PROLOG-SCRIPT

munged, slurmctld and slurmd (-D, no systemd) run as root on localhost with
ports, sockets and state of their own, so that nothing on the host is used
or changed; so do slurmdbd and the MariaDB server under it (a data
directory in the test's own, loopback only), for jobs' accounts and QOS. ProctrackType=proctrack/linuxproc: `scontrol suspend` arrives
as SIGTSTP then SIGSTOP, a group-stop the daemon sees as the jobs' tracer;
then proctrack/cgroup, where it arrives as the cgroup v1 freezer, with no
signal, which the daemon reads from the job's freezer cgroup.
TaskPlugin=task/cgroup puts each task in the job's cgroup, which is what the
configuration's MatchSlurm* keys believe a job's environment by.

With the plugin: an offline sbatch job is suspended while an online srun
job has work, and `scontrol suspend` keeps its GPU queues suspended until
`scontrol resume`, its signals arriving as sent. Without it: partition, QOS and account
rules classify jobs, and so does gpreempt-slurm-job, slurmd's Prolog and Epilog,
from a job's --comment=gpreempt=offline.
"""
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "systemd"))
from nspawn import Tap, exit_on_sigterm, wait_for  # noqa: E402

NODE = "localhost"  # slurmd -N: the host's own name is not what slurm.conf says
tap = Tap()
check = tap.check


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def sanitizer_runtime(library):
    """The ASan runtime a sanitized build linked library with, or None."""
    out = subprocess.run(["ldd", library], capture_output=True, text=True).stdout
    for line in out.splitlines():
        if "libasan.so" in line and "=>" in line:
            return line.split("=>")[1].split()[0]
    return None


def remove_slurm_cgroups():
    """task/cgroup leaves an empty slurm_<node> tree in each v1 hierarchy it used."""
    root = "/sys/fs/cgroup"
    for hierarchy in os.listdir(root) if os.path.isdir(root) else []:
        top = os.path.join(root, hierarchy, "slurm_" + NODE)
        for dirpath, _, _ in sorted(os.walk(top), key=lambda w: -w[0].count("/")):
            try:
                os.rmdir(dirpath)
            except OSError:
                pass


class Cluster:
    """munged, slurmctld, slurmd and gpreemptd, each a child of this process."""

    def __init__(self, tmp, gpreemptd, gpreemptctl, plugin, prolog):
        self.tmp = tmp
        self.gpreemptctl = gpreemptctl
        self.procs = []
        self.conf = os.path.join(tmp, "slurm.conf")
        self.gp_conf = os.path.join(tmp, "gpreempt")
        self.gp_run = os.path.join(tmp, "gp-run")
        self.jobs_dir = os.path.join(tmp, "slurm-jobs")
        os.makedirs(os.path.join(self.gp_conf, "workloads.d"))
        os.makedirs(self.gp_run)
        for d in ("state", "spool", "log"):
            os.makedirs(os.path.join(tmp, d))
        munge_socket = os.path.join(tmp, "munge.socket")
        conf = os.path.join(tmp, "slurm.conf")
        dbd_port = free_port()
        with open(conf, "w") as f:
            f.write(f"""ClusterName=gptest
SlurmctldHost={NODE}
SlurmctldPort={free_port()}
SlurmdPort={free_port()}
NodeName={NODE} CPUs=2 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES
PartitionName=scavenger Nodes=ALL
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={munge_socket}
CredType=cred/munge
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ProctrackType=proctrack/linuxproc
TaskPlugin=task/cgroup
ReturnToService=2
MpiDefault=none
MailProg=/bin/true
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost={NODE}
AccountingStoragePort={dbd_port}
AccountingStoragePass={munge_socket}
PlugStackConfig={tmp}/plugstack.conf
Prolog={tmp}/prolog
Epilog={tmp}/prolog
StateSaveLocation={tmp}/state
SlurmdSpoolDir={tmp}/spool
SlurmctldPidFile={tmp}/slurmctld.pid
SlurmdPidFile={tmp}/slurmd.pid
SlurmctldLogFile={tmp}/log/slurmctld.log
SlurmdLogFile={tmp}/log/slurmd.log
""")
        # slurmdbd reads slurmdbd.conf beside SLURM_CONF, and only if no one else can read it
        db_port = free_port()
        with open(os.open(os.path.join(tmp, "slurmdbd.conf"), os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
            f.write(f"""DbdHost={NODE}
DbdPort={dbd_port}
SlurmUser=root
AuthType=auth/munge
AuthInfo=socket={munge_socket}
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort={db_port}
StorageUser=root
StorageLoc=gpreempt_acct
PidFile={tmp}/slurmdbd.pid
LogFile={tmp}/log/slurmdbd.log
""")
        with open(os.path.join(tmp, "cgroup.conf"), "w") as f:
            f.write("CgroupPlugin=cgroup/v1\nConstrainCores=yes\nConstrainRAMSpace=yes\n")
        # slurmd gives its Prolog an environment of its own making: the
        # record's directory reaches the script through this
        with open(os.path.join(tmp, "prolog"), "w") as f:
            f.write(f"#!/bin/sh\nexport GPREEMPT_SLURM_JOBS_DIR={self.jobs_dir}\nexec {prolog}\n")
        os.chmod(os.path.join(tmp, "prolog"), 0o755)
        with open(os.path.join(tmp, "plugstack.conf"), "w") as f:
            f.write(f"required {plugin} runtime_dir={self.gp_run}\n")
        with open(os.path.join(self.gp_conf, "gpreemptd.conf"), "w") as f:
            f.write("[Daemon]\nLogLevel=info\nDiscoveryIntervalMs=20\n"
                    "[Offline]\nMaxSuspendMs=10000\nMinOfflineSharePercent=0\n")
        # for jobs without --gpreempt; a registration outranks them
        with open(os.path.join(self.gp_conf, "workloads.d", "50-slurm.conf"), "w") as f:
            f.write("[Workload]\nName=low-qos\nClass=offline\nMatchSlurmQOS=low\n"
                    "[Workload]\nName=high-qos\nClass=online\nMatchSlurmQOS=high\n"
                    "[Workload]\nName=gpu-account\nClass=offline\nMatchSlurmAccount=gpu\n"
                    "[Workload]\nName=comment-offline\nClass=offline\nMatchSlurmComment=*gpreempt=offline*\n"
                    "[Workload]\nName=scavenger\nClass=offline\nMatchSlurmPartition=scavenger\n"
                    "[Workload]\nName=interactive\nClass=online\nMatchSlurmPartition=debug\n")
        daemon_env = dict(os.environ)  # gpreemptd keeps the sanitizers' settings, leak checks included
        daemon_env["GPREEMPT_SLURM_JOBS_DIR"] = self.jobs_dir
        os.environ["SLURM_CONF"] = conf
        # In a sanitized build the plugin brings ASan into Slurm's own
        # programs, which are not built with it: their leaks are not ours.
        os.environ["ASAN_OPTIONS"] = "verify_asan_link_order=0:detect_leaks=0"
        slurmd_env = dict(os.environ)
        asan = sanitizer_runtime(plugin)
        if asan:
            # slurmstepd hangs when dlopen() starts ASan in it, a threaded
            # process: it must be there from the start (slurmd's environment)
            slurmd_env["LD_PRELOAD"] = " ".join(filter(None, [asan, os.environ.get("LD_PRELOAD")]))
        os.environ["GPREEMPT_RUNTIME_DIR"] = self.gp_run
        self.slurmd_env = slurmd_env
        self.daemons = (munge_socket, db_port, [gpreemptd, "--config-dir", self.gp_conf, "--runtime-dir", self.gp_run],
                        daemon_env)

    def start_all(self):
        """Starts the daemons in order; the caller's stop() ends those started, whatever fails."""
        munge_socket, db_port, gpreemptd_argv, gpreemptd_env = self.daemons
        self.start("munged", ["munged", "-F", "--force", "--socket=" + munge_socket,
                              "--pid-file=" + os.path.join(self.tmp, "munged.pid"),
                              "--log-file=" + os.path.join(self.tmp, "log", "munged.log"),
                              "--seed-file=" + os.path.join(self.tmp, "munged.seed")])
        wait_for(lambda: os.path.exists(munge_socket), 5, 0.05)
        self.start_accounting(db_port)
        self.start("gpreemptd", gpreemptd_argv, gpreemptd_env)
        self.start_slurm()

    def start_accounting(self, db_port):
        """MariaDB on a loopback port, with a data directory of its own that
        starts empty (no grant tables: it serves this test alone), then
        slurmdbd, and the cluster, account and QOS the jobs name."""
        datadir = os.path.join(self.tmp, "mariadb")
        os.makedirs(datadir)
        db_socket = os.path.join(self.tmp, "mariadb.socket")
        self.start("mariadbd", ["mariadbd", "--no-defaults", "--user=root", "--datadir=" + datadir,
                                "--socket=" + db_socket, "--pid-file=" + os.path.join(self.tmp, "mariadbd.pid"),
                                "--bind-address=127.0.0.1", "--port=%d" % db_port, "--skip-grant-tables",
                                "--skip-log-bin", "--innodb-buffer-pool-size=16M", "--innodb-log-file-size=4M"])
        wait_for(lambda: os.path.exists(db_socket), 15, 0.05)
        self.start("slurmdbd", ["slurmdbd", "-D"])
        wait_for(lambda: slurm("sacctmgr", "-n", "show", "cluster").returncode == 0, 15, 0.05)
        # user root: in account root (the default) and gpu, which may run jobs in the two QOS
        r = subprocess.run(["sacctmgr", "-i"], input="add cluster gptest\nadd qos low,high\nadd account gpu\n"
                           "add user root account=gpu qos=normal,low,high\n", capture_output=True, text=True, timeout=30)
        self.accounting = r.returncode == 0 and "gpu" in slurm("sacctmgr", "-n", "-P", "show", "assoc",
                                                               "format=account,qos").stdout
        self.accounting_error = r.stdout + r.stderr

    def start_slurm(self):
        self.start("slurmctld", ["slurmctld", "-D", "-i"])
        self.start("slurmd", ["slurmd", "-D", "-N", NODE], self.slurmd_env)

    def restart_slurm(self, proctrack):
        """slurmd takes ProctrackType= when it starts, and slurmctld checks that both read the same file."""
        for name, p in reversed(self.procs):
            if name in ("slurmd", "slurmctld"):
                p.terminate()
                p.wait(timeout=10)
        self.procs = [(n, p) for n, p in self.procs if n not in ("slurmd", "slurmctld")]
        with open(self.conf) as f:
            text = f.read()
        with open(self.conf, "w") as f:
            f.write(text.replace("ProctrackType=proctrack/linuxproc", "ProctrackType=" + proctrack))
        self.start_slurm()

    def start(self, name, argv, env=None):
        log = open(os.path.join(self.tmp, "log", name + ".out"), "w")
        self.procs.append((name, subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env)))

    def log(self, name):
        try:
            with open(os.path.join(self.tmp, "log", name), errors="replace") as f:
                return f.read()[-20000:]
        except FileNotFoundError:  # a start failed before this daemon's
            return "(no %s)\n" % name

    def logs(self):
        return "".join("--- %s\n%s" % (n, self.log(n))
                       for n in ("gpreemptd.out", "slurmd.log", "slurmctld.log", "slurmdbd.log"))

    def stop(self):
        """Stops everything; returns gpreemptd's exit status (under ASan, not 0 for a leak)."""
        status = {}
        for _, p in reversed(self.procs):
            p.terminate()
        for name, p in reversed(self.procs):
            try:
                status[name] = p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                status[name] = p.wait()
        return status.get("gpreemptd")

    def status(self):
        r = subprocess.run([self.gpreemptctl, "status", "--json"], capture_output=True, text=True)
        return json.loads(r.stdout) if r.returncode == 0 else {"processes": []}

    def job_process(self, workload):
        for p in self.status()["processes"]:
            if p.get("workload") == workload:
                return p
        return None

    def process(self, pid):
        for p in self.status()["processes"]:
            if p["pid"] == pid:
                return p
        return None


def slurm(*argv):
    return subprocess.run(argv, capture_output=True, text=True, timeout=30)


def sbatch(tmp, name, options, command):
    script = os.path.join(tmp, name + ".sh")
    with open(script, "w") as f:
        f.write("#!/bin/sh\n%s\n" % command)
    r = slurm("sbatch", "--parsable", "-o", os.path.join(tmp, name + ".out"), *options, script)
    return r.stdout.strip().split(";")[0] if r.returncode == 0 else None


def suspended(p):
    return bool(p and p["suspended_gpus"])


def run(tmp, gpreemptd, gpreemptctl, app, plugin, prolog):
    started = time.monotonic()
    c = Cluster(tmp, gpreemptd, gpreemptctl, plugin, prolog)
    try:
        c.start_all()
        idle = wait_for(lambda: slurm("sinfo", "-h", "-n", NODE, "-o", "%T").stdout.strip() == "idle", 15, 0.1)
        if not check("the cluster is up: %s idle" % NODE, idle, c.logs()):
            return
        if not check("accounting is up: slurmdbd on MariaDB, with account gpu and QOS low and high",
                     c.accounting, c.accounting_error + c.logs()):
            return
        offline_app = f"{app} --continuous --gpu 0 --kernel-us 1000 --report none"
        online_app = [app, "--rate", "1000", "--gpu", "0", "--kernel-us", "2000", "--duration", "2", "--report", "none"]

        r = slurm("srun", "--gpreempt=sometimes", "true")
        check("srun --gpreempt=sometimes is refused before the job runs, saying what to give",
              r.returncode != 0 and "give online or offline" in r.stderr, r.stderr)

        # slurmstepd reads plugstack.conf at each step: a daemon that is not there
        plugstack = os.path.join(tmp, "plugstack.conf")
        with open(plugstack) as f:
            plugstack_text = f.read()
        with open(plugstack, "w") as f:
            f.write(f"required {plugin} runtime_dir={tmp}/nowhere\n")
        r = slurm("srun", "--gpreempt=offline", "true")
        check("without gpreemptd the job runs anyway, and says why it is not registered",
              r.returncode == 0 and "not registered as offline" in r.stderr and "is gpreemptd running?" in r.stderr,
              r.stderr)
        with open(plugstack, "w") as f:
            f.write(f"required {plugin} runtime_dir={c.gp_run} allow=offline\n")
        r = slurm("srun", "--gpreempt=online", "true")
        check("allow=offline: a job asking for online runs unregistered, and is told why",
              r.returncode == 0 and "--gpreempt=online is not allowed on this cluster" in r.stderr, r.stderr)
        with open(plugstack, "w") as f:
            f.write(f"required {plugin} allow=sometimes\n")
        r = slurm("srun", "true")
        check("a bad plugstack.conf argument is named, with what it takes",
              r.returncode != 0 and "allow takes online, offline or online,offline" in r.stderr, r.stderr)
        with open(plugstack, "w") as f:
            f.write(plugstack_text)

        # --- with the plugin
        signal_log = os.path.join(tmp, "signals")
        open(signal_log, "w").close()
        job = sbatch(tmp, "offline", ["--gpreempt=offline", "-p", "debug"],
                     f"{offline_app} --signal-log {signal_log}")
        name = "slurm-%s.batch" % job
        p = wait_for(lambda: (lambda q: q if q and q["attached"] else None)(c.job_process(name)), 15, 0.1)
        if not check("an sbatch --gpreempt=offline job's GPU process (a child of the batch script) is "
                     "registered offline as %s and attached" % name,
                     p and p["class"] == "offline" and p["registered"], json.dumps(c.status()) + c.logs()):
            return
        pid = p["pid"]
        text = subprocess.run([gpreemptctl, "status"], capture_output=True, text=True).stdout
        check("gpreemptctl status names the job", name in text and "offline*" in text, text)

        online = subprocess.Popen(["srun", "--gpreempt=online", "-p", "debug"] + online_app,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        held = wait_for(lambda: suspended(c.process(pid)), 10, 0.05)
        on = [q for q in c.status()["processes"] if (q.get("workload") or "").endswith(".0")]
        check("while the srun --gpreempt=online job has work, the offline job's queues are suspended",
              held, json.dumps(c.status()) + c.logs())
        check("... and the srun job is registered online under its step's name",
              on and on[0]["class"] == "online", json.dumps(c.status()))
        _, err = online.communicate(timeout=30)
        check("the online job ends well", online.returncode == 0, err)
        check("once it is done, the offline job runs again",
              wait_for(lambda: not suspended(c.process(pid)), 10, 0.05), json.dumps(c.status()) + c.logs())

        # --- scontrol suspend: a group-stop of the job's processes
        r = slurm("scontrol", "suspend", job)
        stopped = wait_for(lambda: (lambda q: q if q and q.get("stopped_by") and suspended(q) else None)(
            c.process(pid)), 10, 0.05)
        check("scontrol suspend: the offline job's queues are suspended, with no online work, "
              "and status says why (stopped_by %s)" % (stopped or {}).get("stopped_by"),
              r.returncode == 0 and stopped, r.stderr + json.dumps(c.status()) + c.logs())
        text = subprocess.run([gpreemptctl, "status"], capture_output=True, text=True).stdout
        check("... gpreemptctl status shows it stopped", "stopped by SIG" in text, text)
        r = slurm("scontrol", "resume", job)  # Slurm waits out 2 s from the suspend first
        check("scontrol resume: the job is continued and its queues run again",
              r.returncode == 0 and wait_for(lambda: (lambda q: q and not q.get("stopped_by")
                                                      and not suspended(q))(c.process(pid)), 10, 0.05),
              r.stderr + json.dumps(c.status()) + c.logs())
        with open(signal_log) as f:
            signals = f.read()
        check("the job's process saw SIGCONT once, as Slurm sent it (SIGTSTP and SIGSTOP stopped it)",
              signals == "18\n", repr(signals))
        slurm("scancel", job)
        check("scancel: the offline job leaves the daemon",
              wait_for(lambda: c.job_process(name) is None, 10, 0.05), json.dumps(c.status()))

        # --- without the plugin: the configuration's partition rules, on the
        # partition the Prolog recorded; the job's user sets the variable to
        # the online partition's name, which must not make it online
        job = sbatch(tmp, "scavenger", ["-p", "scavenger"], "SLURM_JOB_PARTITION=debug exec " + offline_app)
        p = wait_for(lambda: (lambda q: q if q and q["attached"] else None)(c.job_process("scavenger")), 15, 0.1)
        if not check("a job in the scavenger partition, without --gpreempt, is classified offline by the partition "
                     "its Prolog recorded", p and p["class"] == "offline" and not p["registered"],
                     json.dumps(c.status()) + c.logs()):
            return
        with open("/proc/%d/environ" % p["pid"], "rb") as f:
            forged = b"\0SLURM_JOB_PARTITION=debug\0" in b"\0" + f.read()
        with open(os.path.join(c.jobs_dir, job)) as f:
            record = f.read()
        check("... although its environment says SLURM_JOB_PARTITION=debug, the online partition "
              "(the record: %r)" % record, forged and "Partition=scavenger\n" in record)
        pid = p["pid"]
        online = subprocess.Popen(["srun", "-p", "debug"] + online_app,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        check("while a debug-partition srun job has work, the scavenger job's queues are suspended",
              wait_for(lambda: suspended(c.process(pid)), 10, 0.05), json.dumps(c.status()) + c.logs())
        on = [q for q in c.status()["processes"] if q.get("workload") == "interactive"]
        check("... the srun job being online by its partition", on and on[0]["class"] == "online",
              json.dumps(c.status()))
        _, err = online.communicate(timeout=30)
        check("the online job ends well, and the scavenger job runs again",
              online.returncode == 0 and wait_for(lambda: not suspended(c.process(pid)), 10, 0.05),
              err + json.dumps(c.status()))
        slurm("scancel", job)
        check("scancel: the scavenger job leaves the daemon and Slurm, and the Epilog removes its record",
              wait_for(lambda: c.job_process("scavenger") is None and not slurm("squeue", "-h").stdout.strip()
                       and not os.path.exists(os.path.join(c.jobs_dir, job)), 10, 0.05), json.dumps(c.status()))

        # --- without the plugin: the job's comment, which the Prolog recorded, and a rule on it
        job = sbatch(tmp, "commented", ["-p", "debug", "--comment=gpreempt=offline"], offline_app)
        record = os.path.join(c.jobs_dir, job)
        p = wait_for(lambda: (lambda q: q if q and q["attached"] else None)(c.job_process("comment-offline")), 15, 0.1)
        if not check("a job with --comment=gpreempt=offline is offline by a MatchSlurmComment= rule, "
                     "which comes before its partition's", p and p["class"] == "offline",
                     json.dumps(c.status()) + c.logs()):
            return
        with open(record) as f:
            text = f.read()
        check("... on the comment the Prolog recorded (%r)" % text, "\nComment=gpreempt=offline\n" in text)
        pid = p["pid"]
        online = subprocess.Popen(["srun", "-p", "debug"] + online_app,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        check("while online work runs, the commented job's queues are suspended",
              wait_for(lambda: suspended(c.process(pid)), 10, 0.05), json.dumps(c.status()) + c.logs())
        online.communicate(timeout=30)
        slurm("scancel", job)
        check("scancel: the Epilog removes the record, and the job leaves the daemon and Slurm",
              wait_for(lambda: not os.path.exists(record) and c.job_process("comment-offline") is None
                       and not slurm("squeue", "-h").stdout.strip(), 10, 0.05),
              json.dumps(c.status()) + c.logs())

        # --- a comment in UTF-8, as slurmd hands it to the Prolog: recorded byte for byte, the rule on it matches
        job = sbatch(tmp, "commented-utf8", ["-p", "debug", "--comment=café gpreempt=offline"], offline_app)
        record = os.path.join(c.jobs_dir, job)
        p = wait_for(lambda: (lambda q: q if q and q["attached"] else None)(c.job_process("comment-offline")), 15, 0.1)
        text = ""
        if os.path.exists(record):
            with open(record, encoding="utf-8", errors="replace") as f:
                text = f.read()
        check("a job whose --comment is in UTF-8: the Prolog records it as slurmd gave it, and the rule matches "
              "(%r)" % text, p and p["class"] == "offline" and "\nComment=café gpreempt=offline\n" in text,
              json.dumps(c.status()) + c.logs())
        slurm("scancel", job)
        wait_for(lambda: not os.path.exists(record) and c.job_process("comment-offline") is None
                 and not slurm("squeue", "-h").stdout.strip(), 10, 0.05)

        # --- without the plugin: QOS and account rules, on what the Prolog
        # recorded (the QOS from slurmctld, the account from slurmd); both
        # jobs run at once, each on one of the node's CPUs. The QOS job's
        # user sets the variable to the online QOS's name, which must not
        # make it online.
        qos_job = sbatch(tmp, "low-qos", ["-p", "debug", "--account=gpu", "--qos=low"],
                         "SLURM_JOB_QOS=high exec " + offline_app)
        account_job = sbatch(tmp, "gpu-account", ["-p", "debug", "--account=gpu"], offline_app)
        attached = lambda w: (lambda q: q if q and q["attached"] else None)(c.job_process(w))  # noqa: E731
        wait_for(lambda: attached("low-qos") and attached("gpu-account"), 15, 0.1)
        p = attached("low-qos")
        if not check("a job with --qos=low, without --gpreempt, is offline by a MatchSlurmQOS= rule "
                     "ahead of its partition's", p and p["class"] == "offline" and not p["registered"],
                     json.dumps(c.status()) + c.logs()):
            return
        with open("/proc/%d/environ" % p["pid"], "rb") as f:
            forged = b"\0SLURM_JOB_QOS=high\0" in b"\0" + f.read()
        with open(os.path.join(c.jobs_dir, qos_job)) as f:
            record = f.read()
        check("... on its real QOS: its environment says SLURM_JOB_QOS=high, the online QOS "
              "(the record: %r)" % record, forged and "\nQOS=low\n" in record and "\nAccount=gpu\n" in record)
        p = attached("gpu-account")
        check("a job with --account=gpu (QOS normal) is offline by a MatchSlurmAccount= rule ahead of its partition's",
              p and p["class"] == "offline" and not p["registered"], json.dumps(c.status()) + c.logs())
        with open(os.path.join(c.jobs_dir, account_job)) as f:
            record = f.read()
        check("... on the account the Prolog recorded (%r)" % record,
              "\nAccount=gpu\n" in record and "\nQOS=normal\n" in record)
        slurm("scancel", qos_job, account_job)
        check("scancel: both leave the daemon and Slurm, and the Epilog removes their records",
              wait_for(lambda: c.job_process("low-qos") is None and c.job_process("gpu-account") is None
                       and not slurm("squeue", "-h").stdout.strip()
                       and not os.listdir(c.jobs_dir), 10, 0.05), json.dumps(c.status()))

        # --- proctrack/cgroup: scontrol suspend freezes the job's cgroup, with no signal
        c.restart_slurm("proctrack/cgroup")
        idle = wait_for(lambda: slurm("sinfo", "-h", "-n", NODE, "-o", "%T").stdout.strip() == "idle", 15, 0.1)
        # the GPU process is orphaned by a double fork, as a daemonising program is:
        # no parent chain reaches the registered batch script any more, its step's cgroup does
        job = sbatch(tmp, "frozen", ["--gpreempt=offline", "-p", "debug"], f"({offline_app} &)\nexec sleep 600")
        name = "slurm-%s.batch" % job
        p = wait_for(lambda: (lambda q: q if q and q["attached"] else None)(c.job_process(name)), 15, 0.1)
        if not check("with proctrack/cgroup, the offline job's GPU process, orphaned by a double fork, is "
                     "covered by the registration of its step's cgroup and attached", idle and p,
                     json.dumps(c.status()) + c.logs()):
            return
        pid = p["pid"]
        with open("/proc/%d/status" % pid) as f:
            parent = int(re.search(r"\nPPid:\s*(\d+)", f.read()).group(1))
        with open("/proc/%d/cmdline" % parent, "rb") as f:
            check("... its parent (%d) is not the batch script" % parent, b"sleep" not in f.read())
        r = slurm("scontrol", "suspend", job)
        frozen = wait_for(lambda: (lambda q: q and q["frozen"] and suspended(q))(c.process(pid)), 10, 0.05)
        check("scontrol suspend freezes the job's cgroup: its queues are suspended, and status says frozen",
              r.returncode == 0 and frozen, r.stderr + json.dumps(c.status()) + c.logs())
        r = slurm("scontrol", "resume", job)
        check("scontrol resume thaws it and its queues run again",
              r.returncode == 0 and wait_for(lambda: (lambda q: q and not q["frozen"] and not q.get("stopped_by")
                                                      and not suspended(q))(c.process(pid)), 10, 0.05),
              r.stderr + json.dumps(c.status()) + c.logs())
        slurm("scancel", job)
        check("scancel: the frozen-then-thawed job leaves the daemon, and Slurm",
              wait_for(lambda: c.job_process(name) is None and not slurm("squeue", "-h").stdout.strip(), 10, 0.05),
              json.dumps(c.status()))
        check("the whole test took under 60 s (%.1f s)" % (time.monotonic() - started),
              time.monotonic() - started < 60)
    finally:
        status = c.stop()
        check("gpreemptd stops cleanly on SIGTERM (exit status %s)" % status, status == 0, c.log("gpreemptd.out"))


def main():
    exit_on_sigterm()
    if len(sys.argv) != 6:
        print("usage: test-slurm.py GPREEMPTD GPREEMPTCTL KFDEMU-APP SPANK-PLUGIN PROLOG-SCRIPT", file=sys.stderr)
        sys.exit(2)
    tmp = tempfile.mkdtemp(prefix="gpreempt-slurm-")
    try:
        run(tmp, *[os.path.abspath(a) for a in sys.argv[1:]])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        remove_slurm_cgroups()
    tap.finish()


if __name__ == "__main__":
    main()
