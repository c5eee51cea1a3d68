#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""spanprof-symbolizer serve against hostile clients (issue 15's table).

Each part is one row of the attacks that broke serve before, run for real:
  A. under a memory cgroup (v1, or v2 where mounted with memory) at the
     shipped Kubernetes limit (1 GiB), with the default budget:
       - one ~64 KB gzip body that decodes to ~1M samples with 16 labels
         each: 413 (its decode is predicted over the budget), at once;
       - 62 KiB of gzip'd valid padding (33M empty ResourceProfiles): 413
         in well under a second;
       - four clients resending both for seconds while a normal client
         (another source address) posts small profiles: every normal
         request answered 200 with p99 < 50 ms; the process survives, the
         cgroup never OOM-kills, its peak stays under the limit, and the
         budget is all given back afterwards;
  B. the forward target hung (accepts, never answers), 17 concurrent
     requests of 100k samples each: every one answered (503: nothing
     acknowledged), the peak stays under the limit; SIGTERM with
     profiles in hand and queued: exit 0 within --shutdown-timeout plus
     a second, every client answered 503;
  C. slowloris: 8 connections trickling a body and 64 trickling one header
     byte every 0.3 s, from 127.0.0.1: past the 32 one address may hold
     they are refused at once, the rest cut at the deadlines (counted by
     phase), while profiles from 127.0.0.2 and /healthz on the admin port
     keep being answered;
  D. the forward target down: 503 + Retry-After, then refused at once
     while it stays down; nothing answered 200;
  E. --output-dir not writable by the user serve drops to: refuses to
     start, one line, exit 1;
  F. bad values: one line naming the flag and its range, exit 2.
