#!/usr/bin/env python3
"""export_server.py - the OTLP/HTTP stub (lib/otlp_stub.py) as a child
process: tests/unit/test_export_http.c and, through the ExportServer class
below, the Python tests that need the stub in another process start it and
drive it over stdin/stdout.  Not a test by itself (tests/run.sh runs
test_*.py only).

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
import subprocess
import sys

from lib.otlp_stub import OtlpStub, parse_spec


class ExportServer:
    """This script as a child process, for Python tests: the same commands
    as methods, and the recorded requests (1-based) read back."""

    def __init__(self, rec_dir, tls_dir=None, port=0):
        args = [sys.executable, os.path.abspath(__file__), '--port', str(port),
                '--dir', rec_dir]
        if tls_dir:
            args += ['--tls-cert', os.path.join(tls_dir, 'server.pem'),
                     '--tls-key', os.path.join(tls_dir, 'server.key'),
                     '--client-ca', os.path.join(tls_dir, 'client.pem')]
        self.dir = rec_dir
        self.proc = subprocess.Popen(args, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        self.port = int(self._line().split()[1])

    def _line(self):
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError('export_server.py exited')
        return line.strip()

    def _cmd(self, text):
        self.proc.stdin.write(text + '\n')
        self.proc.stdin.flush()
        return self._line()

    def push(self, spec):
        assert self._cmd('push ' + spec) == 'ok', spec

    def default(self, spec):
        assert self._cmd('default ' + spec) == 'ok', spec

    def count(self):
        return int(self._cmd('count'))

    def body(self, idx):
        with open(os.path.join(self.dir, 'req-%04d.body' % idx), 'rb') as f:
            return f.read()

    def hdr(self, idx, key):
        """"t", "path", "peer", or a header (case-insensitive); "" absent."""
        with open(os.path.join(self.dir, 'req-%04d.hdr' % idx)) as f:
            for line in f:
                k, sep, v = line.rstrip('\n').partition('=' if key in
                                                          ('t', 'path', 'peer') else ':')
                if sep and k.lower() == key.lower():
                    return v.strip()
        return ''

    def time(self, idx):
        return float(self.hdr(idx, 't'))

    def stop(self):
        try:
            self._cmd('quit')
        except (RuntimeError, OSError):
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


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
