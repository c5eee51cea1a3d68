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

The label cache (bpf/golabels.bpf.h) is on, its GC cycle the process's
GC epoch (the uprobe on runtime.gcSweep), and the fixture forces a GC
every 20 ms (-gc), so label sets of finished spans are freed and
their memory holds the next spans' sets: a cache hit that took an old set
at a reused address would carry a finished span's ids, which the
precision check catches.  The cache is checked to have been used (hits
and misses counted, none uncached, by the epoch).  test_go_gc_epoch
checks the epoch against the fixture's own GC count, and the stripped
build.
"""
import os
import subprocess

from spt import *

require_root()
d = tmpdir()
exe = os.path.join(BUILD, "fixtures", "go", "golabels")
# 499 Hz: enough samples in 6 s even when a busy machine gives the fixture
# a fraction of its 2 CPUs
# --timestamps: each sample's time is checked against its span's interval
run = record_go(d, "of the Go fixture", exe,
                ["-mode", "spans", "-workers", "8", "-duration", "6", "-gc", "20ms"])
out, summ, spans = run.out, run.summary, run.truth
check(summ["go"]["procs"] >= 1 and summ["go"]["procs_dwarf"] >= 1,
      "the Go process got a descriptor, offsets from its DWARF (%s)" % summ["go"])
per_worker = [sum(1 for s in spans if s["w"] == w) for w in range(8)]
check(min(per_worker) >= 5, "%d spans of ground truth, each worker's back to back (%s)" %
      (len(spans), per_worker))

classify, n_work = go_work_classifier(exe)
check(n_work == 16, "nm found main.spanWork0-7 and main.gapWork0-7")
off = summ["mono_to_unix_ns"]
samples = [s for s in read_otlp(out) if s["kind"] == "samples" and s["pid"]]
r = go_span_check(samples, spans, off, classify)
with_ids, right, wrong = r["with_ids"], r["right"], r["wrong"]
in_span, in_span_ids, in_gap, in_gap_ids = r["in_span"], r["in_span_ids"], r["in_gap"], r["in_gap_ids"]
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
check(summ["go"]["label_cache_epoch"] == 1 and b["go_gc_epoch_bumps"] > 0,
      "the cache's GC cycle is the GC epoch (processes by epoch %d, bumps %d)" %
      (summ["go"]["label_cache_epoch"], b["go_gc_epoch_bumps"]))
shutil.rmtree(d)
