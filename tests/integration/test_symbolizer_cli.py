#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# spanprof-test: parallel (no BPF, no whole-machine sampling, no timing assertion)
"""spanprof-symbolizer `file` and `report` on hand-made profiles.

The profiles are written by a small pprof encoder below (independent of
src/profile, so the test also cross-checks the codec), with mappings that
point at the -O2 fixture $O/fixtures/sym_inline_O2 and addresses at
base + file offset of its functions.  Checks: `file` fills functions and
lines (decoded back here), `report --top/--collapsed/--by-span` print the
expected functions and spans, trace/span filters, an unknown build id stays
unresolved and is counted, and privileges are dropped to nobody when run
as root without --allow-root.

The helpers (pprof writer/reader, fixture symbols) are imported by the
other test_symbolizer_*.py tests.  Exit 0 pass, 77 skip, else fail.
"""
import os
import subprocess
import sys
import tempfile

from lib import symtest
from lib.pb import LEN, fields, packed
from lib.symtest import check, skip  # noqa: F401 (skip: cli.skip for the other tests)
from lib.pb import field_bytes as f_bytes, field_packed as f_packed, field_varint as f_varint

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
BUILD = os.environ.get('SPANPROF_BUILD', os.path.join(ROOT, 'build'))
SYM = os.path.join(BUILD, 'spanprof-symbolizer')
FIXTURE = os.path.join(BUILD, 'fixtures', 'sym_inline_O2')
BASE = 0x55550000000

# ------------------------------------------------------------ protobuf


def parse(buf):
    """Generic protobuf parser: {field: [values]} (bytes for wire type 2)."""
    out = {}
    for num, _, v in fields(buf):
        out.setdefault(num, []).append(v)
    return out


def unpack_varints(b):
    return packed(LEN, b)


class Pprof:
    """A minimal pprof writer: on-CPU and off-CPU columns, labels."""

    def __init__(self):
        self.strings = ['']
        self.mappings = []
        self.locations = []
        self.samples = []

    def s(self, text):
        if text not in self.strings:
            self.strings.append(text)
        return self.strings.index(text)

    def mapping(self, start, limit, offset, filename, build_id):
        self.mappings.append((start, limit, offset, self.s(filename),
                              self.s(build_id)))
        return len(self.mappings)

    def location(self, mapping_id, address):
        self.locations.append((mapping_id, address))
        return len(self.locations)

    def sample(self, locs, count=1, off_ns=0, waits=0, labels=()):
        """locs leaf first; labels: (key, str or int)."""
        self.samples.append((locs, count, off_ns, waits, labels))

    def encode(self, period=10101010):
        out = bytearray()
        for t, u in (('samples', 'count'), ('cpu', 'nanoseconds'),
                     ('off_cpu_waits', 'count'), ('off_cpu', 'nanoseconds')):
            out += f_bytes(1, f_varint(1, self.s(t)) + f_varint(2, self.s(u)))
        for locs, count, off_ns, waits, labels in self.samples:
            lb = bytearray()
            for k, v in labels:
                if isinstance(v, str):
                    lb += f_bytes(3, f_varint(1, self.s(k)) +
                                  f_varint(2, self.s(v)))
                else:
                    lb += f_bytes(3, f_varint(1, self.s(k)) + f_varint(3, v))
            vals = [count, count * period, waits, off_ns]
            out += f_bytes(2, f_packed(1, locs) + f_packed(2, vals) + bytes(lb))
        for i, (start, limit, offset, fn, bid) in enumerate(self.mappings):
            out += f_bytes(3, f_varint(1, i + 1) + f_varint(2, start) +
                           f_varint(3, limit) + f_varint(4, offset) +
                           f_varint(5, fn) + f_varint(6, bid))
        for i, (mid, addr) in enumerate(self.locations):
            out += f_bytes(4, f_varint(1, i + 1) + f_varint(2, mid) +
                           f_varint(3, addr))
        pt = f_bytes(11, f_varint(1, self.s('cpu')) +
                     f_varint(2, self.s('nanoseconds')))
        tail = pt + f_varint(12, period)
        for st in self.strings:
            out += f_bytes(6, st.encode())
        return bytes(out + tail)


def read_pprof(buf):
    """Decoded pprof: strings, functions {id: (name, file)}, locations
    {id: (mapping, address, [(function id, line)])}, mappings."""
    p = parse(buf)
    strings = [s.decode() for s in p.get(6, [])]
    funcs = {}
    for f in p.get(5, []):
        d = parse(f)
        funcs[d[1][0]] = (strings[d.get(2, [0])[0]], strings[d.get(4, [0])[0]])
    locs = {}
    for l in p.get(4, []):
        d = parse(l)
        lines = []
        for ln in d.get(4, []):
            e = parse(ln)
            lines.append((e.get(1, [0])[0], e.get(2, [0])[0]))
        locs[d[1][0]] = (d.get(2, [0])[0], d.get(3, [0])[0], lines)
    maps = []
    for m in p.get(3, []):
        maps.append(parse(m))
    return strings, funcs, locs, maps


