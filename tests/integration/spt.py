"""spt.py - shared helpers for spanprof's integration tests.

Independent of spanprof's own C decoders on purpose: profiles written by the
collector are read back here with a protobuf wire-format reader written from
the pprof field numbers, so an encoder bug cannot hide behind a decoder with
the same bug.

Exit codes follow tests/run.sh: 0 pass, 77 skip, anything else fail.
"""
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile

BUILD = os.environ.get("SPANPROF_BUILD") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "build")
BUILD = os.path.abspath(BUILD)
SPANPROF = os.path.join(BUILD, "spanprof")


def asan_build(path=None):
    """True when the binary (default: spanprof) was built with ASan (make SAN=1,
    as scripts/san_integration.sh runs the suite): its runtime is linked in."""
    with open(path or SPANPROF, "rb") as f:
        return b"__asan_init" in f.read()


def fail(msg):
    print("FAIL: " + msg, flush=True)
    sys.exit(1)


def skip(msg):
    print("SKIP: " + msg, flush=True)
    sys.exit(77)


def check(cond, msg):
    if not cond:
        fail(msg)
    print("ok: " + msg, flush=True)


def require_root():
    # BPF tests must run in CI: not being root there is a failure, not a skip.
    if os.geteuid() != 0:
        fail("BPF integration tests need root (CAP_BPF, CAP_PERFMON)")


def tmpdir():
    d = tempfile.mkdtemp(prefix="spanprof-test-")
    os.chmod(d, 0o755)
    return d


def record(args, timeout=120, check_rc=True):
    """Runs spanprof record with args; returns (rc, stdout, stderr)."""
    cmd = [SPANPROF, "record", "--no-report", "-q"] + args
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if check_rc and p.returncode != 0:
        fail("spanprof record failed (rc=%d): %s\n%s" % (p.returncode, " ".join(cmd), p.stderr))
    return p.returncode, p.stdout, p.stderr


# ---------------------------------------------------------------- protobuf
def _varint(b, i):
    x = shift = 0
    while True:
        c = b[i]
        i += 1
        x |= (c & 0x7F) << shift
        shift += 7
        if c < 0x80:
            return x, i


def fields(b):
    """Yields (field number, wire type, value) of one message."""
    i = 0
    while i < len(b):
        key, i = _varint(b, i)
        fn, wt = key >> 3, key & 7
        if wt == 0:
            v, i = _varint(b, i)
        elif wt == 1:
            v = int.from_bytes(b[i:i + 8], "little")
            i += 8
        elif wt == 2:
            n, i = _varint(b, i)
            v = b[i:i + n]
            i += n
        elif wt == 5:
            v = int.from_bytes(b[i:i + 4], "little")
            i += 4
        else:
            raise ValueError("wire type %d" % wt)
        yield fn, wt, v


def _packed(wt, v):
    if wt == 0:
        return [v]
    out, i = [], 0
    while i < len(v):
        x, i = _varint(v, i)
        out.append(x)
    return out


def _s64(x):
    return x - (1 << 64) if x >= 1 << 63 else x


def read_pprof(path):
    """Returns a dict: sample_types, samples (list of dicts with values,
    locs, labels), locations {id: (mapping_id, address)}, mappings {id: dict},
    strings."""
    raw = open(path, "rb").read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    strings, samples, locs, maps, stypes = [], [], {}, {}, []
    for fn, wt, v in fields(raw):
        if fn == 6:
            strings.append(v.decode())
        elif fn == 1:
            stypes.append(dict((f, x) for f, _, x in fields(v)))
        elif fn == 2:
            s = {"locs": [], "values": [], "labels": []}
            for f, w, x in fields(v):
                if f == 1:
                    s["locs"] += _packed(w, x)
                elif f == 2:
                    s["values"] += [_s64(y) for y in _packed(w, x)]
                elif f == 3:
                    s["labels"].append(dict((a, y) for a, _, y in fields(x)))
            samples.append(s)
        elif fn == 4:
            d = dict((f, x) for f, _, x in fields(v))
            locs[d.get(1, 0)] = (d.get(2, 0), d.get(3, 0))
        elif fn == 3:
            d = dict((f, x) for f, _, x in fields(v))
            maps[d.get(1, 0)] = d
    def S(i):
        return strings[i] if 0 <= i < len(strings) else "?"
    for s in samples:
        lab = {}
        for l in s["labels"]:
            k = S(l.get(1, 0))
            lab[k] = S(l[2]) if l.get(2) else l.get(3, 0)
        s["labels"] = lab
    mappings = {}
    for mid, d in maps.items():
        mappings[mid] = {"start": d.get(2, 0), "limit": d.get(3, 0), "offset": d.get(4, 0),
                         "file": S(d.get(5, 0)), "build_id": S(d.get(6, 0))}
    return {"sample_types": [(S(t.get(1, 0)), S(t.get(2, 0))) for t in stypes],
            "samples": samples, "locations": locs, "mappings": mappings, "strings": strings}


def go_pprof(args, timeout=120):
    """Runs go tool pprof (an independent reader that symbolizes from the
    local binaries); returns stdout."""
    go = shutil.which("go")
    if not go:
        fail("go (golang-go) is not installed: run scripts/deps.sh")
    env = dict(os.environ, PPROF_TMPDIR=tempfile.mkdtemp(), HOME=tempfile.mkdtemp())
    p = subprocess.run([go, "tool", "pprof", "-symbolize=local"] + args,
                       capture_output=True, text=True, timeout=timeout, env=env)
    if p.returncode != 0:
        fail("go tool pprof %s failed: %s" % (" ".join(args), p.stderr))
    return p.stdout


