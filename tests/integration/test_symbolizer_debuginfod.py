#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""spanprof-symbolizer against a real debuginfod server.

A stripped copy of the -O2 fixture (strip --strip-debug; its DWARF split
off with objcopy --only-keep-debug) is what the profile's mapping names.
`debuginfod -F -p PORT DIR` serves the split debug file.  debuginfod 0.188
listens on every address, so the whole test runs inside a private network
namespace (unshare --net, then ip link set lo up): the server is reachable
on loopback only and nothing leaves the machine.

Checks, with DEBUGINFOD_URLS=http://127.0.0.1:PORT and a temporary
DEBUGINFOD_CACHE_PATH:
  - the profile symbolizes with functions, files and lines (the stripped
    mapped file has none) and found_debuginfod is counted;
  - the same again after dropping root to nobody (private cache; the
    mapped file is then unreadable, so the executable's program headers
    come from debuginfod too: exec_found);
  - a build id nobody has is asked once: `lookup ID ID` answers the second
    from the negative cache (negative_hits 1, debuginfod_queries 1) and the
    server saw exactly one request for it;
  - `serve` with a slow debuginfod stalls only the requests that need the
    slow file: while the download of build id A takes SLOW_S seconds, a
    profile of a build id already loaded (B) and one of a build id not yet
    loaded (C, downloaded from the real debuginfod) are symbolized and
    written at once; a second profile of A waits for the same download
    (A is asked once) and both come out symbolized.  The slowness is the
    one fault here that a small loopback HTTP server produces
    (SlowDebuginfod below: it speaks debuginfod's /buildid/ID/debuginfo,
    sleeps, then serves the real debug file; 404 at once for anything
    else) listed in DEBUGINFOD_URLS next to the real debuginfod: the real
    server has no way to be slow on purpose, and this kernel has no
    netem.  The variants A and C are copies of the fixture (and of its
    debug file) with their build id bytes rewritten.
