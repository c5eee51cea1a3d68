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

good = 0
for s in ours:
    files = [mapping_of(l) for l in s["locs"]]
    user = [m for m in files if m is None or m["file"] != "[kernel.kallsyms]"]
    if user and all(m is not None for m in user) and \
            any(m["file"] == fixture and m["build_id"] == bid for m in user):
        good += 1
check(len(ours) > 0 and good / len(ours) >= 0.99,
      "%d of %d samples resolve to the fixture's mapping and build id (>= 99%%)" % (good, len(ours)))
check(j["procs"]["maps_gone"] == 0 or good / len(ours) >= 0.99,
      "processes gone before their maps were read: %d (counted)" % j["procs"]["maps_gone"])
