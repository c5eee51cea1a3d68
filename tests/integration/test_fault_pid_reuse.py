"""pid reuse: two different binaries run one after the other with the same pid.

The kernel's global pid allocator is steered with
/proc/sys/kernel/ns_last_pid (what CRIU uses to restore pids): the test
picks a free pid P, writes P-1, forks (retrying if another process took P
first), and the child execs binary A (fault_spin variant 1) for 1.5 s;
after it exits, the same again with binary B (variant 2, another build id).
A pid namespace would not do: BPF and the collector see global pids.
Recorded whole-machine.  Required: samples of A (thread name reuse_a) at pid
P resolve to A's file and build id, samples of B at the same pid to B's,
none crosses over.
"""
import os
import random
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from spt import SPANPROF, check, fail, load_json, read_buildid, read_pprof, require_root, skip, tmpdir  # noqa: E402
from fault_util import spin_variant  # noqa: E402

require_root()
if not os.access("/proc/sys/kernel/ns_last_pid", os.W_OK):
    skip("/proc/sys/kernel/ns_last_pid is not writable (kernel without CONFIG_CHECKPOINT_RESTORE)")
d = tmpdir()
A = spin_variant(d, 1, "reuse_a")
B = spin_variant(d, 2, "reuse_b")
bid = {"reuse_a": read_buildid(A), "reuse_b": read_buildid(B)}
path = {"reuse_a": A, "reuse_b": B}
check(bid["reuse_a"] != bid["reuse_b"], "the two binaries have different build ids")
pid_max = int(open("/proc/sys/kernel/pid_max").read())


def fork_exec_at(target, argv):
    """Forks so that the child gets pid target, execs argv there; returns the pid."""
    for _ in range(100):
        with open("/proc/sys/kernel/ns_last_pid", "w") as f:
            f.write(str(target - 1))
        pid = os.fork()
        if pid == 0:
            if os.getpid() != target:
                os._exit(99)
            try:
                os.execv(argv[0], argv)
            finally:
                os._exit(127)
        if pid == target:
            return pid
        os.waitpid(pid, 0)
        # Another process took it between our write and our fork (a busy
        # machine forks all the time): most live milliseconds, wait.
        for _ in range(200):
            if not os.path.exists("/proc/%d" % target):
                break
            time.sleep(0.01)
        else:
            return None   # held for good
    return None


out = os.path.join(d, "reuse.pb.gz")
js = os.path.join(d, "reuse.json")
rec = subprocess.Popen([SPANPROF, "record", "--no-report", "-q", "-a", "--no-kernel", "-F", "97",
                        "-d", "7", "-o", out, "--summary-json", js],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
time.sleep(2.0)   # BPF loaded and attached (attach takes well under a second here)
P = None
for _ in range(20):
    cand = random.randint(pid_max // 2, pid_max - 100)
    if os.path.exists("/proc/%d" % cand):
        continue
    got = fork_exec_at(cand, [A, "1500"])
    if got:
        P = got
        break
if not P:
    rec.kill()
    fail("could not get a chosen pid for the first process")
os.waitpid(P, 0)
got = fork_exec_at(P, [B, "1500"])
if got != P:
    rec.kill()
    fail("pid %d was taken by another process before the second exec" % P)
os.waitpid(P, 0)
try:
    so, se = rec.communicate(timeout=60)
except subprocess.TimeoutExpired:
    rec.kill()
    fail("spanprof record did not finish")
if rec.returncode != 0:
    fail("spanprof record failed (rc=%d): %s" % (rec.returncode, se))
print("both binaries ran as pid %d" % P, flush=True)
j = load_json(js)
print("procs", j["procs"], flush=True)
p = read_pprof(out)
per = {"reuse_a": [0, 0, 0], "reuse_b": [0, 0, 0]}   # own, other, unresolved
for s in p["samples"]:
    name = s["labels"].get("thread_name")
    if s["labels"].get("pid") != P or name not in per or not s["locs"]:
        continue
    m = p["mappings"].get(p["locations"][s["locs"][0]][0])
    other = "reuse_b" if name == "reuse_a" else "reuse_a"
    if m is None:
        per[name][2] += s["values"][0]
    elif m["file"] == path[name] and m["build_id"] == bid[name]:
        per[name][0] += s["values"][0]
    elif m["file"] == path[other] or m["build_id"] == bid[other]:
        per[name][1] += s["values"][0]
print("samples at pid %d: %s (own, other's, unresolved)" % (P, per), flush=True)
for name in ("reuse_a", "reuse_b"):
    own, other, unres = per[name]
    check(own >= 50, "%s: %d samples at pid %d resolve to its own binary and build id"
          % (name, own, P))
    check(other == 0, "%s: no sample resolves to the other binary that had the pid" % name)
