#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The Kubernetes manifests in systemd/kubernetes/, checked without a
cluster (none is available to the tests). TAP output; run by meson test:

  tests/systemd/test-kubernetes.py --source SRC --gpreemptd BIN --gpreemptctl BIN --version V

- every YAML document parses (python3-yaml, as kubectl's decoder would
  reject a broken one);
- the DaemonSet has each field the daemon relies on: host pids, the device
  nodes, debugfs, the control socket on the node, its configuration where
  its command line says, the priority class, the binaries where the Debian
  package installs them, and the image the Containerfile builds;
- the configuration in its ConfigMap, laid out as the kubelet projects a
  ConfigMap volume (pkg/volume/util/atomic_writer.go: a timestamped
  directory, a "..data" link to it, and one link per top-level path), passes
  `gpreemptd --check-config` and `gpreemptctl verify-config`;
- the example pod's downward-API environment classifies it as the
  configuration says: a process started with that environment is matched
  by `gpreemptctl verify-config --pid`.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import yaml

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from nspawn import Tap  # noqa: E402

tap = Tap()
check = tap.check


def load(path):
    with open(path, encoding="utf-8") as f:
        return [d for d in yaml.safe_load_all(f) if d is not None]


def find(docs, kind):
    found = [d for d in docs if d.get("kind") == kind]
    return found[0] if len(found) == 1 else None


def volume_of(spec, container, mount_path):
    """The pod volume mounted at mount_path in container, or None."""
    for m in container.get("volumeMounts", []):
        if m.get("mountPath") == mount_path:
            return next((v for v in spec.get("volumes", []) if v.get("name") == m.get("name")), None)
    return None


def host_path(volume, path, kind):
    return bool(volume) and volume.get("hostPath") == {"path": path, "type": kind}


def option(command, name):
    prefix = "--%s=" % name
    return next((a[len(prefix):] for a in command if a.startswith(prefix)), None)


def installed_paths(source):
    """What debian/gpreempt.install puts in the package, as absolute paths."""
    with open(os.path.join(source, "debian", "gpreempt.install"), encoding="utf-8") as f:
        return {"/" + line.strip() for line in f if line.strip()}


def project(configmap, volume, root):
    """The ConfigMap volume as the kubelet writes it, under root."""
    data_dir = os.path.join(root, "..2026_11_26_00_00_00.000000000")
    for item in volume["configMap"]["items"]:
        target = os.path.join(data_dir, item["path"])
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "w", encoding="utf-8") as f:
            f.write(configmap["data"][item["key"]])
    os.symlink(os.path.basename(data_dir), os.path.join(root, "..data"))
    for top in {item["path"].split("/")[0] for item in volume["configMap"]["items"]}:
        os.symlink(os.path.join("..data", top), os.path.join(root, top))


def check_daemonset(docs, source, version):
    namespace, configmap, ds = find(docs, "Namespace"), find(docs, "ConfigMap"), find(docs, "DaemonSet")
    if not check("one Namespace, one ConfigMap and one DaemonSet", namespace and configmap and ds):
        return None, None
    check("the namespace allows privileged pods (Pod Security admission)",
          namespace["metadata"].get("labels", {}).get("pod-security.kubernetes.io/enforce") == "privileged")
    ns = namespace["metadata"]["name"]
    check("everything is in that namespace",
          configmap["metadata"].get("namespace") == ns and ds["metadata"].get("namespace") == ns)
    template = ds["spec"]["template"]
    spec = template["spec"]
    check("the DaemonSet's selector selects its pods",
          ds["spec"]["selector"]["matchLabels"].items() <= template["metadata"]["labels"].items())
    check("hostPID: the daemon sees every process, by the pid KFD names it by", spec.get("hostPID") is True)
    check("priorityClassName: system-node-critical", spec.get("priorityClassName") == "system-node-critical")
    containers = spec.get("containers", [])
    if not check("one container", len(containers) == 1):
        return None, None
    c = containers[0]
    sc = c.get("securityContext", {})
    caps = set(sc.get("capabilities", {}).get("add", []))
    check("CAP_SYS_PTRACE and CAP_PERFMON, and /dev/kfd through the device cgroup (privileged)",
          sc.get("privileged") is True or {"SYS_PTRACE", "PERFMON"} <= caps, json.dumps(sc))
    check("runs as uid 0 (debugfs kfd/mqds is root's)", sc.get("runAsUser") == 0)
    installed = installed_paths(source)
    command = c.get("command", [])
    check("the command is the packaged gpreemptd", command and command[0] in installed, " ".join(command))
    probe = c.get("livenessProbe", {}).get("exec", {}).get("command", [])
    check("the liveness probe is the packaged gpreemptctl's status",
          probe[:2] == ["/usr/bin/gpreemptctl", "status"] and probe[0] in installed, " ".join(probe))
    check("/dev/kfd is the node's character device",
          host_path(volume_of(spec, c, "/dev/kfd"), "/dev/kfd", "CharDevice"))
    check("/dev/dri is the node's (GPU names from render nodes)",
          host_path(volume_of(spec, c, "/dev/dri"), "/dev/dri", "Directory"))
    check("debugfs is the node's (online queues' write pointers)",
          host_path(volume_of(spec, c, "/sys/kernel/debug"), "/sys/kernel/debug", "Directory"))
    runtime_dir = option(command, "runtime-dir")
    check("the control socket's directory is on the node, where gpreemptctl looks (/run/gpreempt)",
          runtime_dir == "/run/gpreempt"
          and host_path(volume_of(spec, c, runtime_dir), "/run/gpreempt", "DirectoryOrCreate"))
    config_dir = option(command, "config-dir")
    volume = volume_of(spec, c, config_dir) if config_dir else None
    ok = check("the configuration is the ConfigMap, mounted at --config-dir",
               volume and volume.get("configMap", {}).get("name") == configmap["metadata"]["name"])
    if ok:
        keys = {item["key"] for item in volume["configMap"].get("items", [])}
        paths = {item["path"] for item in volume["configMap"].get("items", [])}
        check("every key of the ConfigMap is projected, gpreemptd.conf and drop-ins in workloads.d",
              keys == set(configmap["data"]) and "gpreemptd.conf" in paths
              and all(p == "gpreemptd.conf" or (p.startswith("workloads.d/") and p.endswith(".conf"))
                      for p in paths), json.dumps(sorted(paths)))
    with open(os.path.join(source, "systemd", "kubernetes", "Containerfile"), encoding="utf-8") as f:
        recipe = f.read()
    image = c.get("image", "")
    check("the image is the one the Containerfile's instructions tag, at this version (%s)" % version,
          image == "gpreemptd:" + version and ("-t %s " % image) in recipe, image)
    check("the Containerfile builds from Debian 12",
          "FROM debian:bookworm AS build" in recipe and "FROM debian:bookworm-slim" in recipe)
    return configmap, volume if ok else None


