#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# spanprof-test: parallel (no BPF, no whole-machine sampling, no timing assertion)
"""A kernel module's .ko debug info is bounded by the symbolizer's
decoded-unit budget (--unit-budget MIB), as the rest of the debug info is.

libdwfl relocates every debug section of an ET_REL file when it opens it
(src/symbolizer/relobj.h): private pages of about the relocated sections'
size, held for the module's life.  The resolver says what that costs from
the section headers (each relocation section and its target) before
opening, pins it in the budget, and refuses the debug info when the pinned
bytes of all modules would pass the budget: the .ko is then laid out
without libdwfl and without any relocation, its frames named from its
symbols, the refusal counted.  Decoded units give way to pinned bytes (they
are evicted while the total is past the budget).

The fixture: a real module object built as kbuild links one (gcc -g -O2
-mcmodel=kernel ... -c, ld -r --build-id=sha1), 600 structures of 200
members each (DWARF types: ~2 MB of .debug_info, ~3 MB of its
relocations) and one function per structure in .text; a second module is
the same file with other build-id bytes.  The profile: one location per
function start of each ([module:bigmod], [module:bigmod2]).

1. The default budget (64 MiB): every bigmod frame has its DWARF line
   (file big.c), none refused; the statistics say the .ko holds its cost.
2. --unit-budget 1 (less than the module's debug info): every frame still
   named from the .ko's symbols ("big_fnN [bigmod]", no file), counted
   "no line" and "refused 1" with its cost; peak RSS (GNU time) within a
   quarter of the cost of that of a run given the same .ko without its
   debug info (strip --strip-debug: the same names from the same
   symbols), while step 1's is above it by at least half the cost (what
   the measurement can see).
3. Both modules, --unit-budget 8 (one module's cost fits, not two): the
   first module asked has lines, the other is named from symbols, refused
   1, the budget held never above 8 MiB.
On main (no budget for .ko debug info, no --unit-budget) step 2 fails.
Exit 0 pass, 77 skip, else fail.
"""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_symbolizer_cli as cli  # noqa: E402
import test_symbolizer_kmod as km  # noqa: E402
from lib import symtest  # noqa: E402
from lib.symtest import check, fail  # noqa: E402

N_STRUCTS, N_MEMBERS = 600, 200
BID2 = "5e" * 20
TIME = "/usr/bin/time"		# GNU time (Debian's time, scripts/deps.sh)


def big_c():
    out = []
    for i in range(N_STRUCTS):
        out.append("struct big_s%d { %s };\nstruct big_s%d big_v%d;\n"
                   "int big_fn%d(struct big_s%d *s, int x) { return s->m%d_0 + x * %d; }\n" %
                   (i, " ".join("int m%d_%d;" % (i, j) for j in range(N_MEMBERS)),
                    i, i, i, i, i, i + 1))
    return "\n".join(out)


def build(td):
    src = os.path.join(td, "big.c")
    with open(src, "w") as f:
        f.write(big_c())
    obj, ko = os.path.join(td, "big.o"), os.path.join(td, "bigmod.ko")
    km.run(["gcc", "-g", "-O2", "-mcmodel=kernel", "-fno-pic", "-fno-pie", "-ffreestanding",
            "-c", src, "-o", obj])
    km.run(["ld", "-r", "--build-id=sha1", "-o", ko, obj])
    bid = cli.build_id(ko)
    data = open(ko, "rb").read()
    if data.count(bytes.fromhex(bid)) != 1:
        fail("the build id's bytes are not unique in bigmod.ko")
    ko2 = os.path.join(td, "bigmod2.ko")
    with open(ko2, "wb") as f:
        f.write(data.replace(bytes.fromhex(bid), bytes.fromhex(BID2)))
    return ko, bid, ko2