# ------------------------------------------------------------ fixture


def build_id(path):
    out = subprocess.run(['readelf', '-n', path], capture_output=True,
                         text=True, check=True).stdout
    for line in out.splitlines():
        if 'Build ID:' in line:
            return line.split()[-1].strip()
    raise RuntimeError('no build id in ' + path)


def symbols(path):
    """{name: (file offset, size)} of FUNC symbols (PIE: offset = vaddr
    in the text segment here; checked against the program headers)."""
    out = subprocess.run(['readelf', '-lW', path], capture_output=True,
                         text=True, check=True).stdout
    loads = []
    for line in out.splitlines():
        f = line.split()
        if f and f[0] == 'LOAD':
            loads.append((int(f[1], 16), int(f[2], 16), int(f[4], 16)))
    out = subprocess.run(['nm', '-S', '--defined-only', path],
                         capture_output=True, text=True, check=True).stdout
    res = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) == 4 and f[2] in 'tT':
            va, size = int(f[0], 16), int(f[1], 16)
            for off, vaddr, filesz in loads:
                if vaddr <= va < vaddr + filesz:
                    res[f[3]] = (va - vaddr + off, size)
    return res


def run(args, **kw):
    return subprocess.run([SYM] + args, capture_output=True, text=True, **kw)


# ------------------------------------------------------------ test

TRACE_A = '0af7651916cd43dd8448eb211c80319c'
SPAN_A = 'b7ad6b7169203331'
TRACE_B = '4bf92f3577b34da6a3ce929d0e0e4736'
SPAN_B = '00f067aa0ba902b7'


def make_profile(mapped_name=None, bid=None):
    """The test profile; its main mapping is named mapped_name (default:
    the fixture itself) and carries build id bid (default: the
    fixture's)."""
    syms = symbols(FIXTURE)
    bid = bid or build_id(FIXTURE)
    p = Pprof()
    m = p.mapping(BASE, BASE + 0x100000, 0, mapped_name or FIXTURE, bid)
    m_unknown = p.mapping(BASE + 0x200000, BASE + 0x300000, 0, '/nonexistent/lib.so',
                          'deadbeef' * 5)
    loc = {}
    for name in ('main', 'crunch', 'hash_block', 'sort_small'):
        off, size = syms[name]
        loc[name] = p.location(m, BASE + off + min(8, size - 1))
    unk = p.location(m_unknown, BASE + 0x200123)
    span_a = [('trace_id', TRACE_A), ('span_id', SPAN_A), ('http.route', '/api/pay')]
    span_b = [('trace_id', TRACE_B), ('span_id', SPAN_B)]
    p.sample([loc['crunch'], loc['main']], count=30, labels=span_a + [('pid', 42)])
    p.sample([loc['hash_block'], loc['main']], count=10, labels=span_a + [('pid', 42)])
    p.sample([loc['sort_small'], loc['main']], count=5, labels=span_b + [('pid', 42)])
    p.sample([unk, loc['main']], count=2, labels=[('pid', 42)])
    p.sample([loc['hash_block'], loc['main']], count=0, waits=3,
             off_ns=45_000_000,
             labels=span_a + [('pid', 42), ('off_cpu_reason', 'io')])
    return p.encode()


def make_otlp(td, name='in', mapped_name=None, bid=None):
    """The test profile as an unsymbolized OTLP request, as the collector
    sends it (converted by `file --no-symbolize`; files under td)."""
    pb = os.path.join(td, name + '.pb')
    with open(pb, 'wb') as f:
        f.write(make_profile(mapped_name, bid))
    out = os.path.join(td, name + '.otlp')
    subprocess.run([SYM, 'file', pb, '-o', out, '--format', 'otlp',
                    '--no-symbolize', '--allow-root', '-q'], check=True)
    return open(out, 'rb').read()


