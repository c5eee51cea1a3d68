#!/usr/bin/env python3
# spanprof-test: parallel
# SPDX-License-Identifier: MIT
"""deploy/kubernetes/: the manifests parse and say what the programs do.

Read with lib/yamlsub.py (a strict parser for the YAML subset they use).
- DaemonSet: hostPID, the capabilities the agent needs and no others,
  not privileged, a memory limit equal to the systemd unit's MemoryMax,
  OTEL_EXPORTER_OTLP_ENDPOINT, /sys/kernel/btf and /sys/fs/bpf mounted
  (bpffs read-only, HostToContainer), /healthz probes on the agent's
  --metrics-addr port, and no annotation that nothing reads (spanprof reads
  no pod annotations: the file says so).
- symbolizer Deployment: unprivileged, forwards, and its probes GET
  /healthz on the port given to serve's --admin-listen.  When the built
  spanprof-symbolizer has --admin-listen (serve hardening, issue 15), serve
  is started with the Deployment's own arguments (addresses moved to
  loopback) and the probe's request is made for real: 200 "ok".  Without
  it the test says the live part did not run.
(deploy/otel-collector/: test_deploy_collector.py; the systemd unit:
test_agent_systemd.py.)
"""
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import agent_util as au  # noqa: E402
from spt import BUILD, check, fail, tmpdir  # noqa: E402
from lib import yamlsub  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
SYMBOLIZER = os.path.join(BUILD, "spanprof-symbolizer")
DEPLOY = os.path.join(ROOT, "deploy")


def load(rel):
    p = os.path.join(DEPLOY, rel)
    with open(p) as f:
        try:
            docs = yamlsub.parse(f.read(), rel)
        except yamlsub.YamlError as e:
            fail("%s: %s" % (rel, e))
    check(docs, "%s parses (%d documents)" % (rel, len(docs)))
    return docs


# ------------------------------------------------------------ DaemonSet
ds = [d for d in load("kubernetes/daemonset.yaml") if d.get("kind") == "DaemonSet"]
check(len(ds) == 1, "one DaemonSet")
spec = ds[0]["spec"]["template"]["spec"]
check(spec.get("hostPID") is True, "hostPID: true")
check(spec.get("automountServiceAccountToken") is False, "no Kubernetes credentials")
c = spec["containers"][0]
caps = set(c["securityContext"]["capabilities"]["add"])
need = {"BPF", "PERFMON", "SYS_PTRACE", "DAC_READ_SEARCH", "CHECKPOINT_RESTORE"}
check(need <= caps, "capabilities added: %s" % sorted(caps))
unit = open(os.path.join(DEPLOY, "systemd/spanprof-agent.service")).read()
bset = {c[4:] for c in re.search(r"^CapabilityBoundingSet=(.*)$", unit, re.M).group(1).split()}
check(caps == bset, "the same capabilities as the systemd unit's bounding set (%s)"
      % sorted(caps ^ bset or caps))
check(c["securityContext"]["capabilities"]["drop"] == ["ALL"], "all others dropped")
check(c["securityContext"].get("privileged") is False, "not privileged")
mem_max = re.search(r"^MemoryMax=(\d+)M$", unit, re.M).group(1)
check(c["resources"]["limits"]["memory"] == mem_max + "Mi",
      "memory limit %sMi = the unit's MemoryMax" % mem_max)
env = {e["name"]: e.get("value") for e in c["env"]}
check(env.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").startswith("http"),
      "OTEL_EXPORTER_OTLP_ENDPOINT set")
mounts = {m["mountPath"]: m for m in c["volumeMounts"]}
vols = {v["name"]: v for v in spec["volumes"]}
check("/sys/kernel/btf" in mounts, "/sys/kernel/btf mounted")
bpf = mounts.get("/sys/fs/bpf")
check(bpf is not None and bpf.get("readOnly") is True and
      bpf.get("mountPropagation") == "HostToContainer" and
      vols[bpf["name"]]["hostPath"]["path"] == "/sys/fs/bpf",
      "/sys/fs/bpf mounted from the host, read-only, HostToContainer")
