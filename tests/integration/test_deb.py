#!/usr/bin/env python3
# spanprof-test: parallel
# SPDX-License-Identifier: MIT
"""make deb (scripts/mkdeb.sh, dpkg-deb): the package installs with
`apt-get install ./spanprof_*.deb`, runs from /usr/bin, and removes cleanly.

- The package's Depends (from dpkg-shlibdeps) are satisfiable here: apt
  would refuse the install otherwise.
- Installed: /usr/bin/spanprof --version prints the Makefile's version,
  /usr/bin/spanprof-symbolizer --help works, libspanctx.so.1 is in the
  linker cache (the ldconfig trigger ran), and a program compiled with the
  system's `pkg-config --cflags --libs libspanctx` runs with no
  LD_LIBRARY_PATH.  `systemd-analyze verify` accepts the installed unit,
  whose ExecStart is the installed /usr/bin/spanprof.
- `apt-get purge` removes every file the package shipped.

It changes the machine (a package in /usr), so it holds its own lock for
the whole run (other worktrees run this test too) and purges a leftover
spanprof package from an interrupted run first.  No BPF is loaded.
"""
import fcntl
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from spt import BUILD, check, fail, require_root, tmpdir  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
APT = ["apt-get", "-y", "-q", "--no-install-recommends", "-o", "DPkg::Lock::Timeout=300"]


def run(cmd, env=None, timeout=600):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env,
                          cwd=ROOT)


def installed():
    p = run(["dpkg-query", "-W", "-f=${Status}", "spanprof"])
    return p.returncode == 0 and "install ok installed" in p.stdout


require_root()
for t in ("dpkg-deb", "dpkg-shlibdeps", "apt-get"):
    if not shutil.which(t):
        fail("%s missing: run scripts/deps.sh (dpkg-dev)" % t)
lock = open("/tmp/spanprof-deb-test.lock", "w")
fcntl.flock(lock, fcntl.LOCK_EX)
env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
if installed():
    print("note: purging a spanprof package left by an earlier run")
    run(APT + ["purge", "spanprof"], env=env)

p = run(["make", "--no-print-directory", "-s", "O=" + BUILD, "deb"])
if p.returncode != 0:
    fail("make deb failed (rc=%d): %s" % (p.returncode, p.stderr[-2000:]))
deb = os.path.join(ROOT, p.stdout.strip().splitlines()[-1])
ver = re.search(r'#define SPANPROF_VERSION "([^"]+)"',
                open(os.path.join(ROOT, "src/collector/main.c")).read()).group(1)
check(os.path.basename(deb).startswith("spanprof_%s_" % ver) and os.path.isfile(deb),
      "make deb wrote %s" % os.path.basename(deb))
info = run(["dpkg-deb", "-f", deb, "Package", "Version", "Depends"]).stdout
check("Version: %s\n" % ver in info and re.search(r"Depends: .*libbpf1", info),
      "control: version %s, Depends from dpkg-shlibdeps (%s)" %
      (ver, info.split("Depends: ")[-1].strip()[:200]))
listing = run(["dpkg-deb", "-c", deb]).stdout
shipped = [l.split()[-1] if "->" not in l else l.split()[-3] for l in listing.splitlines()]
shipped = [s[1:] for s in shipped if not s.endswith("/")]
check("/usr/bin/spanprof" in shipped and "/lib/systemd/system/spanprof-agent.service" in shipped,
      "package ships %d files" % len(shipped))

try:
    p = run(APT + ["install", deb], env=env)
    check(p.returncode == 0 and installed(), "apt-get install ./%s (%s)" %
          (os.path.basename(deb), p.stderr.strip()[-300:]))
    p = run(["/usr/bin/spanprof", "--version"])
    check(p.returncode == 0 and p.stdout.strip() == "spanprof " + ver,
          "/usr/bin/spanprof --version: %s" % p.stdout.strip())
    p = run(["/usr/bin/spanprof-symbolizer", "--help"])
    out = p.stdout + p.stderr
    check(p.returncode == 0 and "usage: spanprof-symbolizer" in out,
          "/usr/bin/spanprof-symbolizer --help")
    cache = run(["ldconfig", "-p"]).stdout
    check("libspanctx.so.1 " in cache, "libspanctx.so.1 in the linker cache (ldconfig trigger)")
    flags = run(["pkg-config", "--cflags", "--libs", "libspanctx"]).stdout.split()
    check("-lspanctx" in flags, "system pkg-config: %s" % " ".join(flags))
    d = tmpdir()
    src = os.path.join(d, "p.c")
    open(src, "w").write('#include <spanctx.h>\n#include <stdio.h>\n'
                         'int main(void) { puts(spanctx_version()); return 0; }\n')
    p = run(["gcc", src, "-o", os.path.join(d, "p")] + flags)
    check(p.returncode == 0, "compiles against the package (%s)" % p.stderr.strip()[:300])
    p = run([os.path.join(d, "p")])
    check(p.returncode == 0 and re.fullmatch(r"\d+\.\d+\.\d+\n", p.stdout),
          "runs on /usr's libspanctx with no LD_LIBRARY_PATH (%r)" % p.stdout)
    shutil.rmtree(d)
    unit = "/lib/systemd/system/spanprof-agent.service"
    exe = re.search(r"^ExecStart=(\S+)", open(unit).read(), re.M).group(1)
    check(exe == "/usr/bin/spanprof", "installed unit's ExecStart=%s" % exe)
    if shutil.which("systemd-analyze"):
        p = run(["systemd-analyze", "verify", unit], timeout=60)
        msgs = [l for l in (p.stdout + p.stderr).splitlines() if "spanprof-agent" in l]
        check(p.returncode == 0 and not msgs, "systemd-analyze verify %s: clean %s" % (unit, msgs))
    else:
        fail("systemd-analyze missing: run scripts/deps.sh (systemd)")
finally:
    p = run(APT + ["purge", "spanprof"], env=env)
left = [f for f in shipped if os.path.lexists(f)]
check(p.returncode == 0 and not installed() and not left,
      "apt-get purge spanprof: every shipped file gone (left: %s)" % left[:5])
check("libspanctx.so.1 " not in run(["ldconfig", "-p"]).stdout,
      "libspanctx.so.1 left the linker cache")
print("PASS")
