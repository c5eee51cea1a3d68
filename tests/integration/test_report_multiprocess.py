# spanprof-test: parallel (BPF on its own command only, no whole-machine sampling, no timing or rate assertion)
"""A real multi-process recording, read the way perf and flamegraph.pl users do.

spanprof record (real BPF) of a command tree: two callchain fixtures (user
time) and dd copying /dev/zero to /dev/null (kernel time), then
spanprof-symbolizer report:
  --collapsed           process root frames "callchain-PID" by default (more
                        than one process), kernel frames end in "_[k]";
  --group-by thread     a thread frame under the process frame;
  --group-by none       no root frames;
  --flamegraph          in headless Chromium (--dump-dom after the page's
                        JS ran): the process root frames are drawn in row 1,
                        green; kernel frames blue; user frames warm; the
                        page's data names each frame's DSO; #inv=1 (the
                        callers view) puts leaf functions in row 1 and the
                        process frames below;
                        the same two views as screenshots (--screenshot,
                        read with lib/png.py): what is drawn has green,
                        blue and warm frames, the topmost green band above
                        the topmost warm one, and the other way round in
                        the callers view;
                        the span picker lists the heaviest spans of the
                        demo (libspanctx trace context); #span=TRACE/SPAN
                        draws only that span's samples: the demo's process
                        frame, no callchain;
  go tool pprof -raw    the profile's first mapping (pprof's "File:") is an
                        executable, not [kernel.kallsyms].
"""
import json
import os
import re
import shutil
import subprocess
import tempfile

from spt import *
from lib import png

require_root()
d = tmpdir()
SYM = os.path.join(BUILD, "spanprof-symbolizer")
fixture = os.path.join(BUILD, "fixtures", "callchain")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
if not CHROMIUM:
    fail("chromium is not installed: run scripts/deps.sh")

out = os.path.join(d, "mp.pb.gz")
demo = os.path.join(BUILD, "spanprof-demo")
script = "%s 3 >/dev/null & %s 3 >/dev/null & dd if=/dev/zero of=/dev/null bs=4k " \
         "count=3000000 2>/dev/null & %s --duration 3 --threads 1 >/dev/null 2>&1 & wait" \
         % (fixture, fixture, demo)
record(["-F", "499", "-o", out, "--", "sh", "-c", script])


def report(args):
    p = subprocess.run([SYM, "report", out, "--allow-root", "--no-debuginfod", "-q"] + args,
                       capture_output=True, text=True, timeout=300)
    if p.returncode:
        fail("report %s: %s" % (args, p.stderr))
    return p.stdout


folded = [l.rsplit(" ", 1)[0].split(";") for l in report(["--collapsed"]).splitlines() if l]
roots = {s[0] for s in folded}
cc_roots = {r for r in roots if re.match(r"^callchain-\d+$", r)}
check(len(cc_roots) == 2, "--collapsed: each callchain process is a root frame: %s" % sorted(roots))
check(any(re.match(r"^dd-\d+$", r) for r in roots), "dd is a root frame too")
check(all(re.match(r"^.+-\d+$", r) for r in roots), "every stack starts with comm-pid")
kframes = {f for s in folded for f in s if f.endswith("_[k]")}
check(len(kframes) >= 3, "kernel frames end in _[k]: %d distinct, e.g. %s"
      % (len(kframes), sorted(kframes)[:4]))
check(not any(f.endswith("_[k]") for s in folded for f in s if f.startswith("spin_")),
      "user frames carry no _[k]")

thr = [l.rsplit(" ", 1)[0].split(";") for l in report(["--collapsed", "--group-by", "thread"]).splitlines() if l]
check(all(len(s) >= 2 and re.match(r"^.+-\d+$", s[1]) for s in thr),
      "--group-by thread: a thread frame under every process frame")
none = [l.rsplit(" ", 1)[0].split(";") for l in report(["--collapsed", "--group-by", "none"]).splitlines() if l]
check(not any(re.match(r"^callchain-\d+$", s[0]) for s in none),
      "--group-by none: no process root frames")

html = os.path.join(d, "mp.html")
report(["--flamegraph", html])
page = open(html).read()
m = re.search(r"var SPANPROF_DATA = (\{.*?\});\n", page, re.S)
data = json.loads(m.group(1))
i = data["names"].index("spin_hot")
check(data["dso"][i].endswith("/callchain"), "the page names spin_hot's DSO: %r" % data["dso"][i])
ki = [j for j, f in enumerate(data["flags"]) if f & 2]
check(ki and all(data["dso"][j] == "[kernel.kallsyms]" for j in ki),
      "kernel frames' DSO is [kernel.kallsyms]")
# a name the kernel shares with user code (memcpy, memset) draws both ways
knames = ({data["names"][j] for j in ki} -
          {n for j, n in enumerate(data["names"])
           if not (j < len(data["flags"]) and data["flags"][j] & 2)})


