#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""spanprof-symbolizer serve --forward: OTLP/HTTP's rules, the agent's sender.

`serve` forwards through src/export's sender, the one the agent's exporter
uses; this drives it end to end against the scripted OTLP endpoint
(export_server.py, a real HTTP/1.1 server on loopback, https with a private
CA and a client certificate for the TLS part).  One profile at a time is
posted to serve (one worker), and the forward counters on /metrics and the
requests the endpoint recorded are checked:
  - OTEL_EXPORTER_OTLP_HEADERS and TIMEOUT are used, --forward-compression
    none sends the raw protobuf (no Content-Encoding);
  - retried: 429 with Retry-After 0, a non-HTTP answer, an attempt over
    the timeout (the answer trickles one byte per second), 503 with an
    HTTP-date Retry-After about 2 s ahead (waited for: at least 1 s);
  - not retried: 400 with a google.rpc.Status, 500; a 2xx with
    partial_success is delivered and its rejected count kept;
  - --forward-attempts 3 on 503 every time: failed after 3 attempts;
  - https: CA from OTEL_EXPORTER_OTLP_CERTIFICATE, client certificate from
    --forward-client-cert/--forward-client-key: delivered; without the CA
    the peer is not verified: failed at once, never retried;
  - every answer says what became of the profile: 200 when the next hop
    took it, 503 with Retry-After when it did not (the client keeps it);
  - SIGTERM while a forward hangs: --shutdown-timeout 1 aborts it, counted
    in forward_aborted_total, its client answered 503, exit 0 in seconds;
  - a bad forward setting is refused before binding, one line, exit 2.
Exit 0 pass, 77 skip, else fail.
"""
import email.utils
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
from lib.symtest import check  # noqa: E402
import test_symbolizer_serve as serve_t  # noqa: E402

PATH = '/v1development/profiles'
COUNTERS = ('forwarded_total', 'forward_failed_total', 'forward_aborted_total',
            'forward_retries_total', 'forward_requests_total',
            'forward_request_failures_total',
            'forward_partial_success_rejected_total')


class Serve:
    """One `serve` process forwarding to url."""

    def __init__(self, td, url, args=(), env=None):
        self.port = serve_t.free_port()
        self.log = open(os.path.join(td, 'serve-%d.log' % self.port), 'w+')
        full_env = dict(os.environ)
        full_env.update(env or {})
        self.proc = subprocess.Popen(
            [cli.SYM, 'serve', '--listen', '127.0.0.1:%d' % self.port,
             '--forward', url, '--allow-root', '--no-debuginfod',
             '--workers', '1', '--forward-down-hold-ms', '0'] + list(args),
            stdout=self.log, stderr=subprocess.STDOUT, env=full_env)
        for _ in range(100):
            try:
                self.metrics()
                return
            except OSError:
                if self.proc.poll() is not None:
                    break
                time.sleep(0.1)
        raise RuntimeError('serve did not start: %s' % self.output())

    def metrics(self):
        m = serve_t.metrics(self.port)
        return {k: m.get(k, 0) for k in COUNTERS}

    def forward_one(self, body):
        """Posts body; the answer comes once its forward ended (200 only
        when the next hop took it, else 503): the counters' deltas."""
        before = self.metrics()
        st, ra, _ = serve_t.post(self.port, body)
        m = self.metrics()
        d = {k: m[k] - before[k] for k in COUNTERS}
        if d['forwarded_total'] == 1:
            assert st == 200, (st, d)
        else:
            assert st == 503 and ra, (st, ra, d)
        return d

    def stop(self, timeout=30):
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return None

    def output(self):
        self.log.flush()
        self.log.seek(0)
        return self.log.read()


def make_certs(d):
    for n in ('server', 'client'):
        subprocess.run(['openssl', 'req', '-x509', '-newkey', 'ec', '-pkeyopt',
                        'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1',
                        '-subj', '/CN=127.0.0.1', '-addext',
                        'subjectAltName=IP:127.0.0.1', '-keyout',
                        os.path.join(d, n + '.key'), '-out',
                        os.path.join(d, n + '.pem')],
                       check=True, capture_output=True)


