#!/usr/bin/env python3
# spanprof-test: parallel
# SPDX-License-Identifier: MIT
"""make install / make uninstall (deploy/build.mk) into a DESTDIR, and
libspanctx used the way an application would: through pkg-config.

- `make install PREFIX=/usr DESTDIR=D` puts the binaries, libspanctx
  (.so.1 with that SONAME, the .so link, .a), spanctx.h, libspanctx.pc and
  the agent's unit in place; the unit's ExecStart is the installed binary.
- A C program and the same program as C++ are compiled with
  `pkg-config --cflags --libs libspanctx` (PKG_CONFIG_SYSROOT_DIR=D, as a
  cross or staged build does), link libspanctx.so.1 (NEEDED), run, and
  print the library's version and the traceparent of a root span.
- The installed spanprof runs (`--version`).
- PREFIX=/opt/x moves everything, the unit's ExecStart included; `make
  uninstall` with the same variables leaves no file behind.
- `make install` from a build directory with nothing built fails with one
  line naming the missing file and `make all`.
"""
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from spt import BUILD, check, fail, tmpdir  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

PROG = r"""
#include <spanctx.h>
#include <stdio.h>

int main(void)
{
	static const char *const keys[] = { "http.route" };
	struct spanctx_scope s;
	char tp[SPANCTX_TRACEPARENT_BUF];

	if (spanctx_init("install-test", keys, 1))
		return 2;
	if (spanctx_span_enter_root(&s, SPANCTX_FLAG_SAMPLED))
		return 3;
	if (spanctx_current_traceparent(tp) != 55)
		return 4;
	printf("%s %s\n", spanctx_version(), tp);
	spanctx_span_leave(&s);
	spanctx_shutdown();
	return 0;
}
"""


def run(cmd, env=None, cwd=ROOT):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env, cwd=cwd)


def make(*args):
    p = run(["make", "--no-print-directory", "-s", "O=" + BUILD] + list(args))
    if p.returncode != 0:
        fail("make %s failed (rc=%d): %s" % (" ".join(args), p.returncode, p.stderr[-2000:]))
    return p


def files_under(d):
    out = set()
    for base, _, fs in os.walk(d):
        for f in fs:
            out.add(os.path.relpath(os.path.join(base, f), d))
    return out


d = tmpdir()
dest = os.path.join(d, "stage")
make("install", "PREFIX=/usr", "DESTDIR=" + dest)
got = files_under(dest)
want = {"usr/bin/spanprof", "usr/bin/spanprof-symbolizer", "usr/lib/libspanctx.so.1",
        "usr/lib/libspanctx.so", "usr/lib/libspanctx.a", "usr/include/spanctx.h",
        "usr/lib/pkgconfig/libspanctx.pc", "usr/lib/systemd/system/spanprof-agent.service",
        "usr/share/doc/spanprof/README.md",
        "usr/share/doc/spanprof/examples/config.yaml"}
check(want <= got, "installed: %s" % sorted(want - got or got)[:20])
check(os.path.islink(os.path.join(dest, "usr/lib/libspanctx.so")) and
      os.readlink(os.path.join(dest, "usr/lib/libspanctx.so")) == "libspanctx.so.1",
      "libspanctx.so -> libspanctx.so.1")
for b in ("spanprof", "spanprof-symbolizer"):
    check(os.stat(os.path.join(dest, "usr/bin", b)).st_mode & 0o777 == 0o755, "%s is 0755" % b)
dyn = run(["readelf", "-d", os.path.join(dest, "usr/lib/libspanctx.so.1")]).stdout
check("Library soname: [libspanctx.so.1]" in dyn, "SONAME libspanctx.so.1")
unit = open(os.path.join(dest, "usr/lib/systemd/system/spanprof-agent.service")).read()
exe = re.search(r"^ExecStart=(\S+)", unit, re.M).group(1)
check(exe == "/usr/bin/spanprof" and os.path.exists(dest + exe),
      "unit ExecStart=%s, the installed binary" % exe)
p = run([os.path.join(dest, "usr/bin/spanprof"), "--version"])
check(p.returncode == 0 and p.stdout.startswith("spanprof "), "installed spanprof --version: %s"
      % p.stdout.strip())

