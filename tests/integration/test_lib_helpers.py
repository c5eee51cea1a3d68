#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# spanprof-test: parallel (no BPF, no whole-machine sampling, no timing assertion)
"""tests/integration/lib: the shared OTLP reader and OTLP/HTTP stub.

1. The reader on the C encoder's golden request (tests/unit/golden/
   fixture.otlp.pb, the profile of tests/unit/test_profile_fixture.h):
   every sample's resource, kind, thread, timestamps, values, count, link,
   frames and attributes as the fixture defines them.
2. Counts and links on a request built here with lib.pb, as spanprof's
   decoder (src/profile/otlp_decode.c) reads them: an off-CPU sample
   without timestamps is one wait whatever its nanoseconds (the old
   agent_util reader took values[0], nanoseconds, as the count) unless an
   off_cpu_waits Profile gives the count of its stack, attributes and link
   (one without a match is a sample of its own), an on-CPU
   sample without timestamps counts the sum of its values (not values[0]),
   an all-zero link is no link (both old readers returned zero hex ids).
3. The stub over real HTTP: scripted and queued answers (status,
   Retry-After, a google.rpc.Status body), keep-alive, requests recorded
   in memory and in record_dir before the answer.
No BPF, no root.
"""
import os
import shutil
import sys
import tempfile
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from spt import check  # noqa: E402
from lib import pb  # noqa: E402
from lib.otlp import read_otlp  # noqa: E402
from lib.otlp_stub import OtlpStub, parse_spec  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
T0 = 1700000000000000000
PERIOD = 10309278

# ------------------------------------------------ 1. the golden request
s = read_otlp(os.path.join(ROOT, "tests", "unit", "golden", "fixture.otlp.pb"))
check(len(s) == 3, "golden: 3 samples")
a, b, c = s
trace, span = bytes(range(0xa0, 0xb0)).hex(), bytes(range(0x10, 0x18)).hex()
check((a["pid"], a["service"], a["kind"], a["tid"], a["thread"]) ==
      (100, "checkout", "samples", 101, "worker-1"), "golden: on-CPU sample of pid 100")
check(a["ts"] == [T0 + 1000, T0 + 2000, T0 + 3000] and a["values"] == [1, 1, 1] and
      a["count"] == 3, "golden: 3 timestamps, one value each, count 3")
check((a["trace_id"], a["span_id"]) == (trace, span), "golden: the sample's link")
check([f[0] for f in a["stack"]] == ["/usr/bin/demo"] * 2 and a["funcs"] == ["main", ""] and
      a["stack"][0][2] == 0x401234 and a["stack"][0][3] == "native",
      "golden: frames leaf first, out-of-line function of the inline chain")
check(a["res"].get("container.id") == "c0ffee" and a["res"].get("host.name") == "host1",
      "golden: resource attributes")
check(b["kind"] == "off_cpu" and b["values"] == [123456789] and b["count"] == 1 and
      b["attrs"].get("off_cpu_reason") == "futex" and b["stack"][0][3] == "kernel",
      "golden: off-CPU sample, one wait of 123456789 ns, reason, kernel leaf")
check((c["pid"], c["service"], c["count"], c["trace_id"], c["ts"]) == (200, None, 2, None, []) and
      c["attrs"].get("cpu.logical_number") == 3, "golden: pid 200 without link or timestamps")

# ------------------------------------------------ 2. counts and links
S = ["", "samples", "count", "off_cpu", "nanoseconds", "thread.id", "off_cpu_waits"]


def vt(t, u):
    return pb.field_varint(1, S.index(t)) + pb.field_varint(2, S.index(u))


def sample(values=(), ts=(), link=0):
    m = pb.field_packed(4, values) if values else b""
    if ts:
        m += pb.field_bytes(5, b"".join(t.to_bytes(8, "little") for t in ts))
    return m + (pb.field_varint(3, link) if link else b"")


