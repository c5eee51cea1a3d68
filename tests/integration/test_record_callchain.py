# spanprof-test: parallel (BPF on its own command only, no whole-machine sampling, no timing or rate assertion)
"""spanprof record of a fixture with a known call chain and a 3:1 CPU split.

Read back by go tool pprof (an independent reader that symbolizes from the
local binary by build id): the split is within +-5 points of the one the
fixture measured with its thread CPU clock (about 75:25), the full chain
main -> chain_a -> chain_b -> spin_* is in >= 95% of the fixture's samples,
and the sample count is within +-10% of Hz x CPU-seconds the fixture used.
Also checks the mapping's build id against readelf's.
"""
import os
import re

from spt import *

require_root()
d = tmpdir()
fixture = os.path.join(BUILD, "fixtures", "callchain")
out = os.path.join(d, "cc.pb.gz")
js = os.path.join(d, "cc.json")
# 197 Hz for 5 CPU-seconds: ~985 samples, so the split's binomial standard
# deviation is 1.4 points and the +-5 bar is 3.6 of them (at 97 Hz for 3 s
# it was 2 standard deviations: a 5% false-failure rate).
HZ = 197
rc, stdout, stderr = record(["-F", str(HZ), "-o", out, "--summary-json", js, "--", fixture, "5"])
m = re.search(r"cpu_ns=(\d+) hot_ns=(\d+) cold_ns=(\d+)", stdout)
check(m is not None, "fixture reported its CPU time and its split")
cpu_s = int(m.group(1)) / 1e9
hot_ns, cold_ns = int(m.group(2)), int(m.group(3))
true_share = 100 * hot_ns / (hot_ns + cold_ns)
check(60 <= true_share <= 90, "the fixture's own split is near 3:1: spin_hot %.1f%%" % true_share)

# 1. split, by go tool pprof -top
top = go_pprof(["-top", out])
flat = {}
for line in top.splitlines():
    f = line.split()
    if len(f) >= 6 and f[-1] in ("spin_hot", "spin_cold"):
        flat[f[-1]] = float(f[1].rstrip("%"))
check("spin_hot" in flat and "spin_cold" in flat, "go tool pprof names spin_hot and spin_cold: %s" % flat)
hot_share = 100 * flat["spin_hot"] / (flat["spin_hot"] + flat["spin_cold"])
check(abs(hot_share - true_share) <= 5,
      "spin_hot share %.1f%% is the fixture's measured %.1f%% +- 5" % (hot_share, true_share))

# 2. full chain, by go tool pprof -traces (one block per sample stack)
traces = go_pprof(["-traces", out])
total = full = 0.0
for block in traces.split("-----------+")[1:]:
    lines = [l for l in block.splitlines() if l.strip() and not l.strip().startswith("-")]
    frames, weight = [], None
    for l in lines:
        mm = re.match(r"\s+([\d.]+)(ms|s|us)\s+(\S+)", l)
        if mm:
            weight = float(mm.group(1)) * {"s": 1000, "ms": 1, "us": 0.001}[mm.group(2)]
            frames.append(mm.group(3))
        elif l.startswith(" " * 13) and ":" not in l:
            frames.append(l.strip())
    if weight is None or not any(f.startswith("spin_") or f in ("chain_a", "chain_b", "main") for f in frames):
        continue
    total += weight
    if len(frames) >= 4 and frames[0] in ("spin_hot", "spin_cold") and frames[1:4] == ["chain_b", "chain_a", "main"]:
        full += weight
check(total > 0, "fixture samples found in traces")
check(full / total >= 0.95, "full chain in %.1f%% of the fixture's samples (>= 95%%)" % (100 * full / total))

# 3. sample count vs Hz x CPU seconds, by our independent pprof reader
p = read_pprof(out)
check(p["sample_types"][:2] == [("samples", "count"), ("cpu", "nanoseconds")],
      "sample types samples/count, cpu/nanoseconds: %s" % p["sample_types"])
n = sum(s["values"][0] for s in p["samples"] if s["labels"].get("thread_name") == "callchain")
expected = HZ * cpu_s
check(abs(n - expected) <= 0.10 * expected, "%d samples vs %.0f expected (%d Hz x %.2f CPU-s), within 10%%" % (n, expected, HZ, cpu_s))
check(all("pid" in s["labels"] and "tid" in s["labels"] for s in p["samples"]), "every sample has pid and tid labels")

# 4. mapping: file name and build id as readelf sees them
bid = read_buildid(fixture)
maps = [m for m in p["mappings"].values() if m["file"] == fixture]
check(len(maps) >= 1, "a mapping names the fixture binary")
check(all(m["build_id"] == bid for m in maps), "its build id %s matches readelf" % bid)
kernel = [m for m in p["mappings"].values() if m["file"] == "[kernel.kallsyms]"]
check(len(kernel) <= 1 and all(len(m["build_id"]) >= 16 for m in kernel), "kernel mapping carries the kernel build id")

# 5. accounting from the summary
j = load_json(js)
b, c = j["bpf"], j["consumer"]
check(b["oncpu_events"] == b["idle_skipped"] + b["filtered"] + b["ringbuf_sent_oncpu"] + b["ringbuf_dropped_oncpu"],
      "BPF: events = idle + filtered + sent + dropped")
check(b["ringbuf_sent_oncpu"] == c["received_oncpu"], "every record sent was received")
written = sum(s["values"][0] for s in p["samples"])
check(written == c["aggregated"], "file holds exactly the %d samples written" % written)