def relocated_bytes(ko):
    """What the symbolizer charges (relobj.h), computed here from readelf:
    every relocation section's size plus its target's."""
    secs = km.sections(ko)
    by_idx = {i: (n, sz) for n, (i, _, sz) in secs.items()}
    tot = 0
    for line in km.run(["readelf", "-SW", ko]).splitlines():
        m = re.match(r"^\s*\[\s*(\d+)\]\s+(\S+)\s+(RELA?)\s+[0-9a-f]+\s+[0-9a-f]+\s+"
                     r"([0-9a-f]+)\s+[0-9a-f]+\s+\S*\s+(\d+)\s+(\d+)", line)
        if m:
            tgt = by_idx.get(int(m.group(6)), ("", 0))
            tot += int(m.group(4), 16) + tgt[1]
    return tot


def symbolize(td, prof, dbg, extra):
    """(chains, stderr, peak RSS in bytes) of `file` on prof."""
    out, rss = os.path.join(td, "out.pb"), os.path.join(td, "rss")
    # GNU time forks the symbolizer from itself: a child of this Python
    # would carry Python's own peak RSS across exec (ru_maxrss)
    p = subprocess.run([TIME, "-f", "%M", "-o", rss, cli.SYM, "file", prof, "-o", out,
                        "--debug-dir", dbg, "--no-debuginfod", "--allow-root"] + extra,
                       capture_output=True, text=True)
    if p.returncode:
        fail("spanprof-symbolizer file %s: rc %d: %s" % (" ".join(extra), p.returncode,
                                                          p.stderr[-600:]))
    return km.chains(out), p.stderr, int(open(rss).read().split()[-1]) * 1024


def ko_line(err):
    """(bytes held, refused, refused bytes) from the statistics."""
    m = re.search(r"module debug info \(\.ko\) holding (\d+) bytes of the unit budget; "
                  r"refused (\d+) \((\d+) bytes", err)
    return tuple(int(x) for x in m.groups()) if m else None


def units_line(err):
    m = re.search(r"units decoded \d+ evicted \d+ holding (\d+)/(\d+) bytes", err)
    return tuple(int(x) for x in m.groups()) if m else None


