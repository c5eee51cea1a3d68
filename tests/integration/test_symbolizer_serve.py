#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# spanprof-test: parallel (no BPF, no whole-machine sampling, no timing assertion)
"""spanprof-symbolizer serve: the OTLP/HTTP receiver.

Starts `serve` on loopback with --output-dir and --forward to the scripted
OTLP endpoint (export_server.py) answering the first POST with 503
(Retry-After: 0) and then 200.  Checks:
  - valid OTLP (identity and gzip) -> 200; the profiles are symbolized,
    written as files and forwarded (after one retry), and the files
    symbolize back to the expected stacks;
  - malformed protobuf and truncated gzip -> 400 with a google.rpc.Status
    (code 3); a gzip bomb of zeros -> 400 at its first bytes, one of valid
    padding -> 413 (the decoder's table cap, met while inflating); an
    oversized body
    -> 413 with Content-Length and when chunked; wrong content type or
    encoding -> 415; GET on the path -> 405; other paths -> 404;
  - 16 concurrent clients: every answer is 200 or 503 with Retry-After,
    the counters add up, the process survives, peak RSS stays bounded;
  - SIGTERM drains and exits 0.
Exit 0 pass, 77 skip, else fail.
"""
import gzip
import http.client
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_server  # noqa: E402
import test_symbolizer_cli as cli  # noqa: E402
from lib import symtest  # noqa: E402
from lib.ports import free_port  # noqa: E402 (serve_t.free_port for the others)
from lib.symtest import check  # noqa: E402

PATH = '/v1development/profiles'


def post(port, body, ctype='application/x-protobuf', enc=None, chunked=False,
         method='POST', path=PATH):
    c = http.client.HTTPConnection('127.0.0.1', port, timeout=30)
    h = {'Content-Type': ctype}
    if enc:
        h['Content-Encoding'] = enc
    try:
        if chunked:
            c.request(method, path, body=iter([body[i:i + 65536] for i in
                                               range(0, len(body), 65536)]),
                      headers=h, encode_chunked=True)
        else:
            c.request(method, path, body=body, headers=h)
        r = c.getresponse()
        return r.status, r.getheader('Retry-After'), r.read()
    except (ConnectionError, http.client.HTTPException) as e:
        return None, None, str(e).encode()
    finally:
        c.close()


def metrics(port):
    c = http.client.HTTPConnection('127.0.0.1', port, timeout=10)
    c.request('GET', '/metrics')
    txt = c.getresponse().read().decode()
    c.close()
    out = {}
    for line in txt.splitlines():
        if line and not line.startswith('#'):
            k, v = line.rsplit(' ', 1)
            out[k.replace('spanprof_symbolizer_', '')] = int(v)
    return out


def rpc_status(body):
    d = cli.parse(body)
    return d.get(1, [None])[0], (d.get(2, [b''])[0]).decode(errors='replace')


