"""Fallback trace context from OBI's shared map.

OpenTelemetry eBPF Instrumentation (OBI) shares the trace context it sees
in a BPF LRU hash pinned at /sys/fs/bpf/otel/traces_ctx_v1 (key pid_tgid,
value trace_id[16] + span_id[8]).  There is no OBI here, so the test plays
its part with a real pinned map of that shape (bpftool), writes one entry
for the thread of a process that publishes no OTEP 4947 context, and checks
that spanprof's samples of that thread carry those ids (status SP_CTX_OBI,
counted as ctx_obi) while other threads carry none.
"""
import os
import subprocess
import time

from spt import *

require_root()
PIN = "/sys/fs/bpf/otel/traces_ctx_v1"
mounted = False
if subprocess.run(["mountpoint", "-q", "/sys/fs/bpf"]).returncode != 0:
    subprocess.run(["mount", "-t", "bpf", "bpf", "/sys/fs/bpf"], check=True)
    mounted = True
if os.path.exists(PIN):
    skip("a real OBI map is pinned at %s: not touching it" % PIN)
d = tmpdir()
worker = subprocess.Popen([os.path.join(BUILD, "fixtures", "callchain"), "4"], stdout=subprocess.PIPE)
try:
    os.makedirs(os.path.dirname(PIN), exist_ok=True)
    subprocess.run(["bpftool", "map", "create", PIN, "type", "lru_hash", "key", "8", "value", "24",
                    "entries", "16384", "name", "traces_ctx_v1"], check=True)
    pid = worker.pid
    key = ((pid << 32) | pid).to_bytes(8, "little")
    trace = bytes(range(0xa0, 0xb0))
    span = bytes(range(0xc0, 0xc8))
    subprocess.run(["bpftool", "map", "update", "pinned", PIN, "key", "hex"] + ["%02x" % b for b in key] +
                   ["value", "hex"] + ["%02x" % b for b in trace + span], check=True)
    out = os.path.join(d, "obi.pb.gz")
    js = os.path.join(d, "obi.json")
    record(["-F", "97", "-a", "-d", "2", "-o", out, "--summary-json", js])
    j = load_json(js)
    p = read_pprof(out)
    mine = [s for s in p["samples"] if s["labels"].get("pid") == pid]
    n = sum(s["values"][0] for s in mine)
    good = sum(s["values"][0] for s in mine if s["labels"].get("trace_id") == trace.hex()
               and s["labels"].get("span_id") == span.hex())
    others = sum(s["values"][0] for s in p["samples"]
                 if s["labels"].get("pid") != pid and s["labels"].get("trace_id") == trace.hex())
    check(j["ctx"]["obi_map"] is True, "the summary says OBI's map is in use")
    check(n >= 20 and good == n, "%d of %d samples of the thread carry OBI's ids" % (good, n))
    check(others == 0, "no other process's sample carries them")
    check(j["bpf"]["ctx_obi"] >= good, "counted as ctx_obi (%d)" % j["bpf"]["ctx_obi"])
finally:
    worker.kill()
    if os.path.exists(PIN):
        os.unlink(PIN)
    try:
        os.rmdir(os.path.dirname(PIN))
    except OSError:
        pass
    if mounted:
        subprocess.run(["umount", "/sys/fs/bpf"])
