#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Kernel frames named from a kallsyms snapshot, end to end (root).

1. spanprof record -F 97 -o X -- dd if=/dev/zero of=/dev/null bs=64k ...
   (a loop of read/write syscalls: kernel stacks in read_zero/clear_user/
   write_null under do_syscall_64).
2. A snapshot written here, in Python, from /proc/kallsyms in the format of
   docs/formats.md ("Kernel symbol snapshot") - a second, independent
   writer of the format, holding every text symbol.  Record's own
   X.kallsyms.gz is the subset its profile needs (header scope=profile,
   mode 0644, sorted, at most two symbol addresses per kernel location;
   its size and the whole snapshot's are printed): every kernel location
   gets the same name from it as from the whole snapshot, and a truncated
   copy is refused (--kallsyms: exit 1) or warned about (beside the
   profile: frames counted as no snapshot).
3. spanprof-symbolizer report X --top 20 --kallsyms SNAP (run as root, so
   it drops to nobody: the snapshot must be readable): the top names
   kernel functions; its statistics count resolved kernel frames.
4. spanprof-symbolizer file X -o Y: every kernel location of Y carries a
   function whose name is the one /proc/kallsyms gives for the address
   (looked up here independently: the last text symbol at or below it,
   any alias at that address accepted) for >= 99% of kernel locations.
5. Travel rules: IN.kallsyms.gz next to the input is used by default;
   --kallsyms-dir DIR finds DIR/<build-id>.kallsyms.gz; a snapshot with
   another build id is not used and is counted as "build id mismatch".
Exit 0 pass, 77 skip, else fail.
"""
import bisect
import gzip
import os
import re
import shutil
import stat
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import spt  # noqa: E402
from spt import check, fail, skip  # noqa: E402

SYM = os.path.join(spt.BUILD, "spanprof-symbolizer")
TEXT = set("tTwW")


def kernel_build_id():
    """GNU build id from /sys/kernel/notes (ELF notes, 4-aligned)."""
    b = open("/sys/kernel/notes", "rb").read()
    i = 0
    while i + 12 <= len(b):
        namesz, descsz, typ = struct.unpack_from("<III", b, i)
        name = b[i + 12:i + 12 + namesz]
        d0 = i + 12 + ((namesz + 3) & ~3)
        if typ == 3 and name.rstrip(b"\0") == b"GNU":
            return b[d0:d0 + descsz].hex()
        i = d0 + ((descsz + 3) & ~3)
    return ""


def read_kallsyms():
    """[(addr, type, name, module or None)] text symbols, file order."""
    out = []
    with open("/proc/kallsyms") as f:
        for line in f:
            line = line.rstrip("\n")
            parts = line.split(None, 3)
            if len(parts) < 3 or parts[1] not in TEXT:
                continue
            a = int(parts[0], 16)
            if not a:
                continue
            mod = parts[3].strip()[1:-1] if len(parts) == 4 else None
            out.append((a, parts[1], parts[2], mod))
    return out


def write_snapshot(path, build_id, syms):
    """The documented format, written independently of the C capture."""
    order = sorted(range(len(syms)), key=lambda i: (syms[i][0], i))
    with open("/proc/sys/kernel/random/boot_id") as f:
        boot = f.read().strip()
    lines = ["# spanprof-kallsyms v1 build-id=%s captured-at=%d kernel=%s boot-id=%s"
             % (build_id, time.time_ns(), os.uname().release, boot)]
    for i in order:
        a, t, n, m = syms[i]
        lines.append("%016x %s %s%s" % (a, t, n, "\t[%s]" % m if m else ""))
    with gzip.open(path, "wt") as f:
        f.write("\n".join(lines) + "\n")
    os.chmod(path, 0o644)


class Oracle:
    """The last text symbol at or below an address, from /proc/kallsyms."""

    def __init__(self, syms):
        by = {}
        for a, t, n, m in syms:
            by.setdefault(a, []).append((n, m))
        self.addrs = sorted(by)
        self.by = by

    def names(self, addr):
        i = bisect.bisect_right(self.addrs, addr) - 1
        if i < 0:
            return set()
        return set(n + (" [%s]" % m if m else "") for n, m in self.by[self.addrs[i]])


def pprof_functions(path):
    """{location id: [function names]} and {location id: mapping file}."""
    raw = open(path, "rb").read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    strings, funcs, locs, maps = [], {}, {}, {}
    for fn, wt, v in spt.fields(raw):
        if fn == 6:
            strings.append(v.decode())
        elif fn == 5:
            d = dict((f, x) for f, _, x in spt.fields(v))
            funcs[d.get(1, 0)] = d.get(2, 0)
        elif fn == 4:
            lid, mid, fids = 0, 0, []
            for f, w, x in spt.fields(v):
                if f == 1:
                    lid = x
                elif f == 2:
                    mid = x
                elif f == 4:
                    ln = dict((a, y) for a, _, y in spt.fields(x))
                    fids.append(ln.get(1, 0))
            locs[lid] = (mid, fids)
        elif fn == 3:
            d = dict((f, x) for f, _, x in spt.fields(v))
            maps[d.get(1, 0)] = d.get(5, 0)
    names = {lid: [strings[funcs.get(f, 0)] for f in fids] for lid, (mid, fids) in locs.items()}
    files = {lid: strings[maps.get(mid, 0)] for lid, (mid, _) in locs.items()}
    return names, files


def symbolizer(args, **kw):
    return subprocess.run([SYM] + args, capture_output=True, text=True, timeout=120, **kw)


def kernel_stats(stderr):
    m = re.search(r"kernel: resolved (\d+), unresolved (\d+) \(no snapshot (\d+), "
                  r"build id mismatch (\d+), not found (\d+), no build id (\d+)\)", stderr)
    return tuple(int(x) for x in m.groups()) if m else None


KERNEL_RE = re.compile(r"read|write|copy_to_user|clear_user|iov_iter|do_syscall_64|"
                       r"entry_SYSCALL|ksys_|vfs_|_zero|_null")


def main():
    spt.require_root()
    for b in (spt.SPANPROF, SYM):
        if not os.access(b, os.X_OK):
            skip("%s not built" % b)
    if open("/proc/sys/kernel/kptr_restrict").read().strip() not in ("0", "1"):
        skip("kernel.kptr_restrict=2 hides kernel addresses even from root")
    bid = kernel_build_id()
    if not bid:
        skip("no GNU build id in /sys/kernel/notes")
    syms = read_kallsyms()
    if len(syms) < 1000:
        fail("/proc/kallsyms shows %d text symbols with addresses" % len(syms))
    oracle = Oracle(syms)

    td = spt.tmpdir()
    try:
        prof = os.path.join(td, "dd.pb.gz")
        dd = shutil.which("dd")
        spt.record(["-F", "97", "-o", prof, "--", dd, "if=/dev/zero", "of=/dev/null",
                    "bs=64k", "count=1000000"], timeout=180)
        p = spt.read_pprof(prof)
        kmaps = [m for m in p["mappings"].values() if m["file"] == "[kernel.kallsyms]"]
        kmap_ids = set(mid for mid, m in p["mappings"].items()
                       if m["file"].startswith("[kernel") or m["file"].startswith("[module:"))
        check(kmaps and all(m["build_id"] == bid for m in kmaps),
              "profile: [kernel.kallsyms] mapping carries the kernel's build id %s" % bid)

        snap = os.path.join(td, "py.kallsyms.gz")
        write_snapshot(snap, bid, syms)

        # --- the collector's own snapshot: only what this profile needs
        own = prof + ".kallsyms.gz"
        check(os.path.exists(own), "record wrote FILE.kallsyms.gz")
        st = os.stat(own)
        check(stat.S_IMODE(st.st_mode) == 0o644, "record's snapshot is mode 0644")
        raw = open(own, "rb").read()
        check(raw[:2] == b"\x1f\x8b", "record's snapshot is gzip")
        text = gzip.decompress(raw).decode().splitlines()
        check(text[0].startswith("# spanprof-kallsyms v1 build-id=%s " % bid) and
              " scope=profile" in text[0],
              "record's snapshot header names the running kernel's build id and says it "
              "is a subset: %s" % text[0])
        addrs = [int(l.split()[0], 16) for l in text[1:] if not l.startswith("#")]
        check(addrs == sorted(addrs), "record's snapshot is sorted by address")
        whole = os.path.getsize(snap)
        nk = sum(1 for mid, a in p["locations"].values() if mid in kmap_ids)
        print("record's snapshot: %d bytes, %d symbol lines for %d kernel locations; the "
              "whole /proc/kallsyms in the same format: %d bytes, %d symbol lines"
              % (len(raw), len(addrs), nk, whole, len(syms)), flush=True)
        check(len(addrs) <= 2 * nk + 4 and len(raw) < whole // 10,
              "record's snapshot holds at most 2 symbol addresses per kernel location "
              "(+ _text/_stext): %d lines for %d locations, %d bytes vs %d whole"
              % (len(addrs), nk, len(raw), whole))
        r = symbolizer(["report", prof, "--top", "10", "--kallsyms", own])
        ks = kernel_stats(r.stderr)
        check(r.returncode == 0 and ks and ks[0] > 0,
              "record's snapshot names kernel frames (%s)" % (ks,))
        # every kernel location: the subset's name is the whole snapshot's
        out_own = os.path.join(td, "sym-own.pb.gz")
        out_whole = os.path.join(td, "sym-whole.pb.gz")
        r1 = symbolizer(["file", prof, "-o", out_own, "--no-kallsyms", "--kallsyms", own])
        r2 = symbolizer(["file", prof, "-o", out_whole, "--no-kallsyms", "--kallsyms", snap])
        check(r1.returncode == 0 and r2.returncode == 0,
              "file with either snapshot: %s %s" % (r1.stderr[-300:], r2.stderr[-300:]))
        n_own, f_own = pprof_functions(out_own)
        n_whole, _ = pprof_functions(out_whole)
        kl = [lid for lid, f in f_own.items() if f.startswith("[kernel") or
              f.startswith("[module:")]
        diff = [(lid, n_own.get(lid), n_whole.get(lid)) for lid in kl
                if n_own.get(lid) != n_whole.get(lid)]
        named = sum(1 for lid in kl if n_whole.get(lid))
        check(len(kl) >= 10 and named >= 0.9 * len(kl) and not diff,
              "all %d kernel locations (%d named) get the same name from record's subset "
              "as from the whole /proc/kallsyms: %s" % (len(kl), named, diff[:5]))
        # truncated: an explicit --kallsyms is refused, the default one warns
        cut = os.path.join(td, "cut.kallsyms.gz")
        with open(cut, "wb") as f:
            f.write(raw[:len(raw) * 2 // 3])
        os.chmod(cut, 0o644)
        r = symbolizer(["report", prof, "--kallsyms", cut])
        check(r.returncode == 1 and "not a spanprof-kallsyms v1 snapshot" in r.stderr,
              "a truncated subset given with --kallsyms is an error: %s" % r.stderr[-300:])
        shutil.copy(cut, own)
        r = symbolizer(["report", prof, "--top", "5"])
        ks = kernel_stats(r.stderr)
        check(r.returncode == 0 and "warning" in r.stderr and ks and ks[0] == 0 and
              ks[2] == ks[1] > 0,
              "a truncated subset beside the profile: a warning, kernel frames counted as "
              "no snapshot (%s)" % (ks,))
        os.unlink(own)

        # --- report (as root: drops to nobody, reads the 0644 snapshot)
        r = symbolizer(["report", prof, "--top", "20", "--kallsyms", snap])
        if r.returncode != 0:
            fail("report failed: %s" % r.stderr)
        print(r.stdout)
        print(r.stderr)
        ks = kernel_stats(r.stderr)
        check(ks is not None and ks[0] > 0, "report: kernel frames resolved (%s)" % (ks,))
        check(ks[3] == 0 and ks[2] == 0, "report: no mismatch, no missing snapshot")
        top_names = [l.split(None, 4)[-1] for l in r.stdout.splitlines()[1:] if l.strip()]
        knames = set(n for _, _, n, _ in syms)
        kern = [n for n in top_names if n in knames and KERNEL_RE.search(n)]
        check(len(kern) >= 2, "report --top 20 names kernel functions: %s" % kern[:6])
        check(not any(n.startswith("[kernel] 0x") for n in top_names[:5]),
              "report: no unresolved kernel frame among the top 5")

        # --- every kernel location against /proc/kallsyms
        out = os.path.join(td, "sym.pb.gz")
        r = symbolizer(["file", prof, "-o", out, "--kallsyms", snap])
        if r.returncode != 0:
            fail("file failed: %s" % r.stderr)
        names, files = pprof_functions(out)
        raw_locs = p["locations"]
        total = agree = 0
        bad = []
        for lid, (mid, addr) in raw_locs.items():
            if files.get(lid) != "[kernel.kallsyms]":
                continue
            total += 1
            want = oracle.names(addr)
            got = names.get(lid, [])
            if len(got) == 1 and got[0] in want:
                agree += 1
            elif len(bad) < 5:
                bad.append((hex(addr), got, sorted(want)[:3]))
        check(total >= 10, "profile has %d kernel locations" % total)
        check(agree >= 0.99 * total,
              "kernel locations named as /proc/kallsyms says: %d/%d %s" % (agree, total, bad))

        # --- travel rules
        shutil.copy(snap, prof + ".kallsyms.gz")
        os.chmod(prof + ".kallsyms.gz", 0o644)
        r = symbolizer(["report", prof, "--top", "5"])
        ks = kernel_stats(r.stderr)
        check(r.returncode == 0 and ks and ks[0] > 0,
              "default: IN.kallsyms.gz next to the input is used (%s)" % (ks,))
        r = symbolizer(["report", prof, "--top", "5", "--no-kallsyms"])
        ks = kernel_stats(r.stderr)
        check(r.returncode == 0 and ks and ks[0] == 0 and ks[2] > 0,
              "--no-kallsyms: kernel frames counted as no snapshot (%s)" % (ks,))
        os.unlink(prof + ".kallsyms.gz")

        kdir = os.path.join(td, "ksyms")
        os.mkdir(kdir)
        os.chmod(kdir, 0o755)
        shutil.copy(snap, os.path.join(kdir, bid + ".kallsyms.gz"))
        r = symbolizer(["report", prof, "--top", "5", "--kallsyms-dir", kdir])
        ks = kernel_stats(r.stderr)
        check(r.returncode == 0 and ks and ks[0] > 0,
              "--kallsyms-dir finds DIR/<build-id>.kallsyms.gz (%s)" % (ks,))

        other = os.path.join(td, "other.kallsyms.gz")
        write_snapshot(other, "00" * 20, syms[:100])
        r = symbolizer(["report", prof, "--top", "20", "--kallsyms", other])
        ks = kernel_stats(r.stderr)
        check(r.returncode == 0 and ks and ks[0] == 0 and ks[3] == ks[1] and ks[3] > 0,
              "a snapshot of another build id is not used: counted as mismatch (%s)" % (ks,))
        check("[kernel] 0x" in r.stdout, "mismatch: kernel frames stay [kernel] 0xADDR")

        bad_snap = os.path.join(td, "bad.kallsyms.gz")
        with gzip.open(bad_snap, "wt") as f:
            f.write("not a snapshot\n")
        os.chmod(bad_snap, 0o644)
        r = symbolizer(["report", prof, "--kallsyms", bad_snap])
        check(r.returncode == 1 and "not a spanprof-kallsyms v1 snapshot" in r.stderr,
              "an explicit --kallsyms that is not a snapshot is an error")
    finally:
        shutil.rmtree(td, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