def main():
    if not os.access(cli.SYM, os.X_OK) or not os.path.exists(cli.FIXTURE):
        cli.skip('no spanprof-symbolizer or fixture under %s' % cli.BUILD)

    with tempfile.TemporaryDirectory() as td:
        otlp = cli.make_otlp(td)

        os.mkdir(os.path.join(td, 'sink'))
        sink = export_server.ExportServer(os.path.join(td, 'sink'))
        sink.push('503 ra=0')

        port = free_port()
        outdir = os.path.join(td, 'out')
        os.mkdir(outdir)
        log = open(os.path.join(td, 'serve.log'), 'w+')
        proc = subprocess.Popen(
            [cli.SYM, 'serve', '--listen', '127.0.0.1:%d' % port,
             '--output-dir', outdir,
             '--forward', 'http://127.0.0.1:%d%s' % (sink.port, PATH),
             '--max-body', '1000000', '--queue', '4', '--allow-root',
             '--no-debuginfod'], stdout=log, stderr=subprocess.STDOUT)
        try:
            for _ in range(100):
                try:
                    metrics(port)
                    break
                except OSError:
                    time.sleep(0.1)
            st, _, _ = post(port, otlp)
            check(st == 200, 'valid OTLP (identity) -> 200 (%s)' % st)
            st, _, _ = post(port, gzip.compress(otlp), enc='gzip')
            check(st == 200, 'valid OTLP (gzip) -> 200 (%s)' % st)
            for _ in range(100):
                m = metrics(port)
                if m.get('forwarded_total', 0) >= 2 and m.get('files_written_total', 0) >= 2:
                    break
                time.sleep(0.1)
            check(m.get('profiles_symbolized_total') == 2 and
                  m.get('files_written_total') == 2 and
                  m.get('frames_resolved_total') == 8 and
                  m.get('frames_unresolved_total') == 2,
                  'two profiles symbolized (4 frames each, 1 unknown) and '
                  'written (%s)' % m)
            check(m.get('forwarded_total') == 2 and
                  m.get('forward_retries_total') == 1,
                  'forwarded after one retry on 503')
            files = sorted(os.listdir(outdir))
            check(len(files) == 2 and all(f.endswith('.otlp.pb.gz') for f in files),
                  'output files %s' % files)
            if files:
                r = subprocess.run([cli.SYM, 'report', os.path.join(outdir, files[0]),
                                    '--collapsed', '--allow-root', '--no-debuginfod',
                                    '-q'], capture_output=True, text=True)
                check('main;crunch 30' in r.stdout.splitlines(),
                      'written profile reads back symbolized')
            if sink.count() >= 2:
                enc, body = sink.hdr(2, 'Content-Encoding'), sink.body(2)
                fw = os.path.join(td, 'fw.otlp.gz')
                open(fw, 'wb').write(body)
                r = subprocess.run([cli.SYM, 'report', fw, '--collapsed',
                                    '--allow-root', '--no-debuginfod', '-q'],
                                   capture_output=True, text=True)
                check(enc == 'gzip' and 'main;crunch 30' in r.stdout.splitlines(),
                      'forwarded body is gzip OTLP with the stacks')

            st, _, body = post(port, b'\xff\xff\xff\xff')
            code, msg = rpc_status(body) if st == 400 else (None, '')
            check(st == 400 and code == 3, 'malformed protobuf -> 400 Status '
                  'code 3 (%s, %r)' % (st, msg))
            st, _, body = post(port, gzip.compress(otlp)[:-20], enc='gzip')
            check(st == 400 and rpc_status(body)[0] == 3,
                  'truncated gzip -> 400 (%s)' % st)
            bomb = gzip.compress(b'\0' * (100 << 20), 9)
            check(len(bomb) < 1000000, 'bomb fits under max-body (%d bytes)'
                  % len(bomb))
            st, _, body = post(port, bomb, enc='gzip')
            check(st == 400, 'gzip bomb of zeros -> 400 at its first bytes (%s)' % st)
            # valid protobuf all the way: 50M empty ResourceProfiles
            bomb = gzip.compress(b'\x0a\x00' * (50 << 20), 9)
            t0 = time.monotonic()
            st, _, body = post(port, bomb, enc='gzip')
            check(st == 413, 'gzip bomb of valid padding -> 413 (%s, %.2f s)' %
                  (st, time.monotonic() - t0))
            big = os.urandom(1500000)
            st, _, _ = post(port, big)
            check(st == 413, 'oversized body with Content-Length -> 413 (%s)' % st)
            if shutil.which('curl'):
                bigf = os.path.join(td, 'big.bin')
                open(bigf, 'wb').write(big)
                r = subprocess.run(['curl', '-s', '-o', '/dev/null', '-w',
                                    '%{http_code}', '-H',
                                    'Content-Type: application/x-protobuf',
                                    '-H', 'Expect: 100-continue',
                                    '--data-binary', '@' + bigf,
                                    'http://127.0.0.1:%d%s' % (port, PATH)],
                                   capture_output=True, text=True)
                check(r.stdout == '413', 'oversized body with Expect: '
                      '100-continue -> 413 before the upload (%s)' % r.stdout)
            # Walked while it arrives (serve_intake): random bytes are
            # refused at the first piece that is malformed (400) or that
            # claims more than the limits allow (413), whichever comes
            # first in this run's bytes; never read whole or decoded.
            st, _, _ = post(port, big, chunked=True)
            check(st in (400, 413), 'random chunked body -> 400 or 413 (%s)' % st)
            st, _, _ = post(port, b'\x0a\x00' * 600000, chunked=True)
            check(st == 413, 'oversized chunked body -> 413 (%s)' % st)
            st, _, _ = post(port, otlp, ctype='application/json')
            check(st == 415, 'wrong content type -> 415 (%s)' % st)
            st, _, _ = post(port, otlp, enc='br')
            check(st == 415, 'unknown content encoding -> 415 (%s)' % st)
            st, _, _ = post(port, b'', method='GET')
            check(st == 405, 'GET on the profiles path -> 405 (%s)' % st)
            st, _, _ = post(port, otlp, path='/v1/traces')
            check(st == 404, 'other path -> 404 (%s)' % st)

            before = metrics(port)
            results = []
            lock = threading.Lock()

            def client():
                for i in range(8):
                    b = gzip.compress(otlp) if i % 2 else otlp
                    r = post(port, b, enc='gzip' if i % 2 else None)
                    with lock:
                        results.append(r)
            ts = [threading.Thread(target=client) for _ in range(16)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            codes = [r[0] for r in results]
            ok = codes.count(200)
            busy = [r for r in results if r[0] == 503]
            check(len(results) == 128 and ok + len(busy) == 128,
                  'concurrent: %d x 200, %d x 503, others %s' %
                  (ok, len(busy), [c for c in codes if c not in (200, 503)]))
            check(all(r[1] for r in busy), 'every 503 carries Retry-After')
            after = metrics(port)
            check(after['accepted_total'] - before['accepted_total'] == ok and
                  (after['rejected_queue_full_total'] +
                   after['rejected_memory_budget_total'] -
                   before['rejected_queue_full_total'] -
                   before['rejected_memory_budget_total']) == len(busy),
                  'counters add up')
            check(proc.poll() is None, 'receiver still running')
            hwm = 0
            for line in open('/proc/%d/status' % proc.pid):
                if line.startswith('VmHWM:'):
                    hwm = int(line.split()[1]) // 1024
            check(0 < hwm < 400, 'peak RSS %d MiB (< 400)' % hwm)
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                rc = proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                rc = None
            sink.stop()
            log.seek(0)
            print(log.read()[-2000:])
        check(rc == 0, 'SIGTERM: drained and exited 0 (%s)' % rc)

    return symtest.verdict()


if __name__ == '__main__':
    sys.exit(main())
