#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# spanprof-test: parallel (no BPF, no whole-machine sampling, no timing assertion)
"""Kernel module frames named from the module's own debug info (.ko) found
by the module's build id, with lines and inlined frames.

This machine's kernel has no module support, so no real module can be
loaded: the test builds a real module object instead, the way kbuild links
one - two C files compiled as kernel code (gcc -g -O2 -mcmodel=kernel
-fno-pic -fno-pie -ffreestanding -c; an always_inline helper inlined twice
into a loop, so some chains are three deep; an __init function in
.init.text and an __exit one in .exit.text, as module code has) and an
assembler file (as crypto modules have; assembled by gcc, whose GNU as
writes a DWARF function per symbol, and by clang, whose assembler writes
only labels: lines without a DWARF function), then
`ld -r --build-id=sha1` into fakemod.ko: an ET_REL file with a GNU
build-id note whose sections all sit at address 0 and whose DWARF is
still to be relocated (readelf checks all of that first).

The profiles are pprof written here (test_symbolizer_cli's encoder) as the
collector writes module frames (docs/formats.md "Kernel frames"): a
[module:fakemod] mapping carrying the .ko's build id, memory_start 0,
locations = offset in the module's .text - one per instruction of every
function of .text (readelf's symbol sizes, objdump's instructions).  The
oracle is GNU addr2line -i -f -a -j .text on the same .ko at the same
offsets (an independent reader: BFD applies the relocations itself).

1. --debug-dir D with D/.build-id/ab/cdef....debug = the .ko: every
   location carries addr2line's chain (function, file, line; inlined
   callees first), the real function named "fn [fakemod]"; some are three
   deep; no frame names the .init.text/.exit.text functions although
   their offsets in their own sections are the same numbers (only .text
   is asked).  In the same profile a second module without any debug file
   ([module:othermod]) is named from the kallsyms snapshot, one frame, no
   line; an offset past fakemod's .text is left unresolved.  Counted:
   every fakemod frame "from module debug info", othermod's as "no debug
   file", the one past .text as "no line".
   The same profile as OTLP posted to `serve --debug-dir D --kallsyms`
   (dropping root to nobody, who reads D): the profile it writes carries
   the same chains, and /metrics counts kernel_module_frames_debuginfo_*
   as the file command's statistics do.
   Debian's layout (its linux-image-*-dbg links only the vDSO into
   .build-id): the .ko at D/lib/modules/RELEASE/kernel/.../fakemod.ko, an
   older release's fakemod.ko (another build id) beside it: found by the
   module's name, the other refused for its build id.
2. The .ko served by a real debuginfod (private network namespace, as
   test_symbolizer_debuginfod.py runs it), an empty --debug-dir: the same
   chains, the file fetched once (found_debuginfod 1).
3. No file of that build id, the snapshot given: every fakemod frame named
   by the snapshot symbol covering it ("fn [fakemod]", no file, line 0),
   counted "no debug file".
4. A .ko of another build id at the build id's path (a copy with its
   build-id bytes rewritten): refused, the snapshot names the frames,
   counted "build id mismatch" (and rejected_build_id in the finder's
   line); `lookup ID` says "not-found (only files of another build id)".
5. A debug-stripped .ko (strip --strip-debug: symbols, no DWARF) at the
   path: the snapshot names the frames, counted "no line"; without the
   snapshot the .ko's own symbols do (the same names, no file), still
   counted "no line".
   `addr -e fakemod.ko --text OFFSET...` prints addr2line's chains too.
6. Separate debug files of the module, as distributions ship them
   (`eu-strip -f`, as Fedora's kernel-debuginfo is made, and `objcopy
   --only-keep-debug`): ET_REL with .text NOBITS and the debug sections'
   relocations kept; and the .ko with compressed debug sections (objcopy
   --compress-debug-sections=zlib-gabi: SHF_COMPRESSED).  Each at the path
   gives addr2line's chains (on the plain .ko) for every location.
Exit 0 pass, 77 skip, else fail.
"""
import gzip
import os
import re
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_symbolizer_cli as cli  # noqa: E402
import test_symbolizer_debuginfod as td_dbgd  # noqa: E402
import test_symbolizer_serve as serve_t  # noqa: E402
import test_symbolizer_vmlinux as tv  # noqa: E402
from lib import symtest  # noqa: E402
from lib.symtest import check, fail  # noqa: E402

