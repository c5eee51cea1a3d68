"""Off-CPU time and call chains against a fixture's measured ground truth.

build/fixtures/offcpu_waits (tests/fixtures/offcpu_waits.c) blocks in
three named frame-pointer function chains with raw syscalls: a sleep
(nanosleep), a futex lock held by another thread, a pipe read fed by another
thread; it measures every blocking call's off-CPU time as wall time minus
the thread's CPU time over the call.  spanprof record
--off-cpu --off-cpu-sample 1 (every wait captured) must give, per span
function (a user frame inside its address range, from nm -S), off-CPU time
within +-10% of the truth, with the chain raw wrapper -> named function ->
thread function in the user frames and kernel frames under it.

Then a thread whose CPU affinity is flipped while it sleeps (it blocks on
one CPU and wakes on the other): its off-CPU time must match its truth too,
which a per-CPU keyed start time would lose or mis-pair.

Every context switch has one counted outcome (offcpu.identity_ok).
"""
import os
import subprocess

from spt import *

require_root()
FIX = os.path.join(BUILD, "fixtures", "offcpu_waits")


def elf_funcs(path):
    """{name: (start, end)} of function symbols, as link-time addresses."""
    out = subprocess.run(["nm", "-S", "--defined-only", path], capture_output=True,
                         text=True, check=True).stdout
    f = {}
    for line in out.splitlines():
        p = line.split()
        if len(p) == 4 and p[2] in "tT":
            a, n = int(p[0], 16), int(p[1], 16)
            f[p[3]] = (a, a + n)
    return f


def elf_loads(path):
    """[(file offset, vaddr, filesz)] of PT_LOAD segments."""
    out = subprocess.run(["readelf", "-lW", path], capture_output=True, text=True,
                         check=True).stdout
    segs = []
    for line in out.splitlines():
        p = line.split()
        if p and p[0] == "LOAD":
            segs.append((int(p[1], 16), int(p[2], 16), int(p[4], 16)))
    return segs


class Symbols:
    """Maps a sample's user address in the fixture to a function name."""

    def __init__(self, path):
        self.path = os.path.realpath(path)
        self.funcs = elf_funcs(path)
        self.loads = elf_loads(path)

    def name(self, mapping, addr):
        if os.path.realpath(mapping["file"]) != self.path:
            return None
        off = addr - mapping["start"] + mapping["offset"]
        for fo, va, sz in self.loads:
            if fo <= off < fo + sz:
                v = off - fo + va
                for n, (a, b) in self.funcs.items():
                    if a <= v < b:
                        return n
        return None


def offcpu_samples(prof, syms):
    """Off-CPU samples as dicts: tid, reason, ns, waits, kernel (frame
    count), user (function names, leaf first; None = not the fixture)."""
    names = [t for t, _ in prof["sample_types"]]
    iw, ins = names.index("off_cpu_waits"), names.index("off_cpu")
    out = []
    for s in prof["samples"]:
        if len(s["values"]) <= ins or s["values"][iw] == 0:
            continue
        k, user = 0, []
        for lid in s["locs"]:
            mid, addr = prof["locations"][lid]
            m = prof["mappings"].get(mid, {"file": "", "start": 0, "offset": 0})
            if m["file"].startswith("[kernel"):
                k += 1
            else:
                user.append(syms.name(m, addr))
        out.append({"tid": s["labels"].get("tid"), "reason": s["labels"].get("off_cpu_reason"),
                    "ns": s["values"][ins], "waits": s["values"][iw], "kernel": k, "user": user})
    return out


def run(mode, secs, d):
    out = os.path.join(d, mode + ".pb.gz")
    js = os.path.join(d, mode + ".json")
    truth = os.path.join(d, mode + ".truth.json")
    record(["--off-cpu", "--off-cpu-sample", "1", "--off-cpu-min-us", "0", "-o", out,
            "--summary-json", js, "--", FIX, mode, str(secs), truth])
    return read_pprof(out), load_json(js), load_json(truth)


def check_accounting(summ, what):
    oc, b = summ["offcpu"], summ["bpf"]
    check(oc["enabled"] and oc["identity_ok"],
          "%s: every switch has one counted outcome (switches %d = idle %d + kthread %d + "
          "other %d + exiting %d + sampled out %d + state full %d + captured %d)" % (
              what, b["offcpu_switches"], b["offcpu_idle"], b["offcpu_kthread"],
              b["offcpu_filtered"], b["offcpu_exiting"], b["offcpu_sampled_out"],
              b["offcpu_state_full"], b["offcpu_captured"]))
    check(b["offcpu_captured"] == b["offcpu_below_min"] + b["ringbuf_sent_offcpu"]
          + b["ringbuf_dropped_offcpu"] + b["offcpu_unclosed"] + oc["pending_at_stop"],
          "%s: captured %d = below min %d + sent %d + ring full %d + switch-in not seen %d "
          "+ still blocked %d" % (
              what, b["offcpu_captured"], b["offcpu_below_min"], b["ringbuf_sent_offcpu"],
              b["ringbuf_dropped_offcpu"], b["offcpu_unclosed"], oc["pending_at_stop"]))
    check(b["offcpu_unclosed"] <= 0.005 * b["offcpu_captured"],
          "%s: switch-ins not seen %d <= 0.5%% of captures" % (what, b["offcpu_unclosed"]))
    check(b["offcpu_sampled_out"] == 0 and b["ringbuf_dropped_offcpu"] == 0
          and b["offcpu_state_full"] == 0,
          "%s: sample 1: nothing sampled out, no ring or state drops" % what)
    check(summ["consumer"]["received_offcpu"] == b["ringbuf_sent_offcpu"],
          "%s: user space received every off-CPU record sent (%d)" % (
              what, b["ringbuf_sent_offcpu"]))


