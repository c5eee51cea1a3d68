# spanprof-test: parallel (no BPF, no whole-machine sampling, no timing assertion)
"""Deeply nested OTLP attribute values must not crash the symbolizer.

protobuf-c unpacks recursively without a depth limit, and OpenTelemetry's
AnyValue nests through ArrayValue: 200,000 levels take 1.6 MB, 20 KB
gzipped.  Before the depth check (src/profile/pbdepth.c) this request
crashed `spanprof-symbolizer file` with a stack overflow, and `serve`
accepts exactly this from the network.  Now: `file` refuses it with a clear
error, and a live `serve` answers 400 and keeps serving valid requests.
"""
import gzip
import http.client
import os
import socket
import subprocess
import time

from spt import *
from lib.pb import LEN, key, varint

SYM = os.path.join(BUILD, "spanprof-symbolizer")
PATH = "/v1development/profiles"


def header(field, length):
    return key(field, LEN) + varint(length)


# The payload is nothing but nested headers, so they are built from the
# inside out (each needs its payload's length) and joined outermost first.
heads, n = [], 0
for _ in range(200000):
    for field in (1, 5):                # ArrayValue.values, AnyValue.array_value
        h = header(field, n)
        heads.append(h)
        n += len(h)
for field in (2, 6, 2):                 # KeyValueAndUnit.value, attribute_table, dictionary
    h = header(field, n)
    heads.append(h)
    n += len(h)
deep = b"".join(reversed(heads))
d = tmpdir()
path = os.path.join(d, "deep.otlp.pb")
open(path, "wb").write(deep)

p = subprocess.run([SYM, "file", path, "-o", os.path.join(d, "out.pb"), "--allow-root",
                    "--no-debuginfod"], capture_output=True, text=True, timeout=60)
check(p.returncode not in (0, -11, 139) and p.returncode > 0,
      "file refuses the nested request without crashing (rc %d: %s)" % (p.returncode, p.stderr.strip()))

seeds = os.path.join(d, "seeds")
subprocess.run([os.path.join(BUILD, "tests", "make_seeds"), seeds], check=True)
valid = open(os.path.join(seeds, "fuzz_otlp_decode", "seed-1"), "rb").read()

s = socket.socket()
s.bind(("127.0.0.1", 0))
port = s.getsockname()[1]
s.close()
out = os.path.join(d, "served")
os.mkdir(out)
srv = subprocess.Popen([SYM, "serve", "--listen", "127.0.0.1:%d" % port, "--output-dir", out,
                        "--allow-root", "--no-debuginfod"], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)


def post(body, enc=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    h = {"Content-Type": "application/x-protobuf"}
    if enc:
        h["Content-Encoding"] = enc
    try:
        c.request("POST", PATH, body=body, headers=h)
        return c.getresponse().status
    except (ConnectionError, http.client.HTTPException, OSError):
        return None
    finally:
        c.close()


try:
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.1)
    st = post(gzip.compress(deep), enc="gzip")
    check(st == 400, "serve answers the nested request with 400 (%s)" % st)
    check(srv.poll() is None, "serve is still running")
    st = post(valid)
    check(st == 200, "and still accepts a valid request (%s)" % st)
finally:
    srv.terminate()
    srv.wait(timeout=10)
