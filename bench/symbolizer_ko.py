#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""symbolizer_ko.py - kernel modules' .ko debug files: spanprof-symbolizer
next to GNU addr2line on the same offsets in .text, same run.

  O=build python3 bench/symbolizer_ko.py [-n N] [--seed S] KO...

For each .ko (an ET_REL file with DWARF, e.g. from Debian's
linux-image-*-dbg: /usr/lib/debug/lib/modules/RELEASE/kernel/.../NAME.ko)
it draws N instruction offsets of .text (objdump -d -j .text, inside the
sized FUNC symbols of .text; seed S) and asks
  spanprof-symbolizer addr -e KO --text   (the offsets on stdin)
  addr2line -i -f -a -j .text -e KO       (binutils: BFD relocates itself)
then compares each chain (function, file base name, line; inlined frames
first).  Disagreements are split into "clone suffix only" (spanprof names
the out-of-line function by its ELF symbol, foo.isra.0, as llvm-symbolizer
and perf do; addr2line by its DWARF name) and the rest; the rest are
shown to eu-addr2line (elfutils: libdwfl relocates) as a third reader and
counted where it agrees with spanprof on every file:line.  Wall time and
peak RSS (/usr/bin/time) of both tools.  Not a test: it prints.
"""
import argparse
import os
import random
import re
import subprocess
import sys

BUILD = os.environ.get("O", "build")
SYM = os.path.join(BUILD, "spanprof-symbolizer")
CLONE = re.compile(r"\.(isra|constprop|part|cold)(\.\d+)*")


def out(cmd, stdin=None):
    return subprocess.run(cmd, input=stdin, capture_output=True, text=True, check=True).stdout


def text_offsets(ko):
    """.text's size and the instruction offsets in .text inside its sized
    FUNC symbols."""
    idx = size = None
    for line in out(["readelf", "-SW", ko]).splitlines():
        m = re.match(r"^\s*\[\s*(\d+)\]\s+\.text\s+\S+\s+[0-9a-f]+\s+[0-9a-f]+\s+([0-9a-f]+)",
                     line)
        if m:
            idx, size = m.group(1), int(m.group(2), 16)
    funcs = []
    for line in out(["readelf", "-sW", ko]).splitlines():
        f = line.split()
        if len(f) == 8 and f[3] == "FUNC" and f[6] == idx and int(f[2]):
            funcs.append((int(f[1], 16), int(f[2])))
    funcs.sort()
    offs = []
    for line in out(["objdump", "-d", "-j", ".text", "--no-show-raw-insn", ko]).splitlines():
        m = re.match(r"^\s*([0-9a-f]+):\s", line)
        if m:
            a = int(m.group(1), 16)
            if any(v <= a < v + n for v, n in funcs):
                offs.append(a)
    return size, offs


def timed(cmd, stdin):
    """stdout, wall seconds and peak RSS KiB of cmd."""
    r = subprocess.run(["/usr/bin/time", "-f", "TIME %e %M"] + cmd, input=stdin,
                       capture_output=True, text=True, check=True)
    t = [l for l in r.stderr.splitlines() if l.startswith("TIME ")][-1].split()
    return r.stdout, float(t[1]), int(t[2])


def where(s):
    s = re.sub(r" \(discriminator \d+\)$", "", s)
    m = re.match(r"^(.*?):(\d+)(?::\d+)?$", s)
    return (os.path.basename(m.group(1)), int(m.group(2))) if m else (os.path.basename(s), 0)


def unclone(chain):
    return [(CLONE.sub("", f), fl, ln) for f, fl, ln in chain]


def parse_a2l(text):
    res, cur, lines = {}, None, text.splitlines()
    i = 0
    while i < len(lines):
        if re.match(r"^0x[0-9a-f]+$", lines[i]):
            cur = int(lines[i], 16)
            res[cur] = []
            i += 1
            continue
        res[cur].append((lines[i],) + where(lines[i + 1]))
        i += 2
    return res


def parse_sym(text, offs):
    blocks = text.split("\n\n")
    res = {}
    for o, b in zip(offs, blocks):
        ls = b.strip("\n").splitlines()
        res[o] = [(ls[i],) + where(ls[i + 1]) for i in range(0, len(ls) - 1, 2)
                  if ls[i] != "??"]
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=3000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("ko", nargs="+")
    a = ap.parse_args()
    print("| module | file MB | .text KB | instructions | asked | same | clone suffix only "
          "| other (eu-addr2line agrees with spanprof) | spanprof s / RSS MiB "
          "| addr2line s / RSS MiB |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for ko in a.ko:
        size, offs = text_offsets(ko)
        random.seed(a.seed)
        pick = sorted(random.sample(offs, min(a.n, len(offs))))
        stdin = "".join("0x%x\n" % o for o in pick)
        so, st, sr = timed([SYM, "addr", "-e", ko, "--text", "--allow-root", "-q",
                            "--no-debuginfod"], stdin)
        ao, at, ar = timed(["addr2line", "-i", "-f", "-a", "-j", ".text", "-e", ko], stdin)
        ours, theirs = parse_sym(so, pick), parse_a2l(ao)
        diff = [o for o in pick if ours.get(o) != theirs.get(o)]
        other = [o for o in diff if unclone(ours.get(o, [])) != unclone(theirs.get(o, []))]
        eu_agree = 0
        for o in other:
            eu = out(["eu-addr2line", "-e", ko, "-i", "-f", "-j", ".text", hex(o)])
            eu_lines = [where(l) for l in eu.splitlines() if re.match(r"^\S+:\d+(:\d+)?$", l)]
            eu_agree += eu_lines == [(fl, ln) for _, fl, ln in ours.get(o, [])]
        print("| %s | %.1f | %.0f | %d | %d | %d | %d | %d (%d) | %.2f / %.1f | %.2f / %.1f |"
              % (os.path.basename(ko), os.path.getsize(ko) / 1e6, size / 1024, len(offs),
                 len(pick), len(pick) - len(diff), len(diff) - len(other), len(other),
                 eu_agree, st, sr / 1024, at, ar / 1024), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
