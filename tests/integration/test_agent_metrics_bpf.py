#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Every BPF counter is on the agent's /metrics, and failures that BPF
counts but the agent used to hide show there when provoked for real.

1. The counters are enum sp_counter in include/spanprof/abi.h (read here
   from the header itself, so a new counter is seen without touching this
   test): the families generated from the counter table
   (spanprof_bpf_*_total, apart from the older spanprof_bpf_samples_total
   view) hold exactly one series per counter, and their sums follow the
   BPF accounting (on-CPU events = idle + filtered + sent + dropped; off-CPU
   switches = the sum of their outcomes), up to the increments landing
   while the per-CPU counters are read.
2. The scrape passes `promtool check metrics` (Debian's prometheus
   package) and agent_util's strict parser.
3. Provoked: a process whose frame pointer points at unmapped memory, in
   code without call frame information (bad_fp.c built with
   -fno-asynchronous-unwind-tables and -g0, so neither .eh_frame nor
   .debug_frame describes it and the unwinder steps it by frame pointer:
   every user stack read faults, stack_errors{stack="user"}); 64 threads
   sleeping 1 ms in a loop with --off-cpu-sample 1 and
   --off-cpu-max-pending 4 (off-CPU capture state full:
   switch_outcomes{outcome="state_full"}); three instrumented demos with
   --ctx-max-procs 1 (the tls_descs map full: ctx_failures{reason=
   "bpf_map_full"}).  Before, the first two were not on /metrics (8 of the
   32 counters were), and the agent had neither --off-cpu-max-pending nor
   --ctx-max-procs.
Bounded: about 15 s.
"""
import os
import re
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from spt import check, fail, require_root, tmpdir  # noqa: E402
import agent_util as au  # noqa: E402
from fault_util import SLEEPERS, compile_c  # noqa: E402

require_root()
d = tmpdir()
root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
promtool = shutil.which("promtool")
if not promtool:
    fail("promtool is not installed (Debian package prometheus): run scripts/deps.sh")

with open(os.path.join(root, "include", "spanprof", "abi.h")) as f:
    abi = f.read()
body = re.search(r"enum sp_counter \{(.*?)SP_CNT__MAX", abi, re.S).group(1)
body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
counters = re.findall(r"\b(SP_CNT_[A-Z0-9_]+)\b", body)
check(len(counters) >= 32, "abi.h defines %d BPF counters" % len(counters))

# bad_fp.c: its frame pointer is an unmapped, aligned address, and its code
# has no CFI, so the unwinder falls back to the frame pointer and faults on
# its first read, every sample.  -g0: compile_c's -g would emit a
# .debug_frame, which the unwinder reads (main's row walks to the root).
spin = compile_c("bad_fp.c", os.path.join(d, "bad_fp"),
                 extra=["-fomit-frame-pointer", "-fno-asynchronous-unwind-tables", "-g0"])


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        st = f.read().rsplit(")", 1)[1].split()
    return (int(st[11]) + int(st[12])) / os.sysconf("SC_CLK_TCK")


def scrape(agent):
    st, text = au.http_get(agent.port, "/metrics")
    if st != 200:
        fail("GET /metrics -> %s" % st)
    return text, au.parse_prom(text)


agent = au.Agent(["-F", "97", "--interval", "2", "--output-dir", os.path.join(d, "out"),
                  "--off-cpu", "--off-cpu-sample", "1", "--off-cpu-min-us", "0",
                  "--off-cpu-max-pending", "4", "--ctx-max-procs", "1"], d)
demos = []
try:
    _, m0 = scrape(agent)
    bad = subprocess.Popen([spin])
    demos = [subprocess.Popen([au.DEMO, "--duration", "3", "--threads", "1",
                               "--service-name", "ctxmax%d" % i],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
             for i in range(3)]
    subprocess.run([sys.executable, "-c", SLEEPERS], timeout=30, check=True)
    for p in demos:
        p.wait(timeout=20)
    # bad_fp spins until the demos' 3 s are over too: on a loaded 2-CPU
    # machine the sleepers alone left it too few samples (12 < 20 once)
    bad_cpu = cpu_seconds(bad.pid)
    bad.kill()
    bad.wait()
    time.sleep(0.3)
    text, m1 = scrape(agent)
    rc, _ = agent.stop()
    check(rc == 0, "agent exits 0")
finally:
    agent.kill()
    for p in demos:
        if p.poll() is None:
            p.kill()

# 2. promtool
au.check_promtool(text)
au.check_monotonic(m0, m1)

# 1. one series per counter
gen = sorted(f for f in m1.types if f.startswith("spanprof_bpf_") and
             f != "spanprof_bpf_samples_total")
series = sum(len(m1.get(f, {})) for f in gen)
print("generated families:", gen, flush=True)
check(all(m1.types[f] == "counter" for f in gen), "every BPF family is a counter")
check(series == len(counters), "%d series in the %d BPF counter families for the %d counters "
      "of abi.h" % (series, len(gen), len(counters)))


def fam(name):
    return {dict(k).get("outcome", ""): v for k, v in m1.get(name, {}).items()}


on = fam("spanprof_bpf_oncpu_outcomes_total")
events = m1.get1("spanprof_bpf_oncpu_events_total")
# Either side may be ahead by what lands while the per-CPU counters are read
# one after the other (the outcomes were 4 ahead of the switches once).
check(set(on) == {"idle", "filtered", "ringbuf_sent", "ringbuf_dropped"} and
      abs(events - sum(on.values())) <= 64,
      "on-CPU events %d = idle + filtered + sent + dropped %s" % (events, on))
sw = fam("spanprof_bpf_offcpu_switch_outcomes_total")
switches = m1.get1("spanprof_bpf_offcpu_switches_total")
check(switches > 0 and abs(switches - sum(sw.values())) <= 64,
      "off-CPU switches %d = the sum of their outcomes %s" % (switches, sw))


# 3. provoked failures
def delta(name, **lab):
    return au.delta(m0, m1, name, **lab)


ustack = delta("spanprof_bpf_stack_errors_total", stack="user")
# Every on-CPU sample of bad_fp faults (its switch-outs too, off-CPU); half
# of its CPU time at 97 Hz leaves room for the clock tick's accounting.
want = int(0.5 * bad_cpu * 97)
check(want >= 20 and ustack >= want,
      "a frame pointer into unmapped memory: %d user stack read errors on /metrics, "
      "bad_fp ran %.2f s on CPU (want >= %d)" % (ustack, bad_cpu, want))
full = delta("spanprof_bpf_offcpu_switch_outcomes_total", outcome="state_full")
check(full > 0, "--off-cpu-max-pending 4 with 64 sleeping threads: %d switch-outs found the "
      "capture state full, on /metrics" % full)
mapfull = delta("spanprof_ctx_failures_total", reason="bpf_map_full")
check(mapfull >= 2, "--ctx-max-procs 1 with 3 publishing processes: %d tls_descs updates "
      "failed, counted as bpf_map_full" % mapfull)