def main():
    if not os.access(cli.SYM, os.X_OK) or not os.path.exists(cli.FIXTURE):
        cli.skip('no spanprof-symbolizer or fixture under %s' % cli.BUILD)
    if not shutil.which('openssl'):
        cli.skip('openssl not installed (test certificates)')

    with tempfile.TemporaryDirectory() as td:
        otlp = cli.make_otlp(td)
        for d in ('http', 'https', 'hang'):
            os.mkdir(os.path.join(td, d))

        # ---------------------------------------------- plain http, rules
        ep = export_server.ExportServer(os.path.join(td, 'http'))
        url = 'http://127.0.0.1:%d%s' % (ep.port, PATH)
        sv = Serve(td, url, ['--forward-attempts', '3', '--forward-compression',
                             'none'],
                   {'OTEL_EXPORTER_OTLP_HEADERS':
                    'authorization=Bearer%20t0ken,x-scope-orgid=tenant-1',
                    'OTEL_EXPORTER_OTLP_TIMEOUT': '1500'})
        try:
            d = sv.forward_one(otlp)
            check(d and d['forwarded_total'] == 1 and d['forward_requests_total'] == 1,
                  '200: forwarded in one request (%s)' % d)
            check(ep.hdr(1, 'path') == PATH and
                  ep.hdr(1, 'Authorization') == 'Bearer t0ken' and
                  ep.hdr(1, 'X-Scope-OrgID') == 'tenant-1' and
                  ep.hdr(1, 'Content-Type') == 'application/x-protobuf' and
                  ep.hdr(1, 'User-Agent').startswith('spanprof/'),
                  'headers from OTEL_EXPORTER_OTLP_HEADERS are sent')
            body = ep.body(1)
            check(ep.hdr(1, 'Content-Encoding') == '' and body[:1] == b'\x0a' and
                  len(cli.parse(body).get(2, [])) == 1,
                  '--forward-compression none: raw OTLP protobuf, no Content-Encoding')

            # (a connection closed without an answer is not used here: on a
            # reused connection libcurl itself retries that once, unseen)
            n = ep.count()
            ep.push('429 ra=0')
            ep.push('200 mode=garbage')
            d = sv.forward_one(otlp)
            check(d and d['forwarded_total'] == 1 and d['forward_retries_total'] == 2 and
                  d['forward_request_failures_total'] == 2 and ep.count() == n + 3,
                  '429 and a non-HTTP answer (then closed) are retried (%s)' % d)

            n = ep.count()
            ep.push('200 mode=slow')
            d = sv.forward_one(otlp)
            check(d and d['forwarded_total'] == 1 and d['forward_retries_total'] == 1 and
                  ep.count() == n + 2,
                  'an attempt past OTEL_EXPORTER_OTLP_TIMEOUT=1500 is retried (%s)' % d)

            n = ep.count()
            when = email.utils.formatdate(time.time() + 2.5, usegmt=True)
            ep.push('503 ra=' + when.replace(' ', '_'))
            d = sv.forward_one(otlp)
            gap = ep.time(n + 2) - ep.time(n + 1) if ep.count() == n + 2 else 0
            print('Retry-After: %s -> retried after %.2f s' % (when, gap))
            check(d and d['forwarded_total'] == 1 and 1.0 <= gap < 4.5,
                  '503 with an HTTP-date Retry-After waits until then (%.2f s)' % gap)

            for spec, what in (('400 body=status:3:bad_profile', '400'),
                               ('500 body=text:oops', '500')):
                n = ep.count()
                ep.push(spec)
                d = sv.forward_one(otlp)
                check(d and d['forward_failed_total'] == 1 and
                      d['forward_requests_total'] == 1 and
                      d['forward_retries_total'] == 0 and ep.count() == n + 1,
                      '%s is not retried, counted failed (%s)' % (what, d))

            n = ep.count()
            ep.push('200 body=partial:3:three_had_no_samples')
            d = sv.forward_one(otlp)
            check(d and d['forwarded_total'] == 1 and
                  d['forward_partial_success_rejected_total'] == 3 and
                  d['forward_retries_total'] == 0 and ep.count() == n + 1,
                  'partial success: delivered, 3 rejected counted, not retried (%s)' % d)

            n = ep.count()
            for _ in range(3):
                ep.push('503 ra=0')
            d = sv.forward_one(otlp)
            check(d and d['forward_failed_total'] == 1 and
                  d['forward_requests_total'] == 3 and d['forward_retries_total'] == 2 and
                  ep.count() == n + 3,
                  '--forward-attempts 3: failed after 3 attempts (%s)' % d)
        finally:
            rc = sv.stop()
            ep.stop()
        out = sv.output()
        check(rc == 0, 'serve exits 0 (%s)' % rc)
        lines = [ln for ln in out.splitlines() if 'forward:' in ln]
        check(sum('dropped after' in ln for ln in lines) == 3 and
              sum('partial success' in ln for ln in lines) == 1,
              'one log line per failed forward, one for the partial success:\n  ' +
              '\n  '.join(lines))

        # ---------------------------------------------- https
        certs = os.path.join(td, 'certs')
        os.mkdir(certs)
        make_certs(certs)
        ep = export_server.ExportServer(os.path.join(td, 'https'), tls_dir=certs)
        url = 'https://127.0.0.1:%d%s' % (ep.port, PATH)
        sv = Serve(td, url, ['--forward-client-cert', os.path.join(certs, 'client.pem'),
                             '--forward-client-key', os.path.join(certs, 'client.key')],
                   {'OTEL_EXPORTER_OTLP_CERTIFICATE': os.path.join(certs, 'server.pem')})
        try:
            d = sv.forward_one(otlp)
            check(d and d['forwarded_total'] == 1 and ep.count() == 1 and
                  ep.hdr(1, 'Content-Encoding') == 'gzip',
                  'https with the CA from OTEL_EXPORTER_OTLP_CERTIFICATE and a '
                  'client certificate: forwarded, gzip (%s)' % d)
        finally:
            sv.stop()
        sv = Serve(td, url, ['--forward-client-cert', os.path.join(certs, 'client.pem'),
                             '--forward-client-key', os.path.join(certs, 'client.key')])
        try:
            d = sv.forward_one(otlp)
            check(d and d['forward_failed_total'] == 1 and d['forward_retries_total'] == 0
                  and d['forward_requests_total'] == 1 and ep.count() == 1,
                  'https without the CA: failed at once, not retried (%s)' % d)
        finally:
            sv.stop()
            ep.stop()

        # ---------------------------------------------- shutdown deadline
        ep = export_server.ExportServer(os.path.join(td, 'hang'))
        ep.default('200 mode=slow')
        url = 'http://127.0.0.1:%d%s' % (ep.port, PATH)
        sv = Serve(td, url, ['--shutdown-timeout', '1', '--forward-timeout-ms', '60000'])
        try:
            res = []
            th = threading.Thread(target=lambda: res.append(serve_t.post(sv.port, otlp)))
            th.start()
            end = time.monotonic() + 10
            while ep.count() < 1 and time.monotonic() < end:
                time.sleep(0.05)
            t0 = time.monotonic()
            rc = sv.stop(timeout=20)
            dt = time.monotonic() - t0
            th.join(10)
            st = res[0][0] if res else None
        finally:
            ep.stop()
        out = sv.output()
        check(st == 503 and rc == 0 and dt < 5 and
              'forward_aborted_total 1' in out and 'aborting forwards' in out,
              'SIGTERM with a hanging forward: aborted after --shutdown-timeout 1, '
              'counted, its client answered 503, exit 0 in %.1f s (%s, rc %s)' % (dt, st, rc))

        # ---------------------------------------------- bad settings
        for args, env, what in (
                (['--forward-headers', 'no-equals-sign'], {}, 'malformed'),
                ([], {'OTEL_EXPORTER_OTLP_TIMEOUT': 'soon'},
                 'OTEL_EXPORTER_OTLP_TIMEOUT'),
                (['--forward-ca', os.path.join(td, 'missing.pem')], {}, 'missing.pem'),
                (['--forward-compression', 'br'], {}, '--forward-compression')):
            full_env = dict(os.environ)
            full_env.update(env)
            r = subprocess.run([cli.SYM, 'serve', '--listen', '127.0.0.1:1',
                                '--forward', 'http://127.0.0.1:1' + PATH,
                                '--allow-root'] + args,
                               capture_output=True, text=True, env=full_env, timeout=30)
            check(r.returncode == 2 and len(r.stderr.splitlines()) == 1 and
                  what in r.stderr,
                  'refused before binding, one line naming %s: %s' %
                  (what, r.stderr.strip()))

    return symtest.verdict()


if __name__ == '__main__':
    sys.exit(main())
