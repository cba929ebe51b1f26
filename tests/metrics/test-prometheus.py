#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""gpreemptd's metrics, scraped by a real Prometheus (Debian's prometheus
package) while the demo's workloads run on an emulated node (kfdemu).

The test starts itself again inside `kfdemu-run`, where it starts
gpreemptd, the high-load scenario's offline job, gpreempt-exporter on a
loopback port and Prometheus scraping it every second; then the online
service. The assertions go through Prometheus's HTTP query API: offline
work is suspended at a rate above zero while the online service runs, and
seconds suspended grow for the offline workload only. `promtool check
metrics` judges the exporter's output, and node_exporter's textfile mode
is checked beside. Last, with gpreemptd stopped, the exporter answers
gpreempt_up 0 over HTTP and exits 3 in textfile mode; methods other than
GET and HEAD get 405 and other paths 404; with a socket in the daemon's
place that never answers, Prometheus still records gpreempt_up 0, since
the exporter gives up within the scrape's timeout; and one that answers
Metrics without a list of families gets gpreempt_up 0 too.

  test-prometheus.py BUILD_DIR
"""
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

from gpreempt_eval import child_env, node_pass, runner

SCENARIO = "high-load"
ONLINE_SECONDS = 14
# The first sample appears ~5.6 s after Prometheus starts even at a 1 s
# scrape interval; a loaded 2-core host may take longer.
FIRST_SAMPLE_TIMEOUT_S = 60
QUERY_TIMEOUT_S = 30
DASHBOARD = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                         "docs", "gpreempt-dashboard.json")
# Grafana's own variables, as Prometheus is to see them
GRAFANA_VARIABLES = {"$__rate_interval": "10s"}
# The offline job runs as Slurm job 4242 (by its environment, as srun sets
# it). Its name is its user's bytes: quotes, a backslash, a newline and a
# byte that is not UTF-8 must reach Prometheus as a label value it takes,
# the last as U+FFFD.
SLURM_JOB_ID = "4242"
SLURM_JOB_NAME = 'train "big" \\ v2\n\udcff'
SLURM_JOB_NAME_AS_LABEL = 'train "big" \\ v2\n\ufffd'


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(url, timeout=10):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.status, r.read().decode()


def http_request(url, method, headers=None):
    """(status, headers, body) of any method, error statuses included."""
    request = urllib.request.Request(url, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=10) as r:
            return r.status, r.headers, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read().decode()


def wait_until(what, check, timeout):
    """Polls check() until it returns something true; fails with `what` otherwise."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for %s" % what)
        time.sleep(0.2)


class Prometheus:
    def __init__(self, tmp, target):
        self.port = free_port()
        config = os.path.join(tmp, "prometheus.yml")
        with open(config, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                    "scrape_configs:\n  - job_name: gpreempt\n    static_configs:\n"
                    "      - targets: ['%s']\n" % target)
        subprocess.run(["promtool", "check", "config", config], check=True, capture_output=True)
        self.log = open(os.path.join(tmp, "prometheus.log"), "w")
        self.proc = subprocess.Popen(["prometheus", "--config.file=" + config,
                                      "--storage.tsdb.path=" + os.path.join(tmp, "tsdb"),
                                      "--web.listen-address=127.0.0.1:%d" % self.port],
                                     stdout=self.log, stderr=subprocess.STDOUT)

    def ready(self):
        try:
            return http_get("http://127.0.0.1:%d/-/ready" % self.port, timeout=2)[0] == 200
        except OSError:
            assert self.proc.poll() is None, "prometheus exited; see prometheus.log"
            return False

    def query(self, expr):
        """The instant vector's samples as {labels-tuple: value}."""
        url = "http://127.0.0.1:%d/api/v1/query?%s" % (self.port, urllib.parse.urlencode({"query": expr}))
        status, body = http_get(url)
        reply = json.loads(body)
        assert reply["status"] == "success", body
        return {tuple(sorted(r["metric"].items())): float(r["value"][1]) for r in reply["data"]["result"]}

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=30)
        self.log.close()


def start_exporter(exporter, env, port, log_path):
    with open(log_path, "w") as log:
        proc = subprocess.Popen([exporter, "--listen", "127.0.0.1:%d" % port], env=env,
                                stdout=subprocess.DEVNULL, stderr=log)
    wait_until("gpreempt-exporter to listen", lambda: proc.poll() is not None or port_open(port), 10)
    assert proc.poll() is None, "gpreempt-exporter exited: %s" % open(log_path).read()
    return proc


