#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A profiled process whose executable is on a file system that stops
answering, and a library whose server goes away after it was loaded.

hangfs (hangfs.c, libfuse3) serves, on mount A, a copy of fault_spin
(variant 77: a build id no table exists for) with 1 MiB of padding
appended (objcopy), so that everything the kernel maps - every PT_LOAD
segment, the build-id note, .eh_frame - lies in the first pages, which
answer (the answered prefix), and the section headers and .symtab lie
past them, where reads never return.  The copy is exec'd from the mount
and spins in its own code.  What reads the rest hangs: Go discovery's
read of the executable (section headers), the unwind table builder's
prefetch (section headers).
On mount B, a shared library (fault_spin built -shared, variant 78) is
loaded by a Python process (dlopen's opens and reads answer); then the
mount's opens by threads named sp-unwind stop answering (hangfs's
HOLD.open: the unwind builder and the helpers it starts; the process
table's reopen of the file, on other threads, answers - without the name
the builder's reopen only hangs when the server goes away in the
milliseconds between the two) and the process starts running code in the
library: the lazy table builder's reopen of it (base/pin.h through
/proc/self/fd) blocks in open(2).
What must hold:
  1. `record -a --unwind-build eager`: exits 0 within 5 s of SIGTERM; the
     summary counts the executable's Go read that timed out
     (go.exe_timed_out) and the builder's stalled file
     (unwind.failed_stalled); a busy fixture and the hung executable keep
     being sampled; no sample was lost at the ring buffer.
  2. `agent --interval 1` (lazy tables): /healthz stays 200 and batches
     arrive about every second; /metrics counts the same Go timeout; the
     builder's reopen of library B stalls and is counted
     (spanprof_unwind_tables_total{outcome="stalled"}), and a table is
     built after it (a local library C run afterwards): before, the
     builder thread stayed in that open for ever; within 6 s of SIGTERM
     every thread of the agent has ended but the one helper in that open
     (a FUSE request the daemon has read is waited out even on SIGKILL,
     so the process is reaped, exit 0, only once the server answers).
     Library D (lib2.so, on mount B's device too), run after B's open
     stalled, is skipped at once, no open tried: the open's timeout marked
     the device as a read's does (spanprof_unwind_stalled_skipped_total).
  3. A file that answers the first reads and hangs at a later one: on
     mount C, library E (variant 82) answers every read but those of the
     unwind builder's own thread (hangfs's HOLD.tid, opened direct_io so
     that nothing comes from the page cache): its reopen, build id and
     prefetch run on the builder's helpers and answer; before, libelf then
     read the file again on the builder's thread (elf_begin after the
     prefetch), which hung there for good and no other table was built.
     Now the builder parses the prefetched copy (elf_memory): E's table
     is built, and so is local library F's (variant 83) after it.
