"""OpenTelemetry resource identity of real processes, in decoded OTLP.

Real processes (the callchain fixture under different environments, and
spanprof-demo publishing an OTEP 4719 process context) recorded with real
BPF; the OTLP file is decoded by tests/integration/lib/otlp.py.

  service.name   the process's OTEL_SERVICE_NAME, else service.name in its
                 OTEL_RESOURCE_ATTRIBUTES, else the OTEP 4719 context, else
                 unknown_service:<executable name>;
  attributes     the process's OTEL_RESOURCE_ATTRIBUTES (percent-decoded;
                 a malformed value is discarded and counted), then the
                 collector's own OTEL_RESOURCE_ATTRIBUTES on every resource
                 (the process's key wins);
  node           K8S_NODE_NAME -> host.name and k8s.node.name everywhere;
  bounds         an environment above 256 KiB is read up to the bound
                 (counted as truncated), more than 16 attributes are
                 dropped and counted, hostile bytes become '?';
  opt-out        --no-process-env reads no environment;
  refusal        a malformed OTEL_RESOURCE_ATTRIBUTES of the collector's
                 own is one line naming the variable.
"""
import os
import re
import subprocess
import time

from spt import *
import agent_util as au

require_root()
d = tmpdir()
fixture = os.path.join(BUILD, "fixtures", "callchain")
demo_bin = os.path.join(BUILD, "spanprof-demo")
base_env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}


def start(env):
    return subprocess.Popen([fixture, "30"], env=dict(base_env, **env),
                            stdout=subprocess.DEVNULL)


procs = {
    "svc": start({"OTEL_SERVICE_NAME": "cart",
                  "OTEL_RESOURCE_ATTRIBUTES": "deployment.environment=prod, team = a%20b ,"
                                              "service.name=ignored"}),
    "attrsvc": start({"OTEL_RESOURCE_ATTRIBUTES": "service.name=checkout,x=1"}),
    "none": start({}),
    "invalid": start({"OTEL_SERVICE_NAME": "still-named",
                      "OTEL_RESOURCE_ATTRIBUTES": "good=1,novalue,x=2"}),
    "many": start({"OTEL_RESOURCE_ATTRIBUTES": ",".join("k%02d=v" % i for i in range(20))}),
    "hostile": start({"OTEL_SERVICE_NAME": "ev\x1bil\udcff"}),
    # 3 x 100 KB of filler first: the service name lies beyond 256 KiB.
    "huge": start(dict({"FILL%d" % i: "x" * 100000 for i in range(3)},
                       OTEL_SERVICE_NAME="too-far")),
}
demo = subprocess.Popen([demo_bin, "--duration", "30", "--threads", "1", "--service-name",
                         "from-ctx"], env=base_env, stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL)
collector_env = dict(os.environ, OTEL_RESOURCE_ATTRIBUTES="k8s.cluster.name=c1,team=agent",
                     K8S_NODE_NAME="node-7")


def rec(name, extra=()):
    """Records the test's processes for 1 s: 8 busy processes share the 2
    CPUs (~0.25 s of CPU each, the scheduler's fair share over 1 s), ~24
    samples each at 97 Hz where every one needs one (1.5 s gave ~40)."""
    out = os.path.join(d, name + ".otlp.pb")
    js = os.path.join(d, name + ".json")
    pids = ",".join(str(p.pid) for p in list(procs.values()) + [demo])
    p = subprocess.run([SPANPROF, "record", "--no-report", "-q", "--format", "otlp", "-o", out,
                        "--summary-json", js, "-p", pids, "-d", "1"] + list(extra),
                       capture_output=True, text=True, timeout=120, env=collector_env)
    if p.returncode:
        fail("record failed: %s" % p.stderr)
    res = {}
    for s in read_otlp(out):
        res[s["pid"]] = s["res"]
    return res, load_json(js)


