#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""deploy/: the files parse and say what the docs say.

- YAML (deploy/kubernetes/*.yaml, deploy/otel-collector/config.yaml): a
  strict parser for the block subset these files use (python3 has no yaml
  module): spaces only, consistent indentation, "key: value" maps, "- "
  sequences, flow lists [a, b], comments, "---" documents; anything else
  fails.  Then facts: the DaemonSet runs hostPID with the capabilities the
  agent needs, a memory limit of 256Mi (= the systemd unit's MemoryMax),
  OTEL_EXPORTER_OTLP_ENDPOINT, /sys/kernel/btf mounted, /healthz probes;
  the collector config has a profiles pipeline from the otlp receiver.
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

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
DEPLOY = os.path.join(ROOT, "deploy")


def scalar(s, where):
    s = s.strip()
    if s.startswith("[") :
        if not s.endswith("]"):
            fail("unterminated flow list, " + where)
        inner = s[1:-1].strip()
        return [scalar(x, where) for x in inner.split(",")] if inner else []
    if s.startswith('"'):
        if len(s) < 2 or not s.endswith('"'):
            fail("unterminated string, " + where)
        return s[1:-1]
    if s.startswith("'"):
        if len(s) < 2 or not s.endswith("'"):
            fail("unterminated string, " + where)
        return s[1:-1]
    if s in ("true", "false"):
        return s == "true"
    if re.fullmatch(r"-?\d+", s):
        return int(s)
    if s.startswith(("{", "&", "*", "|", ">", "!")):
        fail("unsupported YAML construct %r, %s" % (s, where))
    return s


def parse_yaml(text, name):
    docs = []
    lines = []
    for n, raw in enumerate(text.split("\n"), 1):
        if "\t" in raw:
            fail("%s:%d: tab character" % (name, n))
        if raw.rstrip() != raw:
            fail("%s:%d: trailing whitespace" % (name, n))
        body = raw.split(" #")[0] if not raw.lstrip().startswith("#") else ""
        if raw.lstrip().startswith("#") or not body.strip():
            continue
        if body == "---":
            docs.append(lines)
            lines = []
            continue
        ind = len(body) - len(body.lstrip(" "))
        lines.append((ind, body.strip(), "%s:%d" % (name, n)))
    docs.append(lines)

    def block(i, ind):
        if lines_[i][1].startswith("- "):
            out = []
            while i < len(lines_) and lines_[i][0] == ind and lines_[i][1].startswith("- "):
                _, text, where = lines_[i]
                item = text[2:]
                if ":" in item and not item.startswith(('"', "'")) and \
                        re.match(r"^[A-Za-z0-9_./-]+:( |$)", item):
                    # a map starting on the dash line: re-indent it
                    lines_[i] = (ind + 2, item, where)
                    v, i = block(i, ind + 2)
                    out.append(v)
                else:
                    out.append(scalar(item, where))
                    i += 1
            if i < len(lines_) and lines_[i][0] > ind:
                fail("bad indentation, " + lines_[i][2])
            return out, i
        out = {}
        while i < len(lines_) and lines_[i][0] == ind:
            _, text, where = lines_[i]
            m = re.match(r'^("[^"]+"|[A-Za-z0-9_./-]+):(?: (.*))?$', text)
            if not m:
                fail("not a 'key: value' line, " + where)
            key = m.group(1).strip('"')
            if key in out:
                fail("duplicate key %s, %s" % (key, where))
            if m.group(2) is not None and m.group(2).strip():
                out[key] = scalar(m.group(2), where)
                i += 1
            else:
                i += 1
                if i < len(lines_) and lines_[i][0] > ind:
                    out[key], i = block(i, lines_[i][0])
                elif i < len(lines_) and lines_[i][0] == ind and lines_[i][1].startswith("- "):
                    out[key], i = block(i, ind)
                else:
                    out[key] = None
        if i < len(lines_) and lines_[i][0] > ind:
            fail("bad indentation, " + lines_[i][2])
        return out, i

    res = []
    for lines_ in docs:
        if not lines_:
            continue
        if lines_[0][0] != 0:
            fail("document does not start at column 0, " + lines_[0][2])
        v, i = block(0, 0)
        if i != len(lines_):
            fail("unparsed content, " + lines_[i][2])
        res.append(v)
    return res


def load(rel):
    p = os.path.join(DEPLOY, rel)
    with open(p) as f:
        docs = parse_yaml(f.read(), rel)
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

# ------------------------------------------------------------ collector
col = load("otel-collector/config.yaml")[0]
prof = col["service"]["pipelines"]["profiles"]
check(prof["receivers"] == ["otlp"], "profiles pipeline from the otlp receiver")
for e in prof["exporters"]:
    check(e in col["exporters"], "exporter %s defined" % e)
for p in prof["processors"]:
    check(p in col["processors"], "processor %s defined" % p)
raw = open(os.path.join(DEPLOY, "otel-collector/config.yaml")).read()
check("--feature-gates=service.profilesSupport" in raw, "the feature gate is documented")

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
