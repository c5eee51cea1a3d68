#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A hot Java method named from `jcmd PID Compiler.perfmap` (root).

OpenJDK 17 runs a loop whose time goes to Hot.spin (C2-compiled into the
code cache: anonymous executable memory).  `jcmd PID Compiler.perfmap`
writes /tmp/perf-PID.map with "0x"-prefixed addresses and sizes; `spanprof
record -p PID` copies it, `spanprof-symbolizer file` names the frames: the
leaf "double Hot.spin(long)" (or Hot.main, when C2 inlines spin into
main's on-stack replacement), as the JDK writes the names, carries most of
the samples.
Exit 0 pass, 77 skip, else fail.
"""
import os
import re
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import spt  # noqa: E402
from spt import check, fail  # noqa: E402
from lib import perfcmp  # noqa: E402

SYM = os.path.join(spt.BUILD, "spanprof-symbolizer")
JAVA = r"""
public class Hot {
  static double spin(long n) { double s = 0; for (long i = 0; i < n; i++) s += Math.sqrt(i); return s; }
  public static void main(String[] a) throws Exception {
    long end = System.currentTimeMillis() + Long.parseLong(a[0]); double t = 0;
    while (System.currentTimeMillis() < end) t += spin(3000000);
    System.out.println(t > 0 ? "done" : "x");
  }
}
"""


def main():
    spt.require_root()
    for t in ("java", "javac", "jcmd"):
        if not shutil.which(t):
            fail("%s is not installed (openjdk-17-jdk-headless): run scripts/deps.sh" % t)
    d = spt.tmpdir()
    with open(os.path.join(d, "Hot.java"), "w") as f:
        f.write(JAVA)
    p = subprocess.run(["javac", "Hot.java"], cwd=d, capture_output=True, text=True,
                       timeout=120)
    if p.returncode:
        fail("javac failed: %s" % p.stderr)
    java = subprocess.Popen(["java", "-XX:+UnlockDiagnosticVMOptions", "-cp", d, "Hot",
                             "20000"], stdout=subprocess.DEVNULL)
    mp = "/tmp/perf-%d.map" % java.pid
    try:
        time.sleep(3)		# C2 has compiled spin
        p = subprocess.run(["jcmd", str(java.pid), "Compiler.perfmap"], capture_output=True,
                           text=True, timeout=60)
        check(p.returncode == 0 and os.path.exists(mp),
              "jcmd Compiler.perfmap wrote %s (%s)" % (mp, p.stdout.strip()[-200:]))
        first = open(mp).readline()
        check(first.startswith("0x"), "the JDK's map has 0x addresses: %r" % first[:60])
        out = os.path.join(d, "java.pb.gz")
        _, _, err = spt.record(["-F", "97", "-p", str(java.pid), "-d", "4", "-o", out])
    finally:
        java.kill()
        java.wait()
        if os.path.exists(mp):
            os.unlink(mp)
    print(err)
    sym = os.path.join(d, "java.sym.pb.gz")
    p = subprocess.run([SYM, "file", out, "-o", sym], capture_output=True, text=True,
                       timeout=300)
    if p.returncode:
        fail("spanprof-symbolizer file failed: %s" % p.stderr)
    print(p.stderr)
    flat = perfcmp.pprof_flat(sym)
    tot = float(sum(flat.values())) or 1.0
    top = sorted(flat.items(), key=lambda kv: -kv[1])[:6]
    # spin, or main when C2 inlined spin into main's OSR compilation
    hot = sum(v for k, v in flat.items() if re.search(r"\bHot\.(spin|main)\(", k))
    check(hot / tot >= 0.5, "the hot Java method is named and holds %.0f%% of the samples: %s"
          % (100 * hot / tot, top))
    shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
