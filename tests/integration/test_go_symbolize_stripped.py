# spanprof-test: parallel (BPF on its own command only: record of a 2 s Go run whose build id and top names are checked; the rest is the symbolizer on files; no timing, rate or whole-machine assertion)
"""A stripped Go binary (-ldflags=-s -w) symbolized from .gopclntab matches
its unstripped build symbolized from DWARF (issue 13).

Addresses: every 5th instruction of the unstripped build's .text (objdump;
not the int3 padding between functions).
Both builds have the same code layout (-s -w drops .symtab and DWARF, not
code); each address goes through spanprof-symbolizer addr on both files.
Frames are compared as (function, file, line), inlined callees included
(pclntab has no columns; ABI0 assembly functions are named with the .abi0
suffix by .symtab and without it by pclntab, so that suffix is ignored).
>= 99% of the addresses must agree, and the stripped answers must include
inlined frames.

End to end: a profile of the stripped binary carries its Go build id
(no GNU one), and spanprof-symbolizer finds the file by it (the mapped
file's own Go build id note matches) and names its hot functions, with
files and lines.
"""
import os
import subprocess

from spt import *

require_root()
SYM = os.path.join(BUILD, "spanprof-symbolizer")
full = os.path.join(BUILD, "fixtures", "go", "golabels")
stripped = full + ".stripped"
out = subprocess.run(["readelf", "-S", stripped], capture_output=True, text=True).stdout
check(".gopclntab" in out and ".debug_info" not in out and ".symtab" not in out,
      "the stripped build has .gopclntab but no DWARF and no .symtab")

addrs = []
for line in subprocess.run(["objdump", "-d", "--no-show-raw-insn", full], capture_output=True,
                           text=True).stdout.splitlines():
    f = line.split(":", 1)
    # instructions, not the int3 padding between functions (in none)
    if line.startswith("  ") and len(f) == 2 and f[0].strip() and "int3" not in f[1]:
        try:
            addrs.append(int(f[0].strip(), 16))
        except ValueError:
            pass
addrs = addrs[::5]
check(len(addrs) > 10000, "%d instruction addresses" % len(addrs))


def resolve(elf):
    p = subprocess.run([SYM, "addr", "-q", "--allow-root", "-e", elf], capture_output=True,
                       text=True, input="".join("0x%x\n" % a for a in addrs), timeout=300)
    if p.returncode:
        fail("spanprof-symbolizer addr -e %s: %s" % (elf, p.stderr[-300:]))
    chains, cur = [], []
    lines = p.stdout.split("\n")
    i = 0
    while i < len(lines):
        if lines[i] == "":
            if cur or (i + 1 < len(lines) and lines[i + 1] != ""):
                chains.append(cur)
            cur = []
            i += 1
            continue
        fn, loc = lines[i], lines[i + 1] if i + 1 < len(lines) else "??:0:0"
        file, ln = loc.rsplit(":", 2)[0], loc.rsplit(":", 2)[1]
        if fn.endswith(".abi0"):
            fn = fn[:-5]
        cur.append((fn, file, ln))
        i += 2
    return chains[:len(addrs)]


a, b = resolve(full), resolve(stripped)
check(len(a) == len(addrs) and len(b) == len(addrs), "one answer per address (%d, %d of %d)" %
      (len(a), len(b), len(addrs)))
known = [i for i in range(len(addrs)) if a[i] and a[i][0][0] != "??"]
same = [i for i in known if a[i] == b[i]]
inl = sum(1 for i in known if len(b[i]) > 1)
diff = [(hex(addrs[i]), a[i], b[i]) for i in known if a[i] != b[i]]
print("resolved from DWARF %d of %d; the same from .gopclntab %d (%.2f%%); with inlined frames "
      "%d" % (len(known), len(addrs), len(same), 100.0 * len(same) / max(1, len(known)), inl),
      flush=True)
for x in diff[:5]:
    print("differs:", x)
check(len(known) > 0.99 * len(addrs), "DWARF names %d of %d addresses" % (len(known), len(addrs)))
check(len(same) >= 0.99 * len(known), ">= 99%% of the addresses symbolize alike (%d of %d)" %
      (len(same), len(known)))
check(inl > 100, "inlined frames from the stripped binary's table (%d addresses)" % inl)

# end to end
d = tmpdir()
prof = os.path.join(d, "s.pb.gz")
p = subprocess.run([SPANPROF, "record", "--no-report", "-q", "-F", "97", "-o", prof, "--",
                    stripped, "-mode", "spans", "-workers", "4", "-duration", "2"],
                   capture_output=True, text=True, timeout=120, env=go_env(GOMAXPROCS=2))
check(p.returncode == 0, "record the stripped binary")
bids = {m["build_id"] for m in read_pprof(prof)["mappings"].values() if m["file"] == stripped}
gid = subprocess.run(["go", "tool", "buildid", stripped], capture_output=True,
                     text=True).stdout.strip()
check(bids == {gid} and not read_buildid(stripped),
      "its mapping carries its Go build id (it has no GNU one): %s" % bids)
r = subprocess.run([SYM, "report", prof, "--allow-root", "--top", "10"], capture_output=True,
                   text=True, timeout=120)
check(r.returncode == 0 and "main.burn" in r.stdout and "main.spanWork" in r.stdout,
      "the report names main.burn and main.spanWork<w>:\n" + r.stdout[-600:])
check("gopclntab" in r.stderr and "found_path 1" in r.stderr,
      "found by the mapped file's Go build id, resolved from .gopclntab: " +
      [l for l in r.stderr.splitlines() if "resolved" in l or "lookups" in l].__str__())
shutil.rmtree(d)
