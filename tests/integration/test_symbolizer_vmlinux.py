#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# spanprof-test: parallel (no BPF, no whole-machine sampling, no timing assertion)
"""Kernel frames named from vmlinux debug info found by build id.

No debug vmlinux exists for this machine's kernel, so the test builds one:
a few "kernel" functions in C (two always_inline helpers inlined twice into
a loop at -O2, callers below it) compiled as the kernel is
(gcc -g -O2 -mcmodel=kernel -fno-pic -fno-pie -ffreestanding -c) and linked
with ld at x86-64's usual link-time base (-Ttext=0xffffffff81000000, a
_text symbol at the start, --build-id=sha1, -nostdlib).  Real ELF, real
DWARF.

The profiles are pprof written here (test_symbolizer_cli's encoder) as the
collector writes kernel frames (docs/formats.md "Kernel frames"): one
[kernel.kallsyms] mapping carrying the ELF's build id, memory_start = the
link-time _text, locations = memory_start + offset from _text - one per
instruction of every function.

1. --debug-dir D with D/.build-id/ab/cdef....debug = the ELF: every location
   gets the whole inlined chain (function, file, line, callee first) that
   llvm-symbolizer --inlining gives for the ELF's address _text + offset;
   some locations are 3 frames deep (mix in twice in copy_page_fake); the
   statistics count every location as resolved from vmlinux debug info.
2. The same offsets under another memory_start (a collector that derived
   another link-time base): the same chains - the symbolizer adds the
   offset to vmlinux's own _text, it never assumes a base.
   The same vmlinux where Debian's and Fedora's debug packages install it,
   with no .build-id link: --debug-dir D with D/lib/modules/RELEASE/vmlinux,
   then D/boot/vmlinux-RELEASE: found by name, the same chains.
3. The ELF removed, a kallsyms snapshot of that build id given (runtime
   addresses with a KASLR slide, written by test_symbolizer_kernel's
   independent writer): the same profile falls back to names only, one
   frame per location, the nm symbol covering the address, no file or line;
   counted as resolved, none from vmlinux.
   A [module:NAME] frame of a pprof profile (offset in the module's .text)
   is named from the snapshot's module of that build id, "fn [NAME]".
4. Neither: every kernel frame unresolved, counted as "no snapshot".
5. report (as root: drops to nobody, who must read the debug dir) names the
   inlined helper mix with the vmlinux.
6. The vmlinux served by a real debuginfod (in a private network namespace,
   as test_symbolizer_debuginfod.py runs it), an empty --debug-dir: the
   same chains as 1, the file fetched once (found_debuginfod 1).
Exit 0 pass, 77 skip, else fail.
"""
import gzip
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_symbolizer_cli as cli  # noqa: E402
import test_symbolizer_debuginfod as td_dbgd  # noqa: E402
import test_symbolizer_kernel as tk  # noqa: E402
import test_symbolizer_llvm as tl  # noqa: E402
from lib import symtest  # noqa: E402
from lib.symtest import check, fail  # noqa: E402

LINK_TEXT = 0xffffffff81000000      # __START_KERNEL without CONFIG_PHYSICAL_START
OTHER_START = 0xffffffff82000000    # a base another collector may have derived
SLIDE = 0x2a400000                  # the snapshot's boot: runtime = link + slide
MOD_TEXT = 0xffffffffc0a00000       # a module's .text in the snapshot's boot

KERNEL_C = r"""
/* _text first in the image, as the kernel's linker script places it
 * (-fno-toplevel-reorder keeps this before the functions) */
__asm__(".text\n"
	".globl _text\n"
	"_text:\n"
	"\tnop\n");

/* "kernel" functions: mix and twice are inlined into copy_page_fake */
static inline __attribute__((always_inline)) unsigned long mix(unsigned long x)
{
	x ^= x >> 13;
	x *= 0x9e3779b97f4a7c15ul;
	return x;
}

static inline __attribute__((always_inline)) unsigned long twice(unsigned long x)
{
	return mix(x) + mix(x + 1);
}

__attribute__((noinline)) unsigned long copy_page_fake(unsigned long *d,
							const unsigned long *s, int n)
{
	unsigned long acc = 0;

	for (int i = 0; i < n; i++) {
		d[i] = twice(s[i]);
		acc += d[i];
	}
	return acc;
}

__attribute__((noinline)) unsigned long do_syscall_fake(unsigned long *d,
							 const unsigned long *s)
{
	return copy_page_fake(d, s, 64) + 1;
}

void start_kernel_fake(void)
{
	static unsigned long a[64], b[64];

	do_syscall_fake(a, b);
	for (;;)
		;
}

"""
FUNCS = ("copy_page_fake", "do_syscall_fake", "start_kernel_fake")


