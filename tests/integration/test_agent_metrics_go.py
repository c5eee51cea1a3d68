#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Go discovery and the Go label read on the agent's /metrics (issue 13),
provoked for real.

Under one `spanprof agent --off-cpu --off-cpu-goroutines`:
  - go_fake (a C program laid out as Go 1.19: version-table offsets;
    hostile label shapes: ids not hex, unmapped pointers, 40 labels, no
    goroutine) -> spanprof_go_processes_total{offsets="table"} and the BPF
    label-read outcomes ids, bad_ids, read_error, no_goroutine and labels
    cut;
  - golabels -mode hostile (Go 1.19 with DWARF: invalid UTF-8 in a label)
    -> {offsets="dwarf"} and spanprof_go_label_fixups_total{outcome=
    "bad_utf8"};
  - golabels -mode waits -> park probes attached and parks captured;
  - go_fake built as go1.99.0 here (no table row, no runtime DWARF) ->
    spanprof_go_process_failures_total{reason="unknown_version"}.
The scrape passes `promtool check metrics`.  Bounded: about 15 s.
"""
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from spt import BUILD, check, fail, go_env, require_root, tmpdir  # noqa: E402
import agent_util as au  # noqa: E402

require_root()
d = tmpdir()
root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
fake = os.path.join(BUILD, "fixtures", "go_fake")
golabels = os.path.join(BUILD, "fixtures", "go", "golabels")
unknown = os.path.join(d, "go_fake_unknown")
cc = subprocess.run(["clang", "-O1", "-g", "-fno-omit-frame-pointer", "-no-pie",
                     "-DGO_FAKE_VERSION=\"go1.99.0\"", "-o", unknown,
                     os.path.join(root, "tests", "fixtures", "go_fake.c"), "-lpthread"],
                    capture_output=True, text=True, timeout=120)
check(cc.returncode == 0, "go_fake built as go1.99.0 (%s)" % cc.stderr[-300:])

agent = au.Agent(["-F", "499", "--interval", "2", "--output-dir", os.path.join(d, "out"),
                  "--off-cpu", "--off-cpu-goroutines"], d)
procs = []
try:
    m0 = agent.metrics()
    time.sleep(0.5)     # the agent's first scan is behind it: these are new processes
    procs = [subprocess.Popen([fake, "2"], stdout=subprocess.DEVNULL),
             subprocess.Popen([unknown, "1"], stdout=subprocess.DEVNULL),
             subprocess.Popen([golabels, "-mode", "hostile", "-duration", "2"],
                              env=go_env(GOMAXPROCS=2), stdout=subprocess.DEVNULL),
             subprocess.Popen([golabels, "-mode", "waits", "-duration", "2"],
                              env=go_env(GOMAXPROCS=2), stdout=subprocess.DEVNULL)]
    for p in procs:
        p.wait(timeout=30)
    time.sleep(0.5)     # the consumer has read their last samples
    st, text = au.http_get(agent.port, "/metrics")
    if st != 200:
        fail("GET /metrics -> %s" % st)
    m1 = au.parse_prom(text)
    rc, _ = agent.stop()
    check(rc == 0, "agent exits 0")
finally:
    agent.kill()
    for p in procs:
        if p.poll() is None:
            p.kill()

au.check_promtool(text)
au.check_monotonic(m0, m1)


def delta(name, **lab):
    return au.delta(m0, m1, name, **lab)


procs_by = {o: delta("spanprof_go_processes_total", offsets=o) for o in ("table", "dwarf")}
check(procs_by["table"] >= 1 and procs_by["dwarf"] >= 2,
      "Go processes by offset source: %s (go_fake from the table, golabels x2 from DWARF)" %
      procs_by)
unk = delta("spanprof_go_process_failures_total", reason="unknown_version")
check(unk >= 1, "go1.99.0 left without a descriptor, counted as unknown_version (%d)" % unk)
reads = {o: delta("spanprof_bpf_go_label_reads_total", outcome=o)
         for o in ("ids", "bad_ids", "read_error", "no_goroutine", "no_labels")}
check(all(v > 0 for v in reads.values()), "BPF label reads by outcome: %s" % reads)
cut = delta("spanprof_bpf_go_labels_total", outcome="cut")
check(cut > 0, "labels cut by the read bounds (40 labels, long values): %d" % cut)
utf8 = delta("spanprof_go_label_fixups_total", outcome="bad_utf8")
check(utf8 > 0, "labels with invalid UTF-8 mended, counted: %d" % utf8)
att = delta("spanprof_go_park_probes_total", outcome="attached")
cap = delta("spanprof_bpf_go_park_outcomes_total", outcome="captured")
check(att >= 1 and cap > 0, "park probes attached to %d Go executable(s), %d parks captured" %
      (att, cap))
shutil.rmtree(d)
