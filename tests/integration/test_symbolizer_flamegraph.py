#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# spanprof-test: parallel (no BPF, no whole-machine sampling, no timing assertion)
"""The flame graph HTML in headless Chromium.

spanprof-symbolizer report --flamegraph on a hand-made profile (on-CPU and
off-CPU samples against the -O2 fixture), then Debian's chromium:
  - --dump-dom (after the page's JS ran) shows the expected frames as
    div.f elements, the on-CPU/off-CPU switch, no external references;
  - #zoom=crunch: the crunch frame is the zoomed one, 100% wide, and its
    siblings are gone; #kind=offcpu shows the off-CPU tree; #q=hash
    highlights hash_block;
  - --screenshot writes a non-trivial PNG.
Exit 0 pass, 77 skip (no chromium / no build), else fail.
"""
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_symbolizer_cli as cli  # noqa: E402
from lib import symtest  # noqa: E402
from lib.symtest import check  # noqa: E402

CHROMIUM = shutil.which('chromium') or shutil.which('chromium-browser')


def chromium(args, url, td):
    prof = tempfile.mkdtemp(dir=td)
    cmd = [CHROMIUM, '--headless', '--no-sandbox', '--disable-gpu',
           '--disable-background-networking', '--disable-component-update',
           '--disable-sync', '--no-first-run', '--user-data-dir=' + prof,
           '--window-size=1200,700'] + args + [url]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120,
                          cwd=td)


def frames(dom):
    """[(classes, style, text)] of the rendered frame boxes."""
    out = []
    for m in re.finditer(r'<div class="(f[^"]*)"[^>]*style="([^"]*)"[^>]*>([^<]*)</div>', dom):
        text = (m.group(3).replace('&lt;', '<').replace('&gt;', '>')
                .replace('&amp;', '&'))
        out.append((m.group(1).split(), m.group(2), text))
    return out


def png_info(path):
    data = open(path, 'rb').read()
    if data[:8] != b'\x89PNG\r\n\x1a\n':
        return None
    w, h = struct.unpack('>II', data[16:24])
    # decompress IDAT to count distinct scanline bytes: a blank page has ~1
    idat = b''.join(data[i + 8:i + 8 + struct.unpack('>I', data[i:i + 4])[0]]
                    for i in [m.start() - 4 for m in re.finditer(b'IDAT', data)])
    raw = zlib.decompress(idat)
    return w, h, len(set(raw[::97]))


def main():
    if not os.access(cli.SYM, os.X_OK) or not os.path.exists(cli.FIXTURE):
        cli.skip('no spanprof-symbolizer or fixture under %s' % cli.BUILD)
    if not CHROMIUM:
        cli.skip('chromium not installed')

    with tempfile.TemporaryDirectory() as td:
        src = os.path.join(td, 'in.pb')
        with open(src, 'wb') as f:
            f.write(cli.make_profile())
        html = os.path.join(td, 'fg.html')
        r = cli.run(['report', src, '--flamegraph', html, '--allow-root',
                     '--no-debuginfod', '--title', 'fixture <test>', '-q'])
        check(r.returncode == 0 and os.path.getsize(html) > 0,
              'report --flamegraph writes the page (%s)' % r.stderr.strip())
        page = open(html).read()
        check(not re.search(r'(src|href)\s*=\s*["\']?(https?:)?//', page),
              'no external references in the page')
        check('fixture &lt;test&gt;' in page, 'title is HTML-escaped')
        url = 'file://' + html

        r = chromium(['--dump-dom'], url, td)
        dom = r.stdout
        fr = frames(dom)
        names = {t for _, _, t in fr}
        check({'all', 'main', 'crunch', 'hash_block', 'sort_small'} <= names,
              'rendered frames after JS ran: %s' % sorted(names))
        check(dom.count('type="radio"') == 2, 'on-CPU/off-CPU switch present')

        r = chromium(['--dump-dom'], url + '#zoom=crunch', td)
        fr = frames(r.stdout)
        z = [f for f in fr if 'zoomed' in f[0]]
        check(len(z) == 1 and z[0][2] == 'crunch' and
              'width: 100%' in z[0][1] and 'left: 0%' in z[0][1],
              'zoom=crunch: crunch is zoomed and 100%% wide (%s)' % (z,))
        check(not any(t in ('hash_block', 'sort_small') for _, _, t in fr),
              'zoom=crunch: siblings are not drawn')
        check(any(t == 'main' and 'anc' in c for c, _, t in fr),
              'zoom=crunch: the caller stays as a full-width ancestor')

        r = chromium(['--dump-dom'], url + '#kind=offcpu', td)
        names = {t for _, _, t in frames(r.stdout)}
        check('hash_block' in names and 'crunch' not in names,
              'kind=offcpu: the off-CPU tree (%s)' % sorted(names))

        r = chromium(['--dump-dom'], url + '#q=hash', td)
        hl = [t for c, _, t in frames(r.stdout) if 'hl' in c]
        check(hl == ['hash_block'], 'q=hash highlights hash_block (%s)' % hl)
        check('matched' in r.stdout, 'search reports the matched share')

        png = os.path.join(td, 'fg.png')
        r = chromium(['--screenshot=' + png], url, td)
        info = png_info(png) if os.path.exists(png) else None
        check(info is not None and info[0] >= 800 and info[2] > 3,
              'screenshot is a non-trivial PNG (%s)' % (info,))
        keep = os.environ.get('SPANPROF_KEEP_ARTIFACTS')
        if keep and os.path.exists(png):
            shutil.copy(png, keep)

    return symtest.verdict()


if __name__ == '__main__':
    sys.exit(main())
