#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""deploy/: the files parse and say what the docs say.

- YAML (deploy/kubernetes/*.yaml), read with lib/yamlsub.py (a strict
  parser for the subset these files use).  Facts: the DaemonSet runs hostPID with the capabilities the
  agent needs, a memory limit of 256Mi (= the systemd unit's MemoryMax),
  OTEL_EXPORTER_OTLP_ENDPOINT, /sys/kernel/btf mounted, /healthz probes.
  (deploy/otel-collector/: test_deploy_collector.py.)
- systemd: `systemd-analyze verify` on the unit (ExecStart pointed at the
  built binary), and the hardening options present.
"""
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from spt import SPANPROF, check, fail, tmpdir  # noqa: E402
from lib import yamlsub  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
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


# ------------------------------------------------------------ kubernetes
ds = [d for d in load("kubernetes/daemonset.yaml") if d.get("kind") == "DaemonSet"]
check(len(ds) == 1, "one DaemonSet")
spec = ds[0]["spec"]["template"]["spec"]
check(spec.get("hostPID") is True, "hostPID: true")
c = spec["containers"][0]
caps = set(c["securityContext"]["capabilities"]["add"])
need = {"BPF", "PERFMON", "SYS_PTRACE", "DAC_READ_SEARCH", "CHECKPOINT_RESTORE"}
check(need <= caps, "capabilities added: %s" % sorted(caps))
check(c["securityContext"]["capabilities"]["drop"] == ["ALL"], "all others dropped")
check(c["securityContext"].get("privileged") is False, "not privileged")
check(c["resources"]["limits"]["memory"] == "256Mi", "memory limit 256Mi")
env = {e["name"]: e.get("value") for e in c["env"]}
check(env.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").startswith("http"),
      "OTEL_EXPORTER_OTLP_ENDPOINT set")
mounts = {m["mountPath"] for m in c["volumeMounts"]}
check("/sys/kernel/btf" in mounts, "/sys/kernel/btf mounted")
check(c["livenessProbe"]["httpGet"]["path"] == "/healthz", "liveness probe on /healthz")
ann = ds[0]["spec"]["template"]["metadata"]["annotations"]
check(ann.get("profiling.opentelemetry.io/sample-rate-hz") == "19" and
      "-F" in c["args"] and c["args"][c["args"].index("-F") + 1] == "19",
      "sample-rate-hz annotation matches the agent's -F (node-wide)")
sym = load("kubernetes/symbolizer.yaml")
dep = [d for d in sym if d.get("kind") == "Deployment"][0]
sc = dep["spec"]["template"]["spec"]["containers"][0]
check(sc["securityContext"]["runAsNonRoot"] is True, "symbolizer runs unprivileged")
check("--forward" in sc["args"], "symbolizer forwards to the collector")

# ------------------------------------------------------------ systemd
unit = open(os.path.join(DEPLOY, "systemd/spanprof-agent.service")).read()
for opt in ("CapabilityBoundingSet=", "AmbientCapabilities=\n", "ProtectSystem=strict",
            "PrivateTmp=yes", "ReadWritePaths=", "MemoryMax=256M", "Restart=on-failure",
            "NoNewPrivileges=yes"):
    check(opt in unit, "unit has %s" % opt.strip())
bset = re.search(r"^CapabilityBoundingSet=(.*)$", unit, re.M).group(1).split()
check({"CAP_" + x for x in need} <= set(bset), "bounding set covers the agent's needs")
if shutil.which("systemd-analyze"):
    d = tmpdir()
    u = os.path.join(d, "spanprof-agent.service")
    with open(u, "w") as f:
        f.write(unit.replace("/usr/local/bin/spanprof", SPANPROF))
    p = subprocess.run(["systemd-analyze", "verify", u], capture_output=True, text=True,
                       timeout=60)
    errs = [l for l in (p.stdout + p.stderr).splitlines()
            if "spanprof-agent" in l and "Failed to" not in l or "Unknown" in l]
    check(p.returncode == 0 and not errs, "systemd-analyze verify: clean (%s)"
          % (p.stdout + p.stderr).strip()[:300])
else:
    print("note: systemd-analyze not installed; unit checked by text only")
print("PASS")
