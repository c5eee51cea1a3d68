"""Go pprof labels read in BPF, against ground truth (issue 13).

tests/fixtures/go/golabels (Debian's Go 1.19, map-layout labels) runs 8
goroutines on GOMAXPROCS=2, each running spans back to back: a span is
pprof.Do(trace_id, span_id, worker) around CPU work in main.spanWork<w>, a
gap is CPU work in main.gapWork<w> without labels.  Goroutines outnumber
threads, so threads switch between goroutines all the time: a reader that
took the thread's last context, or g instead of m.curg, would attribute
one goroutine's samples to another.  Which goroutine a sample belongs to
is known from its stack (spanWork<w> / gapWork<w>, by nm's address
ranges, independent of spanprof's symbolizer), when from its timestamp.

Checks: every sample carrying ids is in a span of the right worker
(spanWork<w> on its stack, or neither work function: pprof.Do's own
frames) whose interval contains the sample's time and whose ids are
exactly the sample's (precision 100%); >= 99% of the
samples in spanWork carry ids; no sample in gapWork carries any.  The
worker label travels as a sample attribute; the binary is identified by
its Go build id.

The label cache (bpf/golabels.bpf.h) is on, and the fixture forces a GC
every 20 ms (-gc), so label sets of finished spans are freed and
their memory holds the next spans' sets: a cache hit that took an old set
at a reused address would carry a finished span's ids, which the
precision check catches.  The cache is checked to have been used (hits
and misses counted, none uncached: this binary has .symtab and DWARF).
"""
import json
import os
import subprocess

from spt import *

require_root()
d = tmpdir()
exe = os.path.join(BUILD, "fixtures", "go", "golabels")
# 499 Hz: enough samples in 6 s even when a busy machine gives the fixture
# a fraction of its 2 CPUs
truth_path = os.path.join(d, "truth.jsonl")
out = os.path.join(d, "go.otlp.pb")
js = os.path.join(d, "go.json")
# --timestamps: each sample's time is checked against its span's interval
cmd = [SPANPROF, "record", "--no-report", "-q", "-F", "499", "--format", "otlp", "--timestamps",
       "-o", out, "--summary-json", js, "--", exe, "-mode", "spans", "-workers", "8", "-duration", "6",
       "-truth", truth_path, "-gc", "20ms"]
p = subprocess.run(cmd, capture_output=True, text=True, timeout=120,
                   env=go_env(GOMAXPROCS=2))
check(p.returncode == 0, "spanprof record of the Go fixture (rc=%d %s)" % (p.returncode, p.stderr[-300:]))
summ = load_json(js)
check(summ["go"]["procs"] >= 1 and summ["go"]["procs_dwarf"] >= 1,
      "the Go process got a descriptor, offsets from its DWARF (%s)" % summ["go"])
spans = [json.loads(l) for l in open(truth_path)]
per_worker = [sum(1 for s in spans if s["w"] == w) for w in range(8)]
check(min(per_worker) >= 5, "%d spans of ground truth, each worker's back to back (%s)" %
      (len(spans), per_worker))
by_ids = {(s["trace_id"], s["span_id"]): s for s in spans}

ranges = nm_ranges(exe, "main.")
work = {}
for name, r in ranges.items():
    for kind in ("spanWork", "gapWork"):
        if name.startswith("main." + kind) and name[len("main." + kind):].isdigit():
            work[r] = (kind, int(name[len("main." + kind):]))
check(len(work) == 16, "nm found main.spanWork0-7 and main.gapWork0-7")


def classify(stack):
    for (_, _, addr, ftype) in stack:
        if ftype != "native":
            continue
        for (a, b), kw in work.items():
            if a <= addr < b:
                return kw
    return None


off = summ["mono_to_unix_ns"]
samples = [s for s in read_otlp(out) if s["kind"] == "samples" and s["pid"]]
in_span = in_span_ids = in_gap = in_gap_ids = with_ids = right = 0
wrong = []
for s in samples:
    kw = classify(s["stack"])
    n_ev = max(1, len(s["ts"]))
    ts = s["ts"] or [None]
    for t in ts:
        if s["trace_id"]:
            with_ids += 1
            sp = by_ids.get((s["trace_id"], s["span_id"]))
            # kw None: neither work function on the stack (pprof.Do's own
            # frames, runtime code), still in the span's interval
            ok = (sp is not None and kw in (None, ("spanWork", sp["w"])) and
                  t is not None and sp["start"] <= t - off <= sp["end"] and
                  s["attrs"].get("worker") == str(sp["w"]))
            if ok:
                right += 1
            else:
                wrong.append((kw, s["trace_id"], s["span_id"], sp, t and t - off, s["attrs"]))
        if kw and kw[0] == "spanWork":
            in_span += 1
            in_span_ids += s["trace_id"] is not None
        elif kw and kw[0] == "gapWork":
            in_gap += 1
            in_gap_ids += s["trace_id"] is not None
print("samples with ids %d (right %d), in spans %d (with ids %d), in gaps %d (with ids %d)" %
      (with_ids, right, in_span, in_span_ids, in_gap, in_gap_ids), flush=True)
check(in_span >= 300 and in_gap >= 30, "enough samples in spans (%d) and gaps (%d)" % (in_span, in_gap))
check(not wrong, "precision 100%%: every sample with ids is in that span, on its worker's "
      "goroutine, inside its interval, with its worker label (wrong: %s)" % wrong[:3])
check(in_span_ids >= 0.99 * in_span, ">= 99%% of in-span samples carry ids (%d of %d)" %
      (in_span_ids, in_span))
check(in_gap_ids == 0, "no sample outside a span carries ids (%d of %d)" % (in_gap_ids, in_gap))
bids = {bid for s in samples for (f, bid, _, t) in s["stack"] if f == exe}
want = subprocess.run([os.path.join(os.path.dirname(shutil.which("go")), "go"), "tool", "buildid",
                       exe], capture_output=True, text=True).stdout.strip()
check(bids == {want}, "the binary is identified by its Go build id %r (OTLP "
      "process.executable.build_id.go): %s" % (want, bids))
b = summ["bpf"]
check(b["go_ids"] >= in_span_ids and b["go_read_errors"] == 0 and b["go_bad_ids"] == 0,
      "BPF counters: ids %d, no goroutine %d, no labels %d, read errors %d" %
      (b["go_ids"], b["go_no_goroutine"], b["go_no_labels"], b["go_read_errors"]))
check(b["go_label_cache_hits"] > 0 and b["go_label_cache_misses"] > 0 and
      b["go_label_cache_off"] == 0,
      "label cache used: hits %d, misses %d, uncached %d" %
      (b["go_label_cache_hits"], b["go_label_cache_misses"], b["go_label_cache_off"]))
shutil.rmtree(d)
