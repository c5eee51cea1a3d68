#!/usr/bin/env python3
# spanprof-test: parallel
# SPDX-License-Identifier: MIT
"""deploy/otel-collector/*.yaml: would otelcol-contrib accept the pipelines?

No Collector binary can run here (no network to fetch one, none packaged in
Debian), so the check is the one the Collector itself makes when it builds a
pipeline: every component named in a pipeline must be defined, and its
factory must support that pipeline's signal.  A component's supported
signals are what its metadata.yaml declares under status.stability (the
Collector's mdatagen generates the factory's With<Signal> options from it).
SUPPORT below is that table, copied by hand from the metadata.yaml files of
open-telemetry/opentelemetry-collector at tags v0.148.0 and v0.159.0 and of
opentelemetry-collector-contrib (k8sattributes gained profiles in contrib PR
#35999, November 2024; health_check is an extension, no signal).  Where the
two core tags differ only in stability level (development -> alpha), both
accept the signal.  A component not in the table fails the test: add it,
with its metadata.yaml's stability lines, before using it.

Also checked: the profiles pipeline is gated (`service.profilesSupport`
named in the file's run line), memory_limiter comes first (the Collector's
advice), the symbolizer forwards to the path the otlp receiver serves
profiles on (/v1development/profiles, receiver/otlpreceiver/factory.go),
and k8sattributes associates pods by a resource attribute the agent really
writes.  Finally the checker is shown to refuse `batch` in a profiles
pipeline (the shipped config's former bug), so it is not a check that
cannot fail.
"""
import copy
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from spt import check, fail  # noqa: E402
from lib import yamlsub  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
DEPLOY = os.path.join(ROOT, "deploy")

T, M, L, P = "traces", "metrics", "logs", "profiles"
# type -> (class, distribution, signals).  From metadata.yaml status.stability:
#   receiver/otlpreceiver        stable [traces, metrics, logs]; profiles:
#                                development (v0.148.0), alpha (v0.159.0)
#   processor/memorylimiterprocessor  beta [traces, metrics, logs], alpha [profiles]
#   processor/batchprocessor     beta [traces, metrics, logs]  (no profiles)
#   exporter/otlphttpexporter, exporter/otlpexporter
#                                stable [traces, metrics, logs]; profiles:
#                                development (v0.148.0), alpha (v0.159.0)
#   exporter/debugexporter       alpha [traces, metrics, logs]; profiles
#                                development (v0.148.0), alpha (v0.159.0)
#   contrib processor/k8sattributesprocessor  beta [logs, metrics, traces],
#                                development [profiles]
SUPPORT = {
    ("receiver", "otlp"): ("core", {T, M, L, P}),
    ("processor", "memory_limiter"): ("core", {T, M, L, P}),
    ("processor", "batch"): ("core", {T, M, L}),
    ("processor", "k8sattributes"): ("contrib", {T, M, L, P}),
    ("exporter", "otlphttp"): ("core", {T, M, L, P}),
    ("exporter", "otlp"): ("core", {T, M, L, P}),
    ("exporter", "debug"): ("core", {T, M, L, P}),
    ("extension", "health_check"): ("contrib", set()),
}
SECTIONS = {"receivers": "receiver", "processors": "processor",
            "exporters": "exporter", "extensions": "extension"}
PIPELINE_KEYS = {"receivers": "receiver", "processors": "processor",
                 "exporters": "exporter"}


def problems(cfg):
    """Every reason the Collector would refuse cfg (empty: it builds)."""
    out = []
    for k in cfg:
        if k not in SECTIONS and k not in ("service", "connectors"):
            out.append("unknown top-level key %s" % k)
    for sec, cls in SECTIONS.items():
        for cid in (cfg.get(sec) or {}):
            if (cls, cid.split("/")[0]) not in SUPPORT:
                out.append("%s %s: not in the support table" % (cls, cid))
    svc = cfg.get("service") or {}
    for e in svc.get("extensions") or []:
        if e not in (cfg.get("extensions") or {}):
            out.append("extension %s used but not defined" % e)
    pipes = svc.get("pipelines") or {}
    if not pipes:
        out.append("no pipelines")
    for pid, p in pipes.items():
        signal = pid.split("/")[0]
        if signal not in (T, M, L, P):
            out.append("pipeline %s: unknown signal" % pid)
            continue
        if not p.get("receivers") or not p.get("exporters"):
            out.append("pipeline %s: needs a receiver and an exporter" % pid)
        for key, cls in PIPELINE_KEYS.items():
            for cid in p.get(key) or []:
                if cid not in (cfg.get(key) or {}):
                    out.append("pipeline %s: %s %s not defined" % (pid, cls, cid))
                    continue
                dist, sigs = SUPPORT.get((cls, cid.split("/")[0]), (None, set()))
                if signal not in sigs:
                    out.append("pipeline %s: %s %s does not support %s" %
                               (pid, cls, cid, signal))
    return out


