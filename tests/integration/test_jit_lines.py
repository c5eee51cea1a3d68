#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""JIT frames from a jitdump's DEBUG_INFO line table get file:line (root).

fixtures/jit_lines generates x86-64 code at run time in anonymous
executable memory, writes DIR/jit-PID.dump (a DEBUG_INFO table of six rows
over three hot regions, two files, before the code's LOAD) and maps the
dump's first page executable, then runs the code (a seventh row lies past
the code: the collector drops it).

1. `spanprof record -p` samples it (real BPF); then:
  - the summary counts the table and its six rows shipped, the row past
    the code dropped, nothing else refused;
  - after `spanprof-symbolizer file`, every JIT leaf in the [jitdump]
    mapping is named jit:gen_hot and carries the file:line of the row
    covering its address (computed here from the rows the fixture wrote:
    the last row at or below the address), and the hot rows all have
    samples (so the test sees more than one row);
  - go tool pprof -lines (an independent reader) shows those file:lines;
  - `spanprof-symbolizer report` names the frame with a file hint of the
    table.
2. agent -> serve (as nobody, sharing no file with the agent), the agent
   selecting the fixture's executable only: the agent's /metrics counts the table, its rows and the dropped row by reason; the
   OTLP profiles serve writes carry the covering row's file:line on every
   JIT leaf.
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
from lib.otlp import read_otlp  # noqa: E402
from agent_util import Agent, StoreServe, exported_after_upload, otlp_files, wait_for  # noqa: E402

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


def part_record(d):
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
    check(dropped == (0, 0, 0, 1), "the row past the code dropped, nothing else refused "
          "(unused, bad, too big, rows outside: %s)" % (dropped,))
    check("line tables 1 (6 rows)" in err and "rows outside the code 1" in err,
          "the record summary shows the line tables and the dropped row")

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


def part_agent(d):
    srv = StoreServe(d)
    fx, (code, size), rows = start_fixture(d)
    agent = None
    try:
        # only the fixture: other processes on the machine may have jitdumps
        agent = Agent(["--endpoint", "http://127.0.0.1:%d" % srv.port, "--upload-symbols",
                       "--interval", "1", "--jitter", "0", "-F", "97",
                       "--select-exe", FIXTURE], d)
        wait_for(lambda: agent.metrics().sum("spanprof_jitdump_line_tables_total") >= 1, 30,
                 what="the agent to ship the fixture's line table")
        exported_after_upload(agent, srv, "jit", 2)
        m = agent.metrics()
        rc, _ = agent.stop()
        check(rc == 0, "agent exited 0")
    finally:
        if agent:
            agent.kill()
        fx.kill()
        fx.wait()
    JD = "spanprof_jitdump_refused_total"
    got = (m.get1("spanprof_jitdump_line_tables_total"),
           m.get1("spanprof_jitdump_line_rows_total"),
           m.get1(JD, reason="line_row_outside_code"),
           m.get1(JD, reason="line_table_unused"), m.get1(JD, reason="line_table_bad"),
           m.get1(JD, reason="line_table_too_big"))
    check(got == (1, 6, 1, 0, 0, 0), "the agent's /metrics: 1 table, 6 rows, 1 row outside "
          "the code, nothing else refused (%s)" % (got,))
    log = srv.stop()
    good, unnamed, bad = 0, 0, []
    for f in otlp_files(srv.out):
        for s in read_otlp(f):
            if s["kind"] != "samples" or not s["stack"] or s["stack"][0][0] != "[jitdump]":
                continue
            if not s["funcs"][0]:
                unnamed += s["count"]	# exported before serve had the pieces
                continue
            addr = s["stack"][0][2]
            want = covering(rows, addr - code) if code <= addr < code + size else None
            if want and s["funcs"][0] == NAME and s["lines"][0] == (want[1], want[2]):
                good += s["count"]
            else:
                bad.append((hex(addr), s["funcs"][0], s["lines"][0], want))
    if bad or not good:
        print(log[-2000:])
    check(good >= 10 and not bad,
          "serve's OTLP profiles carry the covering row's file:line on every named JIT leaf "
          "(%d samples right, %d unnamed, wrong: %s)" % (good, unnamed, bad[:3]))
    srv.cleanup()


def main():
    spt.require_root()
    if not os.path.exists(FIXTURE):
        fail("%s is not built: make" % FIXTURE)
    d = spt.tmpdir()
    part_record(d)
    part_agent(d)
    shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
