#!/usr/bin/env python3
"""export_server.py - a scriptable OTLP/HTTP endpoint for the exporter tests.

A real HTTP/1.1 server (http.server, keep-alive) on 127.0.0.1, or https
with --tls-cert/--tls-key (and --client-ca to require a client certificate).  Not a test by
itself (tests/run.sh runs test_*.py only); tests/unit/test_export_http.c
and, through the ExportServer class below, the Python tests start it as a
child process and drive it over stdin/stdout:

  startup: prints "port N" (N = --port, or the ephemeral port picked)
  commands, one per line, each answered with one line:
    push SPEC      queue SPEC as the answer to the next request   -> "ok"
    default SPEC   the answer once the queue is empty (initially 200) -> "ok"
    count          -> number of requests received so far
    quit           -> "bye", then exits

  SPEC = STATUS [ra=VALUE] [body=partial:N:MSG | body=status:CODE:MSG |
         body=text:MSG] [mode=normal|slow|close|garbage]
    ra     Retry-After header value ("_" stands for a space)
    body   an ExportProfilesServiceResponse with partial_success, a
           google.rpc.Status (application/x-protobuf), or text/plain
    slow   the answer is sent one byte per second
    close  the connection is closed without an answer
    garbage  a non-HTTP answer, then close

Every request is recorded in --dir as req-NNNN.hdr ("t=<CLOCK_MONOTONIC s>",
"path=<path>", "peer=<client port>", then the header lines) and
req-NNNN.body, both written before the answer is sent.  Loopback only.
"""
import argparse
import http.server
import os
import ssl
import subprocess
import sys
import threading
import time


def varint(n):
    out = bytearray()
    n &= (1 << 64) - 1
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field_varint(num, v):
    return varint(num << 3) + varint(v)


def field_bytes(num, b):
    return varint(num << 3 | 2) + varint(len(b)) + b


def parse_spec(words):
    act = {"status": 200, "ra": None, "body": b"", "ctype": None, "mode": "normal"}
    act["status"] = int(words[0])
    for w in words[1:]:
        k, _, v = w.partition("=")
        if k == "ra":
            act["ra"] = v.replace("_", " ")
        elif k == "mode":
            act["mode"] = v
        elif k == "body":
            kind, _, rest = v.partition(":")
            if kind == "partial":
                n, _, msg = rest.partition(":")
                ps = field_varint(1, int(n)) + field_bytes(2, msg.replace("_", " ").encode())
                act["body"] = field_bytes(1, ps)
                act["ctype"] = "application/x-protobuf"
            elif kind == "status":
                code, _, msg = rest.partition(":")
                act["body"] = field_varint(1, int(code)) + field_bytes(2, msg.replace("_", " ").encode())
                act["ctype"] = "application/x-protobuf"
            elif kind == "text":
                act["body"] = rest.replace("_", " ").encode()
                act["ctype"] = "text/plain"
            else:
                raise ValueError("unknown body " + v)
        else:
            raise ValueError("unknown word " + w)
    return act


class State:
    lock = threading.Lock()
    script = []
    default = parse_spec(["200"])
    n = 0
    dir = "."


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length) if length > 0 else b""
        t = time.monotonic()
        with State.lock:
            State.n += 1
            idx = State.n
            act = State.script.pop(0) if State.script else State.default
        base = os.path.join(State.dir, "req-%04d" % idx)
        with open(base + ".body.tmp", "wb") as f:
            f.write(body)
        os.rename(base + ".body.tmp", base + ".body")
        with open(base + ".hdr.tmp", "w") as f:
            f.write("t=%.6f\npath=%s\npeer=%d\n" % (t, self.path, self.client_address[1]))
            for k, v in self.headers.items():
                f.write("%s: %s\n" % (k, v))
        os.rename(base + ".hdr.tmp", base + ".hdr")
        self.answer(act)

    def answer(self, act):
        mode = act["mode"]
        if mode == "close":
            self.close_connection = True
            return
        if mode == "garbage":
            self.wfile.write(b"\x00\x01 this is not HTTP\r\n\r\n")
            self.wfile.flush()
            self.close_connection = True
            return
        body = act["body"]
        head = "HTTP/1.1 %d X\r\n" % act["status"]
        head += "Content-Length: %d\r\n" % len(body)
        if act["ctype"]:
            head += "Content-Type: %s\r\n" % act["ctype"]
        if act["ra"] is not None:
            head += "Retry-After: %s\r\n" % act["ra"]
        head += "\r\n"
        data = head.encode() + body
        if mode == "slow":
            self.close_connection = True
            try:
                for i in range(len(data)):
                    self.wfile.write(data[i:i + 1])
                    self.wfile.flush()
                    time.sleep(1)
            except OSError:
                pass
            return
        self.wfile.write(data)
        self.wfile.flush()


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


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
    State.dir = a.dir
    srv = Server(("127.0.0.1", a.port), Handler)
    if a.tls_cert:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(a.tls_cert, a.tls_key)
        if a.client_ca:
            ctx.verify_mode = ssl.CERT_REQUIRED
            ctx.load_verify_locations(a.client_ca)
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    print("port %d" % srv.server_address[1], flush=True)
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        try:
            if words[0] == "push":
                act = parse_spec(words[1:])
                with State.lock:
                    State.script.append(act)
                print("ok", flush=True)
            elif words[0] == "default":
                act = parse_spec(words[1:])
                with State.lock:
                    State.default = act
                print("ok", flush=True)
            elif words[0] == "count":
                with State.lock:
                    print(State.n, flush=True)
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