def chromium_dom(url):
    prof = tempfile.mkdtemp(dir=d)
    p = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
                        "--disable-background-networking", "--disable-component-update",
                        "--disable-sync", "--no-first-run", "--user-data-dir=" + prof,
                        "--window-size=1400,900", "--dump-dom", url],
                       capture_output=True, text=True, timeout=120, cwd=d)
    boxes = []
    for b in re.finditer(r'<div class="(f[^"]*)"[^>]*style="([^"]*)"[^>]*>([^<]*)</div>', p.stdout):
        st = b.group(2)
        top = int(re.search(r"top: (\d+)px", st).group(1))
        rgb = tuple(int(x) for x in re.search(r"rgb\((\d+), (\d+), (\d+)\)", st).groups())
        text = b.group(3).replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
        boxes.append((top // 17, rgb, text))
    return boxes


def chromium_png(url, name):
    """The page as headless Chromium draws it: {kind: topmost y} and the
    count of pixels of each kind (green, blue, warm: saturated pixels by
    their largest channel), read back from its PNG screenshot."""
    prof = tempfile.mkdtemp(dir=d)
    shot = os.path.join(d, name + ".png")
    subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
                    "--disable-background-networking", "--disable-component-update",
                    "--disable-sync", "--no-first-run", "--user-data-dir=" + prof,
                    "--hide-scrollbars", "--window-size=1000,700", "--screenshot=" + shot, url],
                   capture_output=True, text=True, timeout=120, cwd=d)
    if not os.path.exists(shot):
        fail("chromium wrote no screenshot of %s" % url)
    w, h, rows = png.read(shot)
    top, count = {}, {"green": 0, "blue": 0, "warm": 0}
    for y in range(h):
        row = rows[y]
        for x in range(0, 3 * w, 3):
            r, g, b = row[x], row[x + 1], row[x + 2]
            # white, greys (the root, unknown frames, the bar), black text
            # and its anti-aliasing; the palest coloured frames, processes'
            # hsl(100, 25%, 68-75%), differ by 33-38 between channels
            if max(r, g, b) - min(r, g, b) < 25:
                continue
            kind = "green" if g > r and g > b else "blue" if b > r else "warm"
            count[kind] += 1
            top.setdefault(kind, y)
    return top, count


boxes = chromium_dom("file://" + html)
procs = [b for b in boxes if re.match(r"^callchain-\d+$", b[2])]
check(len(procs) == 2 and all(b[0] == 1 for b in procs),
      "flame graph: 2 callchain process frames, in row 1: %s" % [(b[0], b[2]) for b in procs])
check(all(b[1][1] > b[1][0] and b[1][1] > b[1][2] for b in procs),
      "process frames are green: %s" % [b[1] for b in procs])
kb = [b for b in boxes if b[2] in knames]
check(len(kb) >= 3 and all(b[1][2] > b[1][0] for b in kb),
      "%d kernel frames, all blue (b > r): %s; not: %s" %
      (len(kb), sorted({b[1] for b in kb})[:4], [b for b in kb if b[1][2] <= b[1][0]][:4]))
ub = [b for b in boxes if b[2] in ("spin_hot", "spin_cold", "chain_a", "chain_b")]
check(len(ub) >= 4 and all(b[1][0] > b[1][2] for b in ub),
      "%d user frames, all warm (r > b)" % len(ub))
hot_rows = {b[0] for b in ub if b[2] == "spin_hot"}
check(min(hot_rows) > 2, "normal view: spin_hot lies deep (rows %s)" % sorted(hot_rows))

top, count = chromium_png("file://" + html, "normal")
check(all(count[k] >= 200 for k in count),
      "screenshot: green, blue and warm frames are drawn (%s pixels)" % count)
check(top["green"] < top["warm"],
      "screenshot: the process frames' band (y %d) is above the user frames' (y %d)"
      % (top["green"], top["warm"]))
itop, icount = chromium_png("file://" + html + "#inv=1", "inverted")
check(all(icount[k] >= 200 for k in icount) and itop["warm"] < itop["green"],
      "screenshot, #inv=1: the leaves' warm band (y %d) is above the process frames' (y %d) "
      "(%s pixels)" % (itop.get("warm", -1), itop.get("green", -1), icount))

inv = chromium_dom("file://" + html + "#inv=1")
row1 = {b[2] for b in inv if b[0] == 1}
check("spin_hot" in row1 and not any(re.match(r"^callchain-\d+$", t) for t in row1),
      "#inv=1: leaves in row 1 (spin_hot), process frames not: %s" % sorted(row1)[:8])
check(any(re.match(r"^callchain-\d+$", b[2]) and b[0] > 1 for b in inv),
      "#inv=1: the process frames are the callers, below")

spans = data.get("spans") or []
check(len(spans) >= 1 and all(re.match(r"^[0-9a-f]{32}/[0-9a-f]{16}$", sp["label"]) for sp in spans),
      "the page offers %d spans in its picker" % len(spans))
sbox = chromium_dom("file://" + html + "#span=" + spans[0]["label"])
sroots = {b[2] for b in sbox if b[0] == 1}
check(sroots and all(t.startswith("spanprof-demo-") for t in sroots),
      "#span=%s: only the demo's process frame in row 1: %s" % (spans[0]["label"], sorted(sroots)))
check(not any(b[2] == "spin_hot" for b in sbox), "#span=: no callchain frames")

raw = go_pprof(["-raw", out])
first = re.search(r"^Mappings\n\s*\d+: \S+ (\S+)", raw, re.M)
check(first and "kernel" not in first.group(1),
      "go tool pprof -raw: the first mapping is an executable: %s" % (first.group(1) if first else raw[-400:]))
