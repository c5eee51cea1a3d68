"""Where user stacks end, provoked for real (issue 12), real BPF.

  - build/fixtures/unw_ends (no call frame information, stepped by frame
    pointer): its frame record's return address is 0xdead000000000000
    (noncanon) or the address of a global variable (notexec).  The stack
    ends at the spinning leaf, counted by reason (unwind.end_noncanonical,
    unwind.end_not_executable), and the value is never emitted: every
    sample with that leaf has exactly one frame, no kernel frame, and no
    user frame of the profile lies outside the process's executable
    mappings (consumer.frames_unresolved = 0): none is of record's forked
    child before its exec (whose image's maps no one can read afterwards),
    none of a late sample resolved against the zombie's empty maps.
  - unw_misc deep: a recursion 200 deep (CFI, no frame pointers) is cut at
    127 user frames, flagged truncated (unwind.end_truncated,
    consumer.ustack_truncated).
  - unw_misc syscall: read() of /dev/zero in a loop, most samples in kernel
    mode: the user part still has the whole chain read <- sys_loop <- main
    (user registers from the task's pt_regs, the interrupted pc looked up
    exactly), after the kernel frames.

Read back with go tool pprof (unw_misc has DWARF) and the raw profile
(spt.read_pprof; unw_ends has none: its code is found by address).
"""
import os
import re
import subprocess

from spt import *

require_root()
FIX = os.path.join(BUILD, "fixtures")


def run(name, args):
    d = tmpdir()
    out = os.path.join(d, name + ".pb.gz")
    js = os.path.join(d, name + ".json")
    record(["-F", "199", "-o", out, "--summary-json", js, "--", os.path.join(FIX, name)] + args)
    return out, pprof_traces(out), load_json(js)


# 1. values that are no code of the process end the stack, never emitted.
# unw_ends has no DWARF (that would bring a .debug_frame), so go tool pprof
# cannot name its code: spin_frame is found by address (nm, PT_LOAD).
EXE = os.path.join(FIX, "unw_ends")
m = re.search(r"^([0-9a-f]+) ([0-9a-f]+) T spin_frame$",
              subprocess.run(["nm", "-S", EXE], capture_output=True, text=True).stdout, re.M)
check(m is not None, "nm finds spin_frame in unw_ends")
spin_lo, spin_hi = int(m.group(1), 16), int(m.group(1), 16) + int(m.group(2), 16)
load = re.search(r"LOAD\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+\S+\s+\S+\s+\S+\s+R E",
                 subprocess.run(["readelf", "-lW", EXE], capture_output=True, text=True).stdout)
check(load is not None, "unw_ends has an executable PT_LOAD")
x_off, x_vaddr = int(load.group(1), 16), int(load.group(2), 16)


def in_spin(raw, loc):
    mid, addr = raw["locations"][loc]
    mp = raw["mappings"].get(mid)
    if not mp or not mp["file"].endswith("/unw_ends"):
        return False
    va = addr - mp["start"] + mp["offset"] - x_off + x_vaddr
    return spin_lo <= va < spin_hi


for mode, key in (("noncanon", "end_noncanonical"), ("notexec", "end_not_executable")):
    out, _, j = run("unw_ends", [mode, "1.2"])
    u, c = j["unwind"], j["consumer"]
    raw = read_pprof(out)
    spin = [s for s in raw["samples"] if s["locs"] and in_spin(raw, s["locs"][0])]
    n = sum(s["values"][0] for s in spin)
    alone = sum(s["values"][0] for s in spin if len(s["locs"]) == 1)
    check(n >= 100, "%s: %d samples in spin_frame" % (mode, n))
    check(alone == n, "%s: every spin_frame stack is that one frame (%d of %d samples)"
          % (mode, alone, n))
    check(u[key] >= 0.8 * u["walked"], "%s: %d of %d user stacks ended by %s"
          % (mode, u[key], u["walked"], key))
    check(c["frames_unresolved"] == 0, "%s: no user frame outside an executable mapping (%d)"
          % (mode, c["frames_unresolved"]))
    # the command is sampled from its exec on: never in record's own image
    pre = sum(s["values"][0] for s in raw["samples"]
              if (s.get("labels") or {}).get("thread_name") == "spanprof")
    check(pre == 0, "%s: no sample of the forked child before its exec (%d)" % (mode, pre))
    bad = 0xdead000000000000
    check(all(a != bad for _, a in raw["locations"].values()), "%s: %#x is in no location" % (mode, bad))
    kern = [k for k, d in raw["mappings"].items() if d["file"].startswith("[kernel")]
    in_k = sum(1 for s in spin if any(raw["locations"][l][0] in kern for l in s["locs"]))
    check(in_k == 0, "%s: no kernel frame in a user-mode spin_frame sample (%d)" % (mode, in_k))

# 2. truncation at 127 user frames, flagged
out, tr, j = run("unw_misc", ["deep", "1.5"])
u, c = j["unwind"], j["consumer"]
deep = [(w, fr) for w, fr in tr if fr and fr[0] == "prof_leaf"]
n = sum(w for w, _ in deep)
cut = sum(w for w, fr in deep if len(fr) == 127 and all(f == "deep_fn" for f in fr[1:]))
check(n >= 500, "deep: %.0f ms of samples in prof_leaf" % n)
check(cut >= 0.95 * n, "deep: prof_leaf + 126 deep_fn frames, nothing more, in %.0f of %.0f ms" % (cut, n))
check(u["end_truncated"] >= 0.8 * u["walked"] and c["ustack_truncated"] == u["end_truncated"],
      "deep: %d of %d stacks truncated (flagged: %d)" % (u["end_truncated"], u["walked"], c["ustack_truncated"]))

# 3. samples in kernel mode keep the user chain
out, tr, j = run("unw_misc", ["syscall", "1.5"])
raw = read_pprof(out)
kern = [m for m, d in raw["mappings"].items() if d["file"].startswith("[kernel")]
check(kern, "syscall: the profile has a kernel mapping (%s)" % sorted(d["file"] for d in raw["mappings"].values()))
n_k = sum(s["values"][0] for s in raw["samples"] if s["locs"] and raw["locations"][s["locs"][0]][0] in kern)
n_all = sum(s["values"][0] for s in raw["samples"])
check(n_k >= 0.5 * n_all, "syscall: %d of %d samples with a kernel leaf" % (n_k, n_all))
n = ok = 0.0
for w, fr in tr:
    if not fr[0].startswith("[[kernel"):
        continue
    n += w
    # kernel frames (unnamed here), libc's read, then ours up to the root
    if chain_after(fr, "sys_loop") == (["sys_loop", "main"], 3):
        ok += w
check(n >= 500, "syscall: %.0f ms of samples with a kernel leaf" % n)
check(ok >= 0.95 * n, "syscall: kernel <- libc <- sys_loop <- main <- 3 frames in %.0f of %.0f ms of "
      "kernel-mode samples" % (ok, n))
