"""Off-CPU waits of labelled goroutines carry their ids (issue 13).

tests/fixtures/go/golabels -mode waits: goroutines serve spans (pprof
labels trace_id, span_id, wait=<kind>) around one wait each, back to back:
a contended sync.Mutex (main.waitMutex), time.Sleep (main.waitSleep), a
blocking read of a raw pipe (main.waitPipe) and an O_DIRECT file read
(main.waitFile).  Recorded with --off-cpu --off-cpu-goroutines and every
wait captured (--off-cpu-sample 1).

A mutex or sleep wait parks the goroutine: its thread runs other
goroutines or sleeps in the scheduler with no goroutine (m.curg NULL), so
only the park probes see that goroutine's wait (records whose leaf is
runtime.gopark).  A pipe or file read blocks the thread in a syscall with
the goroutine still on it: sched_switch sees those.

Checks: for each kind, waits with the wait function on the stack carry the
ids of a span of that kind (>= 99% of them, and at least a few per kind);
every off-CPU record with ids is inside that span's interval, of that
span's kind (its wait label and wait function agree); records of threads
that switched to the system stack (runtime.mcall on the stack: the
scheduler, or a syscall's return finding no P; Go's frame pointers chain
back into the goroutine that left, but m.curg is NULL) carry no ids,
but for exitsyscall0's window before dropg(), where m.curg still is the
goroutine that left and its ids are checked as any record's;
a parked sleep's weight is about its 20 ms.
"""
import bisect
import os

from spt import *

require_root()
d = tmpdir()
exe = os.path.join(BUILD, "fixtures", "go", "golabels")
# on the build's file system, not a tmpfs: O_DIRECT needs a block device
blob = os.path.join(BUILD, "go-waits.blob")
with open(blob, "wb") as f:
    f.write(os.urandom(4 << 20))
# --timestamps: each wait's time is checked against its span's interval
# and each wait weighs its own ns (compact OTLP would merge them)
try:
    run = record_go(d, "--off-cpu --off-cpu-goroutines", exe,
                    ["-mode", "waits", "-duration", "4", "-file", blob],
                    record_args=["-F", "97", "--off-cpu", "--off-cpu-goroutines",
                                 "--off-cpu-sample", "1", "--off-cpu-min-us", "100"])
finally:
    os.unlink(blob)
out, summ, truth = run.out, run.summary, run.truth
b = summ["bpf"]
check(summ["go"]["parks_files"] == 1 and b["go_park_captured"] > 50,
      "park probes on the Go binary, parks captured %d of %d" %
      (b["go_park_captured"], b["go_parks"]))
by_ids = {(t["trace_id"], t["span_id"]): t for t in truth}
kinds = ("mutex", "sleep", "pipe", "file")
check(all(any(t["kind"] == k for t in truth) for k in kinds), "spans of every wait kind logged")

syms = sorted((a, e, n) for n, (a, e) in nm_ranges(exe, "").items())
starts = [a for a, _, _ in syms]


def fname(addr):
    i = bisect.bisect_right(starts, addr) - 1
    return syms[i][2] if i >= 0 and addr < syms[i][1] else None


off = summ["mono_to_unix_ns"]
waits = {k: [0, 0] for k in kinds}          # goroutine waits: [total, with right ids]
parked = {k: 0 for k in kinds}              # ... of which park records
sched_ids, leaving_ids, wrong, sleep_ns = 0, 0, [], []
for s in read_otlp(out):
    if s["kind"] == "samples":
        continue
    names = [fname(a) for (_, _, a, t) in s["stack"] if t == "native"]
    wk = [k for k in kinds if "main.wait" + k.capitalize() in names]
    in_sched = "runtime.mcall" in names
    # A syscall's return that finds no P runs exitsyscall0 on g0; its
    # casgstatus can spin (osyield: the GC holds the goroutine's stack)
    # before dropg() clears m.curg, so the ids read are still those of the
    # goroutine that left - right, and checked like any other record's.
    leaving = in_sched and "runtime.exitsyscall0" in names
    n_ev = max(1, len(s["ts"]))
    if s["trace_id"]:
        sp = by_ids.get((s["trace_id"], s["span_id"]))
        ok = (sp is not None and (leaving or not in_sched) and
              s["attrs"].get("wait") == sp["kind"] and
              all(wk_ == sp["kind"] for wk_ in wk) and
              all(sp["start"] <= t - off <= sp["end"] for t in s["ts"]))
        if not ok:
            wrong.append((names[:6], sp and sp["kind"], s["attrs"]))
    if in_sched:
        if s["trace_id"] and leaving:
            leaving_ids += n_ev
        elif s["trace_id"]:
            sched_ids += n_ev
        continue
    for k in wk:
        waits[k][0] += n_ev
        sp = by_ids.get((s["trace_id"], s["span_id"])) if s["trace_id"] else None
        if sp and sp["kind"] == k:
            waits[k][1] += n_ev
            if names and names[0] == "runtime.gopark":
                parked[k] += n_ev
                if k == "sleep":
                    sleep_ns += [v for v in s["values"]]
print("goroutine waits per kind [total, with their span's ids]: %s; park records %s" %
      (waits, parked), flush=True)
check(not wrong, "every off-CPU record with ids is in its span, of its kind (wrong: %s)" % wrong[:3])
for k in kinds:
    tot, good = waits[k]
    check(tot >= 5 and good >= 0.99 * tot,
          "%s waits of a labelled goroutine carry its ids: %d of %d" % (k, good, tot))
check(parked["mutex"] >= 5 and parked["sleep"] >= 5,
      "mutex and sleep waits come from the park probes (%d, %d)" % (parked["mutex"], parked["sleep"]))
check(sched_ids == 0, "no record of a thread on the system stack (scheduler) carries ids (%d; "
      "%d more in exitsyscall0 before dropg, with their goroutine's ids)" % (sched_ids, leaving_ids))
sleep_ns.sort()
med = sleep_ns[len(sleep_ns) // 2] if sleep_ns else 0
check(15e6 <= med <= 40e6, "a parked 20 ms sleep weighs %.1f ms (median)" % (med / 1e6))
shutil.rmtree(d)
