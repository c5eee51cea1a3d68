"""A burst of 200 processes living 20-50 ms each.

Their samples must resolve to the right mapping (the fixture binary, with
its build id), not to "unknown": the collector reads /proc/PID/maps on the
exec event and on first sight, while the process is still alive.
"""
import os

from spt import *

require_root()
d = tmpdir()
fixture = os.path.join(BUILD, "fixtures", "shortlived")
out = os.path.join(d, "burst.pb.gz")
js = os.path.join(d, "burst.json")
# Two lanes of 100 sequential processes each, 20..50 ms of CPU apiece.
script = ("lane() { i=0; while [ $i -lt 100 ]; do %s $((20 + (i * 7 + $1) %% 31)); i=$((i+1)); done; }; "
          "lane 0 & lane 3 & wait" % fixture)
record(["-F", "97", "-o", out, "--summary-json", js, "--", "sh", "-c", script], timeout=180)
j = load_json(js)
p = read_pprof(out)
bid = read_buildid(fixture)
ours = [s for s in p["samples"] if s["labels"].get("thread_name") == "shortlived"]
pids = set(s["labels"]["pid"] for s in ours)
print("samples %d from %d processes; procs %s" % (len(ours), len(pids), j["procs"]), flush=True)
check(len(pids) >= 150, "%d of 200 short-lived processes were sampled" % len(pids))

def mapping_of(loc_id):
    mid, _ = p["locations"][loc_id]
    return p["mappings"].get(mid)

# Every user frame of these processes is in the fixture, libc or ld.so; the
# one exception is [vdso], anonymous memory that has no file (its frame sits
# right above the kernel frames of a syscall).  A process whose maps were
# read too early or too late would show unresolved roots and libc frames.
root_ok = with_fixture = vdso_only_unresolved = 0
bad_bid = []
for s in ours:
    ms = [mapping_of(l) for l in s["locs"]]
    user = [m for m in ms if m is None or m["file"] != "[kernel.kallsyms]"]
    if user and user[-1] is not None:
        root_ok += 1
    if any(m is not None and m["file"] == fixture for m in user):
        with_fixture += 1
    for m in user:
        if m is not None and m["file"] == fixture and m["build_id"] != bid:
            bad_bid.append(m)
    nk = len(ms) - len(user)
    if all(m is not None for i, m in enumerate(user) if not (i == 0 and nk > 0)):
        vdso_only_unresolved += 1
n = len(ours)
# Below 100%, by two known causes, both counted (addr_unmapped): samples
# taken inside execve, whose user registers still belong to the old image,
# and a process reaped before the consumer re-read its maps after ld.so
# mapped libc (about 1% of such 20-50 ms processes on a loaded 2-CPU VM).
check(n > 0 and root_ok / n >= 0.97, "root frame resolved in %d of %d samples (>= 97%%; unmapped "
      "addresses counted: %d)" % (root_ok, n, j["procs"]["addr_unmapped"]))
check(not bad_bid, "every mapping of the fixture carries its build id %s" % bid)
check(vdso_only_unresolved / n >= 0.97,
      "%d of %d samples have every user frame resolved, but a [vdso] frame at a syscall (>= 97%%)" % (vdso_only_unresolved, n))
check(with_fixture / n >= 0.90,
      "%d of %d samples are in the fixture's own mapping (the rest: ld.so start-up, kernel)" % (with_fixture, n))
