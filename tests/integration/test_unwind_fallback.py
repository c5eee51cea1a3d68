"""A kernel that refuses the .eh_frame unwinder still gets stacks (issue 12).

A 6.18 kernel build refused the stack-walking programs at the verifier's
limit (docs/reliability.md, finding 8): record and agent could not start at
all. Now, when the default unwinder is refused with E2BIG, the pipeline
says so in one line and loads the frame-pointer walker instead; asked for
by name (--unwind dwarf) the refusal stays an error.

Such a kernel cannot be had on demand: SPANPROF_TEST_REFUSE_DWARF=1 makes
the sampler fail the load with the kernel's E2BIG before it loads (a test
knob, src/collector/pipeline/bpf_sampler.c); the fallback's own load is a
real one. Checked:
  1. with the knob: exit 0, the one line, summary "mode": "fp" with
     "fallback": true, samples with user stacks;
  2. with the knob and --unwind dwarf: non-zero exit, one line naming the
     refused program, no fallback;
  3. without the knob: "mode": "dwarf", "fallback": false.
"""
import os

from spt import *

require_root()
d = tmpdir()
BUSY = ["--", "sh", "-c", "i=0; while [ $i -lt 400000 ]; do i=$((i+1)); done"]


def run(extra, refuse):
    js = os.path.join(d, "s.json")
    if os.path.exists(js):
        os.unlink(js)
    cmd = RECORD + ["-F", "499", "-o", os.path.join(d, "p.pb.gz"), "--summary-json", js] + extra + BUSY
    env = dict(os.environ)
    if refuse:
        env["SPANPROF_TEST_REFUSE_DWARF"] = "1"
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
    return p, (load_json(js) if os.path.exists(js) else None)


p, j = run([], True)
lines = [l for l in p.stderr.splitlines() if "falling back to --unwind fp" in l]
check(p.returncode == 0, "refused unwinder: record still ran (rc %d) %s" % (p.returncode,
                                                                            p.stderr[-300:]))
check(len(lines) == 1 and "too complex" in lines[0],
      "one line says why and what it fell back to: %s" % (lines[:1],))
check(j["unwind"]["mode"] == "fp" and j["unwind"]["fallback"] is True,
      "summary: mode %s, fallback %s" % (j["unwind"]["mode"], j["unwind"]["fallback"]))
check(j["unwind"]["walked"] > 20 and j["unwind"]["frames"] >= j["unwind"]["walked"],
      "user stacks walked by frame pointer: %d stacks, %d frames"
      % (j["unwind"]["walked"], j["unwind"]["frames"]))

p, j = run(["--unwind", "dwarf"], True)
err = [l for l in p.stderr.splitlines() if l.strip()]
check(p.returncode != 0, "--unwind dwarf refused: non-zero exit (rc %d)" % p.returncode)
check(any("sp_oncpu is too complex" in l for l in err) and
      not any("falling back" in l for l in err),
      "--unwind dwarf refused: the error names the program, no fallback: %s" % err[-1:])

p, j = run([], False)
check(p.returncode == 0 and j["unwind"]["mode"] == "dwarf" and j["unwind"]["fallback"] is False,
      "without the refusal: mode %s, fallback %s" % (j["unwind"]["mode"], j["unwind"]["fallback"]))
