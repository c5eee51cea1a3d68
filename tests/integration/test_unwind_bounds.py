"""The unwinder's byte budget under many distinct binaries (issue 12).

24 copies of build/fixtures/unw_wide (2048 framed functions, ~50 KiB of
unwind table each), each with its own build id (so each is another file
to the unwinder), run in waves of 4 under `spanprof agent
--unwind-budget 512k` (libc's table is ~100 KiB; about 7 tables fit).
Polling /metrics and the agent's own BPF map fds:
  - the unwinder's BPF bytes in use never exceed the budget, and all the
    agent's BPF maps together stay below the fixed maps + the budget, and
    the fixed maps at start are under 16 MiB (the 4 MiB ring included);
  - RSS stays flat: its peak over the last three waves (18 binaries in)
    is within 2 MiB of its peak over the first three (the aggregators
    and export buffers fill early; unwind state does not grow with files);
  - evictions are counted, tables keep being built, and frames whose file
    has no table (evicted, or not built yet) fall back to frame pointers,
    counted as such;
  - every copy's samples are exported (the stacks stay usable: their leaf
    is named wide_leaf).
"""
import os
import shutil
import struct
import subprocess
import time

from spt import *
from agent_util import Agent, wait_for

require_root()
SRC = os.path.join(BUILD, "fixtures", "unw_wide")
BUDGET = 512 * 1024
FIXED_MAPS_MAX = 16 << 20
d = tmpdir()


def build_id_offset(path):
    """File offset of the GNU build id bytes (PT_NOTE walk)."""
    b = open(path, "rb").read()
    phoff, = struct.unpack_from("<Q", b, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", b, 0x36)
    for i in range(phnum):
        p_type, _, p_offset, _, _, p_filesz = struct.unpack_from("<IIQQQQ", b, phoff + i * phentsize)
        if p_type != 4:
            continue
        o = p_offset
        while o + 12 <= p_offset + p_filesz:
            namesz, descsz, typ = struct.unpack_from("<III", b, o)
            name_o = o + 12
            desc_o = name_o + ((namesz + 3) & ~3)
            if typ == 3 and b[name_o:name_o + 4] == b"GNU\0":
                return desc_o, descsz
            o = desc_o + ((descsz + 3) & ~3)
    fail("no build id in " + path)


off, size = build_id_offset(SRC)
copies = []
for i in range(24):
    dst = os.path.join(d, "wide%02d" % i)
    shutil.copy(SRC, dst)
    with open(dst, "r+b") as f:
        f.seek(off)
        f.write(os.urandom(size))
    copies.append(dst)


def bpf_maps(pid):
    """[(map_type, max_entries, memlock)] of every BPF map the process holds
    an fd of (fdinfo), each map once."""
    rows, seen = [], set()
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            info = open("/proc/%d/fdinfo/%s" % (pid, fd)).read()
        except OSError:
            continue
        if "map_type:" not in info:
            continue
        kv = dict(l.split(":", 1) for l in info.splitlines() if ":" in l)
        mid = kv.get("map_id", fd).strip()
        if mid in seen:
            continue
        seen.add(mid)
        rows.append((int(kv.get("map_type", "0")), int(kv.get("max_entries", "0")),
                     int(kv.get("memlock", "0").strip())))
    return rows


def bpf_map_bytes(pid):
    return sum(r[2] for r in bpf_maps(pid))


agent = Agent(["-F", "97", "--interval", "1", "--output-dir", os.path.join(d, "out"),
               "--unwind-budget", "512k"], d)
try:
    base_rows = bpf_maps(agent.pid)
    base_maps = sum(r[2] for r in base_rows)
    samples, rss, in_use, maps = [], [], [], []

    def poll():
        m = agent.metrics()
        in_use.append(m.get1("spanprof_unwind_bpf_bytes", kind="in_use"))
        rss.append(m.get1("process_resident_memory_bytes"))
        maps.append(bpf_map_bytes(agent.pid))
        return m

    wave_rss = []
    for w in range(0, len(copies), 4):
        procs = [subprocess.Popen([c, "0.4"], stdout=subprocess.DEVNULL) for c in copies[w:w + 4]]
        n0 = len(rss)
        while any(p.poll() is None for p in procs):
            poll()
            time.sleep(0.25)
        wave_rss.append(max(rss[n0:] or rss[-1:]))
        for p in procs:
            check(p.returncode == 0, "copy ran")
    time.sleep(1.5)
    m = poll()
finally:
    rc, _ = agent.stop()
check(rc == 0, "agent stopped cleanly")

budget = m.get1("spanprof_unwind_bpf_bytes", kind="budget")
fixed = m.get1("spanprof_unwind_bpf_bytes", kind="fixed")
check(budget == BUDGET, "budget %d bytes" % budget)
check(max(in_use) <= BUDGET, "unwinder BPF bytes in use peaked at %d <= budget %d" % (max(in_use), BUDGET))
# Without a pid filter or a target selection the filter hashes are one
# entry each (bpf_sampler.c size_filter_maps); at 65536 entries they were
# 5 MiB each and the agent's maps 23 MiB at start.
check(base_maps <= FIXED_MAPS_MAX,
      "the agent's BPF maps at start: %.1f MiB <= %.0f MiB (largest: (type, entries, bytes) %s)"
      % (base_maps / 2.0**20, FIXED_MAPS_MAX / 2.0**20,
         sorted(base_rows, key=lambda r: -r[2])[:6]))
check(max(maps) <= base_maps + BUDGET + 64 * 1024,
      "all BPF maps of the agent peaked at %d bytes <= %d at start + budget" % (max(maps), base_maps))
early, late = max(wave_rss[:3]), max(wave_rss[-3:])
check(late - early <= 2 << 20, "RSS flat: peak %d in the first three waves, %d in the last three (%s)"
      % (early, late, [int(r) >> 20 for r in wave_rss]))
built = m.get1("spanprof_unwind_tables_total", outcome="built")
evicted = m.get1("spanprof_unwind_tables_total", outcome="evicted")
check(built >= 12, "%d tables built" % built)
check(evicted >= 1, "%d tables evicted (counted)" % evicted)
no_table = m.get1("spanprof_bpf_unwind_fp_fallback_frames_total", reason="no_table")
check(no_table > 0, "%d frames fell back to frame pointers for want of a table (counted)" % no_table)