def port_open(port):
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def promtool_check(text):
    r = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True)
    assert r.returncode == 0, "promtool check metrics: %s%s" % (r.stdout, r.stderr)


def check_textfile(exporter, env, tmp, expect_up):
    path = os.path.join(tmp, "gpreempt.prom")
    r = subprocess.run([exporter, "--textfile", path], env=env, capture_output=True, text=True)
    assert r.returncode == (0 if expect_up else 3), "textfile mode exited %d: %s" % (r.returncode, r.stderr)
    with open(path) as f:
        text = f.read()
    assert ("gpreempt_up 1" if expect_up else "gpreempt_up 0") in text, text
    assert [n for n in os.listdir(tmp) if n.startswith("gpreempt.prom.")] == [], "a temporary file was left"
    promtool_check(text)
    if not expect_up:
        assert "gpreemptd is not running" in r.stderr, r.stderr
    return text


def check_dashboard(prometheus, text):
    """Every panel's PromQL parses (Prometheus answers it) and names only metrics the exporter emits."""
    with open(DASHBOARD) as f:
        dashboard = json.load(f)
    emitted = set(re.findall(r"^# TYPE (\S+) (\S+)", text, re.M))
    names = {n for n, _ in emitted} | {n + s for n, t in emitted if t == "histogram" for s in ("_bucket", "_sum", "_count")}
    assert dashboard["panels"], "the dashboard has no panels"
    for panel in dashboard["panels"]:
        assert panel["targets"], "panel %r has no query" % panel["title"]
        for target in panel["targets"]:
            expr = target["expr"]
            for variable, value in GRAFANA_VARIABLES.items():
                expr = expr.replace(variable, value)
            unknown = set(re.findall(r"\bgpreempt_\w+", expr)) - names
            assert not unknown, "panel %r names metrics the exporter does not emit: %s" % (panel["title"], unknown)
            prometheus.query(expr)


def check_slurm_job_labels(prometheus, text):
    """The offline job's series carry its Slurm job id and name; the online service's, in no job, neither."""
    job = prometheus.query('gpreempt_suspensions_total{slurm_job="%s"}' % SLURM_JOB_ID)
    assert len(job) == 1, "not one series of Slurm job %s: %s" % (SLURM_JOB_ID, job)
    labels, suspensions = next(iter(job.items()))
    labels = dict(labels)
    assert labels["slurm_job_name"] == SLURM_JOB_NAME_AS_LABEL, labels
    assert labels["class"] == "offline" and labels["workload"] == "eval-offline", labels
    assert suspensions > 0, "Slurm job %s was never suspended" % SLURM_JOB_ID
    print("# Slurm job %s (%s): %d suspensions" % (SLURM_JOB_ID, ascii(labels["slurm_job_name"]), suspensions))
    online = prometheus.query('gpreempt_suspensions_total{class="online"}')
    assert online and all("slurm_job" not in dict(k) for k in online), online
    assert 'slurm_job_name="train \\"big\\" \\\\ v2\\n\ufffd"' in text, text


def check_http_handling(port):
    """/metrics answers GET and HEAD; other methods get 405 saying which are allowed, other paths 404."""
    url = "http://127.0.0.1:%d" % port
    status, headers, body = http_request(url + "/metrics", "HEAD")
    assert status == 200 and body == "" and headers["Content-Type"].startswith("text/plain; version=0.0.4"), \
        (status, dict(headers), body)
    for method in ("POST", "PUT", "DELETE"):
        status, headers, body = http_request(url + "/metrics", method)
        assert status == 405 and headers["Allow"] == "GET, HEAD", (method, status, dict(headers), body)
    for path in ("/", "/metrics/", "/other"):
        status, _, body = http_request(url + path, "GET")
        assert status == 404 and "/metrics only" in body, (path, status, body)


def check_daemon_that_never_answers(prometheus, runtime_dir, exporter_port, exporter_log):
    """A daemon stuck in its loop: connections are taken (the kernel's backlog), no reply comes.
    The exporter must answer gpreempt_up 0 within Prometheus's scrape timeout (1 s here, the
    interval), not after its own 5 s: else Prometheus records a failed scrape, not the daemon down."""
    path = os.path.join(runtime_dir, "io.gpreempt")
    if os.path.exists(path):
        os.unlink(path)
    stuck = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        stuck.bind(path)
        stuck.listen(64)
        start = time.monotonic()
        status, _, body = http_request("http://127.0.0.1:%d/metrics" % exporter_port, "GET",
                                       {"X-Prometheus-Scrape-Timeout-Seconds": "1"})
        took = time.monotonic() - start
        assert status == 200 and "gpreempt_up 0" in body, body
        assert took < 1.0, "the exporter took %.2f s for a scrape that waits 1 s" % took
        promtool_check(body)
        since = time.time()
        wait_until("Prometheus to record gpreempt_up 0 from a daemon that never answers",
                   lambda: prometheus.query("gpreempt_up == 0 and timestamp(gpreempt_up) > %f" % since)
                   and prometheus.query('up{job="gpreempt"} == 1'), QUERY_TIMEOUT_S)
        with open(exporter_log) as f:
            assert "in time" in f.read(), "the exporter's log does not say the daemon was late"
    finally:
        stuck.close()
        os.unlink(path)


