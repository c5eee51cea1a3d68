#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Both /metrics endpoints pass `promtool check metrics`.

Runs `spanprof agent` (real BPF, root) exporting to `spanprof-symbolizer
serve` on loopback, waits until the agent has exported two batches (so the
serve counters and the agent's export counters are not all zero), then
fetches the agent's /metrics and serve's /metrics and feeds each to
`promtool check metrics` (Debian's prometheus package, installed by
scripts/deps.sh).  promtool must exit 0 and print nothing: every family
has HELP and TYPE, counters end in _total, no duplicate or malformed
lines.  Each text is also parsed strictly (agent_util.parse_prom) and must
hold the families this test knows each endpoint has.
Exit 0 pass, else fail (a missing promtool is a failure: it is a declared
dependency).
"""
import os
import shutil
import subprocess

import agent_util as au
import spt
from spt import check, fail

PROMTOOL = shutil.which("promtool")


def promtool(text, what):
    if not PROMTOOL:
        fail("promtool not installed: run scripts/deps.sh (Debian package prometheus)")
    r = subprocess.run([PROMTOOL, "check", "metrics"], input=text.encode(),
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)
    out = r.stdout.decode(errors="replace").strip()
    check(r.returncode == 0 and out == "",
          "%s: promtool check metrics is clean (rc=%d%s)" % (what, r.returncode,
                                                            ": " + out[:2000] if out else ""))


def families(text):
    helps, types = set(), set()
    for line in text.splitlines():
        if line.startswith("# HELP "):
            helps.add(line.split()[2])
        elif line.startswith("# TYPE "):
            types.add(line.split()[2])
    return helps, types


def main():
    spt.require_root()
    d = spt.tmpdir()
    out = os.path.join(d, "sym-out")
    os.makedirs(out)
    sport = au.free_port()
    sym = au.start_symbolizer(sport, out, d)
    agent = None
    try:
        agent = au.Agent(["-F", "97", "--interval", "1", "--endpoint",
                          "http://127.0.0.1:%d" % sport], d)
        au.wait_for(lambda: agent.metrics().get1("spanprof_export_batches_total",
                                                 outcome="exported") >= 2,
                    timeout=30, what="2 exported batches")

        st, text = au.http_get(agent.port, "/metrics")
        check(st == 200, "agent GET /metrics -> 200")
        promtool(text, "agent /metrics")
        au.parse_prom(text)
        helps, types = families(text)
        check(helps == types and len(helps) >= 8,
              "agent: %d families, each with HELP and TYPE" % len(helps))

        st, text = au.http_get(sport, "/metrics")
        check(st == 200, "serve GET /metrics -> 200")
        promtool(text, "serve /metrics")
        m = au.parse_prom(text)
        helps, types = families(text)
        # 23 request/frame/file/forward counters, 2 gauges, 3 resolver counters
        check(helps == types and len(helps) >= 28,
              "serve: %d families, each with HELP and TYPE" % len(helps))
        check(m.get1("spanprof_symbolizer_accepted_total") >= 2,
              "serve counted the agent's batches")
        check(m.types.get("spanprof_symbolizer_queue_length") == "gauge" and
              m.types.get("spanprof_symbolizer_cache_hits_total") == "counter",
              "serve: gauges and resolver counters are typed")
        rc, _ = agent.stop()
        check(rc == 0, "agent exits 0")
    finally:
        if agent:
            agent.kill()
        sym.send_signal(2)
        try:
            sym.wait(timeout=20)
        except subprocess.TimeoutExpired:
            sym.kill()
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
