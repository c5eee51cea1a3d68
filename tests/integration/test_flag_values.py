#!/usr/bin/env python3
# spanprof-test: parallel
# SPDX-License-Identifier: MIT
"""Every numeric flag of every subcommand refuses a bad value with one line.

The flags are taken from each command's own --help (every option whose
argument is written N, MS, SEC, S, MIB, BYTES, HZ, B or R), so a new flag is
covered without touching this test.  Each gets "abc", "-5" and a value
past 2^64; each must give exit 2 and exactly one line on stderr naming the
flag (or its short form) (no usage dump, no silent exit), and no run.  Parsing happens before
anything is loaded, so this needs no root and no BPF.
"""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from spt import BUILD, SPANPROF, check, tmpdir  # noqa: E402

SYM = os.path.join(BUILD, "spanprof-symbolizer")
d = tmpdir()
NUMERIC = {"N", "MS", "SEC", "S", "MIB", "BYTES", "HZ", "B", "R"}
OPT = re.compile(r"^\s+(?:(-\w), )?(--[a-z0-9-]+) ([A-Z]+)\b")

# command prefix, arguments making the rest valid (so only the flag is wrong)
COMMANDS = [
    ([SPANPROF, "record"], ["-d", "1", "-o", os.path.join(d, "r.pb.gz"), "--no-report"]),
    ([SPANPROF, "agent"], ["--output-dir", d]),
    ([SYM, "file"], [os.path.join(d, "none.pb.gz")]),
    ([SYM, "report"], [os.path.join(d, "none.pb.gz")]),
    ([SYM, "addr"], ["-e", "/bin/true", "0x1000"]),
    ([SYM, "serve"], ["--output-dir", d, "--listen", "127.0.0.1:0"]),
]
BAD = ["abc", "-5", "99999999999999999999999"]

total = 0
problems = []
for cmd, rest in COMMANDS:
    h = subprocess.run(cmd + ["--help"], capture_output=True, text=True, timeout=10)
    short = {}
    for m in map(OPT.match, (h.stdout + h.stderr).splitlines()):
        if m and m.group(3) in NUMERIC:
            short[m.group(2)] = m.group(1)
    flags = sorted(short)
    check(flags, "%s: numeric flags found in --help: %s" % (" ".join(cmd[1:]) or cmd[0], flags))
    for flag in flags:
        for v in BAD:
            total += 1
            try:
                p = subprocess.run(cmd + [flag, v] + rest, capture_output=True, text=True,
                                   timeout=10)
            except subprocess.TimeoutExpired:
                problems.append("%s %s %s: accepted (it ran)" % (cmd[-1], flag, v))
                continue
            lines = [l for l in p.stderr.splitlines() if l.strip()]
            # named as given, or by its short form (-F for --freq)
            named = flag in lines[0] if lines else False
            named = named or bool(short[flag] and lines and short[flag] + " " in lines[0])
            if p.returncode != 2 or len(lines) != 1 or not named:
                problems.append("%s %s %s: rc %d, %d lines: %r" % (
                    cmd[-1], flag, v, p.returncode, len(lines), p.stderr.strip()[:300]))
for pr in problems:
    print("  " + pr)
check(not problems, "%d bad values of every numeric flag: each one line naming the flag, "
      "exit 2 (%d problems)" % (total, len(problems)))
