"""A binary whose .eh_frame is malformed (issue 12): the unwinder counts
the failed extraction, never crashes or hangs, and the stacks in that
binary fall back to frame pointers without emitting garbage frames.

A copy of build/fixtures/unw_qsort_gcc gets an absurd length in its
first CIE (the program itself never reads its CFI: C, no exceptions).
Under spanprof record: unwind.failed_malformed = 1 and nothing else
failed, the frames that needed the missing table are counted as frame
pointer fallbacks (no table), and every user frame written is inside a
mapping of the process (consumer.frames_unresolved = 0: no garbage).
The intact libc's table still works: samples inside qsort keep their
libc frames.
"""
import os
import re
import shutil
import struct
import subprocess

from spt import *

require_root()
d = tmpdir()
bad = os.path.join(d, "unw_qsort_bad")
shutil.copy(os.path.join(BUILD, "fixtures", "unw_qsort_gcc"), bad)
sec = subprocess.run(["readelf", "-SW", bad], capture_output=True, text=True).stdout
m = re.search(r"\.eh_frame\s+PROGBITS\s+[0-9a-f]+\s+([0-9a-f]+)\s+([0-9a-f]+)", sec)
check(m is not None, "the fixture has an .eh_frame section")
off = int(m.group(1), 16)
with open(bad, "r+b") as f:
    f.seek(off)
    f.write(struct.pack("<I", 0xfffffff0))

out = os.path.join(d, "bad.pb.gz")
js = os.path.join(d, "bad.json")
rc, so, se = record(["-F", "199", "-o", out, "--summary-json", js, "--", bad, "1"], timeout=60)
j = load_json(js)
u, b, c = j["unwind"], j["bpf"], j["consumer"]
check(u["failed_malformed"] == 1 and u["failed"] == 1, "one malformed table counted: %s" % u)
check(u["built"] >= 2, "libc's (and the vDSO's) tables still built: %d" % u["built"])
check(b["unwind_fp_no_table"] > 0, "frames in the broken binary fell back to frame pointers (%d)" % b["unwind_fp_no_table"])
check(c["frames_unresolved"] == 0, "no user frame outside the process's mappings (%d)" % c["frames_unresolved"])
check("malformed 1" in se, "the summary says so: " + [l for l in se.splitlines() if "unwind tables" in l][0])
