"""The per-CPU row cache holds a walk's rows (issues 12 and 17,
bpf/unwind.bpf.h sp_unw_rule), real BPF.

Every CFI step takes its row either from the per-CPU cache or from a
binary search of the file's table in BPF memory (unwind_rows_cached,
unwind_rows_searched).  On a program that keeps calling the same code,
the next samples ask for the rows of the last ones, so in steady state a
walk searches almost nothing.  With the cache at its old size (64 rows,
direct-mapped) the rows of one stack collided in it.  Measured here with
the same runs, 64 rows against 256:
  qsort through libc    0.93 searched per walk (92.9% cached) | 0.07 (99.5%)
  python3 loop          5.80 (68.0%)                          | 0.88 (94.7%)
  recursion 200 deep    0.01 (100%)                           | 0.02 (100%)
Checked here, on programs without frame pointers (a comparator called
back through Debian libc's qsort; a recursion 200 deep, cut at the frame
limit; Debian's python3, whose interpreter loop gives the leaf many rows):
  - the counts add up: every CFI step took a row from one of the two;
  - rows searched per walk and the share from the cache within bounds
    that the 64-row cache fails (qsort, python3).
"""
import os
import shutil

from spt import *

require_root()
FIX = os.path.join(BUILD, "fixtures")
PY_LOOP = "import time\nt=time.time()\nwhile time.time()-t<1.5:\n    sum(i*i%7 for i in range(5000))\n"


def run(label, cmd, max_per_walk, min_cached):
    d = tmpdir()
    js = os.path.join(d, "s.json")
    record(["-F", "499", "-o", os.path.join(d, "p.pb.gz"), "--summary-json", js, "--"] + cmd)
    j = load_json(js)
    u, b = j["unwind"], j["bpf"]
    cached, searched = b["unwind_rows_cached"], b["unwind_rows_searched"]
    cfi = u["frames"] - u["frames_fp"]
    print("  %s: walked %d, frames %d (cfi %d); rows cached %d, searched %d (%.2f per walk)"
          % (label, u["walked"], u["frames"], cfi, cached, searched,
             searched / max(u["walked"], 1)))
    check(u["walked"] >= 200, "%s: %d stacks walked (200 needed)" % (label, u["walked"]))
    # A CFI step follows a row; the last frame of a stack looks one up too
    # (to find it has no caller), hence >=, not ==.
    check(cached + searched >= cfi - u["walked"],
          "%s: every CFI step took a row from the cache or a search (%d + %d rows, %d steps)"
          % (label, cached, searched, cfi))
    check(searched < max_per_walk * u["walked"],
          "%s: fewer than %.1f rows searched per walk (%d searches, %d walks)"
          % (label, max_per_walk, searched, u["walked"]))
    check(cached >= min_cached * (cached + searched),
          "%s: at least %.0f%% of the rows from the cache (%d of %d)"
          % (label, 100 * min_cached, cached, cached + searched))


run("qsort through libc", [os.path.join(FIX, "unw_qsort_gcc"), "1.5"], 0.5, 0.97)
run("recursion 200 deep", [os.path.join(FIX, "unw_misc"), "deep", "1.5"], 0.5, 0.97)
py = shutil.which("python3.11") or shutil.which("python3")
run("python3 loop", [py, "-c", PY_LOOP], 2.5, 0.88)