try:
    time.sleep(0.5)
    res, summ = rec("on")
    R = {k: res.get(p.pid) for k, p in procs.items()}
    R["demo"] = res.get(demo.pid)
    missing = [k for k, v in R.items() if v is None]
    check(not missing, "every process has a resource (missing: %s)" % missing)

    check(R["svc"]["service.name"] == "cart", "OTEL_SERVICE_NAME wins: %r" % R["svc"]["service.name"])
    check(R["svc"].get("deployment.environment") == "prod" and R["svc"].get("team") == "a b",
          "the process's attributes, trimmed and percent-decoded, and its team beats the "
          "collector's: %r" % R["svc"])
    check(R["attrsvc"]["service.name"] == "checkout" and R["attrsvc"].get("x") == "1",
          "service.name from OTEL_RESOURCE_ATTRIBUTES: %r" % R["attrsvc"])
    check(R["none"]["service.name"] == "unknown_service:callchain",
          "no declaration: unknown_service:<exe>: %r" % R["none"]["service.name"])
    check(R["demo"]["service.name"] == "from-ctx",
          "the OTEP 4719 process context when the environment declares none: %r"
          % R["demo"]["service.name"])
    check(R["invalid"]["service.name"] == "still-named" and "good" not in R["invalid"],
          "a malformed OTEL_RESOURCE_ATTRIBUTES is discarded whole: %r" % R["invalid"])
    check(R["hostile"]["service.name"] == "ev?il?",
          "control bytes and invalid UTF-8 become '?': %r" % R["hostile"]["service.name"])
    check(R["huge"]["service.name"] == "unknown_service:callchain",
          "beyond the 256 KiB read bound: not found: %r" % R["huge"]["service.name"])
    many = sorted(k for k in R["many"] if re.match(r"^k\d\d$", k))
    check(len(many) == 13 and many[0] == "k00" and R["many"].get("k8s.cluster.name") == "c1",
          "16 attributes at most: the collector's 3, then 13 of the process's 20 (%d)"
          % len(many))
    for k, r in R.items():
        if not (r.get("host.name") == "node-7" and r.get("k8s.node.name") == "node-7"):
            fail("%s: host.name/k8s.node.name from K8S_NODE_NAME: %r" % (k, r))
        if r.get("k8s.cluster.name") != "c1":
            fail("%s: the collector's OTEL_RESOURCE_ATTRIBUTES on every resource: %r" % (k, r))
    check(True, "host.name = k8s.node.name = node-7 and k8s.cluster.name = c1 on every resource")
    env = summ["env"]
    check(env["enabled"] and env["declared"] >= 5 and env["invalid"] >= 1 and
          env["truncated"] >= 1 and env["attrs_dropped"] + env["res_attrs_dropped"] >= 4,
          "summary counts declared, invalid, truncated and dropped: %r" % env)

    res, summ = rec("off", ["--no-process-env"])
    r = res.get(procs["svc"].pid)
    check(r is not None and r["service.name"] == "unknown_service:callchain" and
          "deployment.environment" not in r and r.get("k8s.cluster.name") == "c1",
          "--no-process-env: no environment read, the collector's attributes stay: %r" % r)
    check(not summ["env"]["enabled"] and summ["env"]["reads"] == 0,
          "--no-process-env: the summary shows no reads")
    # The agent runs the same pipeline: its own OTEL_RESOURCE_ATTRIBUTES and
    # K8S_NODE_NAME, the processes' declarations, the counters on /metrics.
    out = os.path.join(d, "agent-out")
    agent = au.Agent(["-F", "97", "--interval", "1", "--output-dir", out], d,
                     env={"OTEL_RESOURCE_ATTRIBUTES": "k8s.cluster.name=c2",
                          "K8S_NODE_NAME": "node-9"})
    try:
        def agent_res():
            got = {}
            for f in au.otlp_files(out):
                for smp in read_otlp(f):
                    got[smp["pid"]] = smp["res"]
            return got if procs["svc"].pid in got and procs["none"].pid in got else None
        got = au.wait_for(agent_res, 30, what="the agent's resources for the test processes")
        a_svc, a_none = got[procs["svc"].pid], got[procs["none"].pid]
        check(a_svc["service.name"] == "cart" and a_svc.get("deployment.environment") == "prod"
              and a_svc.get("k8s.cluster.name") == "c2" and a_svc.get("host.name") == "node-9"
              and a_svc.get("k8s.node.name") == "node-9",
              "agent: the process's identity, the agent's attributes, the node: %r" % a_svc)
        check(a_none["service.name"] == "unknown_service:callchain",
              "agent: unknown_service:<exe> fallback: %r" % a_none["service.name"])
        m = agent.metrics()
        check(m.get1("spanprof_process_env_total", event="declared") >= 5 and
              m.get1("spanprof_process_env_total", event="invalid") >= 1 and
              m.get1("spanprof_process_env_total", event="truncated") >= 1,
              "agent /metrics: spanprof_process_env_total counts declared, invalid, truncated")
    finally:
        agent.stop()
finally:
    for p in list(procs.values()) + [demo]:
        p.kill()
        p.wait()

bad_env = dict(os.environ, OTEL_RESOURCE_ATTRIBUTES="a=1,oops")
p = subprocess.run([SPANPROF, "record", "--no-report", "-q", "-d", "1", "-o",
                    os.path.join(d, "bad.pb.gz")], capture_output=True, text=True, timeout=60,
                   env=bad_env)
lines = [l for l in p.stderr.splitlines() if l.strip()]
check(p.returncode != 0 and len(lines) == 1 and "OTEL_RESOURCE_ATTRIBUTES" in lines[0]
      and "entry 2" in lines[0], "a malformed collector OTEL_RESOURCE_ATTRIBUTES: one line, "
      "non-zero exit: %r" % p.stderr.strip())
