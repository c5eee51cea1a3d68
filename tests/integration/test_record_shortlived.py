"""A burst of 200 processes living 20-50 ms each, recorded twice: as a
command (each image's maps read at its exec event) and with -a around the
command (the whole host: lazy exec reads, each image's maps read at its
first sample, proc_table.h).

Their samples must resolve to the right mapping (the fixture binary, with
its build id), not to "unknown", both ways: the collector reads
/proc/PID/maps while the process is still alive.  With -a the exec reads
are counted (deferred = read at the first sample + never needed +
pending), and so are the samples of a process gone before its maps were
read, by reason.  With -a no drain follows an exec: an unread image's
first sample wakes the collector itself (counted: wakeups_unread).
"""
import os

from spt import *

require_root()
d = tmpdir()
fixture = os.path.join(BUILD, "fixtures", "shortlived")
# Two lanes of 100 sequential processes each, 20..50 ms of CPU apiece.
script = ("lane() { i=0; while [ $i -lt 100 ]; do %s $((20 + (i * 7 + $1) %% 31)); i=$((i+1)); done; }; "
          "lane 0 & lane 3 & wait" % fixture)
bid = read_buildid(fixture)


def burst(name, extra):
    out = os.path.join(d, name + ".pb.gz")
    js = os.path.join(d, name + ".json")
    record(["-F", "97", "-o", out, "--summary-json", js] + extra + ["--", "sh", "-c", script],
           timeout=180)
    return load_json(js), read_pprof(out)


def check_burst(name, j, p, root_min):
    ours = [s for s in p["samples"] if s["labels"].get("thread_name") == "shortlived"]
    pids = set(s["labels"]["pid"] for s in ours)
    print("%s: samples %d from %d processes; procs %s; consumer samples_unread %s"
          % (name, len(ours), len(pids), j["procs"], j["procs"].get("samples_unread")), flush=True)
    check(len(pids) >= 150, "%s: %d of 200 short-lived processes were sampled" % (name, len(pids)))

    def mapping_of(loc_id):
        mid, _ = p["locations"][loc_id]
        return p["mappings"].get(mid)

    # Every user frame of these processes is in the fixture, libc or ld.so;
    # the one exception is [vdso], anonymous memory that has no file (its
    # frame sits right above the kernel frames of a syscall).  A process
    # whose maps were read too early or too late would show unresolved
    # roots and libc frames.
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
    # Below 100%, by known causes, all counted (addr_unmapped,
    # samples_unread): samples taken inside execve, whose user registers
    # still belong to the old image; a process reaped before the consumer
    # re-read its maps after ld.so mapped libc (about 1% of such 20-50 ms
    # processes on a loaded 2-CPU VM); with lazy exec reads, one reaped
    # before its first sample was handled (its name is then read at exec).
    check(n > 0 and root_ok / n >= root_min, "%s: root frame resolved in %d of %d samples (>= %d%%; "
          "unmapped addresses counted: %d)" % (name, root_ok, n, root_min * 100,
                                               j["procs"]["addr_unmapped"]))
    check(not bad_bid, "%s: every mapping of the fixture carries its build id %s" % (name, bid))
    check(vdso_only_unresolved / n >= root_min,
          "%s: %d of %d samples have every user frame resolved, but a [vdso] frame at a syscall "
          "(>= %d%%)" % (name, vdso_only_unresolved, n, root_min * 100))
    check(with_fixture / n >= 0.90,
          "%s: %d of %d samples are in the fixture's own mapping (the rest: ld.so start-up, "
          "kernel)" % (name, with_fixture, n))


# With -a the consumer also drains the rest of the machine (other engineers'
# processes on a shared VM), so a burst process is more often reaped before
# its read is reached: 94.9-99.0% of roots and 95.6-99.3% of whole stacks
# resolved with lazy exec reads, 97.6-97.9% and 98.7-99.3% with
# --exec-maps eager, on this loaded 2-CPU VM (2026-12-02); the command
# keeps its 97%.
for name, extra, root_min in (("command", [], 0.97), ("whole host", ["-a"], 0.94)):
    j, p = burst(name.replace(" ", "_"), extra)
    check_burst(name, j, p, root_min)
    pr = j["procs"]
    deferred, later = pr["exec_reads_deferred"], pr["exec_reads_on_sample"] + pr["exec_reads_saved"]
    woke = j["bpf"]["wakeups_unread"]
    print("  %s: %d samples woke the collector for a process not read yet" % (name, woke))
    if name == "command":
        check(deferred == 0 and pr["exec_reads_learned"] == 0,
              "a command's images are read at their exec events (deferred %d)" % deferred)
        check(woke == 0, "a command's samples never wake the collector for an unread process "
              "(its exec events did the reads): %d did" % woke)
    else:
        # The fixture's first execs are deferred; once one is gone by its
        # first sample, its name is read at exec (learned).
        check(deferred > 0 and later <= deferred,
              "-a defers exec reads to the first sample: %d deferred, %d read then or never "
              "needed" % (deferred, later))
        # No 10 ms drains after each exec any more: the first sample of an
        # image not read yet wakes the collector (bpf/unwind.bpf.h), and
        # the resolution checked above depends on it.
        check(woke > 0, "-a: first samples of unread images woke the collector (%d)" % woke)
        check(pr["exec_reads_learned"] == 0 or pr["exec_names_learned"] > 0,
              "reads at exec by a learned name (%d) come from a name learned (%d)"
              % (pr["exec_reads_learned"], pr["exec_names_learned"]))