def check_configuration(configmap, volume, gpreemptd, gpreemptctl, tmp):
    root = os.path.join(tmp, "etc-gpreempt")
    os.mkdir(root)
    project(configmap, volume, root)
    r = subprocess.run([gpreemptd, "--check-config", "--config-dir", root], capture_output=True, text=True)
    check("gpreemptd --check-config accepts the ConfigMap as projected", r.returncode == 0, r.stdout + r.stderr)
    r = subprocess.run([gpreemptctl, "verify-config", "--config-dir", root, "--json"], capture_output=True, text=True)
    try:
        result = json.loads(r.stdout)
    except ValueError:
        result = {}
    check("gpreemptctl verify-config accepts it, with its workloads",
          r.returncode == 0 and result.get("valid") is True and len(result.get("workloads", [])) >= 3,
          r.stdout + r.stderr)
    return root


def resolve_env(pod):
    """The pod's container environment as the kubelet resolves the downward API (fieldRef)."""
    meta = pod["metadata"]
    fields = {"metadata.name": meta["name"], "metadata.namespace": meta.get("namespace", "default")}
    for k, v in meta.get("labels", {}).items():
        fields["metadata.labels['%s']" % k] = v
    env = {}
    for e in pod["spec"]["containers"][0].get("env", []):
        if "value" in e:
            env[e["name"]] = e["value"]
        else:
            env[e["name"]] = fields[e["valueFrom"]["fieldRef"]["fieldPath"]]
    return env


def check_example_pod(pod, config_dir, gpreemptctl):
    if not check("the example pod parses", pod and pod.get("kind") == "Pod"):
        return
    env = resolve_env(pod)
    check("the example pod passes its label, name and namespace through the downward API",
          {"GPREEMPT_CLASS", "POD_NAME", "POD_NAMESPACE"} <= env.keys(), json.dumps(env))
    proc = subprocess.Popen(["sleep", "30"], env=env)
    try:
        result = {}
        for _ in range(100):  # until sleep has exec'd (its command line says so)
            r = subprocess.run([gpreemptctl, "verify-config", "--config-dir", config_dir, "--pid", str(proc.pid),
                                "--json"], capture_output=True, text=True)
            result = json.loads(r.stdout) if r.stdout.startswith("{") else {}
            if result.get("matches") and "sleep" in json.dumps(result):
                break
            time.sleep(0.02)
        check("a process with the example pod's environment is classified offline by its label",
              result.get("workload") == "pods-labelled-offline" and result.get("class") == "offline",
              json.dumps(result, indent=1))
    finally:
        proc.kill()
        proc.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", required=True)
    ap.add_argument("--gpreemptd", required=True)
    ap.add_argument("--gpreemptctl", required=True)
    ap.add_argument("--version", required=True)
    args = ap.parse_args()
    manifests = os.path.join(args.source, "systemd", "kubernetes")
    docs = pod_docs = None
    try:
        docs = load(os.path.join(manifests, "gpreemptd.yaml"))
        pod_docs = load(os.path.join(manifests, "pod-example.yaml"))
        check("the manifests are YAML", True)
    except (OSError, yaml.YAMLError) as e:
        tap.finish("the manifests are YAML: %s" % e)
    configmap, volume = check_daemonset(docs, args.source, args.version)
    if configmap and volume:
        with tempfile.TemporaryDirectory(prefix="gpreempt-kubernetes-") as tmp:
            config_dir = check_configuration(configmap, volume, args.gpreemptd, args.gpreemptctl, tmp)
            check_example_pod(find(pod_docs, "Pod"), config_dir, args.gpreemptctl)
    tap.finish()


if __name__ == "__main__":
    main()