def check_malformed_replies(exporter, env, runtime_dir, exporter_port):
    """A daemon that answers Metrics with families of another shape than a list (or none) is one that did
    not answer: gpreempt_up 0 with the reason, exit 3 in textfile mode, and the HTTP exporter keeps
    serving. Families that were not a list once aborted the exporter in json-c."""
    path = os.path.join(runtime_dir, "io.gpreempt")
    for families in ('"notalist"', "null", "{}", None):
        parameters = '{"families":%s}' % families if families else "{}"
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(path)
        server.listen(64)
        stop = threading.Event()

        def answer_everyone():
            # Prometheus scrapes the HTTP exporter meanwhile: every connection gets the same reply
            while not stop.is_set():
                try:
                    conn, _ = server.accept()
                except OSError:
                    return
                if stop.is_set():
                    conn.close()
                    return
                with conn:
                    request = b""
                    while not request.endswith(b"\0"):
                        chunk = conn.recv(4096)
                        if not chunk:
                            break
                        request += chunk
                    conn.sendall(('{"parameters":%s}' % parameters).encode() + b"\0")

        thread = threading.Thread(target=answer_everyone, daemon=True)
        thread.start()
        try:
            textfile = os.path.join(runtime_dir, "malformed.prom")
            r = subprocess.run([exporter, "--textfile", textfile], env=env, capture_output=True, text=True,
                               timeout=30)
            assert r.returncode == 3, "families %s: textfile mode exited %d: %s" % (families, r.returncode, r.stderr)
            assert "no list of families" in r.stderr, r.stderr
            with open(textfile) as f:
                text = f.read()
            assert "gpreempt_up 0" in text, text
            promtool_check(text)
            os.unlink(textfile)
            status, _, body = http_request("http://127.0.0.1:%d/metrics" % exporter_port, "GET")
            assert status == 200 and "gpreempt_up 0" in body, (families, status, body)
        finally:
            stop.set()
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as wake:  # out of its accept()
                wake.connect(path)
            thread.join(timeout=10)
            server.close()
            os.unlink(path)


