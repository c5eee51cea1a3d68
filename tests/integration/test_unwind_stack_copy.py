"""The user-stack copy is exact (issue 12/17, bpf/unwind.bpf.h "Stack
copy"), real BPF.

The walk reads the user stack in chunks copied once per walk into a
per-CPU buffer; a stale or misplaced chunk (a slot of the previous sample,
a wrong offset or slot index) would give a word the stack does not hold
now.  SPANPROF_BENCH_UCOPY_VERIFY=1 makes the BPF program also read every
word it takes from the copy directly, at the moment it uses it, and count
each difference (unwind_copy_mismatch; the direct value is then used).  On
stacks that change all the time between samples (qsort shuffling a batch
through a comparator, a recursion 200 deep, waits in libc off-CPU), with
the default chunks and with the smallest (64 bytes, one slot: a refill at
nearly every frame, words at every chunk edge), every copied word equals
the direct read: mismatch 0, and the copy was used (words > 0, chunks > 0).
With the copy off (SPANPROF_BENCH_UCOPY=0) no word comes from it, and the
stacks reach the thread root as often as with it.
"""
import os

from spt import *

require_root()
FIX = os.path.join(BUILD, "fixtures")


def run(label, name, args, ucopy=None, extra=(), verify=True):
    d = tmpdir()
    out = os.path.join(d, "p.pb.gz")
    js = os.path.join(d, "s.json")
    saved = dict(os.environ)
    os.environ.pop("SPANPROF_BENCH_UCOPY", None)
    os.environ.pop("SPANPROF_BENCH_UCOPY_VERIFY", None)
    if ucopy is not None:
        os.environ["SPANPROF_BENCH_UCOPY"] = ucopy
    if verify:
        os.environ["SPANPROF_BENCH_UCOPY_VERIFY"] = "1"
    try:
        record(["-F", "499", "-o", out, "--summary-json", js] + list(extra) +
               ["--", os.path.join(FIX, name)] + args)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    j = load_json(js)
    b = j["bpf"]
    print("  %s: walked %d, root %d; copy chunks %d, words %d, direct %d, failed %d, mismatch %d"
          % (label, j["unwind"]["walked"], j["unwind"]["root"], b["unwind_copy_chunks"],
             b["unwind_copy_words"], b["unwind_copy_direct"], b["unwind_copy_failed"],
             b["unwind_copy_mismatch"]))
    return j, b


def exact(label, b):
    check(b["unwind_copy_words"] > 0 and b["unwind_copy_chunks"] > 0,
          "%s: the walk took %d words from %d copied chunks"
          % (label, b["unwind_copy_words"], b["unwind_copy_chunks"]))
    check(b["unwind_copy_mismatch"] == 0,
          "%s: every copied word equals a direct read of it (%d differed)"
          % (label, b["unwind_copy_mismatch"]))


def root_share(j):
    u = j["unwind"]
    return u["root"] / u["walked"] if u["walked"] else 0.0


# CFI walk through libc's qsort (no frame pointers): default chunks, then
# the smallest chunk with one slot.
j_def, b = run("qsort default", "unw_qsort_gcc", ["1.0"])
exact("qsort default chunks", b)
check(root_share(j_def) >= 0.9, "qsort, copy on: %.1f%% of stacks reached the thread root"
      % (100 * root_share(j_def)))
j, b = run("qsort 64x1", "unw_qsort_gcc", ["1.0"], ucopy="64x1")
exact("qsort 64-byte chunks, one slot", b)
check(b["unwind_copy_chunks"] * 2 > j["unwind"]["frames"],
      "64x1: a chunk copied at least every other frame (%d chunks, %d frames)"
      % (b["unwind_copy_chunks"], j["unwind"]["frames"]))

# a recursion 200 deep, cut at 127 frames: many chunks per walk
j, b = run("deep 64x1", "unw_misc", ["deep", "1.0"], ucopy="64x1")
exact("recursion 200 deep, 64-byte chunks", b)

# the frame-pointer walk reads through the copy too
j, b = run("fp walk", "unw_chain_fp", ["1.0"], extra=["--unwind", "fp"])
exact("--unwind fp", b)

# off-CPU: the sched_switch program's walk (waits in libc)
j, b = run("off-CPU", "unw_offcpu", ["1"],
           extra=["--off-cpu", "--off-cpu-sample", "1", "--off-cpu-min-us", "100"])
exact("off-CPU waits", b)

# the copy off: every word read directly, the same stacks
j_off, b = run("qsort copy off", "unw_qsort_gcc", ["1.0"], ucopy="0", verify=False)
check(b["unwind_copy_words"] == 0 and b["unwind_copy_chunks"] == 0 and b["unwind_copy_direct"] > 0,
      "SPANPROF_BENCH_UCOPY=0: no word from the copy, %d read directly" % b["unwind_copy_direct"])
check(root_share(j_off) >= 0.9 and abs(root_share(j_off) - root_share(j_def)) <= 0.05,
      "copy off: %.1f%% reached the root (copy on: %.1f%%)"
      % (100 * root_share(j_off), 100 * root_share(j_def)))

# a bad knob value is one clear line, not a silent default
saved = dict(os.environ)
os.environ["SPANPROF_BENCH_UCOPY"] = "1000"
try:
    rc, _, err = record(["-F", "97", "-o", os.path.join(tmpdir(), "x.pb.gz"), "--",
                         os.path.join(FIX, "unw_chain_fp"), "0.2"], check_rc=False)
finally:
    os.environ.clear()
    os.environ.update(saved)
check(rc != 0 and "SPANPROF_BENCH_UCOPY=1000" in err and "power of two" in err,
      "SPANPROF_BENCH_UCOPY=1000 refused with one line: %s" % err.strip().splitlines()[-1:])
