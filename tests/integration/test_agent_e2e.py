#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""spanprof agent end to end over real HTTP on loopback:

  spanprof-demo (libspanctx, service.name "checkout")
  spanprof agent -F 97 --interval 1 --endpoint http://127.0.0.1:P
     -> spanprof-symbolizer serve --listen 127.0.0.1:P --output-dir DIR
     -> DIR/profile-*.otlp.pb.gz

Checks: the demo's samples arrive in the files symbolized (its span
functions by name), with trace/span ids as links that belong to the demo's
ground truth, and with resources service.name, process.pid,
process.executable.path/.name and host.name; the agent's /metrics parses
strictly and accounts: received = aggregated + dropped, and the exporter
counts exported batches; SIGTERM exits 0.  Bounded: about 20 s.
"""
import json
import os
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from spt import check, fail, require_root, tmpdir  # noqa: E402
import agent_util as au  # noqa: E402
from lib.otlp import read_otlp  # noqa: E402

require_root()
d = tmpdir()
out = os.path.join(d, "sym-out")
os.makedirs(out)
sport = au.free_port()
sym = au.start_symbolizer(sport, out, d)
truth = os.path.join(d, "truth.jsonl")
# The demo outlasts the agent's three 1 s batches and exits by itself (its
# ground truth then holds every span it served); the test waits for that.
demo = subprocess.Popen([au.DEMO, "--duration", "8", "--threads", "2", "--service-name",
                         "checkout", "--truth", truth],
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
agent = None
try:
    time.sleep(0.5)     # the demo publishes its context; the agent's scan finds it
    agent = au.Agent(["-F", "97", "--interval", "1", "--endpoint",
                      "http://127.0.0.1:%d" % sport], d)
    m0 = agent.metrics()
    au.wait_for(lambda: agent.metrics().get1("spanprof_export_batches_total",
                                             outcome="exported") >= 3,
                timeout=20, what="3 exported batches")
    m1 = agent.metrics()
    au.check_monotonic(m0, m1)
    rc, dt = agent.stop()
    check(rc == 0, "SIGTERM: agent exits 0 (%.1f s)" % dt)
    log = agent.text()
    check("flushing the last interval" in log, "SIGTERM is logged with the flush")
    demo.wait(timeout=15)
finally:
    if agent:
        agent.kill()
    if demo.poll() is None:
        demo.kill()
# the symbolizer renames a profile into its output directory before it
# answers 200 (serve.c): what the agent exported is there already
sym.send_signal(2)
sym.wait(timeout=20)

files = au.otlp_files(out)
check(len(files) >= 3, "%d symbolized files written by the receiver" % len(files))
samples = []
for f in files:
    samples += read_otlp(f)
demo_s = [s for s in samples if s["pid"] == demo.pid]
check(len(demo_s) > 0, "%d demo samples among %d" % (len(demo_s), len(samples)))
res = demo_s[0]["res"]
check(res.get("service.name") == "checkout", "service.name from the process context: %s"
      % res.get("service.name"))
check(res.get("process.pid") == demo.pid, "process.pid")
check(res.get("process.executable.path", "").endswith("spanprof-demo") and
      res.get("process.executable.name") == "spanprof-demo", "process.executable.path/.name")
check(res.get("host.name") == socket.gethostname(), "host.name %s" % res.get("host.name"))
names = set()
for s in demo_s:
    names.update(s["funcs"])
span_funcs = {"parse_payload", "compute_checksum", "update_inventory", "render_response"}
check(span_funcs & names, "symbolized: demo span functions present (%s)" %
      sorted(span_funcs & names))
with_link = [s for s in demo_s if s["trace_id"]]
check(len(with_link) > len(demo_s) // 4, "%d of %d demo samples carry a link"
      % (len(with_link), len(demo_s)))
spans = set()
traces = set()
for line in open(truth):
    j = json.loads(line)
    spans.add(j["span_id"])
    traces.add(j["trace_id"])
bad = [s for s in with_link if s["trace_id"] not in traces or s["span_id"] not in spans]
check(not bad, "every link names a trace and span of the demo's ground truth (%d bad)" % len(bad))
# The demo sets the attributes just after entering a request's root span
# (as a service does once it knows the route), so a sample may rarely land
# in between: >= 99% carry it, and no sample carries another value.
routes = [s["attrs"].get("http.route") for s in with_link]
check(routes.count("/api/checkout") >= 0.99 * len(routes) and
      set(routes) <= {"/api/checkout", None},
      "samples with a link carry their span's http.route through the symbolizer "
      "(%d of %d; values %s)" % (routes.count("/api/checkout"), len(routes), set(routes)))
# accounting: what the agent received was aggregated or dropped by reason
recv = m1.sum("spanprof_samples_received_total")
agg = m1.get1("spanprof_samples_aggregated_total")
drops = m1.sum("spanprof_dropped_samples_total") - m1.get1("spanprof_dropped_samples_total",
                                                            reason="ringbuf_full")
check(recv > 0 and recv >= agg and recv - agg <= drops + 0.5,
      "received %d = aggregated %d + dropped (%d)" % (recv, agg, recv - agg))
check(m1.get1("spanprof_ringbuf_dropped_samples_total") == 0, "no ring buffer drops")
check(m1.get1("spanprof_perf_event_lost_total") == 0, "perf_event_lost is 0 (ring buffer design)")
lat_n = m1.get1("spanprof_export_request_duration_seconds_count")
check(m1.types.get("spanprof_export_request_duration_seconds") == "histogram" and lat_n >= 1 and
      lat_n <= m1.get1("spanprof_export_requests_total"),
      "export latency is a histogram of the successful requests (%d)" % lat_n)
fam_ok = all(m1.types.get(n) == "counter" for n in m1.types if n.endswith("_total"))
check(fam_ok, "every *_total family is a counter")
print("PASS")