dic = b"".join(pb.field_bytes(5, x) for x in S)
dic += pb.field_bytes(4, pb.field_bytes(1, bytes(16)) + pb.field_bytes(2, bytes(8)))   # [0]
dic += pb.field_bytes(4, pb.field_bytes(1, bytes(16)) + pb.field_bytes(2, bytes(8)))   # zero
dic += pb.field_bytes(4, pb.field_bytes(1, b"\x01" * 16) + pb.field_bytes(2, b"\x02" * 8))
dic += pb.field_bytes(7, b"") + pb.field_bytes(6, b"")
on = pb.field_bytes(1, vt("samples", "count")) + pb.field_varint(6, PERIOD)
on += pb.field_bytes(2, sample(values=(2, 3)))                  # no timestamps: 5 events
on += pb.field_bytes(2, sample(ts=(T0, T0 + 1)))                # no values: 2 events
on += pb.field_bytes(2, sample(values=(1,), ts=(T0,), link=1))  # the zero link
off = pb.field_bytes(1, vt("off_cpu", "nanoseconds"))
off += pb.field_bytes(2, sample(values=(5000000,)))             # one wait of 5 ms
off += pb.field_bytes(2, sample(values=(1000, 2000), ts=(T0, T0 + 9), link=2))
waits = pb.field_bytes(1, vt("off_cpu_waits", "count"))
waits += pb.field_bytes(2, sample(values=(4,)))                 # the 5 ms are 4 waits
waits += pb.field_bytes(2, sample(values=(3,), link=2))         # matches no compact sample
scope = pb.field_bytes(2, on) + pb.field_bytes(2, off)
req = pb.field_bytes(1, pb.field_bytes(2, scope)) + pb.field_bytes(2, dic)
got = [(x["kind"], x["count"], x["trace_id"]) for x in read_otlp(req)]
check(got == [("samples", 5, None), ("samples", 2, None), ("samples", 1, None),
              ("off_cpu", 1, None), ("off_cpu", 2, "01" * 16)],
      "counts and links as the decoder reads them: %s" % got)
scope += pb.field_bytes(2, waits)
req = pb.field_bytes(1, pb.field_bytes(2, scope)) + pb.field_bytes(2, dic)
got = [(x["kind"], x["count"], x["trace_id"], x["values"]) for x in read_otlp(req)][3:]
check(got == [("off_cpu", 4, None, [5000000]), ("off_cpu", 2, "01" * 16, [1000, 2000]),
              ("off_cpu", 3, "01" * 16, [])],
      "off_cpu_waits: counts of compact off-CPU samples, an unmatched one on its own: %s" % got)
check(pb.s64(pb.read_varint(pb.varint(-5), 0)[0]) == -5 and len(pb.varint(-1)) == 10,
      "varint: negative int64 as ten bytes, read back")

# ------------------------------------------------ 3. the stub
d = tempfile.mkdtemp(prefix="spanprof-test-")
stub = OtlpStub(lambda n: parse_spec("503 ra=7") if n == 0 else (200, {}), record_dir=d)
url = "http://127.0.0.1:%d/v1development/profiles" % stub.port


def post(body):
    r = urllib.request.Request(url, data=body, method="POST",
                               headers={"Content-Type": "application/x-protobuf"})
    try:
        with urllib.request.urlopen(r, timeout=5) as resp:
            return resp.status, resp.headers, resp.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


st, hdr, _ = post(b"one")
check(st == 503 and hdr.get("Retry-After") == "7", "stub: scripted 503 with Retry-After")
st, _, _ = post(b"two")
check(st == 200 and stub.count() == 2 and stub.requests[1].body == b"two" and
      stub.requests[0].path == "/v1development/profiles", "stub: second answer, requests kept")
check(open(os.path.join(d, "req-0002.body"), "rb").read() == b"two" and
      "path=/v1development/profiles" in open(os.path.join(d, "req-0001.hdr")).read(),
      "stub: requests written to record_dir")
stub.close()
q = OtlpStub()
q.push(parse_spec("400 body=status:3:bad_batch"))
url = "http://127.0.0.1:%d/v1development/profiles" % q.port
st, hdr, body = post(b"x")
check(st == 400 and hdr.get("Content-Type") == "application/x-protobuf" and
      pb.message(body) == {1: 3, 2: b"bad batch"}, "stub: queued google.rpc.Status answer")
st, _, _ = post(b"y")
check(st == 200, "stub: the default answer once the queue is empty")
q.close()
shutil.rmtree(d)
