"""spanprof agent --select-cgroup / --select-exe with real cgroups and BPF.

Two busy fixtures are moved into two real cgroups of this machine's cgroup
v1 cpu hierarchy (.../spanprof-sel-PID/podA and podB, the way Kubernetes
nests pods), a third runs under another executable name.  The agent,
selecting podA's prefix and that name:
  - exports the podA process and the renamed one, never the podB one;
  - counts included and excluded processes on /metrics;
  - excluded processes cost no user-space work: once BPF knows them, the
    samples the agent still drops for them stop growing (podB alone would
    add ~97 a second).
"""
import os
import shutil
import subprocess
import time

from spt import *
import agent_util as au

require_root()
d = tmpdir()
fixture = os.path.join(BUILD, "fixtures", "callchain")
renamed = os.path.join(d, "selme")
shutil.copy(fixture, renamed)

root = "/sys/fs/cgroup/cpu"
if not os.path.isdir(root):
    root = "/sys/fs/cgroup/cpu,cpuacct"
if not os.path.isdir(root):
    fail("no cgroup v1 cpu hierarchy under /sys/fs/cgroup (this test needs real cgroups)")
top = "spanprof-sel-%d" % os.getpid()
dirs = [os.path.join(root, top), os.path.join(root, top, "podA"), os.path.join(root, top, "podB")]
for x in dirs:
    os.mkdir(x)
procs = []
agent = None
try:
    a = subprocess.Popen([fixture, "30"], stdout=subprocess.DEVNULL)
    b = subprocess.Popen([fixture, "30"], stdout=subprocess.DEVNULL)
    c = subprocess.Popen([renamed, "30"], stdout=subprocess.DEVNULL)
    procs = [a, b, c]
    for p, pod in ((a, "podA"), (b, "podB")):
        with open(os.path.join(root, top, pod, "cgroup.procs"), "w") as f:
            f.write(str(p.pid))
    check(("/%s/podA" % top) in open("/proc/%d/cgroup" % a.pid).read(),
          "the first fixture is in cgroup /%s/podA" % top)
    out = os.path.join(d, "out")
    agent = au.Agent(["-F", "97", "--interval", "1", "--output-dir", out,
                      "--select-cgroup", "/%s/podA/" % top, "--select-exe", "selme"], d)

    def pids_seen():
        got = set()
        for f in au.otlp_files(out):
            got |= {s["pid"] for s in read_otlp(f)}
        return got

    au.wait_for(lambda: {a.pid, c.pid} <= pids_seen(), 30,
                what="samples of the selected processes")
    m1 = agent.metrics()
    time.sleep(3)
    m2 = agent.metrics()
    seen = pids_seen()
    check(a.pid in seen and c.pid in seen, "the podA process and selme are profiled")
    check(b.pid not in seen, "the podB process is not (seen: %d pids)" % len(seen))
    check(all(s["res"].get("process.executable.name") in ("callchain", "selme")
              for f in au.otlp_files(out) for s in read_otlp(f)),
          "nothing but the selected processes is exported")
    inc = m2.get1("spanprof_target_selection_total", outcome="included")
    exc = m2.get1("spanprof_target_selection_total", outcome="excluded")
    check(inc >= 2 and exc >= 1, "/metrics: %d included, %d excluded" % (inc, exc))
    grow = (m2.get1("spanprof_target_selection_total", outcome="samples_dropped") -
            m1.get1("spanprof_target_selection_total", outcome="samples_dropped"))
    check(grow < 60, "excluded processes cost no user-space work: %d samples reached the "
          "agent in 3 s (podB alone runs ~290)" % grow)
    check(m2.get1("spanprof_target_selection_total", outcome="bpf_map_full") == 0,
          "no exclusion refused by BPF")
finally:
    if agent:
        agent.stop()
    for p in procs:
        p.kill()
        p.wait()
    for x in reversed(dirs):
        for _ in range(50):
            try:
                os.rmdir(x)
                break
            except OSError:
                time.sleep(0.1)