def check_top(build, env):
    """gpreemptctl top shows the same counters: the offline workload's suspensions and the reaction's stages."""
    ctl = os.path.join(build.dir, "controller/gpreemptctl/gpreemptctl")
    r = subprocess.run([ctl, "top", "--iterations", "2", "--interval", "1s"], env=env, capture_output=True,
                       text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    print("\n".join("# " + line for line in r.stdout.splitlines()))
    for expected in ("eval-offline", "(job %s)" % SLURM_JOB_ID, "REACTION STAGE", "seen_to_issued",
                     "PREEMPTION CALL", "suspend"):
        assert expected in r.stdout, "gpreemptctl top lacks %r:\n%s" % (expected, r.stdout)
    r = subprocess.run([ctl, "top", "--iterations", "1", "--json"], env=env, capture_output=True, text=True,
                       timeout=30)
    assert r.returncode == 0, r.stderr
    names = {f["name"] for f in json.loads(r.stdout)["metrics"]}
    assert "gpreempt_suspensions_total" in names, names


def inside(build_dir, tmp):
    build = runner.Build(build_dir)
    workloads = runner.load_workloads()
    scenario = next(s for s in workloads["scenarios"] if s["name"] == SCENARIO)
    w = workloads["workloads"]
    config_dir = os.path.join(tmp, "etc")
    os.makedirs(os.path.join(config_dir, "workloads.d"))
    with open(os.path.join(config_dir, "gpreemptd.conf"), "w") as f:
        f.write(runner.daemon_config(runner.DEFAULT_POLICY))
    runtime_dir = os.path.join(tmp, "run")
    spec = {"gpreemptd": {"binary": build.gpreemptd, "config_dir": config_dir, "runtime_dir": runtime_dir}}
    exporter = os.path.join(build.dir, "controller/gpreempt-exporter/gpreempt-exporter")
    env = dict(os.environ, GPREEMPT_RUNTIME_DIR=runtime_dir)
    exporter_port = free_port()

    daemon = node_pass.start_daemon(spec)
    offline = exporter_proc = prometheus = None
    try:
        offline = node_pass.start_app(runner.app_argv(build, w[scenario["offline"]], "offline"),
                                      env=dict(os.environ, SLURM_JOB_ID=SLURM_JOB_ID, SLURM_JOB_NAME=SLURM_JOB_NAME))
        node_pass.wait_attached(daemon[1], offline[0].pid)
        exporter_proc = start_exporter(exporter, env, exporter_port, os.path.join(tmp, "exporter.log"))
        prometheus = Prometheus(tmp, "127.0.0.1:%d" % exporter_port)
        wait_until("Prometheus to be ready", prometheus.ready, FIRST_SAMPLE_TIMEOUT_S)
        wait_until("Prometheus's first sample of gpreempt_up",
                   lambda: prometheus.query("gpreempt_up == 1"), FIRST_SAMPLE_TIMEOUT_S)
        before = prometheus.query("gpreempt_suspended_seconds_total")

        online = node_pass.start_app(runner.app_argv(build, w[scenario["online"]], "online", scenario["rate"])
                                     + ["--duration", str(ONLINE_SECONDS)])
        rate = wait_until("a suspension rate above zero while the online service runs",
                          lambda: prometheus.query('sum(rate(gpreempt_suspensions_total{class="offline"}[5s])) > 0'),
                          QUERY_TIMEOUT_S)
        print("# suspensions per second while online work runs: %.1f" % list(rate.values())[0])
        check_top(build, env)
        histogram = wait_until("reaction histogram observations",
                               lambda: prometheus.query('gpreempt_reaction_seconds_count{stage="seen_to_issued"} > 0'),
                               QUERY_TIMEOUT_S)
        assert histogram
        assert online[0].wait(timeout=ONLINE_SECONDS + 60) == 0, "the online service failed"

        # Prometheus has the samples taken after the online service ended within two scrapes.
        time.sleep(2.5)
        after = prometheus.query("gpreempt_suspended_seconds_total")
        grew = {k: v - before.get(k, 0.0) for k, v in after.items()}
        offline_growth = [d for k, d in grew.items() if ("class", "offline") in k]
        online_growth = [d for k, d in grew.items() if ("class", "online") in k]
        assert offline_growth and max(offline_growth) > 0, "offline suspended seconds did not grow: %s" % grew
        assert online_growth and max(online_growth) == 0, "an online workload has suspended seconds: %s" % grew
        assert prometheus.query("increase(gpreempt_online_busy_seconds_total[30s]) > 0"), \
            "online busy seconds did not grow"

        status, text = http_get("http://127.0.0.1:%d/metrics" % exporter_port)
        assert status == 200
        promtool_check(text)
        assert 'workload="eval-offline"' in text and "pid=" not in text, text
        check_slurm_job_labels(prometheus, text)
        check_dashboard(prometheus, text)
        check_textfile(exporter, env, tmp, expect_up=True)
    finally:
        # the daemon first: its SIGTERM resumes what it suspended (node_pass.run's order)
        daemon[0].send_signal(signal.SIGTERM)
        daemon[0].wait(timeout=30)
        if offline:
            node_pass.stop(offline[0], offline[1], offline[2], "the offline job")

    try:
        status, text = http_get("http://127.0.0.1:%d/metrics" % exporter_port)
        assert status == 200 and "gpreempt_up 0" in text, text
        promtool_check(text)
        check_textfile(exporter, env, tmp, expect_up=False)
        check_http_handling(exporter_port)
        check_daemon_that_never_answers(prometheus, runtime_dir, exporter_port, os.path.join(tmp, "exporter.log"))
        check_malformed_replies(exporter, env, runtime_dir, exporter_port)
    finally:
        exporter_proc.send_signal(signal.SIGTERM)
        assert exporter_proc.wait(timeout=10) == 0
        prometheus.stop()


def main():
    build_dir = os.path.abspath(sys.argv[1])
    if len(sys.argv) > 2:
        inside(build_dir, sys.argv[2])
        print("ok")
        return 0
    build = runner.Build(build_dir)
    with tempfile.TemporaryDirectory(prefix="gpreempt-metrics-", dir=runner.scratch_parent()) as tmp:
        argv = build.command(tmp, dict(runner.DEFAULT_PREEMPT),
                             [sys.executable, os.path.abspath(__file__), build_dir, tmp])
        return subprocess.run(argv, env=child_env(), timeout=600).returncode


if __name__ == "__main__":
    sys.exit(main())
