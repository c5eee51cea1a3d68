"""Disk full for the output files of `spanprof record`.

A tiny tmpfs in a private mount namespace (unshare --mount) is the -o
target:
1. full, new output file: record refuses at once, before recording
   anything (its first space reservation fails), exits non-zero with
   "cannot write FILE: No space left on device" and leaves no file behind
   (the temporary file it created is removed: nothing claims success).
2. full, an existing output file with content: record exits non-zero with
   the same message, and the file keeps its previous content (the profile
   is written to FILE.tmp.PID and renamed over FILE only when complete; the
   temporary file is removed on failure).
(A disk that fills up mid-recording: test_record_lifecycle.py.)
3. room for the profile but not for the kernel symbol snapshot
   (FILE.kallsyms.gz, only the symbols the profile's kernel frames need,
   a few KB: the file system is made to hold one file, nr_inodes=2, so the
   snapshot's temporary file cannot be created; the command ends with a
   burst of kernel work, dd from /dev/zero, so the profile has kernel
   frames): record succeeds (the profile is complete without it), prints
   a note naming the snapshot, and leaves no temporary file behind.
The agent's rotating files on a full tmpfs: tests/unit/test_export_files.c.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from spt import SPANPROF, check, fail, read_pprof, require_root, tmpdir  # noqa: E402
from fault_util import in_private_mounts, spin_variant  # noqa: E402

require_root()
d = tmpdir()
spin = spin_variant(d, 8, "filler")
full = os.path.join(d, "full")
half = os.path.join(d, "half")
keep = os.path.join(d, "keep")
os.makedirs(full)
os.makedirs(half)
os.makedirs(keep)
rec = "%s record --no-report -q -F 97 -d 1" % SPANPROF
script = """
set -u
mount -t tmpfs -o size=64k tmpfs {full} || exit 90
mount -t tmpfs -o size=256k,nr_inodes=2 tmpfs {half} || exit 90
dd if=/dev/zero of={full}/fill bs=4k 2>/dev/null
{rec} --no-kernel -o {full}/new.pb.gz -- {spin} 500 2>{keep}/a.err; echo $? > {keep}/a.rc
ls -1 {full} > {keep}/a.ls
rm {full}/fill; printf 'previous profile' > {full}/old.pb.gz
dd if=/dev/zero of={full}/fill bs=4k 2>/dev/null
{rec} --no-kernel -o {full}/old.pb.gz -- {spin} 500 2>{keep}/b.err; echo $? > {keep}/b.rc
ls -1 {full} > {keep}/b.ls
cp {full}/old.pb.gz {keep}/b.old
{rec} -o {half}/p.pb.gz -- sh -c '{spin} 500; dd if=/dev/zero of=/dev/null bs=1M count=2000 2>/dev/null' 2>{keep}/c.err; echo $? > {keep}/c.rc
ls -1 {half} > {keep}/c.ls
cp {half}/p.pb.gz {keep}/c.pb.gz
""".format(full=full, half=half, keep=keep, rec=rec, spin=spin)
in_private_mounts(script, 90, "the disk-full runs")


def res(tag):
    rd = lambda ext: open(os.path.join(keep, "%s.%s" % (tag, ext))).read()
    return int(rd("rc")), rd("err"), rd("ls").split()


rc, err, ls = res("a")
print("1:", rc, err, ls, flush=True)
target = os.path.join(full, "new.pb.gz")
check(rc != 0, "1: full filesystem, new file: record exits non-zero (rc=%d)" % rc)
check("cannot write %s: No space left on device" % target in err,
      "1: the message says the file cannot be written: No space left on device")
check("new.pb.gz" not in ls, "1: no file is left behind (%s)" % ls)

rc, err, ls = res("b")
print("2:", rc, err, ls, flush=True)
check(rc != 0, "2: full filesystem, existing file: record exits non-zero (rc=%d)" % rc)
check("cannot write %s: No space left on device" % os.path.join(full, "old.pb.gz") in err,
      "2: the message says the file cannot be written: No space left on device")
check("old.pb.gz" in ls, "2: the existing file is not removed (%s)" % ls)
check(open(os.path.join(keep, "b.old")).read() == "previous profile",
      "2: and keeps its previous content (written to a temporary file, renamed only when complete)")
check(sorted(ls) == ["fill", "old.pb.gz"], "2: no temporary file is left behind (%s)" % ls)

rc, err, ls = res("c")
print("3:", rc, err, ls, flush=True)
check(rc == 0, "3: room for the profile only: record succeeds (rc=%d)" % rc)
check("no kernel symbol snapshot" in err, "3: a note says the kernel symbol snapshot is missing")
check("No space left on device" in err and "Input/output error" not in err,
      "3: the note names the cause, No space left on device (%s)"
      % [l for l in err.splitlines() if "kernel symbol snapshot" in l])
check(ls == ["p.pb.gz"], "3: only the profile is left, no temporary snapshot file (%s)" % ls)
n = sum(s["values"][0] for s in read_pprof(os.path.join(keep, "c.pb.gz"))["samples"]
        if s["labels"].get("thread_name") == "filler")
check(n >= 20, "3: the profile is complete (%d samples of the fixture)" % n)