d = tmpdir()
syms = Symbols(FIX)
for f in ("wait_sleep_span", "wait_lock_span", "wait_pipe_span", "migrate_sleep_span",
          "raw_syscall4", "sleeper_main", "locker_main", "reader_main"):
    check(f in syms.funcs, "fixture symbol %s found by nm -S" % f)

# ---------------------------------------------------------------- waits
prof, summ, truth = run("waits", 4, d)
check_accounting(summ, "waits")
samples = offcpu_samples(prof, syms)
chains = {
    "wait_sleep_span": ["raw_syscall4", "sys_nanosleep_raw", "wait_sleep_span", "sleeper_main"],
    "wait_lock_span": ["raw_syscall4", "sys_futex_raw", "futex_lock", "wait_lock_span",
                       "locker_main"],
    "wait_pipe_span": ["raw_syscall4", "sys_read_raw", "wait_pipe_span", "reader_main"],
}
for span, chain in chains.items():
    t = truth["spans"][span]
    mine = [s for s in samples if s["tid"] == t["tid"]]
    in_span = [s for s in mine if span in s["user"]]
    est = sum(s["ns"] for s in in_span)
    tot = sum(s["ns"] for s in mine)
    print("%s: truth %.1f ms in %d calls; estimated %.1f ms in the span's stacks "
          "(%d waits), thread total %.1f ms" % (span, t["ns"] / 1e6, t["count"], est / 1e6,
                                               sum(s["waits"] for s in in_span), tot / 1e6),
          flush=True)
    check(abs(est / t["ns"] - 1) <= 0.10,
          "%s: off-CPU time %.1f ms within +-10%% of the truth %.1f ms (%+.2f%%)" % (
              span, est / 1e6, t["ns"] / 1e6, 100 * (est / t["ns"] - 1)))
    full = sum(s["ns"] for s in in_span if s["user"][:len(chain)] == chain)
    check(full >= 0.95 * est,
          "%s: >= 95%% of its off-CPU time has the user chain %s (%.1f%%)" % (
              span, " <- ".join(chain), 100 * full / max(est, 1)))
    kern = sum(s["ns"] for s in in_span if s["kernel"] > 0)
    check(kern >= 0.95 * est, "%s: >= 95%% of it has kernel frames under the syscall" % span)
    sleep = sum(s["ns"] for s in in_span if s["reason"] == "sleep")
    check(sleep >= 0.95 * est, "%s: its waits are interruptible sleeps (reason sleep: %.1f%%)"
          % (span, 100 * sleep / max(est, 1)))

# ---------------------------------------------------------------- migration
if truth["cpus"] < 2:
    skip("the migration case needs 2 CPUs")
prof, summ, truth = run("migrate", 4, d)
check_accounting(summ, "migrate")
samples = offcpu_samples(prof, syms)
t = truth["spans"]["migrate_sleep_span"]
check(truth["migrations"] >= 0.5 * t["count"],
      "the sleeper woke on another CPU than it slept on in %d of %d sleeps" % (
          truth["migrations"], t["count"]))
mine = [s for s in samples if s["tid"] == t["tid"] and "migrate_sleep_span" in s["user"]]
if not mine:
    print("no migrate_sleep_span stacks; consumer %s; samples of the sleeper: %s" % (
        summ["consumer"], [(s["user"], s["ns"]) for s in samples if s["tid"] == t["tid"]][:5]))
est = sum(s["ns"] for s in mine)
waits = sum(s["waits"] for s in mine if s["reason"] == "sleep")
check(abs(est / t["ns"] - 1) <= 0.10,
      "migrating sleeper: off-CPU %.1f ms within +-10%% of the truth %.1f ms (%+.2f%%)" % (
          est / 1e6, t["ns"] / 1e6, 100 * (est / t["ns"] - 1)))
check(abs(waits - t["count"]) <= max(2, 0.02 * t["count"]),
      "migrating sleeper: %d sleep waits written for %d sleeps (none lost or doubled)" % (
          waits, t["count"]))
