"""Every BPF program stays well inside the verifier's budget (issue 12).

The verifier's work for one program is not fixed by its source: it
changed between two builds of the same 6.18 kernel, and on the second
sp_oncpu, sp_offcpu_switch and sp_go_park passed the 1M-instruction
limit (E2BIG: nothing loaded) while the first had verified them. With the
unwinder's step a global function (bpf/unwind.bpf.c) they take ~73,000.

spanprof record with SPANPROF_VERIFIER_STATS=1 prints each program's
statistics; for the whole-host default, off-CPU with goroutine parks
(every program that walks a user stack) and --unwind fp, every program
loads and processes at most a quarter of the limit, so a kernel whose
verifier costs a few times more still loads them.
"""
import os
import re

from spt import *

require_root()
LIMIT = 1000000
BUDGET = LIMIT // 4
STAT = re.compile(r"^spanprof: verifier: (\S+) (loaded|not loaded): processed (\d+) insns")

d = tmpdir()
seen = set()
for name, args in (("default", []),
                   ("off-CPU and goroutine parks", ["--off-cpu", "--off-cpu-goroutines"]),
                   ("--unwind fp", ["--unwind", "fp", "--off-cpu"])):
    out = os.path.join(d, "v.pb.gz")
    cmd = RECORD + ["-a", "-d", "0.2", "-o", out] + args
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, SPANPROF_VERIFIER_STATS="1"))
    stats = [STAT.match(l).groups() for l in p.stderr.splitlines() if STAT.match(l)]
    for prog, state, n in stats:
        print("  %s: %s %s, %s insns" % (name, prog, state, n))
    check(p.returncode == 0, "%s: record ran (rc %d)%s" % (
        name, p.returncode, "" if p.returncode == 0 else ": " + p.stderr.strip()[-400:]))
    check(stats and all(s == "loaded" for _, s, _ in stats),
          "%s: %d programs, every one loaded" % (name, len(stats)))
    worst = max(stats, key=lambda s: int(s[2]))
    check(int(worst[2]) <= BUDGET, "%s: the costliest, %s, took %s instructions (at most %d)"
          % (name, worst[0], worst[2], BUDGET))
    seen.update(prog for prog, _, _ in stats)
walkers = {"sp_oncpu", "sp_offcpu_switch", "sp_go_park"}
check(walkers <= seen, "every program that walks a user stack was verified: %s"
      % ", ".join(sorted(walkers)))
