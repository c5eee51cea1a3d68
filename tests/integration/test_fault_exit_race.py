"""Processes that exit between a sample and the read of their maps.

600 processes living 1-5 ms each (two lanes, fault_spin with a 1..5 ms
spin), recorded at 997 Hz so that many of them are sampled and gone before
the consumer reads /proc/PID/maps.  Required: the record succeeds, every
sample is accounted for to the sample (BPF events = idle + filtered + ring
sent + ring dropped; sent = received; received = written + aggregator
dropped), and every sample of a fixture process either resolves to the
fixture binary with its build id or is counted (maps_gone: the process was
gone before any read; addr_unmapped: an address no mapping covers) - never a
frame attributed to another binary, never a crash.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from spt import check, load_json, read_buildid, read_pprof, record, require_root, tmpdir  # noqa: E402
from fault_util import spin_variant  # noqa: E402

require_root()
d = tmpdir()
spin = spin_variant(d, 7, "blink")
bid = read_buildid(spin)
out = os.path.join(d, "race.pb.gz")
js = os.path.join(d, "race.json")
script = ("lane() { i=0; while [ $i -lt 300 ]; do %s $((1 + (i + $1) %% 5)); i=$((i+1)); done; }; "
          "lane 0 & lane 2 & wait" % spin)
record(["-F", "997", "--no-kernel", "-o", out, "--summary-json", js, "--", "sh", "-c", script],
       timeout=60)
j = load_json(js)
b, c, a, pr = j["bpf"], j["consumer"], j["aggregator"], j["procs"]
print("bpf", b, "\nconsumer", c, "\nprocs", pr, flush=True)
check(b["oncpu_events"] == b["idle_skipped"] + b["filtered"] + b["ringbuf_sent_oncpu"] +
      b["ringbuf_dropped_oncpu"], "BPF: every event is idle, filtered, sent or dropped")
check(b["ringbuf_sent_oncpu"] == c["received_oncpu"] + c["malformed"],
      "ring: sent %d = received %d + malformed %d" % (b["ringbuf_sent_oncpu"],
                                                    c["received_oncpu"], c["malformed"]))
check(c["received_oncpu"] == c["aggregated"] + c["agg_dropped"],
      "user space: received = written + aggregator dropped")
p = read_pprof(out)
written = sum(s["values"][0] for s in p["samples"])
check(written == c["aggregated"], "the file holds exactly the %d written samples" % written)
ours = [s for s in p["samples"] if s["labels"].get("thread_name") == "blink"]
pids = set(s["labels"]["pid"] for s in ours)
n = sum(s["values"][0] for s in ours)
resolved = wrong = unresolved = nobid = 0
for s in ours:
    if not s["locs"]:
        continue   # empty user stack (counted as ustack_empty)
    mid = p["locations"][s["locs"][0]][0]
    m = p["mappings"].get(mid)
    if m is None:
        unresolved += s["values"][0]
    elif m["file"] == spin and m["build_id"] == bid:
        resolved += s["values"][0]
    elif m["file"] == spin and not m["build_id"]:
        nobid += s["values"][0]   # counted: mappings without build id
    elif m["file"] == spin or m["build_id"] == bid:
        wrong += s["values"][0]
        print("wrong:", m, flush=True)
    else:
        resolved += s["values"][0]   # ld.so / libc / vdso of the fixture: a real mapping
print("fixture samples %d from %d processes: resolved %d, unresolved %d, without build id %d, "
      "wrong %d; maps_gone %d, addr_unmapped %d, no_build_id %d"
      % (n, len(pids), resolved, unresolved, nobid, wrong, pr["maps_gone"], pr["addr_unmapped"],
         pr["no_build_id"]), flush=True)
check(len(pids) >= 100, "%d of 600 short processes were sampled" % len(pids))
check(nobid == 0 or pr["no_build_id"] > 0,
      "samples in a fixture mapping without build id (%d) are counted (no_build_id %d)"
      % (nobid, pr["no_build_id"]))
check(wrong == 0, "no sample names the fixture's file with another build id, or vice versa")
check(unresolved <= c["frames_unresolved"],
      "every unresolved leaf frame (%d samples) is counted (frames_unresolved %d; "
      "addr_unmapped %d, maps_gone %d)" % (unresolved, c["frames_unresolved"],
                                          pr["addr_unmapped"], pr["maps_gone"]))
check(resolved >= 0.5 * n, "%d of %d samples resolved to a real mapping" % (resolved, n))
