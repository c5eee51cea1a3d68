"""otlp_stub.py - the one OTLP/HTTP endpoint of the test suite: a real
HTTP/1.1 server (http.server, keep-alive, one thread per connection) on
127.0.0.1, or https with a certificate (and, with client_ca, mTLS).

    stub = OtlpStub(script=lambda n: (503, {"Retry-After": "3"}) if n == 0 else (200, {}))
    ... stub.port, stub.count(), stub.requests[i].body ...
    stub.close()

What the n-th request (0-based) is answered with: script(n) when a script
is given, returning an Answer or (status, headers); else the next answer
queued with push(), else the default (set_default(), initially 200).
Answers come from answer(...) or parse_spec("503 ra=3 body=text:busy"):

  SPEC = STATUS [ra=VALUE] [body=partial:N:MSG | body=status:CODE:MSG |
         body=text:MSG] [mode=normal|slow|close|garbage]
    ra     Retry-After header value ("_" stands for a space)
    body   an ExportProfilesServiceResponse with partial_success, a
           google.rpc.Status (application/x-protobuf), or text/plain
    slow   the answer is sent one byte per second
    close  the connection is closed without an answer
    garbage  a non-HTTP answer, then close

Every request is kept in requests (Request: t = time.monotonic(), path,
body, encoding = Content-Encoding, headers, peer = client port) before it
is answered; with record_dir it is also written there as req-NNNN.hdr
("t=<CLOCK_MONOTONIC s>", "path=<path>", "peer=<client port>", then the
header lines) and req-NNNN.body (1-based), each renamed into place whole.
export_server.py drives one from another process over stdin.
"""
import collections
import http.server
import os
import ssl
import threading
import time

from lib.pb import field_bytes, field_varint

Request = collections.namedtuple("Request", "t path body encoding headers peer")


def answer(status=200, headers=None, body=b"", ctype=None, mode="normal"):
    return {"status": status, "headers": dict(headers or {}), "body": body,
            "ctype": ctype, "mode": mode}


def parse_spec(words):
    """An answer from SPEC words (see the module comment); ValueError if bad."""
    if isinstance(words, str):
        words = words.split()
    a = answer(int(words[0]))
    for w in words[1:]:
        k, _, v = w.partition("=")
        if k == "ra":
            a["headers"]["Retry-After"] = v.replace("_", " ")
        elif k == "mode":
            if v not in ("normal", "slow", "close", "garbage"):
                raise ValueError("unknown mode " + v)
            a["mode"] = v
        elif k == "body":
            kind, _, rest = v.partition(":")
            if kind == "partial":
                n, _, msg = rest.partition(":")
                ps = field_varint(1, int(n)) + field_bytes(2, msg.replace("_", " "))
                a["body"], a["ctype"] = field_bytes(1, ps), "application/x-protobuf"
            elif kind == "status":
                code, _, msg = rest.partition(":")
                a["body"] = field_varint(1, int(code)) + field_bytes(2, msg.replace("_", " "))
                a["ctype"] = "application/x-protobuf"
            elif kind == "text":
                a["body"], a["ctype"] = rest.replace("_", " ").encode(), "text/plain"
            else:
                raise ValueError("unknown body " + v)
        else:
            raise ValueError("unknown word " + w)
    return a


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


class OtlpStub:
    def __init__(self, script=None, port=0, record_dir=None, tls_cert=None, tls_key=None,
                 client_ca=None):
        self.script = script
        self.record_dir = record_dir
        self.requests = []
        self.lock = threading.Lock()
        self._queue = []
        self._default = answer(200)
        stub = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, fmt, *args):
                pass

            def do_POST(self):
                n = int(self.headers.get("Content-Length", "0") or 0)
                body = self.rfile.read(n) if n > 0 else b""
                stub._answer(self, stub._record(self, body))

        self.srv = _Server(("127.0.0.1", port), Handler)
        if tls_cert:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(tls_cert, tls_key)
            if client_ca:
                ctx.verify_mode = ssl.CERT_REQUIRED
                ctx.load_verify_locations(client_ca)
            self.srv.socket = ctx.wrap_socket(self.srv.socket, server_side=True)
        self.port = self.srv.server_address[1]
        self.th = threading.Thread(target=self.srv.serve_forever, daemon=True)
        self.th.start()

    # -------------------------------------------------------- control
    def push(self, a):
        with self.lock:
            self._queue.append(a)

    def set_default(self, a):
        with self.lock:
            self._default = a

    def count(self):
        with self.lock:
            return len(self.requests)

    def close(self):
        self.srv.shutdown()
        self.srv.server_close()

    # -------------------------------------------------------- serving
    def _record(self, h, body):
        """Keeps (and writes) the request; returns the answer to send."""
        r = Request(time.monotonic(), h.path, body, h.headers.get("Content-Encoding"),
                    dict(h.headers.items()), h.client_address[1])
        with self.lock:
            i = len(self.requests)
            self.requests.append(r)
            if self.script is None:
                a = self._queue.pop(0) if self._queue else self._default
        if self.script is not None:
            a = self.script(i)
            if isinstance(a, tuple):
                a = answer(a[0], a[1])
        if self.record_dir:
            base = os.path.join(self.record_dir, "req-%04d" % (i + 1))
            with open(base + ".body.tmp", "wb") as f:
                f.write(body)
            os.rename(base + ".body.tmp", base + ".body")
            with open(base + ".hdr.tmp", "w") as f:
                f.write("t=%.6f\npath=%s\npeer=%d\n" % (r.t, r.path, r.peer))
                for k, v in h.headers.items():
                    f.write("%s: %s\n" % (k, v))
            os.rename(base + ".hdr.tmp", base + ".hdr")
        return a

    @staticmethod
    def _answer(h, a):
        mode = a["mode"]
        if mode == "close":
            h.close_connection = True
            return
        if mode == "garbage":
            h.wfile.write(b"\x00\x01 this is not HTTP\r\n\r\n")
            h.wfile.flush()
            h.close_connection = True
            return
        body = a["body"]
        head = "HTTP/1.1 %d X\r\nContent-Length: %d\r\n" % (a["status"], len(body))
        if a["ctype"]:
            head += "Content-Type: %s\r\n" % a["ctype"]
        for k, v in a["headers"].items():
            head += "%s: %s\r\n" % (k, v)
        data = (head + "\r\n").encode() + body
        if mode == "slow":
            h.close_connection = True
            try:
                for i in range(len(data)):
                    h.wfile.write(data[i:i + 1])
                    h.wfile.flush()
                    time.sleep(1)
            except OSError:
                pass
            return
        h.wfile.write(data)
        h.wfile.flush()