KERNEL_ID = "c0" * 20               # the snapshot's kernel (no vmlinux frames here)
MOD_TEXT = 0xffffffffc0a00000       # fakemod's .text in the snapshot's boot
OTHER_TEXT = 0xffffffffc0c00000     # othermod's
OTHER_ID = "0d" * 20                # othermod: no debug file anywhere
SUFFIX = " [fakemod]"

ASM_S = r"""
/* assembler code, as crypto modules have: its own unit of line info */
	.text
	.globl fakemod_asm_mix
	.type fakemod_asm_mix, @function
fakemod_asm_mix:
	movq %rdi, %rax
	addq %rsi, %rax
	imulq $3, %rax
	ret
	.size fakemod_asm_mix, .-fakemod_asm_mix
	.section .note.GNU-stack,"",@progbits
"""

HELPER_C = r"""
/* first on the link line: its .text comes first in the module's .text,
 * so the other unit's functions sit at a non-zero offset there */
int fakemod_helper(int x)
{
	return x * 3 + 1;
}
"""

MAIN_C = r"""
#define __init __attribute__((section(".init.text"), noinline))
#define __exit __attribute__((section(".exit.text"), noinline))

static inline __attribute__((always_inline)) unsigned int fold(unsigned int x)
{
	x ^= x >> 7;
	x *= 0x2c1b3c6du;
	return x;
}

static inline __attribute__((always_inline)) unsigned int fold2(unsigned int x)
{
	return fold(x) ^ fold(x >> 3);
}

/* noipa: no .constprop/.isra clones, so DWARF and symbol names agree */
__attribute__((noipa)) unsigned int fakemod_checksum(const unsigned char *p, int n)
{
	unsigned int acc = 0;

	for (int i = 0; i < n; i++)
		acc += fold2(p[i] + acc);
	return acc;
}

__attribute__((noipa)) int fakemod_xmit(const unsigned char *p, int n)
{
	return (int)fakemod_checksum(p, n) + 7;
}

static unsigned char buf[64];

int __init fakemod_init(void)
{
	return fakemod_xmit(buf, 64) + fakemod_xmit(buf, 32);
}

void __exit fakemod_exit(void)
{
	buf[0] = 0;
}
"""



def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        fail("%s: %s" % (" ".join(cmd), r.stderr.strip()))
    return r.stdout


def build_ko(td):
    """fakemod.ko as kbuild links a module: compile, then ld -r.  The
    assembler file twice: by gcc (GNU as writes a DW_TAG_subprogram per
    function symbol) and by clang (its integrated assembler writes only
    DW_TAG_label: lines without a DWARF function, as LLVM=1 kernels have)."""
    objs = []
    for name, text, cc in (("fakemod_helper.c", HELPER_C, "gcc"),
                           ("fakemod_asm.S", ASM_S, "gcc"),
                           ("fakemod_asm_llvm.S", ASM_S.replace("fakemod_asm_mix",
                                                                "fakemod_asm_llvm"), "clang"),
                           ("fakemod_main.c", MAIN_C, "gcc")):
        src = os.path.join(td, name)
        with open(src, "w") as f:
            f.write(text)
        objs.append(os.path.join(td, name.split(".")[0] + ".o"))
        run([cc, "-g", "-O2", "-mcmodel=kernel", "-fno-pic", "-fno-pie", "-ffreestanding",
             "-c", src, "-o", objs[-1]])
    ko = os.path.join(td, "fakemod.ko")
    run(["ld", "-r", "--build-id=sha1", "-o", ko] + objs)
    os.chmod(ko, 0o644)
    return ko


def sections(ko):
    """{name: (index, address, size)} from readelf -SW."""
    out = {}
    for line in run(["readelf", "-SW", ko]).splitlines():
        m = re.match(r"^\s*\[\s*(\d+)\]\s+(\S+)\s+\S+\s+([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)",
                     line)
        if m:
            out[m.group(2)] = (int(m.group(1)), int(m.group(3), 16), int(m.group(4), 16))
    return out


def functions(ko, shndx):
    """{name: (value, size)} of the FUNC symbols of section shndx."""
    out = {}
    for line in run(["readelf", "-sW", ko]).splitlines():
        f = line.split()
        if len(f) == 8 and f[3] == "FUNC" and f[6] == str(shndx):
            out[f[7]] = (int(f[1], 16), int(f[2]))
    return out


