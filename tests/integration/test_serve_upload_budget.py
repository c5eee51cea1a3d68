#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# spanprof-test: parallel (no BPF, no whole-machine sampling, no timing assertion)
"""spanprof-symbolizer serve: host-symbol uploads (POST /spanprof/v1/symbols)
inside serve's one memory budget.

serve --store-dir --memory-budget 16 (MiB, the smallest), as nobody:
  - an ELF image keyed by its GNU build id: 200, stored under
    .build-id/; the same again gzip'd: 200, a duplicate;
  - a gzip bomb (64 MiB of zeros in about 64 KB): 413 while inflating (it
    would hold more than the whole budget), nothing stored;
  - a 12 MiB identity upload: the body fits, the body and the store's
    checks together cannot: 413, not 503 (a retry would never succeed);
  - a malformed envelope and an image under another build id: 400, counted
    by reason;
  - afterwards the budget is all given back (memory_used_bytes 0) and its
    peak stayed under the limit.
Exit 0 pass, 77 skip, else fail.
"""
import gzip
import http.client
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from agent_util import StoreServe, http_get, parse_prom  # noqa: E402
from spt import check, fail, tmpdir  # noqa: E402
from test_symbolizer_cli import build_id  # noqa: E402

PATH = "/spanprof/v1/symbols"
KIND_ELF = 2		# enum sp_symstore_kind (base/symstore.h)


def envelope(kind, key, payload):
    """base/symstore.h: magic, kind, key length, 6 reserved bytes, key, payload."""
    return b"SPSYMUP1" + struct.pack("BB", kind, len(key)) + b"\0" * 6 + key + payload


def post(port, body, gz=False):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    headers = {"Content-Type": "application/octet-stream"}
    if gz:
        headers["Content-Encoding"] = "gzip"
    try:
        c.request("POST", PATH, body=body, headers=headers)
        r = c.getresponse()
        r.read()
        return r.status
    finally:
        c.close()


def main():
    work = tmpdir()
    srv = StoreServe(work, extra=["--memory-budget", "16"])
    try:
        exe = "/bin/true"
        bid = build_id(exe)
        image = open(exe, "rb").read()
        key = bytes.fromhex(bid)

        st = post(srv.port, envelope(KIND_ELF, key, image))
        stored = os.path.join(srv.store, ".build-id", bid[:2], bid[2:])
        check(st == 200 and os.path.exists(stored),
              "an ELF image under its build id: 200 (%s), stored" % st)
        st = post(srv.port, gzip.compress(envelope(KIND_ELF, key, image)), gz=True)
        check(st == 200, "the same image again, gzip'd: 200 (%s)" % st)

        bomb = gzip.compress(envelope(KIND_ELF, b"\x01" * 20, b"\0" * (64 << 20)), 9)
        st = post(srv.port, bomb, gz=True)
        check(st == 413, "a gzip bomb of %d bytes: 413 (%s)" % (len(bomb), st))

        big = envelope(KIND_ELF, b"\x02" * 20, os.urandom(12 << 20))
        st = post(srv.port, big)
        check(st == 413, "12 MiB identity upload under a 16 MiB budget: 413 (%s)" % st)

        st = post(srv.port, b"not an upload at all")
        check(st == 400, "malformed envelope: 400 (%s)" % st)
        st = post(srv.port, envelope(KIND_ELF, b"\x03" * 20, image))
        check(st == 400, "an image under another build id: 400 (%s)" % st)

        code, text = http_get(srv.port, "/metrics")
        if code != 200:
            fail("/metrics: %s %s" % (code, text))
        m = parse_prom(text)
        pre = "spanprof_symbolizer_"
        check(m.get1(pre + "symbols_uploads_total") == 4, "the 4 uploads that fit reached "
              "the store's checks: %s" % m.get1(pre + "symbols_uploads_total"))
        check(m.get1(pre + "symbols_stored_total", kind="elf") == 1, "one image stored")
        check(m.get1(pre + "symbols_duplicates_total") == 1, "one duplicate")
        check(m.get1(pre + "symbols_refused_total", reason="malformed") == 1 and
              m.get1(pre + "symbols_refused_total", reason="mismatch") == 1,
              "refusals counted by reason (malformed 1, mismatch 1)")
        check(m.get1(pre + "rejected_too_large_total") == 2, "two 413s counted")
        check(m.get1(pre + "memory_used_bytes") == 0, "the budget is all given back")
        peak, limit = m.get1(pre + "memory_peak_bytes"), m.get1(pre + "memory_budget_bytes")
        check(0 < peak <= limit, "budget peak %.1f MiB <= %.0f MiB" % (peak / 2**20,
                                                                        limit / 2**20))
        log = srv.stop()
        check(srv.p.returncode == 0, "serve exits 0 on SIGTERM (%s)" % log[-300:])
    finally:
        if srv.p.poll() is None:
            srv.p.kill()
        srv.cleanup()


if __name__ == "__main__":
    main()