def load(rel):
    path = os.path.join(DEPLOY, rel)
    text = open(path).read()
    try:
        docs = yamlsub.parse(text, rel)
    except yamlsub.YamlError as e:
        fail("%s: %s" % (rel, e))
    check(len(docs) == 1, "%s parses (one document)" % rel)
    return text, docs[0]


for rel in ("otel-collector/config.yaml", "otel-collector/config-k8s.yaml"):
    text, cfg = load(rel)
    bad = problems(cfg)
    check(not bad, "%s: every pipeline component supports its signal (%s)" %
          (rel, "; ".join(bad) or "v0.148.0..v0.159.0 metadata"))
    check("--feature-gates=service.profilesSupport" in text,
          "%s: its run line enables the profiles feature gate" % rel)
    prof = cfg["service"]["pipelines"]["profiles"]
    check(prof["receivers"] == ["otlp"], "%s: profiles from the otlp receiver" % rel)
    check(prof["processors"][0] == "memory_limiter",
          "%s: memory_limiter first in the profiles pipeline" % rel)
    check("batch" not in prof["processors"], "%s: no batch in profiles" % rel)
    http = cfg["receivers"]["otlp"]["protocols"]["http"]
    check(http["max_request_body_size"] >= 64 << 20,
          "%s: the receiver takes bodies up to 64 MiB" % rel)

    # the checker itself refuses what the Collector refuses
    broken = copy.deepcopy(cfg)
    broken.setdefault("processors", {})["batch"] = {"timeout": "5s"}
    broken["service"]["pipelines"]["profiles"]["processors"].append("batch")
    bad = problems(broken)
    check(any("processor batch does not support profiles" in b for b in bad),
          "%s: the checker refuses batch in profiles (%s)" % (rel, bad))
    broken = copy.deepcopy(cfg)
    broken["service"]["pipelines"]["profiles"]["exporters"].append("otlphttp/nowhere")
    check(any("not defined" in b for b in problems(broken)),
          "%s: the checker refuses an undefined exporter" % rel)

# k8sattributes: the association key is one the agent writes
_, k8s = load("otel-collector/config-k8s.yaml")
assoc = k8s["processors"]["k8sattributes"]["pod_association"]
names = [s["name"] for a in assoc for s in a["sources"] if s["from"] == "resource_attribute"]
check(names == ["container.id"], "k8sattributes associates pods by container.id")
check(not any(s["from"] == "connection" for a in assoc for s in a["sources"]),
      "no association by connection (profiles arrive from the symbolizer)")
src = {}
for d, _, files in os.walk(os.path.join(ROOT, "src")):
    for f in files:
        if f.endswith((".c", ".h")):
            src[f] = open(os.path.join(d, f)).read()
check('SP_A_CONTAINER_ID "container.id"' in src["internal.h"] and
      any("SP_A_CONTAINER_ID" in t for f, t in src.items() if f.endswith(".c")),
      "the resource writer puts container.id on resources (src/profile)")

# the symbolizer forwards to the receiver's profiles path
sym = yamlsub.parse(open(os.path.join(DEPLOY, "kubernetes/symbolizer.yaml")).read(),
                    "symbolizer.yaml")
dep = [d for d in sym if d.get("kind") == "Deployment"][0]
args = dep["spec"]["template"]["spec"]["containers"][0]["args"]
fwd = args[args.index("--forward") + 1]
check(fwd.endswith(":4318/v1development/profiles"),
      "symbolizer forwards to the receiver's /v1development/profiles (%s)" % fwd)
print("PASS")