def read_buildid(path):
    """GNU build id of an ELF file via readelf (binutils), lower-case hex."""
    out = subprocess.run(["readelf", "-n", path], capture_output=True, text=True).stdout
    for line in out.splitlines():
        if "Build ID:" in line:
            return line.split("Build ID:")[1].strip()
    return ""


def load_json(path):
    with open(path) as f:
        return json.load(f)


def read_otlp(path):
    """Reads an OTLP ExportProfilesServiceRequest written from the v1.11
    field numbers (docs: shared spec).  Returns a list of samples, each a
    dict: pid, service, kind (sample type name), tid, thread, ts (list of
    unix ns), values, trace_id/span_id (hex or None), stack (list of
    (mapping file, build id, address, frame type))."""
    raw = open(path, "rb").read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    dic, rps = None, []
    for fn, wt, v in fields(raw):
        if fn == 2:
            dic = v
        elif fn == 1:
            rps.append(v)
    T = {k: [] for k in range(1, 8)}
    for fn, wt, v in fields(dic or b""):
        T[fn].append(v)
    strings = [s.decode() for s in T[5]]

    def anyval(b):
        for f, w, x in fields(b):
            if f == 1:
                return x.decode()
            if f == 3:
                return _s64(x)
            if f == 8:
                return strings[x]
        return None

    attrs = []
    for a in T[6]:
        d = {f: x for f, _, x in fields(a)}
        attrs.append((strings[d.get(1, 0)], anyval(d[2]) if 2 in d else None))
    links = []
    for l in T[4]:
        d = {f: x for f, _, x in fields(l)}
        links.append((d.get(1, b"").hex() or None, d.get(2, b"").hex() or None))
    maps = []
    for m in T[1]:
        d, ai = {}, []
        for f, w, x in fields(m):
            if f == 5:
                ai += _packed(w, x)
            else:
                d[f] = x
        # a GNU id, else a Go binary's own (process.executable.build_id.go)
        bid = [v for k, v in (attrs[i] for i in ai) if k == "process.executable.build_id.gnu"]
        bid = bid or [v for k, v in (attrs[i] for i in ai) if k == "process.executable.build_id.go"]
        maps.append((strings[d.get(4, 0)], bid[0] if bid else ""))
    locs = []
    for l in T[2]:
        d, ai = {}, []
        for f, w, x in fields(l):
            if f == 4:
                ai += _packed(w, x)
            elif f in (1, 2):
                d[f] = x
        ftype = [v for k, v in (attrs[i] for i in ai) if k == "profile.frame.type"]
        m = maps[d.get(1, 0)] if d.get(1, 0) < len(maps) else ("", "")
        locs.append((m[0], m[1], d.get(2, 0), ftype[0] if ftype else None))
    stacks = []
    for s in T[7]:
        li = []
        for f, w, x in fields(s):
            if f == 1:
                li += _packed(w, x)
        stacks.append([locs[i] for i in li])
    out = []
    for rp in rps:
        res, scopes = {}, []
        for f, w, x in fields(rp):
            if f == 1:
                for f2, w2, kv in fields(x):
                    if f2 == 1:
                        d = {a: b for a, _, b in fields(kv)}
                        key = strings[d[3]] if 3 in d else d.get(1, b"").decode()
                        res[key] = anyval(d[2]) if 2 in d else None
            elif f == 2:
                scopes.append(x)
        for sc in scopes:
            for f, w, prof in fields(sc):
                if f != 2:
                    continue
                st_name = None
                for pf, pw, pv in fields(prof):
                    if pf == 1:
                        st = {a: b for a, _, b in fields(pv)}
                        st_name = strings[st.get(1, 0)]
                for pf, pw, pv in fields(prof):
                    if pf != 2:
                        continue
                    smp = {"pid": res.get("process.pid"), "service": res.get("service.name"),
                           "kind": st_name, "ts": [], "values": [], "attrs": {}}
                    link = 0
                    for sf, sw, sv in fields(pv):
                        if sf == 1:
                            smp["stack"] = stacks[sv]
                        elif sf == 2:
                            for i in _packed(sw, sv):
                                k, val = attrs[i]
                                smp["attrs"][k] = val
                        elif sf == 3:
                            link = sv
                        elif sf == 4:
                            smp["values"] += [_s64(y) for y in _packed(sw, sv)]
                        elif sf == 5:
                            smp["ts"] += [int.from_bytes(sv[i:i + 8], "little") for i in range(0, len(sv), 8)]
                    smp["trace_id"], smp["span_id"] = links[link] if link else (None, None)
                    smp["tid"] = smp["attrs"].get("thread.id")
                    smp["thread"] = smp["attrs"].get("thread.name")
                    smp.setdefault("stack", [])
                    out.append(smp)
    return out


def nm_ranges(path, prefix):
    """{name: (start, end)} of the functions of an ELF file whose name starts
    with prefix, from nm -S (binutils): to tell which function a raw sample
    address falls in without spanprof's own symbolizer."""
    out = subprocess.run(["nm", "-S", path], capture_output=True, text=True).stdout
    r = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) == 4 and f[3].startswith(prefix):
            a, n = int(f[0], 16), int(f[1], 16)
            r[f[3]] = (a, a + n)
    return r


def go_env(**kw):
    """Environment for running a Go fixture, with kw added (e.g. GOMAXPROCS)."""
    env = dict(os.environ)
    env.update({k: str(v) for k, v in kw.items()})
    return env
