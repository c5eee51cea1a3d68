#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""BPF state at its bound, provoked for real: the tls_descs map (processes
whose trace context BPF reads) and the off-CPU pending-record task storage.

The bounds are lowered with record's --ctx-max-procs and
--off-cpu-max-pending (the default sizes, 16384 and 8192, would need that
many live processes or blocked threads).

1. tls_descs: --ctx-max-procs 8, then 24 real processes (ctx_worker, built
   here with libspanctx from its sources) publish a context at the same
   time: 8 get a descriptor, 16 updates fail and are counted as
   bpf_map_full (the summary line names them); the 16 are still profiled,
   only without ids; no crash.  Once they have all exited, 4 new
   publishers get ids: an exit frees its entry (before this test, none
   did: the map kept exited processes until it was full for good).
2. off-CPU: 64 threads sleeping 1 ms in a loop, every wait captured
   (--off-cpu-sample 1), at most 4 captured waits open at once: switches
   that find the storage full are counted (offcpu_state_full), every
   switch is still accounted for (the summary's identity), at most 4 were
   open at stop, nothing is lost between the ring and the file.  The same
   load with the default bound counts none.
Bounded: about 20 s.
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from spt import check, fail, load_json, read_pprof, record, require_root, tmpdir  # noqa: E402
from fault_util import SLEEPERS  # noqa: E402

require_root()
d = tmpdir()
root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
inc = os.path.join(root, "lib", "spanctx")


def cc(args):
    p = subprocess.run(["cc"] + args, capture_output=True, text=True)
    if p.returncode:
        fail("cc %s: %s" % (" ".join(args), p.stderr))


# libspanctx from its sources without sanitizers (this test is about the
# collector's bound, whichever build it runs against), the TLS variable in
# the executable, exported as the header tells static users to.
objs = []
for c in sorted(f for f in os.listdir(inc) if f.endswith(".c")):
    o = os.path.join(d, c[:-2] + ".o")
    cc(["-c", "-fPIC", "-O1", "-g", "-fno-omit-frame-pointer", "-mtls-dialect=gnu2",
        "-fvisibility=hidden", "-D_GNU_SOURCE", "-I" + inc, os.path.join(inc, c), "-o", o])
    objs.append(o)
worker = os.path.join(d, "ctx_worker")
cc(["-O1", "-g", "-fno-omit-frame-pointer", "-I" + inc,
    os.path.join(root, "tests", "integration", "ctx_worker.c")] + objs
   + ["-Wl,--export-dynamic-symbol=otel_thread_ctx_v1", "-lpthread", "-o", worker])

# The two bounds refuse bad values with one line naming the option.
for args, msg in ((["--ctx-max-procs", "0"], "--ctx-max-procs 0: expected 1..16384 processes"),
                  (["--ctx-max-procs", "16385"], "--ctx-max-procs 16385: expected 1..16384"),
                  (["--off-cpu", "--off-cpu-max-pending", "0"],
                   "--off-cpu-max-pending 0: expected 1..1048576"),
                  (["--off-cpu-max-pending", "4"], "--off-cpu-* options need --off-cpu")):
    rc, _, err = record(args + ["--", "true"], check_rc=False)
    check(rc != 0 and msg in err and len(err.strip().splitlines()) == 1,
          "%s: refused in one line (%s)" % (" ".join(args), err.strip()))

# ------------------------------------------------------------ 1. tls_descs
MAXP, FIRST, SECOND = 8, 24, 4
script = ("for i in $(seq %d); do %s 1 4 >/dev/null & done; wait; "
          "for i in $(seq %d); do %s 2 1.5 >/dev/null & done; wait"
          % (FIRST, worker, SECOND, worker))
out = os.path.join(d, "ctx.pb.gz")
js = os.path.join(d, "ctx.json")
rc, _, err = record(["-F", "97", "--ctx-max-procs", str(MAXP), "-o", out, "--summary-json", js,
                     "--", "sh", "-c", script], timeout=90)
x = load_json(js)["ctx"]
print("ctx", {k: v for k, v in x.items() if v}, flush=True)
check(rc == 0, "1: record exits 0 with the tls_descs map full")
# Counts are of examinations, not strictly of processes: the consumer runs
# behind the ring, so a forked child's first sample can be examined after
# the child exec'd and published, and its exec event then examines it again
# (seen: resolved 12-14, bpf_map_full 16-17 for these 28 processes).
check(x["bpf_map_full"] >= FIRST - MAXP,
      "1: at least %d of %d concurrent publishers did not fit in a %d-entry map: "
      "bpf_map_full %d" % (FIRST - MAXP, FIRST, MAXP, x["bpf_map_full"]))
check(x["procs_resolved"] >= MAXP + SECOND and x["procs_failed"] >= FIRST - MAXP,
      "1: resolved %d (>= %d that fit + %d after the first ones exited), failed %d"
      % (x["procs_resolved"], MAXP, SECOND, x["procs_failed"]))
check("bpf_map_full %d" % x["bpf_map_full"] in err, "1: the summary line names bpf_map_full")
p = read_pprof(out)
with_ids, pids = {1: set(), 2: set()}, set()
for s in p["samples"]:
    if s["labels"].get("thread_name") != "ctx_worker":
        continue
    pids.add(s["labels"]["pid"])
    tid = s["labels"].get("trace_id")
    if tid:
        with_ids[int(tid[-2:], 16)].add(s["labels"]["pid"])
no_ids = pids - with_ids[1] - with_ids[2]
print("pids with ids: first wave %d, second wave %d; sampled pids never with ids: %d"
      % (len(with_ids[1]), len(with_ids[2]), len(no_ids)), flush=True)
check(0 < len(with_ids[1]) <= MAXP, "1: samples with ids come from at most %d first-wave "
      "processes (%d)" % (MAXP, len(with_ids[1])))
check(len(no_ids) >= (FIRST - MAXP) // 2,
      "1: the processes left out are still profiled, without ids (%d of %d seen)"
      % (len(no_ids), FIRST - MAXP))
check(len(with_ids[2]) == SECOND, "1: all %d second-wave processes carry ids (%d): the "
      "first wave's exits freed their entries" % (SECOND, len(with_ids[2])))

# -------------------------------------------------------------- 2. off-CPU


def offcpu_run(tag, extra):
    js = os.path.join(d, tag + ".json")
    out = os.path.join(d, tag + ".pb.gz")
    record(["-F", "97", "--off-cpu", "--off-cpu-sample", "1", "--off-cpu-min-us", "0",
            "-o", out, "--summary-json", js] + extra + ["--", sys.executable, "-c", SLEEPERS],
           timeout=60)
    j = load_json(js)
    return j["bpf"], j["offcpu"], j["consumer"]


PEND = 4
b, oc, c = offcpu_run("full", ["--off-cpu-max-pending", str(PEND)])
print("bounded:", {k: v for k, v in b.items() if k.startswith("offcpu") or "offcpu" in k},
      "pending_at_stop", oc["pending_at_stop"], flush=True)
check(b["offcpu_state_full"] > 0, "2: with %d pending records at most, %d switch-outs found "
      "the storage full (counted)" % (PEND, b["offcpu_state_full"]))
parts = ("offcpu_idle", "offcpu_kthread", "offcpu_filtered", "offcpu_exiting",
         "offcpu_sampled_out", "offcpu_state_full", "offcpu_captured")
check(b["offcpu_switches"] == sum(b[k] for k in parts),
      "2: switches %d = idle + kernel threads + filtered + exiting + sampled out + state full "
      "+ captured" % b["offcpu_switches"])
check(oc["identity_ok"], "2: the summary's off-CPU identity holds")
check(oc["pending_at_stop"] <= PEND, "2: at most %d waits open at stop (%d)"
      % (PEND, oc["pending_at_stop"]))
check(b["offcpu_captured"] > 0 and b["ringbuf_sent_offcpu"] > 0,
      "2: waits still captured (%d) and streamed (%d)" % (b["offcpu_captured"],
                                                         b["ringbuf_sent_offcpu"]))
check(c["received_offcpu"] == b["ringbuf_sent_offcpu"] and
      c["received_oncpu"] + c["received_offcpu"] == c["aggregated"] + c["agg_dropped"],
      "2: every streamed wait received (%d) and written or counted" % c["received_offcpu"])
b2, oc2, _ = offcpu_run("default", [])
check(b2["offcpu_state_full"] == 0 and oc2["identity_ok"] and b2["offcpu_captured"] > 0,
      "2: the same load with the default bound: state full %d, captured %d"
      % (b2["offcpu_state_full"], b2["offcpu_captured"]))
print("PASS")
