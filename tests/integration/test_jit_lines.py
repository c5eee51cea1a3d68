#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""JIT frames from a jitdump's DEBUG_INFO line table get file:line (root).

fixtures/jit_lines generates x86-64 code at run time in anonymous
executable memory, writes DIR/jit-PID.dump (a DEBUG_INFO table of six rows
over three hot regions, two files, before the code's LOAD) and maps the
dump's first page executable, then runs the code.  `spanprof record -p`
samples it (real BPF); then:
  - the summary counts the table and its six rows shipped, nothing refused;
  - after `spanprof-symbolizer file`, every JIT leaf in the [jitdump]
    mapping is named jit:gen_hot and carries the file:line of the row
    covering its address (computed here from the rows the fixture wrote:
    the last row at or below the address), and the hot rows all have
    samples (so the test sees more than one row);
  - go tool pprof -lines (an independent reader) shows those file:lines;
  - `spanprof-symbolizer report` names the frame with a file hint of the
    table.
Exit 0 pass, 77 skip, else fail.
"""
import collections
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import spt  # noqa: E402
from spt import check, fail  # noqa: E402
from lib import perfcmp  # noqa: E402

FIXTURE = os.path.join(spt.BUILD, "fixtures", "jit_lines")
SYM = os.path.join(spt.BUILD, "spanprof-symbolizer")
NAME = "jit:gen_hot"


def start_fixture(d):
    p = subprocess.Popen([FIXTURE, d, "60"], stdout=subprocess.PIPE, text=True)
    code, rows = None, []
    for line in p.stdout:
        w = line.split()
        if w[0] == "code":
            code = (int(w[1], 16), int(w[2], 16))
        elif w[0] == "row":
            rows.append((int(w[1], 16), w[2], int(w[3])))
        elif w[0] == "ready":
            break
    if not code or len(rows) != 6:
        p.kill()
        fail("jit_lines did not describe its code (code %s, rows %s, rc %s)"
             % (code, rows, p.poll()))
    return p, code, rows


def covering(rows, off):
    """The row the fixture wrote that covers offset off: the last at or
    below it."""
    best = None
    for r in sorted(rows):
        if r[0] <= off:
            best = r
    return best


def main():
    spt.require_root()
    if not os.path.exists(FIXTURE):
        fail("%s is not built: make" % FIXTURE)
    d = spt.tmpdir()
    fx, (code, size), rows = start_fixture(d)
    out, js = os.path.join(d, "jit.pb.gz"), os.path.join(d, "summary.json")
    try:
        _, _, err = spt.record(["-F", "199", "-p", str(fx.pid), "-d", "4", "-o", out,
                                "--summary-json", js], timeout=120)
    finally:
        fx.kill()
        fx.wait()
    j = spt.load_json(js)["jit"]
    print("summary jit: %s" % dict((k, v) for k, v in j.items() if k.startswith("jitdump")))
    check(j["jitdump_checks"] > 0 and j["jitdump_loads"] == 1,
          "record read the fixture's jitdump (%d checks, %d loads)"
          % (j["jitdump_checks"], j["jitdump_loads"]))
    check(j["jitdump_line_tables"] == 1 and j["jitdump_line_rows"] == 6,
          "the line table and its 6 rows were shipped (%d tables, %d rows)"
          % (j["jitdump_line_tables"], j["jitdump_line_rows"]))
    dropped = (j["jitdump_debug_unused"], j["jitdump_debug_bad"], j["jitdump_debug_too_big"],
               j["jitdump_debug_rows_out"])
    check(dropped == (0, 0, 0, 0), "nothing of the table refused (unused, bad, too big, "
          "rows outside: %s)" % (dropped,))
    check("line tables 1 (6 rows)" in err, "the record summary shows the line tables")

    sym = os.path.join(d, "jit.sym.pb.gz")
    p = subprocess.run([SYM, "file", out, "-o", sym], capture_output=True, text=True,
                       timeout=300)
    if p.returncode:
        fail("spanprof-symbolizer file failed: %s" % p.stderr)
    print(p.stderr.strip())

    per_row = collections.Counter()
    good, bad = 0, []
    for mfile, addr, lines, n in perfcmp.pprof_leaf_lines(sym):
        if mfile != "[jitdump]":
            continue
        if not code <= addr < code + size:
            bad.append(("outside the code", hex(addr), lines))
            continue
        want = covering(rows, addr - code)
        got = lines[0] if len(lines) == 1 else None
        if got and got[0] == NAME and got[1] == want[1] and got[3] == want[2]:
            good += n
            per_row[want] += n
            # the function's own line: the code's first row, when of its file
            first = rows[0][2] if want[1] == rows[0][1] else 0
            if got[2] != first:
                bad.append(("start line", hex(addr), got, first))
        else:
            bad.append(("line", hex(addr), lines, want))
    print("JIT leaves with the covering row's file:line: %d; per row %s; wrong: %s"
          % (good, dict(per_row), bad[:5]))
    check(not bad, "every JIT leaf has the file:line of the row covering its address "
          "(%d wrong: %s)" % (len(bad), bad[:3]))
    check(good >= 30, "enough JIT leaves sampled (%d)" % good)
    hot = [r for r in rows if r[2] in (21, 22, 305)]
    check(all(per_row[r] > 0 for r in hot),
          "each of the three hot rows has samples (%s)" % [(r, per_row[r]) for r in hot])

    env = dict(os.environ, HOME=d, PPROF_TMPDIR=d)
    top = subprocess.run(["go", "tool", "pprof", "-symbolize=none", "-lines", "-top", sym],
                         capture_output=True, text=True, timeout=120, env=env)
    print(top.stdout[:1200])
    for f, line in (("gen_hot.src", 21), ("gen_hot.src", 22), ("inlined.src", 305)):
        check(top.returncode == 0 and ("%s:%d" % (f, line)) in top.stdout,
              "go tool pprof -lines shows %s %s:%d" % (NAME, f, line))

    rep = subprocess.run([SYM, "report", sym, "--top", "20"], capture_output=True, text=True,
                         timeout=120)
    print(rep.stdout[:1500])
    check(rep.returncode == 0 and ("%s (gen_hot.src:10)" % NAME in rep.stdout or
                                   "%s (inlined.src)" % NAME in rep.stdout),
          "the report names %s with its table's file:line" % NAME)
    shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
