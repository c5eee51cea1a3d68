#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Kernel frames that mean the same on every boot, and from the agent (root).

1. record: `spanprof record -- dd if=/dev/zero of=/dev/null` (syscall-heavy).
   The [kernel.kallsyms] mapping carries the kernel's build id and
   memory_start = the link-time _text, below every kernel location.
2. Another boot, simulated: this machine's snapshot (FILE.kallsyms.gz) is
   rewritten as a boot with another KASLR slide would have captured it -
   every address moved by the same 2 MiB-aligned slide (0x2a00000, as
   KASLR moves the whole image), another boot id - and the profile, copied
   where no other snapshot is, is symbolized with only that one.  Every
   kernel location must get the name this boot's /proc/kallsyms gives for
   (runtime _text + location - memory_start), looked up here independently
   (>= 99%).  A symbolizer that took locations for runtime addresses of the
   snapshot's boot would name them 42 MiB away: wrong.
3. agent -> serve: `spanprof agent --upload-symbols` ships its kernel
   snapshot to `spanprof-symbolizer serve --store-dir` running as nobody,
   sharing no file with the agent (its own store and output directories,
   no --kallsyms); serve's profiles name dd's kernel frames as
   /proc/kallsyms does (>= 95% of kernel frames), and name the same top
   kernel functions as record's.
Exit 0 pass, 77 skip, else fail.
"""
import collections
import gzip
import os
import shutil
import subprocess
import sys
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import spt  # noqa: E402
from spt import check, fail, skip  # noqa: E402
from agent_util import Agent, StoreServe, exported_after_upload, http_get, otlp_files  # noqa: E402
from lib.otlp import read_otlp  # noqa: E402
import test_symbolizer_kernel as tsk  # noqa: E402

SYM = tsk.SYM
SLIDE = 0x2a00000


def runtime_text():
    with open("/proc/kallsyms") as f:
        for line in f:
            a, t, n = line.split()[:3]
            if n == "_text":
                return int(a, 16)
    fail("no _text in /proc/kallsyms")


def shifted_snapshot(src, dst, slide):
    """src's lines with every address + slide and another boot id."""
    lines = gzip.decompress(open(src, "rb").read()).decode().splitlines()
    hdr = lines[0].split()
    hdr = [("boot-id=%s" % uuid.uuid4()) if w.startswith("boot-id=") else
           ("captured-at=%d" % time.time_ns()) if w.startswith("captured-at=") else w
           for w in hdr]
    out = [" ".join(hdr)]
    for l in lines[1:]:
        if not l or l.startswith("#"):
            out.append(l)
            continue
        a, rest = l.split(" ", 1)
        out.append("%016x %s" % ((int(a, 16) + slide) & (2**64 - 1), rest))
    with gzip.open(dst, "wt") as f:
        f.write("\n".join(out) + "\n")
    os.chmod(dst, 0o644)


def dd_cmd(count):
    return [shutil.which("dd"), "if=/dev/zero", "of=/dev/null", "bs=64k", "count=%d" % count]


def part_record(td, bid, oracle, text):
    prof = os.path.join(td, "dd.pb.gz")
    spt.record(["-F", "97", "-o", prof, "--"] + dd_cmd(1000000), timeout=180)
    p = spt.read_pprof(prof)
    kmaps = {mid: m for mid, m in p["mappings"].items() if m["file"] == "[kernel.kallsyms]"}
    check(len(kmaps) == 1 and all(m["build_id"] == bid for m in kmaps.values()),
          "one [kernel.kallsyms] mapping with the kernel's build id")
    km_id, km = next(iter(kmaps.items()))
    base = km["start"]
    klocs = {lid: a for lid, (mid, a) in p["locations"].items() if mid == km_id}
    check(len(klocs) >= 10, "%d kernel locations" % len(klocs))
    check(base % (2 << 20) == 0 and base >= 0xffffffff80000000 and
          all(base <= a < km["limit"] for a in klocs.values()),
          "memory_start %#x is a link-time _text below every kernel location" % base)
    own = prof + ".kallsyms.gz"
    check(os.path.exists(own), "record wrote FILE.kallsyms.gz")

    other = os.path.join(td, "otherboot")
    os.mkdir(other)
    os.chmod(other, 0o755)
    prof2 = os.path.join(other, "dd.pb.gz")
    shutil.copy(prof, prof2)
    os.chmod(prof2, 0o644)
    snap = os.path.join(other, "slid.kallsyms")
    shifted_snapshot(own, snap + ".gz", SLIDE)
    out = os.path.join(other, "sym.pb.gz")
    r = tsk.symbolizer(["file", prof2, "-o", out, "--kallsyms", snap + ".gz"])
    if r.returncode:
        fail("symbolizer file failed: %s" % r.stderr)
    names, files = tsk.pprof_functions(out)
    agree, bad = 0, []
    for lid, a in klocs.items():
        want = oracle.names(text + (a - base))
        got = names.get(lid, [])
        if len(got) == 1 and got[0] in want:
            agree += 1
        elif len(bad) < 5:
            bad.append((hex(a), got, sorted(want)[:2]))
    check(agree >= 0.99 * len(klocs),
          "another boot's snapshot (slide %#x) names %d/%d kernel locations as this boot's "
          "/proc/kallsyms does %s" % (SLIDE, agree, len(klocs), bad))
    top = collections.Counter()
    for s in p["samples"]:
        if s["locs"] and s["locs"][0] in klocs and names.get(s["locs"][0]):
            top[names[s["locs"][0]][0]] += s["values"][0] if s["values"] else 1
    return top, base