def main():
    if not os.access(SYM, os.X_OK):
        skip('no %s (make O=... first)' % SYM)
    if not os.path.exists(FIXTURE):
        skip('no fixture %s' % FIXTURE)

    with tempfile.TemporaryDirectory() as td:
        src = os.path.join(td, 'in.pb')
        with open(src, 'wb') as f:
            f.write(make_profile())
        common = ['--allow-root', '--no-debuginfod', '--debug-dir', td]

        # file: pprof in -> pprof out with functions and lines
        out = os.path.join(td, 'out.pb')
        r = run(['file', src, '-o', out] + common)
        check(r.returncode == 0, 'file exits 0 (%s)' % r.stderr.strip()[-300:])
        if r.returncode == 0:
            strings, funcs, locs, maps = read_pprof(open(out, 'rb').read())
            names = {funcs[fid][0] for l in locs.values() for fid, _ in l[2]}
            check({'main', 'crunch', 'hash_block', 'sort_small'} <= names,
                  'file: functions filled: %s' % sorted(names))
            files = {os.path.basename(funcs[fid][1]) for l in locs.values()
                     for fid, _ in l[2]}
            check('sym_inline.c' in files, 'file: file names filled')
            lines = [ln for l in locs.values() for _, ln in l[2]]
            check(all(x > 0 for x in lines) and lines, 'file: line numbers > 0')
            unresolved = [l for l in locs.values() if not l[2]]
            check(len(unresolved) == 1, 'file: exactly one location left '
                  'unresolved (unknown build id), address kept')
            check(maps and maps[0].get(7, [0])[0] == 1,
                  'file: has_functions set on the fixture mapping')
        check('unresolved 1' in r.stderr and 'not found 1' in r.stderr,
              'file: unresolved frame counted in the statistics')

        # report --top
        r = run(['report', src, '--top', '5'] + common)
        check(r.returncode == 0, 'report --top exits 0')
        top = r.stdout
        print(top)
        check('crunch' in top and 'hash_block' in top, 'top lists functions')
        first = [l for l in top.splitlines() if '%' in l and 'flat%' not in l]
        check(first and first[0].split()[-2] == 'crunch',
              'top: crunch has the largest self')
        check('[unknown] lib.so+0x123' in top, 'top: unresolved frame named '
              'by mapping and offset')

        # --collapsed
        r = run(['report', src, '--collapsed'] + common)
        col = r.stdout.splitlines()
        print('\n'.join(col))
        check('main;crunch 30' in col, 'collapsed: main;crunch 30')
        check('main;hash_block 10' in col, 'collapsed: main;hash_block 10')
        check('main;sort_small 5' in col, 'collapsed: main;sort_small 5')

        r = run(['report', src, '--collapsed', '--kind', 'offcpu'] + common)
        check(r.stdout.strip() == 'main;hash_block 45000',
              'collapsed off-CPU in microseconds: %r' % r.stdout.strip())

        # --by-span
        r = run(['report', src, '--by-span'] + common)
        print(r.stdout)
        rows = {l.split()[1]: l for l in r.stdout.splitlines()
                if l.startswith(TRACE_A) or l.startswith(TRACE_B)}
        check(SPAN_A in rows and SPAN_B in rows, 'by-span: both spans')
        if SPAN_A in rows:
            f = rows[SPAN_A].split()
            # samples on-CPU-ms waits off-ms sleep io runq other
            check(f[2] == '40' and abs(float(f[3]) - 404.0) < 1.0 and
                  f[4] == '3' and abs(float(f[5]) - 45.0) < 0.01 and
                  abs(float(f[7]) - 45.0) < 0.01,
                  'by-span: span A samples, on-CPU ms and off-CPU io ms')
            check('crunch' in rows[SPAN_A], 'by-span: top frame crunch')
            check(rows[SPAN_A].endswith('[http.route=/api/pay]'),
                  'by-span: the span attribute shown, off_cpu_reason not')
            check('[' not in rows.get(SPAN_B, '['), 'by-span: no attributes, no brackets')

        # filters
        r = run(['report', src, '--collapsed', '--span-id', SPAN_B] + common)
        check(r.stdout.strip() == 'main;sort_small 5',
              'span filter keeps only span B')
        r = run(['report', src, '--collapsed', '--trace-id', TRACE_A.upper()] + common)
        check('main;crunch 30' in r.stdout and 'sort_small' not in r.stdout,
              'trace filter (upper-case hex accepted)')
        r = run(['report', src, '--trace-id', 'xyz'] + common)
        check(r.returncode == 2, 'bad trace id is a usage error')

        # every command takes its own options only: refused in one line
        # naming the option, the command, and who takes it
        for cmd, args, want in (
                ('addr', ['-e', FIXTURE, '--top', '5'], 'report'),
                ('addr', ['-e', FIXTURE, '-o', 'x'], 'file, report'),
                ('lookup', ['--cache-entries', '9', 'ab'], 'serve'),
                ('lookup', ['--no-kallsyms', 'ab'], 'report'),
                ('file', [src, '--listen', '127.0.0.1:1'], 'serve'),
                ('report', [src, '--forward', 'http://x'], 'serve'),
                ('report', [src, '--no-symbolize'], 'file'),
                ('serve', ['--output-dir', td, '--top', '3'], 'report'),
                ('serve', ['--output-dir', td, '--no-kallsyms'], 'report'),
                ('file', [src, '--hint', 'x'], 'lookup')):
            opt = [a for a in args if a.startswith('-') and a not in ('-e',)][-1]
            r = run([cmd] + args + ['--allow-root'])
            lines = r.stderr.splitlines()
            check(r.returncode == 2 and len(lines) == 1 and
                  ('%s is not an option of %s' % (opt, cmd)) in lines[0] and
                  want in lines[0] and r.stdout == '',
                  '%s %s refused in one line: %s' % (cmd, opt, r.stderr.strip()))
        r = run(['report', src, '--frobnicate'])
        check(r.returncode == 2 and len(r.stderr.splitlines()) == 1 and
              'unknown option --frobnicate' in r.stderr and 'report' in r.stderr,
              'an option no command has: "unknown option", one line')
        r = run(['report', src, '--top', 'many'])
        check(r.returncode == 2 and len(r.stderr.splitlines()) == 1 and
              '--top many' in r.stderr, 'a bad value names the option and the value')
        r = run(['frobnicate'])
        check(r.returncode == 2 and 'unknown command' in r.stderr, 'unknown command')

        # --help per command: its own options, not the others'
        own = {'file': ['--format', '--no-symbolize', '--kallsyms', '--no-kallsyms'],
               'report': ['--top', '--flamegraph', '--by-span', '--no-kallsyms'],
               'addr': ['--offset', '--exe', '--cache-entries'],
               'lookup': ['--hint', '--debug-dir'],
               'serve': ['--listen', '--forward', '--forward-headers',
                         '--shutdown-timeout', '--kallsyms-dir']}
        shared = {'--kallsyms', '--kallsyms-dir', '--cache-entries', '--debug-dir',
                  '--no-kallsyms'}	# group options, in several commands
        for cmd, opts in own.items():
            r = run([cmd, '--help'])
            theirs = {o for c, l in own.items() if c != cmd for o in l} - shared
            shown = set(w.rstrip(',') for w in r.stdout.split() if w.startswith('--'))
            check(r.returncode == 0 and
                  r.stdout.startswith('usage: spanprof-symbolizer %s' % cmd) and
                  all(o in shown for o in opts) and not shown & theirs,
                  '%s --help lists its own options, none of the others\' (%s)' %
                  (cmd, ' '.join(sorted(shown))))
        r = run(['addr', '--help'])
        check('--kallsyms' not in r.stdout and '--no-kallsyms' not in r.stdout,
              'addr --help: no kernel snapshot options (addr does not take them)')
        r = run(['help', 'lookup'])
        check(r.returncode == 0 and r.stdout == run(['lookup', '--help']).stdout,
              'help lookup = lookup --help')

        # OTLP out and back
        otlp = os.path.join(td, 'out.otlp')
        r = run(['file', src, '-o', otlp, '--format', 'otlp'] + common)
        check(r.returncode == 0, 'file --format otlp exits 0')
        r = run(['report', otlp, '--collapsed'] + common)
        check('main;crunch 30' in r.stdout.splitlines(),
              'report reads the OTLP written by file')

        # privileges: as root without --allow-root we drop to nobody
        if os.geteuid() == 0:
            pub = tempfile.mkdtemp(prefix='spsym-pub-')
            try:
                os.chmod(pub, 0o755)
                pin = os.path.join(pub, 'in.pb')
                with open(pin, 'wb') as f:
                    f.write(open(src, 'rb').read())
                os.chmod(pin, 0o600)   # readable by root only: read before the drop
                fgp = os.path.join(pub, 'fg.html')
                r = run(['report', pin, '--no-debuginfod', '--collapsed',
                         '--flamegraph', fgp])
                ok = r.returncode == 0 and os.path.getsize(fgp) > 0
                check(ok, 'as root: runs after dropping to nobody (%s)' %
                      r.stderr.strip()[-200:])
                r2 = subprocess.run(['sh', '-c', 'exec %s report %s --no-debuginfod '
                                     '--collapsed --user root' % (SYM, pin)],
                                    capture_output=True, text=True)
                check(r2.returncode != 0 and 'allow-root' in r2.stderr,
                      '--user root is refused without --allow-root')
            finally:
                subprocess.run(['rm', '-rf', pub])

    return symtest.verdict()


if __name__ == '__main__':
    sys.exit(main())
