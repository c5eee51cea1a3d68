#!/usr/bin/env python3
"""export_server.py - the OTLP/HTTP stub (lib/otlp_stub.py) as a child
process, for tests/unit/test_export_http.c.  Not a test by itself
(tests/run.sh runs test_*.py only).

  export_server.py --dir DIR [--port N] [--tls-cert C --tls-key K [--client-ca CA]]

  startup: prints "port N" (N = --port, or the ephemeral port picked)
  commands on stdin, one per line, each answered with one line:
    push SPEC      queue SPEC as the answer to the next request   -> "ok"
    default SPEC   the answer once the queue is empty (initially 200) -> "ok"
    count          -> number of requests received so far
    quit           -> "bye", then exits
  SPEC and the request files written in DIR (req-NNNN.hdr, req-NNNN.body)
  are described in lib/otlp_stub.py.  Loopback only.
"""
import argparse
import os
import sys

from lib.otlp_stub import OtlpStub, parse_spec


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--tls-cert", help="serve https with this certificate")
    ap.add_argument("--tls-key")
    ap.add_argument("--client-ca", help="require a client certificate signed by this CA")
    a = ap.parse_args()
    stub = OtlpStub(port=a.port, record_dir=a.dir, tls_cert=a.tls_cert, tls_key=a.tls_key,
                    client_ca=a.client_ca)
    print("port %d" % stub.port, flush=True)
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        try:
            if words[0] == "push":
                stub.push(parse_spec(words[1:]))
                print("ok", flush=True)
            elif words[0] == "default":
                stub.set_default(parse_spec(words[1:]))
                print("ok", flush=True)
            elif words[0] == "count":
                print(stub.count(), flush=True)
            elif words[0] == "quit":
                print("bye", flush=True)
                break
            else:
                print("error unknown command", flush=True)
        except (ValueError, IndexError) as ex:
            print("error %s" % ex, flush=True)
    os._exit(0)


if __name__ == "__main__":
    main()
