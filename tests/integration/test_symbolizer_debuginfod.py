#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# spanprof-test: parallel (no BPF, no whole-machine sampling, no timing assertion)
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
    server saw exactly one request for it.
Exit 0 pass, 77 skip (no unshare/debuginfod/privileges), else fail.
"""
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_symbolizer_cli as cli  # noqa: E402

MISSING = '0123456789abcdef0123456789abcdef01234567'


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


def inner(td):
    """Runs inside the network namespace."""
    failures = []

    def check(cond, what):
        print(('ok   ' if cond else 'FAIL ') + what, flush=True)
        if not cond:
            failures.append(what)

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
            return failures
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
    finally:
        srv.terminate()
        try:
            srv.wait(timeout=10)
        except subprocess.TimeoutExpired:
            srv.kill()
        log.close()
    return failures


def main():
    if len(sys.argv) == 3 and sys.argv[1] == '--inner':
        return 1 if inner(sys.argv[2]) else 0
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
