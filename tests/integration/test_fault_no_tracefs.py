"""tracefs not mounted.

Late publication of a process context is watched through the classic
tracepoint syscalls/sys_enter_prctl, which is found through tracefs.  In a
private mount namespace (unshare --mount) tracefs (and debugfs) are
unmounted, then:
1. as root: record works, mounts tracefs itself and says so; the JSON
   summary has ctx.publish_watch true.
2. without CAP_SYS_ADMIN (dropped from the bounding set: what a container
   given only CAP_BPF and CAP_PERFMON looks like): tracefs cannot be
   mounted; record still works, the summary line says "late publication
   not watched (no tracefs)" and ctx.publish_watch is false.
"""
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from spt import SPANPROF, check, fail, load_json, read_pprof, require_root, tmpdir  # noqa: E402
from fault_util import spin_variant  # noqa: E402

require_root()
if not shutil.which("unshare"):
    fail("unshare (util-linux) is needed")
d = tmpdir()
spin = spin_variant(d, 6, "notrace")


def run(tag, no_sys_admin=False):
    out = os.path.join(d, tag + ".pb.gz")
    js = os.path.join(d, tag + ".json")
    inner = ("umount -l /sys/kernel/tracing 2>/dev/null; umount -l /sys/kernel/debug/tracing "
             "2>/dev/null; umount -l /sys/kernel/debug 2>/dev/null; "
             "[ -e /sys/kernel/tracing/events ] && exit 92; "
             "exec {sp} record --no-report -q -F 97 -d 2 -o {out} --summary-json {js} -- {spin} 1500"
             ).format(sp=SPANPROF, out=out, js=js, spin=spin)
    # unshare and umount need CAP_SYS_ADMIN; only spanprof runs without it
    # (setpriv drops it from the bounding set before the exec)
    if no_sys_admin:
        inner = inner.replace("exec %s" % SPANPROF, "exec setpriv --bounding-set -sys_admin "
                              "--inh-caps -sys_admin %s" % SPANPROF)
    cmd = ["unshare", "--mount", "--propagation", "private", "sh", "-c", inner]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        fail("%s: record did not finish" % tag)
    if p.returncode == 92:
        fail("%s: tracefs is still mounted in the private namespace" % tag)
    print("%s: rc %d\n%s" % (tag, p.returncode, p.stderr), flush=True)
    return p, out, js


p, out, js = run("root")
check(p.returncode == 0, "root: record works without tracefs mounted")
check("mounted tracefs" in p.stderr, "root: it mounted tracefs itself and said so")
check(load_json(js)["ctx"]["publish_watch"] is True, "root: ctx.publish_watch is true")

if not shutil.which("setpriv"):
    fail("setpriv (util-linux) is needed for part 2")
p, out, js = run("no-sys-admin", no_sys_admin=True)
check(p.returncode == 0, "without CAP_SYS_ADMIN: record still works")
j = load_json(js)
check(j["ctx"]["publish_watch"] is False, "without CAP_SYS_ADMIN: ctx.publish_watch is false")
check("late publication not watched (no tracefs)" in p.stderr,
      "the summary says late publication is not watched")
n = sum(s["values"][0] for s in read_pprof(out)["samples"]
        if s["labels"].get("thread_name") == "notrace")
check(n >= 50, "without CAP_SYS_ADMIN: the fixture was sampled (%d samples)" % n)
