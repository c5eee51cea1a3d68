#!/usr/bin/env python3
"""Go pprof labels of a goroutine whose span runs C code (cgo), against
ground truth (issue 13).

tests/fixtures/go/gocgo: 4 goroutines on GOMAXPROCS=2, each running spans
back to back; a span is pprof.Do(trace_id, span_id, worker) around a call
of the worker's own C function cburn<w> (10-30 ms of a C loop).  In C the
thread is on the system stack (asmcgocall switched to g0) and the
goroutine is m.curg, in a syscall (_Gsyscall): the reader takes its labels
there, but never those of a goroutine that is only about to run (a switch
under way: bpf/golabels.bpf.h, counted go_switching).

Checks: >= 95% of the samples whose leaf is in cburn<w> (by nm's address
ranges, not spanprof's symbolizer) carry ids; every one that does carries
a span of worker w whose interval holds its time (precision 100%).
Bounded: about 10 s.
"""
import os

from spt import *

require_root()
d = tmpdir()
exe = os.path.join(BUILD, "fixtures", "go", "gocgo")
# 4 s at 499 Hz on 2 CPUs: ~4000 samples, nearly all in C
run = record_go(d, "of the cgo fixture", exe, ["-workers", "4", "-duration", "4"])
out, summ, spans = run.out, run.summary, run.truth
check(summ["go"]["procs"] >= 1 and summ["go"]["procs_dwarf"] >= 1,
      "the Go process got a descriptor, offsets from its DWARF (%s)" % summ["go"])
by_ids = {(s["trace_id"], s["span_id"]): s for s in spans}
ranges = {r: int(n[len("cburn"):]) for n, r in nm_ranges(exe, "cburn").items()
          if n[len("cburn"):].isdigit()}
check(len(ranges) == 4, "nm found cburn0-3 (%s)" % sorted(ranges.values()))
off = summ["mono_to_unix_ns"]
n_c = n_ids = 0
wrong = []
for s in read_otlp(out):
    if s["kind"] != "samples" or not s["pid"]:
        continue
    w = None
    for (_, _, addr, ftype) in s["stack"]:
        if ftype == "native":
            w = next((v for (a, b), v in ranges.items() if a <= addr < b), None)
            break
    if w is None:
        continue
    for t in s["ts"] or [None]:
        n_c += 1
        if not s["trace_id"]:
            continue
        n_ids += 1
        sp = by_ids.get((s["trace_id"], s["span_id"]))
        if not (sp and sp["w"] == w and t is not None and sp["start"] <= t - off <= sp["end"]
                and s["attrs"].get("worker") == str(w)):
            wrong.append((w, s["trace_id"], sp, t and t - off, s["attrs"]))
b = summ["bpf"]
print("samples in C %d, with ids %d; BPF: ids %d, switching %d, no goroutine %d" %
      (n_c, n_ids, b["go_ids"], b["go_switching"], b["go_no_goroutine"]), flush=True)
check(n_c >= 500, "enough samples in the spans' C code (%d)" % n_c)
check(not wrong, "precision 100%%: every C sample with ids is in its worker's span, inside its "
      "interval (wrong: %s)" % wrong[:3])
check(n_ids >= 0.95 * n_c, ">= 95%% of the samples in C carry their goroutine's ids (%d of %d)"
      % (n_ids, n_c))
shutil.rmtree(d)