def build_vmlinux(td):
    src = os.path.join(td, "kernel_fake.c")
    obj = os.path.join(td, "kernel_fake.o")
    elf = os.path.join(td, "vmlinux")
    with open(src, "w") as f:
        f.write(KERNEL_C)
    for cmd in (["gcc", "-g", "-O2", "-mcmodel=kernel", "-fno-pic", "-fno-pie",
                 "-ffreestanding", "-fno-toplevel-reorder", "-c", src, "-o", obj],
                ["ld", "-nostdlib", "--build-id=sha1", "-z", "noexecstack",
                 "-Ttext=0x%x" % LINK_TEXT, "-e", "start_kernel_fake", "-o", elf, obj]):
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode:
            fail("%s: %s" % (" ".join(cmd), r.stderr.strip()))
    os.chmod(elf, 0o644)
    return elf


def nm(path):
    """{name: (address, size)} of text symbols."""
    out = subprocess.run(["nm", "-S", "--defined-only", path], capture_output=True,
                         text=True, check=True).stdout
    res = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 3 and f[-2] in "tT":
            res[f[-1]] = (int(f[0], 16), int(f[1], 16) if len(f) == 4 else 0)
    return res


def insn_addrs(path, syms):
    """Start of every instruction of FUNCS (objdump), sorted."""
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", path], capture_output=True,
                         text=True, check=True).stdout
    want = [syms[f] for f in FUNCS]
    addrs = []
    for line in out.splitlines():
        m = re.match(r"^\s*([0-9a-f]+):\s", line)
        if m:
            a = int(m.group(1), 16)
            if any(s <= a < s + n for s, n in want):
                addrs.append(a)
    return sorted(addrs)


def profile(bid, start, offsets):
    """pprof: one [kernel.kallsyms] mapping at start, one sample per
    location (start + offset); returns the bytes."""
    p = cli.Pprof()
    m = p.mapping(start, start + 0x1000000, 0, "[kernel.kallsyms]", bid)
    for off in offsets:
        p.sample([p.location(m, start + off)])
    return p.encode()


def chains(path):
    """{address: [(function, file base name, line)]} of a symbolized pprof."""
    _, funcs, locs, _ = cli.read_pprof(open(path, "rb").read())
    out = {}
    for _, addr, lines in locs.values():
        out[addr] = [(funcs[fid][0], os.path.basename(funcs[fid][1]), ln)
                     for fid, ln in lines]
    return out


def symbolize(src, out, extra, env=None):
    """file SRC -o OUT, debuginfod asked only when env is given."""
    r = subprocess.run([cli.SYM, "file", src, "-o", out, "--allow-root", "--no-kallsyms",
                        "--no-syms-dir"] + ([] if env else ["--no-debuginfod"]) + extra,
                       capture_output=True, text=True, timeout=120, env=env)
    if r.returncode:
        fail("file %s: %s" % (" ".join(extra), r.stderr.strip()[-500:]))
    return r.stderr


def kernel_line(stderr):
    m = re.search(r"kernel: resolved (\d+), unresolved (\d+) \(no snapshot (\d+), "
                  r"build id mismatch (\d+), not found (\d+), no build id (\d+)\); "
                  r"from vmlinux debug info (\d+)", stderr)
    return tuple(int(x) for x in m.groups()) if m else None


def debuginfod_inner(td):
    """In a private network namespace: debuginfod serves only the vmlinux;
    the profile at memory_start LINK_TEXT, an empty --debug-dir, gets the
    same chains through it (failed checks go to lib.symtest.FAILURES)."""

    elf = os.path.join(td, "serve", "vmlinux")
    bid = cli.build_id(elf)
    addrs = insn_addrs(elf, nm(elf))
    want = dict(zip(addrs, tl.llvm(elf, addrs)))
    with td_dbgd.private_debuginfod(td, bid) as (code, env):
        check(code == 200, "debuginfod serves the vmlinux as debuginfo (%s)" % code)
        if code != 200:
            return
        out = os.path.join(td, "k-dbgd.sym.pb")
        err = symbolize(os.path.join(td, "k-%x.pb" % LINK_TEXT), out,
                        ["--debug-dir", os.path.join(td, "nothing-here")], env=env)
        got = chains(out)
        ks = kernel_line(err)
        bad = [(hex(a), got.get(a), want[a]) for a in addrs if got.get(a) != want[a]]
        check(not bad and ks and ks[6] == len(addrs) and
              td_dbgd.stat(err, "found_debuginfod") == 1,
              "debuginfod: all %d locations carry llvm-symbolizer's chain, vmlinux "
              "fetched once (found_debuginfod %s, kernel %s): %s"
              % (len(addrs), td_dbgd.stat(err, "found_debuginfod"), ks, bad[:3]))


