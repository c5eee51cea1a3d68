"""/proc mounted with hidepid=2 (and with subset=pid) in a private mount namespace.

`unshare --mount` gives the test its own mount namespace, where /proc is
mounted again with hidepid=2 (other users' /proc/PID directories are
invisible to unprivileged users); spanprof record, as root, records a
fixture run as the user nobody.  Root passes hidepid's check, so the
recording must work: the fixture's samples resolve to its binary with its
build id.  Then with subset=pid (/proc holds only the pid directories:
no /proc/sys, no /proc/kallsyms): record must either work (its kernel
symbol snapshot then fails with a note) or fail with one clear line;
never crash or hang.
"""
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from spt import SPANPROF, check, fail, load_json, read_buildid, read_pprof, require_root, tmpdir  # noqa: E402
from fault_util import spin_variant  # noqa: E402

require_root()
if not shutil.which("unshare") or not shutil.which("setpriv"):
    fail("unshare and setpriv (util-linux) are needed")
d = tmpdir()
spin = spin_variant(d, 5, "hidden")
bid = read_buildid(spin)


def run(opts, tag):
    out = os.path.join(d, tag + ".pb.gz")
    js = os.path.join(d, tag + ".json")
    inner = ("mount -t proc -o {o} proc /proc || exit 90; "
             "{sp} record --no-report -q -F 97 -a -d 3 -o {out} --summary-json {js} & rec=$!; "
             "sleep 1; setpriv --reuid=65534 --regid=65534 --clear-groups {spin} 1500; "
             "wait $rec").format(o=opts, sp=SPANPROF, out=out, js=js, spin=spin)
    try:
        p = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", inner],
                           capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        fail("%s: record did not finish within 60 s" % tag)
    if p.returncode == 90:
        fail("%s: cannot mount proc with -o %s: %s" % (tag, opts, p.stderr))
    print("%s: rc %d\n%s" % (tag, p.returncode, p.stderr), flush=True)
    return p, out, js


p, out, js = run("hidepid=2", "hidepid")
check(p.returncode == 0, "hidepid=2: spanprof record as root works (rc=%d)" % p.returncode)
prof = read_pprof(out)
ours = [s for s in prof["samples"] if s["labels"].get("thread_name") == "hidden" and s["locs"]]
good = 0
for s in ours:
    m = prof["mappings"].get(prof["locations"][s["locs"][0]][0])
    if m and m["file"] == spin and m["build_id"] == bid:
        good += s["values"][0]
n = sum(s["values"][0] for s in ours)
check(n >= 50 and good >= 0.9 * n,
      "hidepid=2: %d of %d samples of nobody's process resolve to its binary and build id"
      % (good, n))
print("procs", load_json(js)["procs"], flush=True)

p, out, js = run("subset=pid", "subset")
lines = [l for l in p.stderr.splitlines() if l.strip()]
if p.returncode == 0:
    check(os.path.getsize(out) > 0, "subset=pid: record works and writes its profile")
    n = sum(s["values"][0] for s in read_pprof(out)["samples"]
            if s["labels"].get("thread_name") == "hidden")
    check(n >= 50, "subset=pid: nobody's process was sampled (%d samples)" % n)
else:
    check(p.returncode in (1, 2) and lines and lines[-1].startswith("spanprof"),
          "subset=pid: record fails with a clear line: %s" % (lines[-1] if lines else "(none)"))
check("Segmentation" not in p.stderr and "Aborted" not in p.stderr, "subset=pid: no crash")
