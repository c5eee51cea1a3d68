"""A binary replaced on disk while it runs.

D/app (fault_spin variant 3) runs for 3 s; after 1 s the file is replaced by
rename(2) with variant 4 (another build id), as a package upgrade does; then
D/app is run again for 1.5 s.  Required: the first process's samples carry
variant 3's build id (the running image: its maps now say "D/app (deleted)"
and the file behind /proc/PID/map_files is the old inode), the second
process's samples carry variant 4's build id, and no sample of either
carries the other's.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from spt import check, load_json, read_buildid, read_pprof, record, require_root, tmpdir  # noqa: E402
from fault_util import spin_variant  # noqa: E402

require_root()
d = tmpdir()
app = spin_variant(d, 3, "app")
new = spin_variant(d, 4, "app.new")
old_bid, new_bid = read_buildid(app), read_buildid(new)
check(old_bid != new_bid, "the two builds have different build ids")
out = os.path.join(d, "replaced.pb.gz")
js = os.path.join(d, "replaced.json")
script = ("{a} 3000 & echo $! > {d}/pid1; sleep 1; mv {n} {a}; sleep 0.3; "
          "{a} 1500 & echo $! > {d}/pid2; wait").format(a=app, n=new, d=d)
record(["-F", "97", "--no-kernel", "-o", out, "--summary-json", js, "--", "sh", "-c", script],
       timeout=60)
pid1 = int(open(os.path.join(d, "pid1")).read())
pid2 = int(open(os.path.join(d, "pid2")).read())
print("procs", load_json(js)["procs"], flush=True)
p = read_pprof(out)
found = {pid1: {}, pid2: {}}
for s in p["samples"]:
    pid = s["labels"].get("pid")
    if pid not in found or not s["locs"]:
        continue
    m = p["mappings"].get(p["locations"][s["locs"][0]][0])
    if m is None or not m["file"].startswith(app):
        continue
    found[pid][m["build_id"]] = found[pid].get(m["build_id"], 0) + s["values"][0]
print("leaf build ids in D/app: first %s, second %s" % (found[pid1], found[pid2]), flush=True)
check(found[pid1].get(old_bid, 0) >= 100,
      "the running image keeps its build id %s (%d samples)" % (old_bid, found[pid1].get(old_bid, 0)))
check(new_bid not in found[pid1], "no sample of the first process carries the new build id")
check(found[pid2].get(new_bid, 0) >= 15,
      "the new exec of the path carries the new build id %s (%d samples)"
      % (new_bid, found[pid2].get(new_bid, 0)))
check(old_bid not in found[pid2], "no sample of the second process carries the old build id")