Exit 0 pass, 77 skip (no unshare/debuginfod/privileges), else fail.
"""
import contextlib
import gzip
import hashlib
import http.server
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_symbolizer_cli as cli  # noqa: E402
from lib import symtest  # noqa: E402
from lib.symtest import check  # noqa: E402
import test_symbolizer_serve as serve_t  # noqa: E402

MISSING = '0123456789abcdef0123456789abcdef01234567'
SLOW_S = 8.0
# the fixture's copies: (basename, what the build id is derived from)
VARIANTS = {'slow': 'sym_slow_A', 'other': 'sym_new_C'}


def variant_id(name):
    return hashlib.sha1(('spanprof ' + name).encode()).hexdigest()


def retag(src, dst, old_hex, new_hex):
    """Copies src to dst with its GNU build id bytes rewritten."""
    data = open(src, 'rb').read()
    old, new = bytes.fromhex(old_hex), bytes.fromhex(new_hex)
    assert len(old) == len(new) and data.count(old) == 1, src
    with open(dst, 'wb') as f:
        f.write(data.replace(old, new))
    os.chmod(dst, 0o755)


class SlowDebuginfod(http.server.BaseHTTPRequestHandler):
    """GET /buildid/<slow id>/debuginfo: sleep SLOW_S, then the file; every
    other request 404 at once.  Records each request's path when it
    arrives (started) and (start, end, path) when it is answered (log)."""
    slow_id = None
    slow_file = None
    started = []
    log = []
    lock = threading.Lock()

    def do_GET(self):
        t0 = time.monotonic()
        with SlowDebuginfod.lock:
            SlowDebuginfod.started.append(self.path)
        want = '/buildid/%s/debuginfo' % SlowDebuginfod.slow_id
        if self.path != want:
            self.send_response(404)
            self.send_header('Content-Length', '0')
            self.end_headers()
        else:
            time.sleep(SLOW_S)
            body = open(SlowDebuginfod.slow_file, 'rb').read()
            self.send_response(200)
            self.send_header('Content-Length', str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        with SlowDebuginfod.lock:
            SlowDebuginfod.log.append((t0, time.monotonic(), self.path))

    def log_message(self, *a):
        pass


def wait_http(url, timeout=30.0):
    end = time.time() + timeout
    while time.time() < end:
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            if e.code != 404:
                return e.code, b''
        except OSError:
            pass
        time.sleep(0.2)
    return None, b''


def stat(stderr, key):
    for tok in stderr.replace(',', ' ').replace('(', ' ').replace(')', ' ').split('\n'):
        words = tok.split()
        for i, w in enumerate(words[:-1]):
            if w == key:
                try:
                    return int(words[i + 1])
                except ValueError:
                    pass
    return None


@contextlib.contextmanager
def private_debuginfod(td, bid, extra=()):
    """Inside a private network namespace: lo up, a real debuginfod
    serving TD/serve (database and log in td) until the block ends.
    Yields (HTTP code of /buildid/BID/debuginfo once indexed, or None;
    the environment that points a client at it, with a cache in td)."""
    subprocess.run(['ip', 'link', 'set', 'lo', 'up'], check=True)
    port = random.randint(20000, 40000)
    log = open(os.path.join(td, 'debuginfod.log'), 'w')
    srv = subprocess.Popen(['debuginfod', '-F', '-p', str(port), '-d',
                            os.path.join(td, 'db.sqlite'), '-t', '0', '-g', '0'] +
                           list(extra) + [os.path.join(td, 'serve')],
                           stdout=log, stderr=subprocess.STDOUT)
    try:
        code, _ = wait_http('http://127.0.0.1:%d/buildid/%s/debuginfo' % (port, bid))
        env = dict(os.environ, DEBUGINFOD_URLS='http://127.0.0.1:%d' % port,
                   DEBUGINFOD_CACHE_PATH=os.path.join(td, 'cache'),
                   DEBUGINFOD_TIMEOUT='10')
        env.pop('DEBUGINFOD_PROGRESS', None)
        yield code, env
    finally:
        srv.terminate()
        srv.wait(timeout=30)
        log.close()


def inner(td):
    """Runs inside the network namespace (failed checks go to
    lib.symtest.FAILURES)."""
    subprocess.run(['ip', 'link', 'set', 'lo', 'up'], check=True)
    port = random.randint(20000, 40000)
    serve = os.path.join(td, 'serve')
    log = open(os.path.join(td, 'debuginfod.log'), 'w')
    srv = subprocess.Popen(['debuginfod', '-F', '-p', str(port), '-d',
                            os.path.join(td, 'db.sqlite'), '-t', '0', '-g', '0',
                            '-vv', serve], stdout=log, stderr=subprocess.STDOUT)
    try:
        bid = cli.build_id(cli.FIXTURE)
        code, _ = wait_http('http://127.0.0.1:%d/buildid/%s/debuginfo' %
                            (port, bid))
        check(code == 200, 'debuginfod serves the fixture debuginfo (%s)' % code)
        if code != 200:
            return
        env = dict(os.environ)
        env['DEBUGINFOD_URLS'] = 'http://127.0.0.1:%d' % port
        env['DEBUGINFOD_CACHE_PATH'] = os.path.join(td, 'cache')
        env['DEBUGINFOD_TIMEOUT'] = '10'
        env.pop('DEBUGINFOD_PROGRESS', None)
        src = os.path.join(td, 'in.pb')
        common = ['--debug-dir', os.path.join(td, 'nothing-here')]

        r = subprocess.run([cli.SYM, 'report', src, '--collapsed',
                            '--allow-root'] + common, capture_output=True,
                           text=True, env=env)
        print(r.stdout + r.stderr)
        check(r.returncode == 0, 'report exits 0')
        check('main;crunch 30' in r.stdout.splitlines(),
              'stripped binary symbolized through debuginfod')
        check(stat(r.stderr, 'found_debuginfod') == 1,
              'found_debuginfod counted')
        out = os.path.join(td, 'out.pb')
        r = subprocess.run([cli.SYM, 'file', src, '-o', out, '--allow-root']
                           + common, capture_output=True, text=True, env=env)
        check(r.returncode == 0, 'file exits 0')
        if r.returncode == 0:
            strings, funcs, locs, maps = cli.read_pprof(open(out, 'rb').read())
            lines = [ln for l in locs.values() for _, ln in l[2]]
            files = {os.path.basename(f[1]) for f in funcs.values()}
            check('sym_inline.c' in files and lines and min(lines) > 0,
                  'file and line numbers came from the served DWARF')

        if os.geteuid() == 0:
            env2 = dict(env)
            env2.pop('DEBUGINFOD_CACHE_PATH')
            env2['TMPDIR'] = '/tmp'
            r = subprocess.run([cli.SYM, 'report', src, '--collapsed'] + common,
                               capture_output=True, text=True, env=env2)
            check(r.returncode == 0 and
                  'main;crunch 30' in r.stdout.splitlines() and
                  stat(r.stderr, 'found_debuginfod') == 1 and
                  stat(r.stderr, 'exec_found') == 1,
                  'as nobody with a private debuginfod cache (%s)' %
                  r.stderr.strip()[-200:])

        # negative cache: one server request for a build id nobody has
        r = subprocess.run([cli.SYM, 'lookup', MISSING, MISSING,
                            '--allow-root'] + common, capture_output=True,
                           text=True, env=env)
        print(r.stdout + r.stderr)
        check(r.stdout.count('not-found') == 2, 'missing build id not found twice')
        check(stat(r.stderr, 'negative_hits') == 1 and
              stat(r.stderr, 'debuginfod_queries') == 1,
              'second lookup answered by the negative cache')
        log.flush()
        time.sleep(0.3)
        asked = sum(1 for line in open(os.path.join(td, 'debuginfod.log'))
                    if MISSING in line and '/buildid/' in line)
        check(asked == 1, 'server saw one request for the missing id (%d)'
              % asked)
        r = subprocess.run([cli.SYM, 'lookup', 'ZZ../../etc', '--allow-root']
                           + common, capture_output=True, text=True, env=env)
        check('not-found' in r.stdout and
              stat(r.stderr, 'debuginfod_queries') == 0,
              'an invalid build id never reaches debuginfod')
        slow_serve(td, port, env, common, check)
    finally:
        srv.terminate()
        try:
            srv.wait(timeout=10)
        except subprocess.TimeoutExpired:
            srv.kill()
        log.close()


def slow_serve(td, real_port, env, common, check):
    """A slow download stalls only the requests that need that file."""
    a_id, c_id = variant_id('slow'), variant_id('other')
    SlowDebuginfod.slow_id = a_id
    SlowDebuginfod.slow_file = os.path.join(td, 'slow', VARIANTS['slow'] + '.debug')
    slow = http.server.ThreadingHTTPServer(('127.0.0.1', 0), SlowDebuginfod)
    slow.daemon_threads = True
    threading.Thread(target=slow.serve_forever, daemon=True).start()
    env = dict(env)
    env['DEBUGINFOD_URLS'] = 'http://127.0.0.1:%d http://127.0.0.1:%d' % (
        real_port, slow.server_address[1])
    env['DEBUGINFOD_CACHE_PATH'] = os.path.join(td, 'serve-cache')
    env['DEBUGINFOD_TIMEOUT'] = '30'
    mapped = {
        'A': os.path.join(td, VARIANTS['slow']),
        'B': os.path.join(td, 'sym_inline_O2'),
        'C': os.path.join(td, VARIANTS['other']),
    }
    body = {
        'A': cli.make_otlp(td, 'A', mapped['A'], a_id),
        'B': cli.make_otlp(td, 'B', mapped['B']),
        'C': cli.make_otlp(td, 'C', mapped['C'], c_id),
    }
    outdir = os.path.join(td, 'serve-out')
    os.mkdir(outdir)
    port = serve_t.free_port()
    log = open(os.path.join(td, 'serve.log'), 'w+')
    proc = subprocess.Popen([cli.SYM, 'serve', '--listen', '127.0.0.1:%d' % port,
                             '--output-dir', outdir, '--workers', '4',
                             '--allow-root'] + common,
                            stdout=log, stderr=subprocess.STDOUT, env=env)
    seen = {}	# output file -> (time it appeared, which profile)

    def scan():
        for f in sorted(os.listdir(outdir)):
            if f in seen or not f.endswith('.otlp.pb.gz'):
                continue
            raw = gzip.decompress(open(os.path.join(outdir, f), 'rb').read())
            who = [k for k, m in mapped.items() if m.encode() in raw]
            seen[f] = (time.monotonic(), who[0] if len(who) == 1 else '?',
                       b'sym_inline.c' in raw)

    def wait_for(who, n, timeout):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            scan()
            if sum(1 for _, w, _ in seen.values() if w == who) >= n:
                return True
            time.sleep(0.05)
        return False

    a_path = '/buildid/%s/debuginfo' % a_id

    def slow_requests(done):
        with SlowDebuginfod.lock:
            if done:
                return [e for e in SlowDebuginfod.log if e[2] == a_path]
            return [p for p in SlowDebuginfod.started if p == a_path]

    try:
        for _ in range(100):
            try:
                serve_t.metrics(port)
                break
            except OSError:
                time.sleep(0.1)
        st, _, _ = serve_t.post(port, body['B'])
        check(st == 200 and wait_for('B', 1, 30),
              'serve: B symbolized once (its module is now loaded)')
        t_a = time.monotonic()
        # serve answers once a profile is written: A's two posts wait for
        # the download, on their own connections
        res_a = []
        posts_a = [threading.Thread(target=lambda: res_a.append(serve_t.post(port, body['A'])))
                   for _ in range(2)]
        for t in posts_a:
            t.start()
        # A is downloading once the slow server sleeps on its request
        end = time.monotonic() + 10
        while not slow_requests(False) and time.monotonic() < end:
            time.sleep(0.02)
        check(len(slow_requests(False)) == 1 and not slow_requests(True),
              'serve: the download of A has started')
        # B and C together, each on a free worker
        t0 = time.monotonic()
        st_b, _, _ = serve_t.post(port, body['B'])
        st_c, _, _ = serve_t.post(port, body['C'])
        ok_b = st_b == 200 and wait_for('B', 2, SLOW_S)
        t_b = time.monotonic() - t0
        ok_c = st_c == 200 and wait_for('C', 1, SLOW_S)
        t_c = time.monotonic() - t0
        a_done_early = sum(1 for _, w, _ in seen.values() if w == 'A')
        print('loaded B answered in %.3f s, new C in %.3f s while A downloads '
              '(%.0f s)' % (t_b, t_c, SLOW_S), flush=True)
        check(ok_b and t_b < SLOW_S / 3 and a_done_early == 0,
              'serve: a profile of a loaded build id is answered while another '
              'waits on a slow download (%.3f s)' % t_b)
        check(ok_c and t_c < SLOW_S / 3 and a_done_early == 0,
              'serve: a profile of another, not yet loaded build id is answered '
              'too (downloaded from the real debuginfod, %.3f s)' % t_c)
        check(not res_a, 'serve: A not answered before it is written')
        ok_a = wait_for('A', 2, SLOW_S + 20)
        t_a = time.monotonic() - t_a
        for t in posts_a:
            t.join(30)
        check([r[0] for r in res_a] == [200, 200],
              'serve: both profiles of A answered 200 once written (%s)' %
              [r[0] for r in res_a])
        reqs = slow_requests(True)
        check(ok_a and t_a >= SLOW_S - 0.5,
              'serve: both profiles of A written once the download ends (%.1f s)'
              % t_a)
        check(len(reqs) == 1, 'serve: A downloaded once for both profiles (%d)'
              % len(reqs))
        for f, (_, who, dwarf) in sorted(seen.items()):
            r = subprocess.run([cli.SYM, 'report', os.path.join(outdir, f),
                                '--collapsed', '--allow-root', '--no-debuginfod',
                                '-q'] + common, capture_output=True, text=True)
            check(dwarf and 'main;crunch 30' in r.stdout.splitlines(),
                  'serve: %s (%s) came out symbolized from DWARF' % (f, who))
    finally:
        proc.send_signal(2)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
        slow.shutdown()
        log.seek(0)
        print(log.read()[-1500:])


def main():
    if len(sys.argv) == 3 and sys.argv[1] == '--inner':
        inner(sys.argv[2])
        return symtest.verdict()
    if not os.access(cli.SYM, os.X_OK) or not os.path.exists(cli.FIXTURE):
        cli.skip('no spanprof-symbolizer or fixture under %s' % cli.BUILD)
    for tool in ('debuginfod', 'unshare', 'ip', 'objcopy', 'strip', 'readelf'):
        if not shutil.which(tool):
            cli.skip('%s not installed' % tool)
    probe = subprocess.run(['unshare', '--net', 'true'], capture_output=True)
    if probe.returncode != 0:
        cli.skip('cannot create a network namespace (unshare --net): %s' %
                 probe.stderr.decode().strip())

    td = tempfile.mkdtemp(prefix='spsym-dbgd-')
    try:
        serve = os.path.join(td, 'serve')
        os.makedirs(serve)
        stripped = os.path.join(td, 'sym_inline_O2')
        dbg = os.path.join(serve, 'sym_inline_O2.debug')
        subprocess.run(['objcopy', '--only-keep-debug', cli.FIXTURE, dbg],
                       check=True)
        subprocess.run(['strip', '--strip-debug', '-o', stripped, cli.FIXTURE],
                       check=True)
        subprocess.run(['objcopy', '--add-gnu-debuglink=' + dbg, stripped],
                       check=True)
        # served too: objcopy --only-keep-debug zeroes the debug file's
        # p_offset/p_filesz, so the symbolizer needs the executable's
        # program headers (from the mapped file, or from debuginfod when the
        # mapped file is not readable, as for nobody below)
        shutil.copy(stripped, os.path.join(serve, 'sym_inline_O2'))
        # the stripped file must have no DWARF left but the same build id
        sec = subprocess.run(['readelf', '-SW', stripped], capture_output=True,
                             text=True).stdout
        assert '.debug_info' not in sec, 'strip left DWARF behind'
        assert cli.build_id(stripped) == cli.build_id(cli.FIXTURE)

        # variants with other build ids: A served by the slow server only,
        # C by the real debuginfod only
        bid = cli.build_id(cli.FIXTURE)
        os.makedirs(os.path.join(td, 'slow'))
        for key, name in VARIANTS.items():
            new = variant_id(key)
            retag(stripped, os.path.join(td, name), bid, new)
            where = os.path.join(td, 'slow') if key == 'slow' else serve
            retag(dbg, os.path.join(where, name + '.debug'), bid, new)

        # the hand-made profile, mapping named after the stripped copy
        prof = cli.make_profile(stripped)
        with open(os.path.join(td, 'in.pb'), 'wb') as f:
            f.write(prof)
        r = subprocess.run(['unshare', '--net', sys.executable,
                            os.path.abspath(__file__), '--inner', td])
        return r.returncode
    finally:
        shutil.rmtree(td, ignore_errors=True)


if __name__ == '__main__':
    sys.exit(main())