def insn_offsets(ko, funcs):
    """Offsets in .text of every instruction inside a function of it."""
    offs = []
    for line in run(["objdump", "-d", "-j", ".text", "--no-show-raw-insn", ko]).splitlines():
        m = re.match(r"^\s*([0-9a-f]+):\s", line)
        if m:
            a = int(m.group(1), 16)
            if any(v <= a < v + n for v, n in funcs.values()):
                offs.append(a)
    return sorted(offs)


def addr2line(ko, offs):
    """{offset: [(function, file base name, line)]}, innermost first, as
    addr2line -i -f -a -j .text reads them."""
    out, cur, lines = {}, None, run(["addr2line", "-i", "-f", "-a", "-j", ".text", "-e", ko] +
                                    ["0x%x" % o for o in offs]).splitlines()
    i = 0
    while i < len(lines):
        if re.match(r"^0x[0-9a-f]+$", lines[i]):
            cur = int(lines[i], 16)
            out[cur] = []
            i += 1
            continue
        fn, where = lines[i], lines[i + 1]
        where = re.sub(r" \(discriminator \d+\)$", "", where)
        path, _, ln = where.rpartition(":")
        out[cur].append((fn, os.path.basename(path), int(ln) if ln.isdigit() else 0))
        i += 2
    return out


def profile(bid, offs, other_offs=()):
    """pprof: [module:fakemod] (memory_start 0) with a location per offset,
    and [module:othermod] ones."""
    p = cli.Pprof()
    m = p.mapping(0, 0x100000, 0, "[module:fakemod]", bid)
    for off in offs:
        p.sample([p.location(m, off)])
    if other_offs:
        o = p.mapping(0, 0x100000, 0, "[module:othermod]", OTHER_ID)
        for off in other_offs:
            p.sample([p.location(o, off)])
    return p.encode()


def chains(path):
    """{(mapping file, offset): [(function, file base name, line)]} of a
    pprof file (gzip'd or not)."""
    data = open(path, "rb").read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    strings, funcs, locs, maps = cli.read_pprof(data)
    files = {m[1][0]: strings[m.get(5, [0])[0]] for m in maps}
    out = {}
    for mid, addr, lines in locs.values():
        out[(files.get(mid), addr)] = [(funcs[fid][0], os.path.basename(funcs[fid][1]), ln)
                                       for fid, ln in lines]
    return out


def module_line(stderr):
    """(kernel resolved, unresolved, not found, from module debug info, no
    debug file, build id mismatch, no line) from the statistics."""
    m = re.search(r"kernel: resolved (\d+), unresolved (\d+) \(no snapshot \d+, "
                  r"build id mismatch \d+, not found (\d+), no build id \d+\); "
                  r"from vmlinux debug info \d+, from module debug info (\d+) \(not from "
                  r"it: no debug file (\d+), build id mismatch (\d+), no line (\d+)\)", stderr)
    return tuple(int(x) for x in m.groups()) if m else None


def write_snapshot(path, bid, text_size, funcs):
    """A kallsyms snapshot listing fakemod (build id bid, its .text
    functions at MOD_TEXT + value) and othermod (one function)."""
    tv.tk.write_snapshot(path, KERNEL_ID, [(MOD_TEXT + v, "t", n, "fakemod")
                                           for n, (v, _) in funcs.items()] +
                         [(OTHER_TEXT, "t", "othermod_fn", "othermod")])
    with gzip.open(path, "rt") as f:
        lines = f.read().splitlines()
    lines[1:1] = ["# module fakemod build-id=%s text=%x size=%x" % (bid, MOD_TEXT, text_size),
                  "# module othermod build-id=%s text=%x size=1000" % (OTHER_ID, OTHER_TEXT)]
    with gzip.open(path, "wt") as f:
        f.write("\n".join(lines) + "\n")


def place(dbg, bid, src):
    """Puts src at dbg/.build-id/ab/cdef....debug (readable by anyone)."""
    bdir = os.path.join(dbg, ".build-id", bid[:2])
    os.makedirs(bdir, exist_ok=True)
    for d in (dbg, os.path.dirname(bdir), bdir):
        os.chmod(d, 0o755)
    dst = os.path.join(bdir, bid[2:] + ".debug")
    shutil.copy(src, dst)
    os.chmod(dst, 0o644)
    return dst


