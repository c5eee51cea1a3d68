# spanprof-test: parallel (BPF on its own command only, no whole-machine sampling, no timing or rate assertion)
"""Exact accounting under a flood.

A 4 KiB ring buffer polled once a second cannot hold what two threads with
60-120-frame stacks produce at 997 Hz, so the ring overflows; a tiny
aggregator (--agg-entries 50) overflows too.  Whatever happens, every sample
is accounted for, to the sample:
  BPF events = idle + filtered + ring sent + ring dropped
  ring sent  = received by user space
  received   = written (in the file) + aggregator dropped
"""
import os

from spt import *

require_root()
d = tmpdir()
fixture = os.path.join(BUILD, "fixtures", "deepstack")
out = os.path.join(d, "flood.pb.gz")
js = os.path.join(d, "flood.json")
record(["-F", "997", "--ringbuf-size", "4096", "--poll-ms", "1000", "--agg-entries", "50",
        "-o", out, "--summary-json", js, "--", fixture, "3", "2"])
j = load_json(js)
b, c, a = j["bpf"], j["consumer"], j["aggregator"]
print(b, c, a, flush=True)
check(b["ringbuf_dropped_oncpu"] > 0, "the ring buffer overflowed (%d dropped)" % b["ringbuf_dropped_oncpu"])
check(c["agg_dropped"] > 0, "the aggregator overflowed (%d dropped)" % c["agg_dropped"])
check(b["oncpu_events"] == b["idle_skipped"] + b["filtered"] + b["ringbuf_sent_oncpu"] + b["ringbuf_dropped_oncpu"],
      "BPF: %d events = idle %d + filtered %d + sent %d + dropped %d" % (
          b["oncpu_events"], b["idle_skipped"], b["filtered"], b["ringbuf_sent_oncpu"], b["ringbuf_dropped_oncpu"]))
check(b["ringbuf_sent_oncpu"] == c["received_oncpu"] + c["malformed"],
      "ring: sent %d = received %d" % (b["ringbuf_sent_oncpu"], c["received_oncpu"]))
check(c["received_oncpu"] == c["aggregated"] + c["agg_dropped"], "user space: received = written + aggregator dropped")
check(a["dropped_entries_full"] + a["dropped_bytes_full"] == c["agg_dropped"],
      "aggregator drops are named by reason")
p = read_pprof(out)
written = sum(s["values"][0] for s in p["samples"])
check(written == c["aggregated"], "the file holds exactly the %d written samples" % written)
check(a["entries"] <= 50, "aggregator stayed at its entry cap (%d)" % a["entries"])
