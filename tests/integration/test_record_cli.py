"""spanprof record's user-facing errors and signals.

Each user mistake gives one clear line naming the cause and the fix, and a
non-zero exit: non-prime -F (names the nearest primes), bad flags, unknown
pid, unwritable output, missing privileges (run as nobody, a real
unprivileged process).  Ctrl-C (SIGINT) and SIGTERM stop a recording cleanly
and still write the file.
"""
import os
import signal
import subprocess
import time

from spt import *

require_root()
d = tmpdir()


def run(args, **kw):
    return subprocess.run([SPANPROF, "record", "--no-report", "-q"] + args,
                          capture_output=True, text=True, timeout=60, **kw)


def expect_error(args, rc, words, what, **kw):
    p = run(args, **kw)
    lines = [l for l in p.stderr.splitlines() if l.strip()]
    check(p.returncode == rc, "%s: exit %d (got %d)" % (what, rc, p.returncode))
    check(len(lines) == 1 and all(w in lines[0] for w in words),
          "%s: one line naming %s: %r" % (what, words, p.stderr.strip()))


expect_error(["-F", "100", "-d", "1"], 2, ["100", "not prime", "97", "101"], "-F 100")
expect_error(["-F", "1000"], 2, ["997", "1009"], "-F 1000")
expect_error(["-F", "abc"], 2, ["-F abc"], "-F abc")
expect_error(["--bogus"], 2, ["unknown"], "unknown flag")
expect_error(["-d", "-3"], 2, ["-d -3"], "negative duration")
expect_error(["-p", "999999999"], 2, ["no process", "999999999"], "unknown pid")
expect_error(["-p", "1", "--", "true"], 2, ["choose one"], "-p with a command")
expect_error(["--format", "json"], 2, ["pprof or otlp"], "bad format")
expect_error(["--ringbuf-size", "1000"], 2, ["power"], "bad ring size")
expect_error(["-o", "/nonexistent-dir/x.pb.gz", "-d", "1"], 1, ["cannot write", "/nonexistent-dir/x.pb.gz"],
             "unwritable output")
# Missing privileges: a real unprivileged run (setpriv drops to nobody and
# clears every capability).
p = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                    "--inh-caps=-all", "--bounding-set=-all", SPANPROF, "record", "-q",
                    "--no-report", "-o", "/tmp/never.pb.gz", "-d", "1"],
                   capture_output=True, text=True, timeout=30)
check(p.returncode == 1 and "CAP_BPF" in p.stderr and "CAP_PERFMON" in p.stderr
      and len(p.stderr.strip().splitlines()) == 1,
      "unprivileged: exit 1 and one line naming CAP_BPF and CAP_PERFMON: %r" % p.stderr.strip())
check(not os.path.exists("/tmp/never.pb.gz"), "nothing written without privileges")

# An existing output file is not deleted by a failed run.
keep = os.path.join(d, "keep.pb.gz")
open(keep, "w").write("precious")
p = run(["-o", keep, "-F", "100"])
check(p.returncode == 2 and open(keep).read() == "precious", "a bad flag leaves an existing -o file alone")

# SIGINT and SIGTERM: clean stop, file written, exit 0.  A busy fixture
# makes sure there is something to sample (idle CPUs are not written).
busy = subprocess.Popen([os.path.join(BUILD, "fixtures", "callchain"), "10"], stdout=subprocess.DEVNULL)
for sig in (signal.SIGINT, signal.SIGTERM):
    out = os.path.join(d, "sig%d.pb.gz" % sig)
    proc = subprocess.Popen([SPANPROF, "record", "--no-report", "-q", "-a", "-o", out],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(2)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=30)
    check(proc.returncode == 0, "%s: exit 0 (got %d)" % (signal.Signals(sig).name, proc.returncode))
    prof = read_pprof(out)
    check(len(prof["samples"]) > 0 and "written" in err,
          "%s: profile written with %d samples and a summary" % (signal.Signals(sig).name, len(prof["samples"])))
busy.kill()