def debuginfod_inner(td):
    """In a private network namespace: debuginfod serves only the .ko;
    the same chains through it with an empty --debug-dir."""
    ko = os.path.join(td, "serve", "fakemod.ko")
    bid = cli.build_id(ko)
    offs = [int(x) for x in open(os.path.join(td, "offsets")).read().split()]
    want = addr2line(ko, offs)
    with td_dbgd.private_debuginfod(td, bid) as (code, env):
        check(code == 200, "debuginfod serves the ET_REL .ko as debuginfo (%s)" % code)
        if code != 200:
            return
        out = os.path.join(td, "m-dbgd.sym.pb")
        err = tv.symbolize(os.path.join(td, "m-fake.pb"), out,
                           ["--debug-dir", os.path.join(td, "nothing-here")], env=env)
        got = chains(out)
        ml = module_line(err)
        bad = dwarf_errors(got, offs, want)
        check(not bad and ml and ml[3] == len(offs) and
              td_dbgd.stat(err, "found_debuginfod") == 1,
              "debuginfod: all %d locations carry addr2line's chain, the .ko fetched once "
              "(found_debuginfod %s, module counters %s): %s"
              % (len(offs), td_dbgd.stat(err, "found_debuginfod"), ml, bad[:3]))


def serve_step(td, src, dbg, snap, offs, want):
    """The pprof at src as OTLP through `serve`; its output's chains and
    /metrics (failed checks go to lib.symtest.FAILURES)."""
    otlp = os.path.join(td, "m-mixed.otlp.pb")
    r = subprocess.run([cli.SYM, "file", src, "-o", otlp, "--format", "otlp",
                        "--no-symbolize", "--allow-root", "-q"],
                       capture_output=True, text=True, timeout=60)
    if r.returncode:
        fail("file --format otlp: %s" % r.stderr.strip())
    outdir = os.path.join(td, "serve-out")
    os.mkdir(outdir)
    os.chmod(outdir, 0o777)     # serve writes as nobody when run as root
    port = serve_t.free_port()
    log = open(os.path.join(td, "serve.log"), "w+")
    proc = subprocess.Popen([cli.SYM, "serve", "--listen", "127.0.0.1:%d" % port,
                             "--output-dir", outdir, "--debug-dir", dbg, "--kallsyms", snap,
                             "--no-debuginfod"], stdout=log, stderr=subprocess.STDOUT)
    try:
        m = None
        for _ in range(300):
            try:
                m = serve_t.metrics(port)
                break
            except OSError:
                time.sleep(0.1)
        st, _, _ = serve_t.post(port, open(otlp, "rb").read())
        check(st == 200, "serve takes the module profile (%s)" % st)
        deadline = time.time() + 60
        while time.time() < deadline:
            m = serve_t.metrics(port)
            if m.get("files_written_total", 0) >= 1:
                break
            time.sleep(0.1)
        n = len(offs)
        keys = ("kernel_module_frames_debuginfo_total",
                "kernel_module_frames_debuginfo_missing_total",
                "kernel_module_frames_debuginfo_mismatch_total",
                "kernel_module_frames_debuginfo_no_line_total")
        got_m = tuple(m.get(k) for k in keys) if m else None
        check(got_m == (n, 2, 0, 1),
              "serve /metrics: %d module frames from debug info, 2 no debug file, 0 "
              "mismatch, 1 no line (%s; files written %s)"
              % (n, got_m, m and m.get("files_written_total")))
        files = sorted(os.listdir(outdir))
        if not files:
            check(False, "serve wrote the symbolized profile (nothing in %s)" % outdir)
            return
        back = os.path.join(td, "serve-back.pb")
        r = subprocess.run([cli.SYM, "file", os.path.join(outdir, files[0]), "-o", back,
                            "--format", "pprof", "--no-symbolize", "--allow-root", "-q"],
                           capture_output=True, text=True, timeout=60)
        got = chains(back) if not r.returncode else {}
        bad = dwarf_errors(got, offs, want)
        check(not r.returncode and not bad,
              "serve: all %d locations carry addr2line's chain (%s): %s"
              % (n, r.stderr.strip()[-200:], bad[:3]))
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def dwarf_errors(got, offs, want):
    """(offset, chain, addr2line's) of the fakemod locations of got whose
    chain is not addr2line's with the real function "fn [fakemod]"."""
    return [(hex(o), got.get(("[module:fakemod]", o)), want[o]) for o in offs
            if strip_suffix(got.get(("[module:fakemod]", o))) != want[o]]


