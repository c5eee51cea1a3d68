"""Where user stacks end, provoked for real (issue 12), real BPF.

  - build/fixtures/unw_ends (no call frame information, stepped by frame
    pointer): its frame record's return address is 0xdead000000000000
    (noncanon) or the address of a global variable (notexec).  The stack
    ends at the spinning leaf, counted by reason (unwind.end_noncanonical,
    unwind.end_not_executable), and the value is never emitted: every
    sample with that leaf has exactly one frame, no kernel frame, and no
    user frame of the profile lies outside the process's executable
    mappings (consumer.frames_unresolved = 0).
  - unw_misc deep: a recursion 200 deep (CFI, no frame pointers) is cut at
    127 user frames, flagged truncated (unwind.end_truncated,
    consumer.ustack_truncated).
  - unw_misc syscall: read() of /dev/zero in a loop, most samples in kernel
    mode: the user part still has the whole chain read <- sys_loop <- main
    (user registers from the task's pt_regs, the interrupted pc looked up
    exactly), after the kernel frames.

Read back with go tool pprof (names from the binaries' symbol tables) and
the raw profile (spt.read_pprof).
"""
import os

from spt import *

require_root()
FIX = os.path.join(BUILD, "fixtures")


def run(name, args):
    d = tmpdir()
    out = os.path.join(d, name + ".pb.gz")
    js = os.path.join(d, name + ".json")
    record(["-F", "199", "-o", out, "--summary-json", js, "--", os.path.join(FIX, name)] + args)
    return out, pprof_traces(out), load_json(js)


# 1. values that are no code of the process end the stack, never emitted
for mode, key in (("noncanon", "end_noncanonical"), ("notexec", "end_not_executable")):
    out, tr, j = run("unw_ends", [mode, "1.2"])
    u, c = j["unwind"], j["consumer"]
    spin = [(w, fr) for w, fr in tr if fr and fr[0] == "spin_frame"]
    n = sum(w for w, _ in spin)
    alone = sum(w for w, fr in spin if len(fr) == 1)
    check(n >= 500, "%s: %.0f ms of samples in spin_frame" % (mode, n))
    check(alone == n, "%s: every spin_frame stack is that one frame (%.0f of %.0f ms)"
          % (mode, alone, n))
    check(u[key] >= 0.8 * u["walked"], "%s: %d of %d user stacks ended by %s"
          % (mode, u[key], u["walked"], key))
    check(c["frames_unresolved"] == 0, "%s: no user frame outside an executable mapping (%d)"
          % (mode, c["frames_unresolved"]))
    raw = read_pprof(out)
    bad = 0xdead000000000000
    check(all(a != bad for _, a in raw["locations"].values()), "%s: %#x is in no location" % (mode, bad))
    kern = [m for m, d in raw["mappings"].items() if d["file"].startswith("[kernel")]
    in_k = sum(1 for s in raw["samples"] if any(raw["locations"][l][0] in kern for l in s["locs"]))
    check(in_k <= 0.05 * len(raw["samples"]), "%s: kernel frames in %d of %d samples (user-mode spin)"
          % (mode, in_k, len(raw["samples"])))

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
    c = chain_after(fr, "sys_loop")
    if c is None:
        continue
    n += w
    # kernel frames first (unnamed or named by pprof), then libc's read, then ours
    if c == (["sys_loop", "main"], 3):
        ok += w
check(n >= 500, "syscall: %.0f ms of samples under sys_loop" % n)
check(ok >= 0.95 * n, "syscall: ... <- sys_loop <- main <- 3 frames in %.0f of %.0f ms" % (ok, n))