Run alone (timing, cgroups): tests/run.sh runs it serially.
"""
import gzip
import http.client
import multiprocessing
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lib.pb import field_bytes as ld, field_packed as packed, field_varint as vi  # noqa: E402
from spt import check, fail, skip, tmpdir  # noqa: E402
import test_symbolizer_cli as cli  # noqa: E402
import test_symbolizer_serve as serve_t  # noqa: E402

PATH = '/v1development/profiles'
LIMIT = 1 << 30		# deploy/kubernetes/symbolizer.yaml


# ------------------------------------------------------------ bodies

def request(samples, dictionary):
    """ExportProfilesServiceRequest{resource_profiles{scope_profiles{profiles{
    samples}}}, dictionary}."""
    prof = ld(1, vi(1, 1) + vi(2, 2)) + b''.join(ld(2, s) for s in samples)
    rp = ld(2, ld(2, prof))
    return ld(1, rp) + ld(2, dictionary)


def dictionary(n_labels):
    strings = [b''] + [b'k%d' % i for i in range(n_labels)] + [b'v', b'samples', b'count']
    d = ld(2, b'') + ld(2, vi(2, 0x401000))                 # locations: [0], [1]
    d += b''.join(ld(5, s) for s in strings)
    d += ld(6, b'') + b''.join(ld(6, vi(1, i + 1) + ld(2, ld(1, b'v')))
                              for i in range(n_labels))   # attribute_table
    d += ld(7, b'') + ld(7, packed(1, [1]))                # stacks: [0], [1]
    return d


def labelled(n, labels=16, distinct=False):
    """n samples on stack 1 with `labels` attributes each; distinct adds a
    value per sample so gzip cannot fold them."""
    s = vi(1, 1) + packed(2, list(range(1, labels + 1)))
    if not distinct:
        return request([s] * n, dictionary(labels))
    return request([s + packed(4, [i + 1]) for i in range(n)], dictionary(labels))


SMALL = gzip.compress(labelled(50, labels=2))
PADDING = gzip.compress(b'\x0a\x00' * (33 << 20), 9)


def post(port, body, src='127.0.0.1', timeout=60):
    c = http.client.HTTPConnection('127.0.0.1', port, timeout=timeout,
                                   source_address=(src, 0))
    try:
        c.request('POST', PATH, body=body, headers={
            'Content-Type': 'application/x-protobuf', 'Content-Encoding': 'gzip'})
        r = c.getresponse()
        r.read()
        return r.status, r.getheader('Retry-After')
    except (OSError, http.client.HTTPException) as e:
        return None, str(e)
    finally:
        c.close()


def get(port, path, src='127.0.0.1', timeout=10):
    c = http.client.HTTPConnection('127.0.0.1', port, timeout=timeout,
                                   source_address=(src, 0))
    try:
        c.request('GET', path)
        r = c.getresponse()
        return r.status, r.read().decode(errors='replace')
    except (OSError, http.client.HTTPException) as e:
        return None, str(e)
    finally:
        c.close()


def metrics(port):
    st, txt = get(port, '/metrics')
    out = {}
    for line in (txt if st == 200 else '').splitlines():
        if line and not line.startswith('#'):
            k, v = line.rsplit(' ', 1)
            out[k.replace('spanprof_symbolizer_', '')] = float(v)
    return out


# ------------------------------------------------------------ cgroup

class Cgroup:
    """A memory cgroup at limit bytes (v1 here; v2 when that is how the
    memory controller is mounted)."""

    def __init__(self, limit):
        name = 'spanprof-serve-%d' % os.getpid()
        v1 = '/sys/fs/cgroup/memory'
        if os.path.isdir(v1):
            self.path, self.v2 = os.path.join(v1, name), False
        elif 'memory' in open('/sys/fs/cgroup/cgroup.controllers').read():
            self.path, self.v2 = os.path.join('/sys/fs/cgroup', name), True
        else:
            skip('no memory cgroup controller')
        os.mkdir(self.path)
        self.write('memory.max' if self.v2 else 'memory.limit_in_bytes', str(limit))

    def write(self, f, v):
        with open(os.path.join(self.path, f), 'w') as fh:
            fh.write(v)

    def read(self, f):
        with open(os.path.join(self.path, f)) as fh:
            return fh.read()

    def peak(self):
        return int(self.read('memory.peak' if self.v2 else 'memory.max_usage_in_bytes'))

    def oom_kills(self):
        f = 'memory.events' if self.v2 else 'memory.oom_control'
        for line in self.read(f).splitlines():
            k, v = line.split()
            if k == 'oom_kill':
                return int(v)
        return 0

    def wrap(self, argv):
        return ['sh', '-c', 'echo $$ > %s/cgroup.procs && exec "$@"' % self.path, 'sh'] + argv

    def remove(self):
        for _ in range(50):
            try:
                os.rmdir(self.path)
                return
            except OSError:
                time.sleep(0.1)


class Serve:
    def __init__(self, td, args, cg=None, name='serve'):
        self.port = serve_t.free_port()
        self.log = open(os.path.join(td, name + '.log'), 'w+')
        argv = [cli.SYM, 'serve', '--listen', '127.0.0.1:%d' % self.port, '--allow-root',
                '--no-debuginfod'] + args
        self.proc = subprocess.Popen(cg.wrap(argv) if cg else argv, stdout=self.log,
                                     stderr=subprocess.STDOUT)
        for _ in range(100):
            if get(self.port, '/healthz', timeout=1)[0] == 200:
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.1)
        fail('serve did not start: %s' % self.output())

    def stop(self, timeout=30):
        t0 = time.monotonic()
        self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            rc = None
        return rc, time.monotonic() - t0

    def output(self):
        self.log.flush()
        self.log.seek(0)
        return self.log.read()


def p99(xs):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * 0.99))]


# ------------------------------------------------------------ A: memory

def part_a(td, cg):
    # files on tmpfs when there is one: the latency measured is serve's,
    # not the disk's fdatasync
    out = tempfile.mkdtemp(prefix='spanprof-serve-a-',
                           dir='/dev/shm' if os.path.isdir('/dev/shm') else td)
    sv = Serve(td, ['--output-dir', out, '--workers', '2'], cg, 'serve-a')
    try:
        big = gzip.compress(labelled(1 << 20), 9)
        print('labelled body: %d bytes gzip; padding: %d bytes' % (len(big), len(PADDING)))
        t0 = time.monotonic()
        st, _ = post(sv.port, big)
        dt = time.monotonic() - t0
        check(st == 413 and dt < 3, '1M samples x 16 labels in %d KB of gzip: 413 in %.2f s'
              % (len(big) >> 10, dt))
        t0 = time.monotonic()
        st, _ = post(sv.port, PADDING)
        dt = time.monotonic() - t0
        check(st == 413 and dt < 0.5, '33M empty ResourceProfiles in %d KiB of gzip: 413 in '
              '%.3f s' % (len(PADDING) >> 10, dt))
        # attackers in processes of their own: the measuring client must
        # not wait for the GIL behind them
        stop = multiprocessing.Event()
        q = multiprocessing.Queue()

        def attacker(i):
            codes = []
            while not stop.is_set():
                codes.append(post(sv.port, big if i % 2 else PADDING)[0])
            q.put(codes)
        lat, codes = [], []
        ths = [multiprocessing.Process(target=attacker, args=(i,)) for i in range(4)]
        for t in ths:
            t.start()
        end = time.monotonic() + 6
        while time.monotonic() < end:
            t0 = time.monotonic()
            codes.append(post(sv.port, SMALL, src='127.0.0.2')[0])
            lat.append(time.monotonic() - t0)
            time.sleep(0.02)
        stop.set()
        attack_codes = []
        for _ in ths:
            attack_codes += q.get(timeout=60)
        for t in ths:
            t.join()
        print('normal: %d requests, p50 %.1f ms, p99 %.1f ms, max %.1f ms; attack: %d '
              'requests %s' % (len(lat), 1e3 * sorted(lat)[len(lat) // 2], 1e3 * p99(lat),
                               1e3 * max(lat), len(attack_codes), sorted(set(attack_codes))))
        check(codes and all(c == 200 for c in codes),
              'every normal request answered 200 during the attack (%d, %s)' %
              (len(codes), sorted(set(codes), key=str)))
        check(p99(lat) < 0.050, 'normal requests p99 %.1f ms < 50 ms' % (1e3 * p99(lat)))
        check(set(attack_codes) <= {413, 503}, 'attack bodies refused (%s)' %
              sorted(set(attack_codes), key=str))
        m = metrics(sv.port)
        check(m.get('memory_used_bytes') == 0, 'the budget is all given back (%s)' %
              m.get('memory_used_bytes'))
        check(0 < m.get('memory_peak_bytes', 0) <= m.get('memory_budget_bytes', 0),
              'budget peak %.0f MiB <= budget %.0f MiB' % (m.get('memory_peak_bytes', 0) / 2**20,
                                                         m.get('memory_budget_bytes', 0) / 2**20))
        check(sv.proc.poll() is None, 'serve survived')
    finally:
        rc, _ = sv.stop()
        shutil.rmtree(out, ignore_errors=True)
    check(rc == 0, 'serve exits 0 (%s)' % rc)


# ------------------------------------------------------------ B: hung forward

def part_b(td, cg):
    hung = socket.socket()
    hung.bind(('127.0.0.1', 0))
    hung.listen(64)			# accepts (the kernel does), never answers
    url = 'http://127.0.0.1:%d%s' % (hung.getsockname()[1], PATH)
    sv = Serve(td, ['--forward', url, '--forward-timeout-ms', '600000', '--workers', '4',
                    '--queue', '16', '--shutdown-timeout', '2'], cg, 'serve-b')
    body = gzip.compress(labelled(100000, distinct=True))
    res = []
    ths = [threading.Thread(target=lambda: res.append(post(sv.port, body, timeout=120)))
           for _ in range(17)]
    try:
        for t in ths:
            t.start()

        # until every request is answered early, in work or queued: serve
        # then holds them all
        end = time.monotonic() + 60
        while True:
            m = metrics(sv.port)
            n = len(res) + m.get('profiles_in_work', 0) + m.get('queue_length', 0)
            if n >= 17:
                break
            if time.monotonic() > end:
                fail('hung forward: after 60 s only %d of 17 requests answered, in work or '
                     'queued (%s)' % (n, m))
            time.sleep(0.1)
        print('hung forward: %d answered early, %d in work, %d queued, budget %.0f MiB used'
              % (len(res), m.get('profiles_in_work', -1), m.get('queue_length', -1),
                 m.get('memory_used_bytes', 0) / 2**20))
        check(not any(r[0] == 200 for r in res), 'nothing answered 200 while the target hangs')
    finally:
        rc, dt = sv.stop()
        for t in ths:
            t.join(30)
        hung.close()
    codes = [r[0] for r in res]
    check(len(codes) == 17 and all(c == 503 for c in codes),
          '17 requests to a hung target: every one answered 503 (%s)' % codes)
    check(rc == 0 and dt < 2 + 1.5, 'SIGTERM with profiles in hand: exit %s in %.1f s '
          '(--shutdown-timeout 2)' % (rc, dt))
    out = sv.output()
    check('rejected_shutdown_total' in out, 'refused work counted')


# ------------------------------------------------------------ C: slowloris

def part_c(td):
    out = os.path.join(td, 'out-c')
    os.mkdir(out)
    admin = serve_t.free_port()
    sv = Serve(td, ['--output-dir', out, '--header-timeout-ms', '1500',
                    '--body-timeout-ms', '1500', '--admin-listen', '127.0.0.1:%d' % admin],
               None, 'serve-c')
    slow = []
    try:
        for i in range(72):
            s = socket.create_connection(('127.0.0.1', sv.port), source_address=('127.0.0.1', 0))
            if i < 8:	# headers at once, then a body byte at a time
                s.sendall(b'POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: '
                          b'application/x-protobuf\r\nContent-Length: 100000\r\n\r\n' %
                          PATH.encode())
            slow.append(s)
        cut_at = [None] * len(slow)
        codes, lat, health = [], [], []
        t_start = time.monotonic()
        hdr = b'POST %s HTTP/1.1\r\nHost: x\r\n' % PATH.encode()
        k = 0
        while time.monotonic() - t_start < 4:
            for i, s in enumerate(slow):
                if cut_at[i] is not None:
                    continue
                try:
                    s.sendall(hdr[k % len(hdr):k % len(hdr) + 1] if i >= 8 else b'\x0a')
                    s.settimeout(0.001)
                    try:
                        if s.recv(1) == b'':
                            cut_at[i] = time.monotonic() - t_start
                    except socket.timeout:
                        pass
                except OSError:
                    cut_at[i] = time.monotonic() - t_start
            k += 1
            t0 = time.monotonic()
            codes.append(post(sv.port, SMALL, src='127.0.0.2', timeout=5)[0])
            lat.append(time.monotonic() - t0)
            health.append(get(admin, '/healthz', timeout=2)[0])
            time.sleep(0.3)
        cut = [c for c in cut_at if c is not None]
        print('slowloris: %d of %d slow connections cut (last at %.1f s); normal p99 %.0f ms'
              % (len(cut), len(slow), max(cut) if cut else -1, 1e3 * p99(lat)))
        check(codes and all(c == 200 for c in codes) and max(lat) < 1,
              'profiles from another address answered 200 during the trickle (%s, max %.0f ms)'
              % (sorted(set(codes), key=str), 1e3 * max(lat)))
        check(health and all(h == 200 for h in health),
              '/healthz on the admin port answered during the trickle (%s)' %
              sorted(set(health), key=str))
        check(len(cut) == len(slow) and max(cut) < 3.5,
              'every trickling connection cut by its deadline (%d of %d, last %.1f s)' %
              (len(cut), len(slow), max(cut) if cut else -1))
        m = metrics(sv.port)
        check(m.get('connections_cut_total{phase="headers"}', 0) >= 1 and
              m.get('connections_cut_total{phase="body"}', 0) >= 8,
              'cuts counted by phase (headers %s, body %s)' % (
                  m.get('connections_cut_total{phase="headers"}'),
                  m.get('connections_cut_total{phase="body"}')))
    finally:
        for s in slow:
            s.close()
        sv.stop()


# ------------------------------------------------------------ D, E, F

def part_d(td):
    dead = serve_t.free_port()		# nothing listens there
    sv = Serve(td, ['--forward', 'http://127.0.0.1:%d%s' % (dead, PATH)], None, 'serve-d')
    try:
        st1, ra1 = post(sv.port, SMALL)
        t0 = time.monotonic()
        st2, ra2 = post(sv.port, SMALL)
        dt = time.monotonic() - t0
        m = metrics(sv.port)
    finally:
        sv.stop()
    check(st1 == 503 and ra1, 'forward target down: 503 with Retry-After (%s, %s)' % (st1, ra1))
    check(st2 == 503 and ra2 and dt < 0.5,
          'then refused at once while it stays down (%s in %.3f s)' % (st2, dt))
    check(m.get('accepted_total') == 0 and m.get('rejected_not_kept_total') == 1 and
          m.get('rejected_forward_down_total') == 1,
          'nothing acknowledged: accepted 0, not kept 1, refused at once 1 (%s)' %
          {k: m.get(k) for k in ('accepted_total', 'rejected_not_kept_total',
                                 'rejected_forward_down_total')})


def part_e(td):
    d = os.path.join(td, 'root-only')
    os.mkdir(d, 0o700)
    r = subprocess.run([cli.SYM, 'serve', '--listen', '127.0.0.1:0', '--output-dir', d,
                        '--no-debuginfod', '--user', 'nobody'],
                       capture_output=True, text=True, timeout=30)
    lines = [x for x in r.stderr.splitlines() if x.strip()]
    check(r.returncode == 1 and len(lines) == 1 and '--output-dir' in lines[0] and
          'not writable' in lines[0],
          'unwritable --output-dir: refused to start, one line, exit 1 (%s: %s)' %
          (r.returncode, r.stderr.strip()))


def part_f(td):
    for args, flag, want in ((['--listen', '127.0.0.1:99999'], '--listen', '0..65535'),
                             (['--admin-listen', '127.0.0.1:70000'], '--admin-listen',
                              '0..65535'),
                             (['--queue', '4294967295'], '--queue', '1 to 1048576'),
                             (['--workers', '0'], '--workers', '1 to 64'),
                             (['--memory-budget', '1'], '--memory-budget', '16 to'),
                             (['--max-connections-per-ip', '0'], '--max-connections-per-ip',
                              '1 to'),
                             (['--header-timeout-ms', 'x'], '--header-timeout-ms', '100 to')):
        r = subprocess.run([cli.SYM, 'serve', '--output-dir', td, '--allow-root'] + args,
                           capture_output=True, text=True, timeout=30)
        lines = r.stderr.splitlines()
        check(r.returncode == 2 and len(lines) == 1 and flag in lines[0] and want in lines[0],
              'serve %s: one line naming the flag and range, exit 2 (%s: %s)' %
              (' '.join(args), r.returncode, r.stderr.strip()))


def main():
    if not os.access(cli.SYM, os.X_OK):
        skip('no spanprof-symbolizer under %s' % cli.BUILD)
    if os.geteuid() != 0:
        skip('needs root (memory cgroup, --user nobody)')
    td = tmpdir()
    os.chmod(td, 0o755)
    part_f(td)
    part_e(td)
    part_d(td)
    part_c(td)
    cg = Cgroup(LIMIT)
    try:
        part_a(td, cg)
        part_b(td, cg)
        peak, kills = cg.peak(), cg.oom_kills()
    finally:
        cg.remove()
    check(kills == 0, 'no OOM kill in the cgroup (%d)' % kills)
    check(peak < LIMIT, 'cgroup peak %.0f MiB under the %d MiB limit' % (peak / 2**20,
                                                                      LIMIT >> 20))
    shutil.rmtree(td, ignore_errors=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