obi = open(os.path.join(ROOT, "include/spanprof/abi.h")).read() + \
    open(os.path.join(ROOT, "src/collector/pipeline/bpf_sampler.c")).read()
check("/sys/fs/bpf/otel/traces_ctx_v1" in obi, "the agent reads OBI's map under /sys/fs/bpf")
args = c["args"]
maddr = args[args.index("--metrics-addr") + 1]
for probe in ("livenessProbe", "readinessProbe"):
    g = c[probe]["httpGet"]
    check(g["path"] == "/healthz" and str(g["port"]) == maddr.rsplit(":", 1)[1],
          "%s GETs /healthz on the --metrics-addr port (%s)" % (probe, maddr))
ann = ds[0]["spec"]["template"]["metadata"].get("annotations") or {}
check(not [k for k in ann if k.startswith("profiling.opentelemetry.io/")],
      "no profiling.opentelemetry.io/* annotations (nothing reads them): %s" % sorted(ann))
raw = open(os.path.join(DEPLOY, "kubernetes/daemonset.yaml")).read()
check("spanprof reads no pod annotations" in raw, "the file says annotations are not read")
src = ""
for d, _, files in os.walk(os.path.join(ROOT, "src")):
    src += "".join(open(os.path.join(d, f)).read() for f in files if f.endswith(".c"))
check("profiling.opentelemetry.io" not in src, "and indeed no source file reads them")

# ------------------------------------------------------------ symbolizer
sym = load("kubernetes/symbolizer.yaml")
dep = [d for d in sym if d.get("kind") == "Deployment"][0]
sc = dep["spec"]["template"]["spec"]["containers"][0]
check(sc["securityContext"]["runAsNonRoot"] is True, "symbolizer runs unprivileged")
sargs = sc["args"]
check(sargs[0] == "serve" and "--forward" in sargs, "symbolizer serves and forwards")
admin = sargs[sargs.index("--admin-listen") + 1]
ports = {p["name"]: p["containerPort"] for p in sc["ports"]}
check(ports.get("admin") == int(admin.rsplit(":", 1)[1]), "port 'admin' is --admin-listen's")
for probe in ("livenessProbe", "readinessProbe"):
    g = sc[probe]["httpGet"]
    check(g["path"] == "/healthz" and g["port"] == "admin",
          "symbolizer %s GETs /healthz on the admin port" % probe)

help_ = subprocess.run([SYMBOLIZER, "serve", "--help"], capture_output=True, text=True,
                       timeout=30)
if "--admin-listen" not in help_.stdout + help_.stderr:
    print("note: this spanprof-symbolizer has no --admin-listen (it comes with issue 15's "
          "serve hardening): the probe was not made against a running serve")
else:
    d = tmpdir()
    lp, ap = au.free_port(), au.free_port()
    run_args = list(sargs)
    run_args[run_args.index("--listen") + 1] = "127.0.0.1:%d" % lp
    run_args[run_args.index("--admin-listen") + 1] = "127.0.0.1:%d" % ap
    run_args[run_args.index("--forward") + 1] = "http://127.0.0.1:%d/v1development/profiles" \
        % au.free_port()
    log = open(os.path.join(d, "serve.log"), "w")
    srv = subprocess.Popen([SYMBOLIZER] + run_args, stdout=log, stderr=subprocess.STDOUT)
    try:
        got = au.wait_for(lambda: (lambda r: r if r[0] else None)(au.http_get(ap, "/healthz")),
                          15, what="serve's admin port")
        check(got[0] == 200 and got[1].strip() == "ok",
              "serve with the Deployment's arguments: GET /healthz on the admin port -> %s %r"
              % got)
    finally:
        srv.terminate()
        srv.wait(timeout=30)
    shutil.rmtree(d)
print("PASS")