def part_agent(td, oracle, text, base, record_top):
    srv = StoreServe(td)
    port, out = srv.port, srv.out
    agent = dd = None
    try:
        agent = Agent(["--endpoint", "http://127.0.0.1:%d" % port, "--upload-symbols",
                       "--interval", "1", "--jitter", "0", "-F", "97"], td)
        dd = subprocess.Popen(dd_cmd(10 ** 9), stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
        exported_after_upload(agent, srv, "kallsyms", 3)
        dd.kill()
        dd.wait()
        rc, _ = agent.stop()
        check(rc == 0, "agent exited 0")
        # serve renames a profile into its output directory before it
        # answers 200 (serve.c): what the stop flushed is there now
        check(otlp_files(out), "serve's output holds the exported profiles")
    finally:
        if dd and dd.poll() is None:
            dd.kill()
            dd.wait()
        if agent:
            agent.kill()
    st, metrics = http_get(port, "/metrics")
    print(srv.stop()[-1500:])
    total = agree = 0
    bad = []
    top = collections.Counter()
    for f in otlp_files(out):
        for s in read_otlp(f):
            if s["kind"] != "samples" or not s["res"].get("process.executable.name", "") \
                    .startswith("dd"):
                continue
            for i, (fr, fn) in enumerate(zip(s["stack"], s["funcs"])):
                if fr[0] != "[kernel.kallsyms]":
                    continue
                total += 1
                # the agent's layout is record's (same host, same kernel):
                # memory_start is record's base (lib/otlp does not read it)
                if fn in oracle.names(text + fr[2] - base):
                    agree += 1
                elif len(bad) < 5:
                    bad.append((hex(fr[2]), fn))
                if i == 0 and fn:
                    top[fn] += s["count"]
    check(total >= 10 and agree >= 0.95 * total,
          "serve (nobody, only uploads) names %d/%d of dd's kernel frames as /proc/kallsyms "
          "does %s" % (agree, total, bad))
    check(st == 200 and 'spanprof_symbolizer_symbols_stored_total{kind="kallsyms"} 1' in metrics,
          "serve stored one kernel snapshot from the upload")
    a = set(n for n, _ in record_top.most_common(3))
    b = set(n for n, _ in top.most_common(6))
    check(a & b, "the top kernel leaves agree with record's: %s vs %s" % (
        record_top.most_common(3), top.most_common(6)))
    srv.cleanup()


def main():
    spt.require_root()
    if open("/proc/sys/kernel/kptr_restrict").read().strip() not in ("0", "1"):
        skip("kernel.kptr_restrict=2 hides kernel addresses even from root")
    bid = tsk.kernel_build_id()
    if not bid:
        skip("no GNU build id in /sys/kernel/notes")
    oracle = tsk.Oracle(tsk.read_kallsyms())
    text = runtime_text()
    td = spt.tmpdir()
    record_top, base = part_record(td, bid, oracle, text)
    part_agent(td, oracle, text, base, record_top)
    shutil.rmtree(td, ignore_errors=True)


if __name__ == "__main__":
    main()