TOOLS = ("gcc", "ld", "nm", "objdump", "llvm-symbolizer")


def steps(td):
    """The numbered steps of the docstring above, in the scratch directory
    td (lib/symtest.run makes and removes it)."""
    elf = build_vmlinux(td)
    bid = cli.build_id(elf)
    syms = nm(elf)
    check(syms.get("_text", (0,))[0] == LINK_TEXT,
          "the ELF's _text is the link-time base 0x%x" % LINK_TEXT)
    addrs = insn_addrs(elf, syms)
    offsets = [a - LINK_TEXT for a in addrs]
    want = dict(zip(addrs, tl.llvm(elf, addrs)))
    deep = [a for a in addrs if len(want[a]) >= 3]
    inl = [a for a in addrs if len(want[a]) >= 2]
    print("vmlinux %s: %d instructions in %s, llvm-symbolizer: %d with inlined "
          "frames, %d three deep" % (bid, len(addrs), ", ".join(FUNCS), len(inl),
                                     len(deep)), flush=True)
    if len(addrs) < 20 or not deep or not all(
            want[a][-1][0] in FUNCS and want[a][-1][1] == "kernel_fake.c" and
            want[a][-1][2] > 0 for a in addrs):
        fail("the oracle does not see the fixture as built: %s" %
             [(hex(a), want[a]) for a in addrs[:5]])

    dbg = os.path.join(td, "debug")
    bdir = os.path.join(dbg, ".build-id", bid[:2])
    os.makedirs(bdir)
    for d in (dbg, os.path.dirname(bdir), bdir):
        os.chmod(d, 0o755)
    placed = os.path.join(bdir, bid[2:] + ".debug")
    shutil.copy(elf, placed)
    os.chmod(placed, 0o644)

    # 1, 2: vmlinux found by build id, at either memory_start
    for start in (LINK_TEXT, OTHER_START):
        src = os.path.join(td, "k-%x.pb" % start)
        out = os.path.join(td, "k-%x.sym.pb" % start)
        with open(src, "wb") as f:
            f.write(profile(bid, start, offsets))
        err = symbolize(src, out, ["--debug-dir", dbg])
        got = chains(out)
        ks = kernel_line(err)
        bad = [(hex(a), got.get(start + a - LINK_TEXT), want[a]) for a in addrs
               if got.get(start + a - LINK_TEXT) != want[a]]
        check(not bad, "memory_start 0x%x: all %d locations carry llvm-symbolizer's "
              "chain for _text + offset (%d inlined, %d three deep): %s"
              % (start, len(addrs), len(inl), len(deep), bad[:3]))
        names = set(f[0] for a in deep for f in got.get(start + a - LINK_TEXT, []))
        check({"mix", "twice", "copy_page_fake"} <= names,
              "memory_start 0x%x: mix inlined in twice inlined in copy_page_fake: %s"
              % (start, sorted(names)))
        check(ks is not None and ks[0] == ks[6] == len(addrs) and ks[1] == 0,
              "memory_start 0x%x: every kernel frame resolved from vmlinux debug "
              "info (%s)" % (start, ks))

    # 2b: where Debian's and Fedora's debug packages put vmlinux (no
    # .build-id link): found by name, the build id deciding
    for where in (("lib", "modules", "6.1.0-test-amd64", "vmlinux"),
                  ("boot", "vmlinux-6.1.0-test-amd64")):
        tree = os.path.join(td, "tree-" + where[0])
        os.makedirs(os.path.join(tree, *where[:-1]))
        shutil.copy(elf, os.path.join(tree, *where))
        src = os.path.join(td, "k-%x.pb" % LINK_TEXT)
        out = os.path.join(td, "k-tree.sym.pb")
        err = symbolize(src, out, ["--debug-dir", tree])
        got = chains(out)
        ks = kernel_line(err)
        bad = [(hex(a), got.get(a), want[a]) for a in addrs if got.get(a) != want[a]]
        check(not bad and ks and ks[6] == len(addrs),
              "vmlinux at DIR/%s (no .build-id): all %d locations carry llvm-symbolizer's "
              "chain (%s): %s" % ("/".join(where), len(addrs), ks, bad[:3]))

    # 5: report drops to nobody and still reads the debug dir
    src = os.path.join(td, "k-%x.pb" % LINK_TEXT)
    if os.geteuid() == 0:
        r = subprocess.run([cli.SYM, "report", src, "--top", "10", "--no-debuginfod",
                            "--no-kallsyms", "--debug-dir", dbg],
                           capture_output=True, text=True, timeout=120)
        ks = kernel_line(r.stderr)
        ok = bool(r.returncode == 0 and ks and ks[6] == len(addrs) and
                  re.search(r"^\s.*\bmix \(kernel_fake\.c:\d+\)$", r.stdout, re.M))
        check(ok, "report as nobody: vmlinux read, the inlined mix named with its "
              "line (%s)%s" % (ks, "" if ok else "\n" + (r.stdout or r.stderr)[-600:]))

    # 6: the same vmlinux from a real debuginfod (private netns)
    symtest.in_private_netns(td, __file__, {"vmlinux": elf})

    # 3: no vmlinux; a snapshot of that build id from a slid boot
    os.unlink(placed)
    snap = os.path.join(td, "k.kallsyms.gz")
    tk.write_snapshot(snap, bid, [(a + SLIDE, "T", n, None) for n, (a, _) in
                                  sorted(syms.items(), key=lambda x: x[1])])
    out = os.path.join(td, "k-snap.sym.pb")
    err = symbolize(src, out, ["--debug-dir", dbg, "--kallsyms", snap])
    got = chains(out)
    ks = kernel_line(err)
    cover = sorted((a, n) for n, (a, _) in syms.items())

    def covering(addr):
        return [n for a, n in cover if a <= addr][-1]
    bad = [(hex(a), got.get(a)) for a in addrs if got.get(a) != [(covering(a), "", 0)]]
    check(not bad, "no vmlinux, a slid snapshot: all %d locations named by the "
          "covering symbol only (one frame, no file, no line): %s"
          % (len(addrs), bad[:3]))
    check(ks is not None and ks[0] == len(addrs) and ks[6] == 0,
          "snapshot: counted as resolved, none from vmlinux (%s)" % (ks,))

    # 3b: a module frame in pprof (no frame type there: the mapping
    # says kernel) named from the snapshot's module of that build id
    mod_bid = "ab" * 20
    with gzip.open(snap, "rt") as f:
        lines = f.read().splitlines()
    lines[1:1] = ["# module fakemod build-id=%s text=%x size=1000" % (mod_bid, MOD_TEXT),
                  "%x t fake_mod_fn\t[fakemod]" % MOD_TEXT,
                  "%x t fake_mod_other\t[fakemod]" % (MOD_TEXT + 0x400)]
    with gzip.open(snap, "wt") as f:
        f.write("\n".join(lines) + "\n")
    mp = cli.Pprof()
    m = mp.mapping(0, 0x1000, 0, "[module:fakemod]", mod_bid)
    for off in (0x10, 0x410):
        mp.sample([mp.location(m, off)])
    msrc, mout = os.path.join(td, "mod.pb"), os.path.join(td, "mod.sym.pb")
    with open(msrc, "wb") as f:
        f.write(mp.encode())
    err = symbolize(msrc, mout, ["--kallsyms", snap])
    got = chains(mout)
    ks = kernel_line(err)
    check(got.get(0x10) == [("fake_mod_fn [fakemod]", "", 0)] and
          got.get(0x410) == [("fake_mod_other [fakemod]", "", 0)] and ks and ks[0] == 2,
          "[module:fakemod] frames of a pprof profile named from the snapshot's module "
          "(%s, %s)" % (got, ks))

    # 4: neither
    out = os.path.join(td, "k-none.sym.pb")
    err = symbolize(src, out, ["--debug-dir", dbg])
    got = chains(out)
    ks = kernel_line(err)
    check(all(not got.get(a) for a in addrs) and ks and ks[0] == 0 and
          ks[1] == ks[2] == len(addrs),
          "no vmlinux, no snapshot: every kernel frame unresolved, counted as no "
          "snapshot (%s)" % (ks,))


def main():
    return symtest.run(steps, tools=TOOLS, exes=(cli.SYM,), inner=debuginfod_inner)


if __name__ == "__main__":
    sys.exit(main())