Root, real BPF, real FUSE (/dev/fuse).
"""
import ctypes
import os
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from spt import SPANPROF, check, fail, load_json, read_pprof, require_root, tmpdir  # noqa: E402
from fault_util import (HangFs, compile_c, lib_go, lib_runner, padded,  # noqa: E402
                        sigterm_record, spin_variant, stopped_but_stuck, thread_states,
                        watch_healthz)
import agent_util as au  # noqa: E402
from lib.otlp_stub import OtlpStub  # noqa: E402

require_root()
d = tmpdir()


def sub(name):
    p = os.path.join(d, name)
    os.mkdir(p)
    return p


exe_prefix = padded(d, spin_variant(d, 77), os.path.join(d, "spin77.padded"))
exe_src = os.path.join(d, "spin77.padded")
libb = compile_c("fault_spin.c", os.path.join(d, "libb.so"),
                 defines=["VARIANT=78"], extra=["-shared", "-fPIC", "-Wl,--build-id=sha1"])
libc79 = compile_c("fault_spin.c", os.path.join(d, "libc79.so"),
                  defines=["VARIANT=79"], extra=["-shared", "-fPIC", "-Wl,--build-id=sha1"])
fs_a = HangFs(sub("a"), backing=exe_src, prefix=exe_prefix)
libd = compile_c("fault_spin.c", os.path.join(d, "libd80.so"),
                 defines=["VARIANT=80"], extra=["-shared", "-fPIC", "-Wl,--build-id=sha1"])
fs_b = HangFs(sub("b"), backing=libb, prefix=os.path.getsize(libb), backing2=libd)
libe = compile_c("fault_spin.c", os.path.join(d, "libe82.so"),
                 defines=["VARIANT=82"], extra=["-shared", "-fPIC", "-Wl,--build-id=sha1"])
libf = compile_c("fault_spin.c", os.path.join(d, "libf83.so"),
                 defines=["VARIANT=83"], extra=["-shared", "-fPIC", "-Wl,--build-id=sha1"])
fs_c = HangFs(sub("c"), backing=libe, prefix=os.path.getsize(libe))
procs = fs_a.procs     # killed and reaped by fs_a.close()

def blocks(cmd):
    try:
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=1.5)
        return False
    except subprocess.TimeoutExpired:
        return True


def open_blocks(path, comm):
    """True when an open of path by a thread named comm does not return
    within 1.5 s.  On a thread of this process (a daemon: it ends with EIO
    when the test ends the hang): a process in a FUSE open that the daemon
    has read cannot be killed."""
    done = threading.Event()

    def opener():
        ctypes.CDLL(None).prctl(15, comm.encode(), 0, 0, 0)     # PR_SET_NAME
        try:
            os.close(os.open(path, os.O_RDONLY))
        except OSError:
            pass
        done.set()
    threading.Thread(target=opener, daemon=True).start()
    return not done.wait(1.5)


def threads(pid):
    names = set()
    for t in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/comm" % (pid, t)) as f:
                names.add(f.read().strip())
        except OSError:
            pass
    return names


def samples_of(prof, pid):
    return sum(s["values"][0] for s in prof["samples"]
               if str(s["labels"].get("pid")) == str(pid))


try:
    hung = subprocess.Popen([fs_a.FILE, "60000"])
    procs.append(hung)
    time.sleep(0.3)
    check(hung.poll() is None and os.readlink("/proc/%d/exe" % hung.pid) == fs_a.FILE,
          "the executable runs from the FUSE mount (rc %s)" % hung.poll())
    check(blocks(["dd", "if=" + fs_a.FILE, "of=/dev/null", "bs=4096", "skip=%d" % (exe_prefix // 4096 + 200),
                  "count=1"]),
          "trap A: a read past the answered prefix (%d bytes) does not return" % exe_prefix)
    busy = au.busy(60)
    procs.append(busy)

    # ------------------------------------------------ 1. record
    out = os.path.join(d, "exe.pb.gz")
    js = os.path.join(d, "exe.json")
    rec = subprocess.Popen([SPANPROF, "record", "--no-report", "-q", "-F", "97", "--no-kernel",
                            "--unwind-build", "eager", "-a", "-o", out, "--summary-json", js],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # Recording from when its builder runs (record's start-up - BPF load,
    # the scan of every process - takes seconds on a loaded machine).
    au.wait_for(lambda: rec.poll() is not None or "sp-unwind" in threads(rec.pid),
                timeout=40, what="record's unwind builder thread")
    check(rec.poll() is None, "record runs (rc %s)" % rec.poll())
    time.sleep(5)
    t0 = time.monotonic()
    sigterm_record(rec, "stuck on the executable's reads")
    print("record: stopped %.2f s after SIGTERM" % (time.monotonic() - t0), flush=True)
    sj = load_json(js)
    g, u, bpf = sj["go"], sj["unwind"], sj["bpf"]
    print("record: go %s\nrecord: unwind stalled %d built %d\nrecord: bpf %s"
          % (g, u["failed_stalled"], u["built"], bpf), flush=True)
    check(g["exe_timed_out"] >= 1, "record: the executable's Go read that did not answer is "
          "counted (go.exe_timed_out %d, exe_skipped %d)" % (g["exe_timed_out"], g["exe_skipped"]))
    check(u["failed_stalled"] >= 1, "record: the builder's read of the executable is counted "
          "as stalled (%d)" % u["failed_stalled"])
    lost = {k: v for k, v in bpf.items() if ("lost" in k or "drop" in k) and v}
    check(not lost, "record: no sample lost at the ring buffer (%s)" % lost)
    prof = read_pprof(out)
    nb, nh = samples_of(prof, busy.pid), samples_of(prof, hung.pid)
    check(nb >= 100, "record: the busy fixture kept being sampled (%d samples in ~5 s)" % nb)
    check(nh >= 100, "record: the hung executable's process keeps its samples (%d)" % nh)

    # ------------------------------------------------ 2. agent
    rb = lib_runner(procs, fs_b.FILE, "spin_variant_78", 30)
    rc_ = lib_runner(procs, libc79, "spin_variant_79", 30)
    rd = lib_runner(procs, fs_b.FILE2, "spin_variant_80", 30)
    re_ = lib_runner(procs, fs_c.FILE, "spin_variant_82", 30)
    rf = lib_runner(procs, libf, "spin_variant_83", 30)
    stub = OtlpStub(lambda i: (200, {}))
    a = au.Agent(["-F", "97", "--interval", "1", "--no-trace-context", "--unwind-cpu", "100",
                  "--endpoint", "http://127.0.0.1:%d" % stub.port], d)
    try:
        def metric(name, **lab):
            return a.metrics().get1(name, **lab)

        def unwind_note():
            st, body = au.http_get(a.port, "/metrics")
            return ": " + "; ".join(l for l in body.splitlines()
                                    if l.startswith("spanprof_unwind") and not l.endswith(" 0"))

        au.wait_for(lambda: metric("spanprof_go_process_failures_total",
                                   reason="exe_timed_out") >= 1,
                    timeout=15, what="the executable's Go read to be counted on /metrics")
        au.wait_for(lambda: metric("spanprof_unwind_tables_total", outcome="stalled") >= 1,
                    timeout=15, what="the executable's table to stall")
        fs_b.hang_opens("sp-unwind")
        check(open_blocks(fs_b.FILE, "sp-unwind"),
              "trap B: an open of library B by a thread named sp-unwind does not return")
        check(not open_blocks(fs_b.FILE, "other"), "trap B: others' opens answer")
        s0 = metric("spanprof_unwind_tables_total", outcome="stalled")
        n0 = stub.count()
        lib_go(rb)      # samples in B: the lazy builder reopens it, and waits
        bad = watch_healthz(a, 6)
        n = stub.count() - n0
        check(not bad, "agent: /healthz stayed 200 (%s)" % bad)
        check(n >= 4, "agent: %d batches exported in 6 s at --interval 1" % n)
        s1 = au.wait_for(lambda: metric("spanprof_unwind_tables_total", outcome="stalled") > s0
                         and metric("spanprof_unwind_tables_total", outcome="stalled"),
                         timeout=15, what="the builder's open of library B to stall and be "
                         "counted (stalled was %d)" % s0, note=unwind_note)
        b0 = metric("spanprof_unwind_tables_total", outcome="built")
        lib_go(rc_)     # a library run after the stall gets its table
        b1 = au.wait_for(lambda: metric("spanprof_unwind_tables_total", outcome="built") > b0
                         and metric("spanprof_unwind_tables_total", outcome="built"),
                         timeout=15, what="a table built after the stall (built was %d)" % b0,
                         note=unwind_note)
        k0 = metric("spanprof_unwind_stalled_skipped_total")
        lib_go(rd)      # library D, on B's device too: its open is not tried
        k1 = au.wait_for(lambda: metric("spanprof_unwind_stalled_skipped_total") > k0
                         and metric("spanprof_unwind_stalled_skipped_total"),
                         timeout=15, what="library D's build to be skipped at once on the "
                         "device whose open stalled (stalled_skipped was %d)" % k0,
                         note=unwind_note)
        s2 = metric("spanprof_unwind_tables_total", outcome="stalled")
        print("agent: stalled %d -> %d -> %d (skipped on the marked device %d -> %d), "
              "built %d -> %d, %d batches in 6 s" % (s0, s1, s2, k0, k1, b0, b1, n), flush=True)
        check(s2 > s1, "library D counted as stalled too (%d -> %d)" % (s1, s2))

        # 3. library E: answered on the builder's helpers, hung on its own
        # thread.  The builder is the first sp-unwind thread (it starts
        # the helpers, which inherit its name).
        builder = min(t for t in os.listdir("/proc/%d/task" % a.pid)
                      if open("/proc/%d/task/%s/comm" % (a.pid, t)).read().strip()
                      == "sp-unwind")
        fs_c.hang_reads_of(int(builder))
        check(not open_blocks(fs_c.FILE, "other"), "trap C: opens answer")
        e0 = metric("spanprof_unwind_tables_total", outcome="built")
        lib_go(re_)
        e1 = au.wait_for(lambda: metric("spanprof_unwind_tables_total", outcome="built") > e0
                         and metric("spanprof_unwind_tables_total", outcome="built"),
                         timeout=15, what="library E's table (its reads on the builder's own "
                         "thread hang; built was %d; stuck readers %s)"
                         % (e0, fs_c.stuck_readers()), note=unwind_note)
        lib_go(rf)
        f1 = au.wait_for(lambda: metric("spanprof_unwind_tables_total", outcome="built") > e1
                         and metric("spanprof_unwind_tables_total", outcome="built"),
                         timeout=15, what="library F's table after E's (built was %d)" % e1,
                         note=unwind_note)
        check(not fs_c.stuck_readers(), "no read of library E hung (%s)" % fs_c.stuck_readers())
        print("agent: library E built (%d -> %d), then F (%d)" % (e0, e1, f1), flush=True)
        check(hung.poll() is None and rb.poll() is None, "the caught processes still run")
        # A FUSE request the daemon has read is waited out even by a
        # thread SIGKILL hits (the kernel's request_wait_answer): the
        # helper left in library B's open cannot end, so the agent's
        # process cannot be reaped until the server answers.  What is
        # bounded is the agent's own stop: every other thread ends.
        t0 = time.monotonic()
        a.p.send_signal(signal.SIGTERM)
        au.wait_for(lambda: a.p.poll() is not None or stopped_but_stuck(a.pid),
                    timeout=6, what="the agent to stop after SIGTERM (threads: %s)"
                    % thread_states(a.pid))
        dt = time.monotonic() - t0
        print("agent: stopped %.2f s after SIGTERM; left: %s" % (dt, thread_states(a.pid)),
              flush=True)
        fs_b.close()        # the server answers (EIO): the open returns
        fs_c.close()
        rc = a.p.wait(timeout=15)
        print("agent: reaped %.2f s after SIGTERM, exit %d" % (time.monotonic() - t0, rc),
              flush=True)
        check(rc == 0, "agent: SIGTERM exits 0 (rc %s), its stop took %.1f s" % (rc, dt))
    finally:
        fs_c.close()
        fs_b.close()        # first: a helper in B's open holds the agent's exit
        a.kill()
        stub.close()
finally:
    fs_c.close()
    fs_b.close()
    fs_a.close()
print("PASS")