def strip_suffix(chain):
    """The chain with the real function's " [fakemod]" taken off (None if
    it is not there: then it does not equal addr2line's)."""
    if not chain or not chain[-1][0].endswith(SUFFIX):
        return None
    return chain[:-1] + [(chain[-1][0][:-len(SUFFIX)],) + chain[-1][1:]]


TOOLS = ("gcc", "clang", "ld", "readelf", "objdump", "addr2line", "strip", "eu-strip",
         "objcopy")


def steps(td):
    """The numbered steps of the docstring above, in the scratch directory
    td (lib/symtest.run makes and removes it)."""
    ko = build_ko(td)
    bid = cli.build_id(ko)
    hdr = run(["readelf", "-h", ko])
    secs = sections(ko)
    check("REL (Relocatable file)" in hdr and len(bid) == 40,
          "fakemod.ko is ET_REL with a GNU build-id note (%s)" % bid)
    check(all(s in secs and secs[s][1] == 0 for s in (".text", ".init.text", ".exit.text"))
          and ".rela.debug_info" in secs,
          ".text, .init.text, .exit.text all at address 0, .debug_info to be relocated "
          "(%s)" % sorted(secs))
    tidx, _, tsize = secs[".text"]
    funcs = functions(ko, tidx)
    init = functions(ko, secs[".init.text"][0])
    offs = insn_offsets(ko, funcs)
    want = addr2line(ko, offs)
    deep = [o for o in offs if len(want[o]) >= 3]
    inl = [o for o in offs if len(want[o]) >= 2]
    print("fakemod.ko %s: .text %d bytes, %d instructions in %s; addr2line: %d with "
          "inlined frames, %d three deep" % (bid, tsize, len(offs), ", ".join(sorted(funcs)),
                                             len(inl), len(deep)), flush=True)
    if (set(funcs) != {"fakemod_helper", "fakemod_asm_mix", "fakemod_asm_llvm",
                       "fakemod_checksum", "fakemod_xmit"} or
            set(init) != {"fakemod_init"} or len(offs) < 20 or not deep or not all(
                want[o] and want[o][-1][0] in funcs and want[o][-1][2] > 0 for o in offs)):
        fail("the oracle does not see the fixture as built: %s %s %s" %
                (sorted(funcs), sorted(init), [(hex(o), want.get(o)) for o in offs[:5]]))
    # init's offsets in .init.text are also offsets in .text: a lookup
    # that placed every section at 0 would meet its DWARF there
    overlap = [o for o in offs if any(v <= o < v + n for v, n in init.values())]

    snap = os.path.join(td, "k.kallsyms.gz")
    write_snapshot(snap, bid, tsize, funcs)
    cover = sorted((v, n) for n, (v, _) in funcs.items())

    def snap_chain(off):
        return [([n for v, n in cover if v <= off][-1] + SUFFIX, "", 0)]

    other = [0x10, 0x20]
    src = os.path.join(td, "m-mixed.pb")
    with open(src, "wb") as f:
        f.write(profile(bid, offs + [tsize + 0x10], other))
    with open(os.path.join(td, "m-fake.pb"), "wb") as f:
        f.write(profile(bid, offs))

    # 1: the .ko found by build id in a debug dir
    dbg = os.path.join(td, "debug")
    placed = place(dbg, bid, ko)
    out = os.path.join(td, "m-mixed.sym.pb")
    err = tv.symbolize(src, out, ["--debug-dir", dbg, "--kallsyms", snap])
    got = chains(out)
    ml = module_line(err)
    bad = dwarf_errors(got, offs, want)
    check(not bad, "debug dir: all %d locations carry addr2line's chain for .text + "
          "offset, the real function \"fn [fakemod]\" (%d inlined, %d three deep): %s"
          % (len(offs), len(inl), len(deep), bad[:3]))
    names = set(f[0] for o in deep for f in got.get(("[module:fakemod]", o), []))
    check({"fold", "fold2", "fakemod_checksum" + SUFFIX} <= names,
          "fold inlined in fold2 inlined in fakemod_checksum: %s" % sorted(names))
    named = set(f[0] for o in offs for f in got.get(("[module:fakemod]", o), []))
    check(overlap and not any(n.startswith(("fakemod_init", "fakemod_exit")) for n in named),
          "%d offsets that are also fakemod_init's in .init.text name only .text's "
          "functions (%s)" % (len(overlap), sorted(named)))
    gother = [got.get(("[module:othermod]", o)) for o in other]
    check(all(g == [("othermod_fn [othermod]", "", 0)] for g in gother),
          "othermod (no debug file) named from the snapshot in the same profile: %s"
          % gother)
    check(not got.get(("[module:fakemod]", tsize + 0x10)),
          "an offset past fakemod's .text stays unresolved (%s)"
          % got.get(("[module:fakemod]", tsize + 0x10)))
    n = len(offs)
    check(ml == (n + 2, 1, 1, n, 2, 0, 1),
          "counted: resolved %d (%d from module debug info), othermod's 2 as no debug "
          "file, the one past .text as no line and not found: %s" % (n + 2, n, ml))

    r = subprocess.run([cli.SYM, "addr", "-e", ko, "--text", "--allow-root", "-q"] +
                       ["0x%x" % o for o in offs], capture_output=True, text=True,
                       timeout=60)
    blocks = r.stdout.split("\n\n")
    got_a = {}
    for o, b in zip(offs, blocks):
        ls = b.strip("\n").splitlines()
        got_a[o] = [(ls[i], os.path.basename(ls[i + 1].rsplit(":", 2)[0]),
                     int(ls[i + 1].rsplit(":", 2)[1])) for i in range(0, len(ls) - 1, 2)]
    bad = [(hex(o), got_a.get(o), want[o]) for o in offs if got_a.get(o) != want[o]]
    check(r.returncode == 0 and len(blocks) >= len(offs) and not bad,
          "addr -e fakemod.ko --text: addr2line's chain at all %d offsets (rc %d): %s"
          % (n, r.returncode, bad[:3] or r.stderr[-300:]))

    serve_step(td, src, dbg, snap, offs, want)

    # 1b: Debian's layout: no .build-id link, the .ko under
    # lib/modules/RELEASE/kernel/..., next to an older release's
    # fakemod.ko (another build id)
    tree = os.path.join(td, "debian")
    for rel, f in (("6.1.0-test-amd64", ko), ("6.0.0-old-amd64", None)):
        kdir = os.path.join(tree, "lib", "modules", rel, "kernel", "drivers", "misc")
        os.makedirs(kdir)
        if f:
            shutil.copy(f, os.path.join(kdir, "fakemod.ko"))
        else:
            td_dbgd.retag(ko, os.path.join(kdir, "fakemod.ko"), bid, "%040x" % (int(bid, 16) ^ 2))
    out = os.path.join(td, "m-debian.sym.pb")
    err = tv.symbolize(os.path.join(td, "m-fake.pb"), out, ["--debug-dir", tree])
    got = chains(out)
    ml = module_line(err)
    bad = dwarf_errors(got, offs, want)
    check(not bad and ml and ml[3] == n and td_dbgd.stat(err, "found_dir") == 1 and
          td_dbgd.stat(err, "rejected_build_id") == 1,
          "Debian's layout (lib/modules/RELEASE/kernel/.../fakemod.ko, no .build-id): found "
          "by name, the older release's file refused for its build id (found_dir %s, "
          "rejected_build_id %s, %s): %s" % (td_dbgd.stat(err, "found_dir"),
                                             td_dbgd.stat(err, "rejected_build_id"), ml,
                                             bad[:3]))

    # 2: the same .ko from a real debuginfod (private netns)
    with open(os.path.join(td, "offsets"), "w") as f:
        f.write(" ".join(str(o) for o in offs))
    symtest.in_private_netns(td, __file__, {"fakemod.ko": ko})

    fsrc = os.path.join(td, "m-fake.pb")

    def fallback(label, extra, field):
        out = os.path.join(td, "m-%s.sym.pb" % label)
        err = tv.symbolize(fsrc, out, ["--debug-dir", dbg, "--kallsyms", snap] + extra)
        got = chains(out)
        ml = module_line(err)
        bad = [(hex(o), got.get(("[module:fakemod]", o))) for o in offs
               if got.get(("[module:fakemod]", o)) != snap_chain(o)]
        want_ml = [n, 0, 0, 0, 0, 0, 0]
        want_ml[field] = n
        check(not bad and ml == tuple(want_ml),
              "%s: all %d locations named by the snapshot only (one frame, no file), "
              "counted (%s, want %s): %s" % (label, n, ml, tuple(want_ml), bad[:3]))
        return err

    # 3: no file of that build id
    os.unlink(placed)
    fallback("missing", [], 4)

    # 4: a .ko of another build id at that build id's path
    other_id = "%040x" % (int(bid, 16) ^ 1)
    td_dbgd.retag(ko, os.path.join(td, "other.ko"), bid, other_id)
    check(cli.build_id(os.path.join(td, "other.ko")) == other_id,
          "the retagged copy carries build id %s" % other_id)
    place(dbg, bid, os.path.join(td, "other.ko"))
    err = fallback("mismatch", [], 5)
    check((td_dbgd.stat(err, "rejected_build_id") or 0) >= 1,
          "the finder counts the refused file (rejected_build_id %s)"
          % td_dbgd.stat(err, "rejected_build_id"))
    r = subprocess.run([cli.SYM, "lookup", bid, "--debug-dir", dbg, "--no-debuginfod",
                        "--allow-root", "-q"], capture_output=True, text=True, timeout=60)
    check(r.returncode == 3 and r.stdout.strip() ==
          "%s not-found (only files of another build id)" % bid,
          "lookup says why: %r (rc %d)" % (r.stdout.strip(), r.returncode))

    # 5: symbols but no DWARF
    stripped = os.path.join(td, "stripped.ko")
    run(["strip", "--strip-debug", "-o", stripped, ko])
    check(cli.build_id(stripped) == bid and ".debug_info" not in sections(stripped),
          "strip --strip-debug keeps the build id, drops .debug_info")
    place(dbg, bid, stripped)
    fallback("no-dwarf", [], 6)
    out = os.path.join(td, "m-syms.sym.pb")
    err = tv.symbolize(fsrc, out, ["--debug-dir", dbg])
    got = chains(out)
    ml = module_line(err)
    bad = [(hex(o), got.get(("[module:fakemod]", o))) for o in offs
           if got.get(("[module:fakemod]", o)) != snap_chain(o)]
    check(not bad and ml == (n, 0, 0, 0, 0, 0, n),
          "no DWARF, no snapshot: all %d locations named by the .ko's symbols (one "
          "frame, no file), counted no line (%s): %s" % (n, ml, bad[:3]))

    # 6: separate debug files (.text NOBITS), compressed debug sections
    for label, cmd, how in (
            ("eu-strip -f", lambda d: ["eu-strip", "-f", d, "-o",
                                       os.path.join(td, "s.ko"), ko], "NOBITS"),
            ("objcopy --only-keep-debug",
             lambda d: ["objcopy", "--only-keep-debug", ko, d], "NOBITS"),
            ("objcopy --compress-debug-sections",
             lambda d: ["objcopy", "--compress-debug-sections=zlib-gabi", ko, d], "  C ")):
        dfile = os.path.join(td, "sep.debug")
        run(cmd(dfile))
        s = sections(dfile)
        shdrs = run(["readelf", "-SW", dfile])
        line = {".text": shdrs.split("] .text ")[1].split("\n")[0],
                "  C ": shdrs.split("] .debug_info ")[1].split("\n")[0]}
        check(cli.build_id(dfile) == bid and ".rela.debug_info" in s and
              how in line[".text" if how == "NOBITS" else how],
              "%s: a file of that build id, %s, .rela.debug_info kept"
              % (label, ".text NOBITS" if how == "NOBITS" else ".debug_info compressed"))
        place(dbg, bid, dfile)
        out = os.path.join(td, "m-sep.sym.pb")
        err = tv.symbolize(fsrc, out, ["--debug-dir", dbg])
        got = chains(out)
        ml = module_line(err)
        bad = dwarf_errors(got, offs, want)
        check(not bad and ml and ml[3] == n,
              "%s debug file: all %d locations carry addr2line's chain (%s): %s"
              % (label, n, ml, bad[:3]))


def main():
    return symtest.run(steps, tools=TOOLS, exes=(cli.SYM,), inner=debuginfod_inner)


if __name__ == "__main__":
    sys.exit(main())
