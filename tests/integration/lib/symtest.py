"""tests/integration/lib/symtest - the frame of the symbolizer tests
(test_symbolizer_*.py; run() for those that build their own fixture,
test_symbolizer_vmlinux and test_symbolizer_kmod): one list of failed
checks, the preconditions that make a test a skip (exit 77), a scratch
directory, the part re-run in a private network namespace against a real
debuginfod, and the verdict.

  check(cond, what)  prints "ok   what" or "FAIL what"; a failure is kept
                     and makes the verdict 1, the test goes on
  fail(msg)          prints "FAIL msg" and exits 1 at once
  skip(msg)          prints msg and exits 77 (tests/run.sh: skipped)
  run(steps, tools, exes, inner)
                     a test's main(): with argv "--inner TD" (the re-run
                     from in_private_netns) only inner(TD), then the verdict;
                     else skip unless every tool is on PATH and every exe is
                     executable, then steps(td) in a new scratch directory
                     (mode 0755: the symbolizer run as root drops to nobody,
                     who must read what is in it), removed afterwards
                     whatever happens; returns the exit status
  in_private_netns(td, script, serve)
                     copies serve ({name: path}) into TD/serve and re-runs
                     script with "--inner TD" under unshare --net: one check
                     on its exit status.  Missing debuginfod, ip or a network
                     namespace is a failed check, not a skip: CI has them.
"""
import os
import shutil
import subprocess
import sys
import tempfile

FAILURES = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        FAILURES.append(what)


def fail(msg):
    print("FAIL " + msg)
    sys.exit(1)


def skip(msg):
    print(msg)
    sys.exit(77)


def verdict():
    if FAILURES:
        print("%d check(s) failed" % len(FAILURES))
        return 1
    return 0


def run(steps, tools=(), exes=(), inner=None):
    if inner and len(sys.argv) == 3 and sys.argv[1] == "--inner":
        inner(sys.argv[2])
        return verdict()
    for tool in tools:
        if not shutil.which(tool):
            skip("no %s" % tool)
    for exe in exes:
        if not os.access(exe, os.X_OK):
            skip("no %s (make first)" % exe)
    td = tempfile.mkdtemp(prefix="spanprof-test-")
    os.chmod(td, 0o755)
    try:
        steps(td)
    finally:
        shutil.rmtree(td, ignore_errors=True)
    return verdict()


def in_private_netns(td, script, serve):
    if not shutil.which("debuginfod") or not shutil.which("ip") or subprocess.run(
            ["unshare", "--net", "true"], capture_output=True).returncode:
        check(False, "debuginfod step: needs debuginfod, ip and unshare --net")
        return
    os.mkdir(os.path.join(td, "serve"))
    for name, path in serve.items():
        shutil.copy(path, os.path.join(td, "serve", name))
    r = subprocess.run(["unshare", "--net", sys.executable, os.path.abspath(script),
                        "--inner", td], timeout=300)
    check(r.returncode == 0, "debuginfod step passed (rc %d)" % r.returncode)