# ---------------------------------------------------------------- pkg-config
env = dict(os.environ, PKG_CONFIG_SYSROOT_DIR=dest,
           PKG_CONFIG_LIBDIR=os.path.join(dest, "usr/lib/pkgconfig"))
env.pop("PKG_CONFIG_PATH", None)
p = run(["pkg-config", "--cflags", "--libs", "libspanctx"], env=env)
check(p.returncode == 0, "pkg-config finds libspanctx (%s)" % (p.stderr.strip() or p.stdout.strip()))
flags = p.stdout.split()
check("-I" + dest + "/usr/include" in flags and "-L" + dest + "/usr/lib" in flags and
      "-lspanctx" in flags, "pkg-config --cflags --libs: %s" % " ".join(flags))
p = run(["pkg-config", "--modversion", "libspanctx"], env=env)
hdr = open(os.path.join(ROOT, "lib/spanctx/spanctx.h")).read()
ver = re.search(r'#define SPANCTX_VERSION_STRING "([^"]+)"', hdr).group(1)
check(p.stdout.strip() == ver, "pkg-config --modversion = the header's %s" % ver)
p = run(["pkg-config", "--static", "--libs", "libspanctx"], env=env)
check("-Wl,--export-dynamic-symbol=otel_thread_ctx_v1" in p.stdout,
      "a static link exports otel_thread_ctx_v1 (%s)" % p.stdout.strip())

src = os.path.join(d, "prog.c")
open(src, "w").write(PROG)
for cc, lang in (("gcc", "C"), ("g++", "C++")):
    exe = os.path.join(d, "prog-" + cc)
    cmd = [cc, "-x", "c" if cc == "gcc" else "c++", src, "-o", exe] + flags
    p = run(cmd, env=env)
    check(p.returncode == 0, "%s program compiles with pkg-config's flags (%s)" %
          (lang, p.stderr.strip()[:500]))
    needed = run(["readelf", "-d", exe]).stdout
    check("Shared library: [libspanctx.so.1]" in needed, "%s program NEEDs libspanctx.so.1" % lang)
    p = run([exe], env=dict(os.environ, LD_LIBRARY_PATH=os.path.join(dest, "usr/lib")))
    check(p.returncode == 0 and re.fullmatch(r"%s 00-[0-9a-f]{32}-[0-9a-f]{16}-01\n"
                                             % re.escape(ver), p.stdout),
          "%s program runs on the installed library: %r (rc=%d)" % (lang, p.stdout, p.returncode))

# ---------------------------------------------------------------- PREFIX, uninstall
dest2 = os.path.join(d, "stage2")
make("install", "PREFIX=/opt/spanprof", "DESTDIR=" + dest2)
unit = open(os.path.join(dest2, "opt/spanprof/lib/systemd/system/spanprof-agent.service")).read()
check(re.search(r"^ExecStart=/opt/spanprof/bin/spanprof agent ", unit, re.M) and
      "file:///opt/spanprof/share/doc/spanprof/README.md" in unit,
      "PREFIX=/opt/spanprof: the unit runs /opt/spanprof/bin/spanprof")
pc = open(os.path.join(dest2, "opt/spanprof/lib/pkgconfig/libspanctx.pc")).read()
check("libdir=/opt/spanprof/lib\n" in pc, "the .pc file's libdir follows PREFIX")
make("uninstall", "PREFIX=/opt/spanprof", "DESTDIR=" + dest2)
left = files_under(dest2)
check(not left, "make uninstall removes every installed file (left: %s)" % sorted(left)[:10])

# ---------------------------------------------------------------- nothing built
empty = os.path.join(d, "empty-build")
os.mkdir(empty)
p = run(["make", "--no-print-directory", "-s", "O=" + empty, "install",
         "DESTDIR=" + os.path.join(d, "stage3")])
msg = p.stderr.strip().splitlines()
check(p.returncode != 0 and any("is not built: run 'make all'" in l for l in msg) and
      not os.path.exists(os.path.join(d, "stage3")),
      "install without a build: refused, nothing installed (%s)" % (msg[:1],))
shutil.rmtree(d)
print("PASS")
