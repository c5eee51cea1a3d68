"""The Go label cache's GC epoch (issue 13, bpf/gogc.bpf.c, golabels.bpf.h).

A cached label set is valid for one GC cycle of its process: a uprobe on
runtime.gcSweep bumps the process's epoch in BPF, and a cache hit needs
the epoch its entry was parsed in.  tests/fixtures/go/golabels -mode
spans (8 goroutines on GOMAXPROCS=2, spans back to back under
trace_id/span_id/worker labels) forces runtime.GC() every 5 ms (-gc;
starved by the 8 busy goroutines, it gets a few per second), so finished
spans' label sets are freed and their memory may hold the next spans'
sets at the same address: a hit that missed a GC could give a sample a
finished span's ids, which the interval check below catches (spans are
back to back: a finished span's interval never holds a later sample).

Run twice: the binary as built (.symtab, DWARF) and built with
-ldflags='-s -w' (stripped: runtime.gcSweep found in .gopclntab; before
the epoch this build read every set uncached, having no sweepgen
address).  Checks, each run:
  - the process's cache uses the epoch; the probe is on the file;
  - the epoch counted the fixture's GC cycles: at least those completed
    after its settle (the probe is attached before; the forced ones
    start then), at most all of them plus one in flight at exit
    (runtime.MemStats.NumGC, printed by the fixture);
  - cache hits, and more misses than distinct label sets seen: entries
    were parsed again after GC cycles (the epoch moved them out);
  - precision 100%: every sample with ids carries a logged span's ids,
    its time inside that span, its worker label; for the unstripped
    build also its stack in that worker's spanWork (nm ranges).
"""
import os
import re

from spt import *

require_root()


def run(name):
    d = tmpdir()
    exe = os.path.join(BUILD, "fixtures", "go", name)
    run = record_go(d, "of " + name, exe,
                    ["-mode", "spans", "-workers", "8", "-duration", "4", "-gc", "5ms"])
    out, summ = run.out, run.summary
    m = re.search(r"golabels: gc cycles (\d+) after settle, (\d+) at end", run.stderr)
    check(m is not None, "%s: the fixture printed its GC count (%s)" % (name, run.stderr[-300:]))
    gc_settle, gc_end = int(m.group(1)), int(m.group(2))
    g, b = summ["go"], summ["bpf"]
    check(g["procs"] == 1 and g["label_cache_epoch"] == 1 and g["label_cache_sweepgen"] == 0
          and g["label_cache_off"] == 0 and g["gc_files"] == 1 and g["gc_failed"] == 0,
          "%s: the process's label cache uses the GC epoch, probe attached (%s)" % (name, g))
    bumps = b["go_gc_epoch_bumps"]
    print("%s: GC cycles %d after settle, %d at end; epoch bumps %d; cache hits %d misses %d" %
          (name, gc_settle, gc_end, bumps, b["go_label_cache_hits"],
           b["go_label_cache_misses"]), flush=True)
    check(gc_end - gc_settle >= 5, "%s: the fixture ran GC cycles (%d)" %
          (name, gc_end - gc_settle))
    check(gc_end - gc_settle <= bumps <= gc_end + 1,
          "%s: the epoch counted every GC cycle after the settle: %d <= %d <= %d" %
          (name, gc_end - gc_settle, bumps, gc_end + 1))
    spans = run.truth
    classify = None
    if name == "golabels":
        classify, n_work = go_work_classifier(exe)
        check(n_work == 16, "nm found main.spanWork0-7 and main.gapWork0-7")
    samples = [s for s in read_otlp(out) if s["kind"] == "samples" and s["pid"]]
    r = go_span_check(samples, spans, summ["mono_to_unix_ns"], classify)
    print("%s: samples with ids %d (right %d), label sets seen %d, in spans %d (with ids %d), "
          "in gaps %d (with ids %d)" % (name, r["with_ids"], r["right"], len(r["sets"]),
                                        r["in_span"], r["in_span_ids"], r["in_gap"],
                                        r["in_gap_ids"]), flush=True)
    check(r["with_ids"] >= 300, "%s: enough samples with ids (%d)" % (name, r["with_ids"]))
    check(not r["wrong"], "%s: precision 100%%: every sample with ids is in that span's "
          "interval, with its worker (wrong: %s)" % (name, r["wrong"][:3]))
    check(r["in_gap_ids"] == 0, "%s: no sample in a gap carries ids (%d)" %
          (name, r["in_gap_ids"]))
    check(b["go_label_cache_hits"] > 0 and b["go_label_cache_off"] == 0 and
          b["go_label_cache_misses"] > len(r["sets"]),
          "%s: cache hits %d, and misses %d above the %d label sets seen (re-parsed after "
          "GC cycles), none uncached (%d)" % (name, b["go_label_cache_hits"],
                                              b["go_label_cache_misses"], len(r["sets"]),
                                              b["go_label_cache_off"]))
    shutil.rmtree(d)


run("golabels")
run("golabels.stripped")
