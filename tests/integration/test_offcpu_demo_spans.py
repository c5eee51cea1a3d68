"""Off-CPU time per span, attributed by the trace context read at switch-out,
against spanprof-demo's ground truth (--truth: every span's tid and
CLOCK_MONOTONIC interval).

The demo's leaf spans that wait: sleep_backoff (nanosleep --sleep-ms),
update_inventory (a mutex a holder thread keeps --lock-hold-ms; --lock-ms 0
so the span does no CPU work of its own), call_backend (blocked reading a
pipe until a backend thread answers after --io-ms).  These spans are almost
all wait, so their truth is their wall time (minus a few microseconds of
span bookkeeping and syscall CPU, < 3%).

With every wait captured (--off-cpu-sample 1, --off-cpu-min-us 0), OTLP
output read by the independent reader in spt.py:
  - per span kind, the off-CPU ns of samples carrying the span's ids sum to
    within +-10% of the spans' total wall time,
  - >= 90% of individual spans (of >= 1 ms) are within +-10% each,
  - off-CPU samples carry the reason label and a user stack with the
    demo's binary in it,
  - a CPU span (compute_checksum, 2 ms of CPU) is off-CPU only on the run
    queue, and its wall time = 2 ms of CPU + its off-CPU time,
  - every switch has one counted outcome.
"""
import json
import os

from spt import *

require_root()
d = tmpdir()
demo = os.path.join(BUILD, "spanprof-demo")
truth_path = os.path.join(d, "truth.jsonl")
out = os.path.join(d, "demo.otlp.pb")
js = os.path.join(d, "demo.json")
record(["--off-cpu", "--off-cpu-sample", "1", "--off-cpu-min-us", "0", "--format", "otlp",
        "-o", out, "--summary-json", js, "--", demo, "--duration", "5", "--threads", "4",
        "--lock-ms", "0", "--service-name", "checkout", "--truth", truth_path])
summ = load_json(js)
check(summ["offcpu"]["enabled"] and summ["offcpu"]["identity_ok"],
      "every context switch has one counted outcome")
check(summ["ctx"]["procs_resolved"] >= 1, "the demo's trace context was resolved")
spans = [json.loads(l) for l in open(truth_path)]
check(len(spans) > 300, "%d spans of ground truth" % len(spans))

samples = [s for s in read_otlp(out) if s["kind"] == "off_cpu" and s["service"] == "checkout"]
check(len(samples) > 0, "off-CPU samples (profile off_cpu/nanoseconds) for the demo")
by_span = {}
for s in samples:
    if s["span_id"]:
        by_span[s["span_id"]] = by_span.get(s["span_id"], 0) + sum(s["values"])
with_reason = sum(1 for s in samples if s["attrs"].get("off_cpu_reason"))
check(with_reason == len(samples), "every off-CPU sample has an off_cpu_reason attribute")
demo_bin = os.path.realpath(demo)
with_demo = sum(1 for s in samples if any(os.path.realpath(f[0]) == demo_bin
                                          for f in s["stack"] if f[0]))
check(with_demo >= 0.9 * len(samples),
      "%d of %d off-CPU samples have the demo binary in their user stack" % (
          with_demo, len(samples)))

for name in ("sleep_backoff", "update_inventory", "call_backend"):
    mine = [sp for sp in spans if sp["name"] == name]
    wall = sum(sp["end_mono_ns"] - sp["start_mono_ns"] for sp in mine)
    est = sum(by_span.get(sp["span_id"], 0) for sp in mine)
    print("%s: %d spans, wall %.1f ms, off-CPU attributed %.1f ms (%+.2f%%)" % (
        name, len(mine), wall / 1e6, est / 1e6, 100 * (est / wall - 1)), flush=True)
    check(len(mine) >= 50, "%s: %d spans" % (name, len(mine)))
    check(abs(est / wall - 1) <= 0.10,
          "%s: off-CPU time per span within +-10%% of the truth in total (%+.2f%%)" % (
              name, 100 * (est / wall - 1)))
    long_ = [sp for sp in mine if sp["end_mono_ns"] - sp["start_mono_ns"] >= 1000000]
    good = sum(1 for sp in long_ if abs(by_span.get(sp["span_id"], 0) /
                                       (sp["end_mono_ns"] - sp["start_mono_ns"]) - 1) <= 0.10)
    check(good >= 0.9 * len(long_),
          "%s: %d of %d spans >= 1 ms individually within +-10%%" % (name, good, len(long_)))

# A span that computes (compute_checksum spins --checksum-ms = 2 ms of CPU)
# is off-CPU only when preempted (run queue), and wall = CPU + off-CPU.
cpu = [sp for sp in spans if sp["name"] == "compute_checksum"]
cwall = sum(sp["end_mono_ns"] - sp["start_mono_ns"] for sp in cpu)
cids = set(sp["span_id"] for sp in cpu)
cest = sum(by_span.get(i, 0) for i in cids)
crunq = sum(sum(s["values"]) for s in samples if s["span_id"] in cids
            and s["attrs"].get("off_cpu_reason") == "runqueue")
on_cpu_ms = (cwall - cest) / len(cpu) / 1e6
print("compute_checksum: %d spans, wall %.1f ms, off-CPU %.1f ms (run queue %.1f ms), "
      "wall - off-CPU = %.2f ms per span" % (len(cpu), cwall / 1e6, cest / 1e6, crunq / 1e6,
                                             on_cpu_ms), flush=True)
check(crunq >= 0.95 * cest, "compute_checksum: its off-CPU time is run-queue wait")
check(abs(on_cpu_ms / 2.0 - 1) <= 0.25,
      "compute_checksum: wall - off-CPU = %.2f ms per span, its 2 ms of CPU (+-25%%)" % on_cpu_ms)