def steps(td):
    ko, bid, ko2 = build(td)
    secs = km.sections(ko)
    funcs = km.functions(ko, secs[".text"][0])
    cost = relocated_bytes(ko)
    check(len(funcs) == N_STRUCTS and ".rela.debug_info" in secs and cost > (3 << 20),
          "bigmod.ko: %d functions in .text, %d bytes of relocated sections (> 3 MiB)" %
          (len(funcs), cost))
    starts = sorted((v, n) for n, (v, _) in funcs.items())
    dbg = os.path.join(td, "dbg")
    km.place(dbg, bid, ko)
    km.place(dbg, BID2, ko2)

    # one.pb: bigmod's frames; two.pb: then bigmod2's
    p = cli.Pprof()
    one, two = os.path.join(td, "one.pb"), os.path.join(td, "two.pb")
    for path, mod, mbid in ((one, "bigmod", bid), (two, "bigmod2", BID2)):
        m = p.mapping(0, 0x1000000, 0, "[module:%s]" % mod, mbid)
        for v, _ in starts:
            p.sample([p.location(m, v)])
        with open(path, "wb") as f:
            f.write(p.encode())
    want_sym = {v: [(n + " [bigmod]", "", 0)] for v, n in starts}

    def lined(ch, mod, suffix):
        return [v for v, n in starts
                if (ch.get((mod, v)) or [("", "", 0)])[-1][:2] == (n + suffix, "big.c")]

    def by_symbol(ch, mod, suffix):
        return [v for v, n in starts if ch.get((mod, v)) == [(n + suffix, "", 0)]]

    # the baseline: the same .ko without its debug info (strip
    # --strip-debug), so the same frames named from the same symbols
    stripped = os.path.join(td, "bigmod-nodebug.ko")
    km.run(["strip", "--strip-debug", "-o", stripped, ko])
    sdbg = os.path.join(td, "dbg-stripped")
    km.place(sdbg, bid, stripped)
    _, _, rss_none = symbolize(td, one, sdbg, [])

    # 1. the default budget
    ch, err, rss_full = symbolize(td, one, dbg, [])
    kl = ko_line(err)
    check(len(lined(ch, "[module:bigmod]", " [bigmod]")) == len(starts),
          "default budget: %d of %d frames with their DWARF line (big.c)" %
          (len(lined(ch, "[module:bigmod]", " [bigmod]")), len(starts)))
    check(kl is not None and kl[1] == 0 and kl[0] == cost,
          "default budget: the .ko holds %s bytes of the budget (readelf: %d), none refused"
          % (kl and kl[0], cost))

    # 2. a budget smaller than the module's debug info
    ch, err, rss_small = symbolize(td, one, dbg, ["--unit-budget", "1"])
    kl, ul, ml = ko_line(err), units_line(err), km.module_line(err)
    got = by_symbol(ch, "[module:bigmod]", " [bigmod]")
    check(len(got) == len(starts) and all(ch[("[module:bigmod]", v)] == w
                                          for v, w in want_sym.items()),
          "--unit-budget 1: %d of %d frames named from the .ko's symbols, no file" %
          (len(got), len(starts)))
    check(kl is not None and kl[0] == 0 and kl[1] == 1 and kl[2] == cost,
          "--unit-budget 1: refused 1 (%s bytes, readelf %d), nothing held (%s)" %
          (kl and kl[2], cost, kl))
    check(ml is not None and ml[3] == 0 and ml[6] == len(starts),
          "--unit-budget 1: counted %s 'no line', 0 from module debug info (%s)" %
          (ml and ml[6], ml))
    check(ul is not None and ul[0] <= ul[1] == (1 << 20),
          "--unit-budget 1: %s of %s budget bytes held" % (ul and ul[0], ul and ul[1]))
    print("peak RSS: debug-stripped .ko %.1f MiB, default budget %.1f MiB, --unit-budget 1 "
          "%.1f MiB (cost %.1f MiB)" % (rss_none / 2**20, rss_full / 2**20, rss_small / 2**20,
                                        cost / 2**20), flush=True)
    check(rss_full - rss_none >= cost // 2,
          "the measurement sees the debug info: default budget %.1f MiB above the "
          "stripped .ko "
          "(>= half the cost)" % ((rss_full - rss_none) / 2**20))
    check(rss_small - rss_none <= cost // 4,
          "memory bounded: --unit-budget 1 %.1f MiB above the stripped .ko (<= a quarter "
          "of the "
          "cost)" % ((rss_small - rss_none) / 2**20))

    # 3. two modules, room for one
    ch, err, _ = symbolize(td, two, dbg, ["--unit-budget", "8"])
    kl, ul = ko_line(err), units_line(err)
    l1, s1 = lined(ch, "[module:bigmod]", " [bigmod]"), by_symbol(ch, "[module:bigmod]",
                                                                 " [bigmod]")
    l2, s2 = lined(ch, "[module:bigmod2]", " [bigmod2]"), by_symbol(ch, "[module:bigmod2]",
                                                                   " [bigmod2]")
    check(len(l1) == len(starts) and len(s2) == len(starts) and not l2,
          "--unit-budget 8, two modules: bigmod %d/%d with lines, bigmod2 %d/%d from "
          "symbols (%d with lines)" % (len(l1), len(starts), len(s2), len(starts), len(l2)))
    check(kl is not None and kl[0] == cost and kl[1] == 1 and ul is not None and
          ul[0] <= ul[1] == (8 << 20),
          "--unit-budget 8: one .ko held (%s bytes), one refused (%s), %s of %s held" %
          (kl and kl[0], kl and kl[1], ul and ul[0], ul and ul[1]))
    del s1


def main():
    return symtest.run(steps, tools=("gcc", "ld", "readelf", "strip"), exes=(cli.SYM, TIME))


if __name__ == "__main__":
    sys.exit(main())
