# spanprof-test: parallel (no BPF, no whole-machine sampling, no timing assertion)
"""The symbolizer's address cache at its bound.

A profile with 4000 distinct addresses spread over the .text of a real
binary with DWARF (spanprof-symbolizer itself, found as "the mapped file"
by its build id), in 2000 samples of 4 frames each, is reported with
--cache-entries 16 and with the default (65536).  Required: the folded
stacks and the top table are byte-identical, the small cache reports
evictions (thousands), the big one almost none (it is 4-way set associative:
4000 keys over 16384 sets leave a set with a fifth key in about one binary
layout in ten, so up to 8 evictions are allowed), and its "used" stays at its
capacity of 16.
"""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from spt import check, fail, read_buildid, tmpdir  # noqa: E402
from fault_util import SYMBOLIZER, PprofWriter, text_section  # noqa: E402

d = tmpdir()
elf = SYMBOLIZER
bid = read_buildid(elf)
if not bid:
    fail("%s has no GNU build id" % elf)
off, size = text_section(elf)
N = 4000
step = max(1, size // N)
start = 0x555555554000
w = PprofWriter()
m = w.mapping(start, start + os.path.getsize(elf), 0, elf, bid)
locs = [w.location(m, start + off + i * step) for i in range(N)]
for i in range(N // 2):
    w.sample([locs[i], locs[(i + 500) % N], locs[(i + 1000) % N], locs[N // 2 + i]], count=1 + i % 3)
prof = w.write(os.path.join(d, "many.pb.gz"))


def report(extra, what):
    cmd = [SYMBOLIZER, "report", prof, "--no-debuginfod", "--no-kallsyms", "--allow-root"] + \
        what + extra
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        fail("report %s failed: %s" % (" ".join(extra), p.stderr))
    m = re.search(r"cache hits (\d+) misses (\d+) evictions (\d+) used (\d+)/(\d+)", p.stderr)
    if not m:
        fail("no cache statistics in: %s" % p.stderr)
    return p.stdout, tuple(int(x) for x in m.groups())


small_f, small_st = report(["--cache-entries", "16"], ["--collapsed"])
big_f, big_st = report([], ["--collapsed"])
print("cache (hits, misses, evictions, used, capacity): 16 -> %s, default -> %s"
      % (small_st, big_st), flush=True)
check(len(small_f.splitlines()) >= N // 4, "%d folded stacks" % len(small_f.splitlines()))
named = sum(1 for l in big_f.splitlines() if "0x" not in l.split(";")[0])
check(named > 0, "frames are named (%d stacks with a named root)" % named)
check(small_f == big_f, "folded stacks identical with a 16-entry cache and the default")
check(small_st[4] == 16 and small_st[3] <= 16, "the small cache stays at its 16 entries (used %d)"
      % small_st[3])
check(small_st[2] >= N - 16, "the small cache evicted %d entries (>= %d)" % (small_st[2], N - 16))
check(big_st[2] <= 8, "the default cache evicted almost nothing (%d)" % big_st[2])
small_t, _ = report(["--cache-entries", "16"], ["--top", "40"])
big_t, _ = report([], ["--top", "40"])
check(small_t == big_t, "top-40 tables identical")
