"""Go pprof labels while goroutines switch all the time (issue 13, precision).

tests/fixtures/go/golabels -mode spans with -yield: 8 labelled goroutines on
GOMAXPROCS=2 call runtime.Gosched every 300 iterations of their CPU work,
so the two threads spend much of their time in the scheduler and samples
land inside the switch itself.  The window this test is for: runtime.gogo
stores the next goroutine in the thread's TLS slot a few instructions
before it loads that goroutine's SP and BP, and a frame-pointer walk from
the old registers runs through the scheduler into the goroutine that left
(mcall keeps its BP): that goroutine's stack with the next one's ids.
bpf/golabels.bpf.h (sp_go_on_g0_stack) gives such a sample no ids and
counts it go_switching.

Checks: precision 100% (every sample with ids is in a logged span of the
worker whose spanWork is on its stack, inside its interval, with its
worker label); the test is not vacuous (most in-span samples still carry
ids, the BPF counters saw switching samples); no read errors.
"""
import os

from spt import *

require_root()
d = tmpdir()
exe = os.path.join(BUILD, "fixtures", "go", "golabels")
run = record_go(d, "of the yielding Go fixture", exe,
                ["-mode", "spans", "-workers", "8", "-duration", "5", "-yield", "300"],
                record_args=("-F", "997"))
out, summ, spans = run.out, run.summary, run.truth
classify, n_work = go_work_classifier(exe)
check(n_work == 16, "nm found main.spanWork0-7 and main.gapWork0-7")
samples = [s for s in read_otlp(out) if s["kind"] == "samples" and s["pid"]]
r = go_span_check(samples, spans, summ["mono_to_unix_ns"], classify)
b = summ["bpf"]
print("samples with ids %d (right %d), in spans %d (with ids %d); go_switching %d" %
      (r["with_ids"], r["right"], r["in_span"], r["in_span_ids"], b["go_switching"]), flush=True)
check(r["in_span"] >= 1000, "enough samples in spans: %d" % r["in_span"])
check(not r["wrong"], "precision 100%%: every sample with ids is its own goroutine's "
      "(%d wrong, first: %s)" % (len(r["wrong"]), r["wrong"][:3]))
check(r["in_span_ids"] >= 0.5 * r["in_span"], "most in-span samples carry ids (%d of %d)" %
      (r["in_span_ids"], r["in_span"]))
check(b["go_switching"] > 0, "samples in a switch were seen and counted: go_switching %d" %
      b["go_switching"])
check(b["go_read_errors"] == 0, "no read errors (%d)" % b["go_read_errors"])
shutil.rmtree(d)
