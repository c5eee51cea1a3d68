"""otlp.py - the one reader of OTLP Profiles requests in the test suite
(ExportProfilesServiceRequest, opentelemetry-proto v1.11.0 field numbers;
the byte layout is in docs/formats.md).

read_otlp(path or bytes, gzip'd or not) -> list of samples, each a dict:
  pid, service     process.pid and service.name of the sample's resource
  res              every resource attribute, by key
  kind             the Profile's sample type name ("samples", "off_cpu");
                   an "off_cpu_waits" Profile is not returned as samples:
                   it gives off-CPU samples their count (below)
  tid, thread      thread.id and thread.name attributes (None when absent)
  attrs            every sample attribute, by key
  ts               timestamps_unix_nano (list; packed or not)
  values           values (list of signed ints)
  count            events, as spanprof's decoder counts them: on-CPU the
                   sum of values, or the number of timestamps when there are
                   no values; off-CPU the number of timestamps, else the
                   summed values of the off_cpu_waits Samples of the same
                   scope with the same stack, attribute and link indices,
                   else 1 (a value is nanoseconds there, never a count); a
                   waits Sample matching none becomes an off_cpu sample of
                   no values and that count (as the decoder reads them)
  trace_id, span_id  lower-case hex of the sample's link; None when the
                   sample has no link (index 0) or its link is all zeros
                   (the zero link, as the decoder reads it)
  stack            frames leaf first: (mapping file, build id, address,
                   frame type or None)
  funcs            per frame the out-of-line function name ('' when not
                   symbolized): the last line of the location
  lines            per frame (function file, line) of that last line
                   (('', 0) when not symbolized)
An index out of range raises IndexError: the file is malformed.
"""
import gzip

from lib.pb import fields, message, packed, s64

_ZERO_TRACE, _ZERO_SPAN = "0" * 32, "0" * 16


def _load(src):
    raw = src if isinstance(src, (bytes, bytearray)) else open(src, "rb").read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return bytes(raw)


def _anyval(b, strings):
    for f, w, x in fields(b):
        if f == 1:
            return x.decode()
        if f == 2:
            return bool(x)
        if f == 3:
            return s64(x)
        if f == 8:
            return strings[x]
    return None


class _Dict:
    """The request's dictionary, resolved."""

    def __init__(self, dic):
        T = {k: [] for k in range(1, 8)}
        for fn, _, v in fields(dic):
            if fn in T:
                T[fn].append(v)
        self.strings = [s.decode() for s in T[5]]
        S = self.strings
        self.attrs = []
        for a in T[6]:
            d = message(a)      # KeyValueAndUnit: key_strindex 1, value 2
            self.attrs.append((S[d.get(1, 0)], _anyval(d[2], S) if 2 in d else None))
        self.funcs = [S[message(f).get(1, 0)] for f in T[3]]
        self.func_files = [S[message(f).get(3, 0)] for f in T[3]]
        self.links = []
        for l in T[4]:
            d = message(l)
            t, s = d.get(1, b"").hex() or None, d.get(2, b"").hex() or None
            if t in (None, _ZERO_TRACE) and s in (None, _ZERO_SPAN):
                t = s = None
            self.links.append((t, s))
        self.maps = []
        for m in T[1]:
            d, ai = {}, []
            for f, w, x in fields(m):
                if f == 5:
                    ai += packed(w, x)
                else:
                    d[f] = x
            # a GNU id, else a Go binary's own (process.executable.build_id.go)
            bid = [v for k, v in (self.attrs[i] for i in ai)
                   if k == "process.executable.build_id.gnu"]
            bid = bid or [v for k, v in (self.attrs[i] for i in ai)
                          if k == "process.executable.build_id.go"]
            self.maps.append((S[d.get(4, 0)], bid[0] if bid else ""))
        self.locs = []
        for l in T[2]:
            d, ai, names, lines = {}, [], [], []
            for f, w, x in fields(l):
                if f == 4:
                    ai += packed(w, x)
                elif f == 3:
                    ln = message(x)
                    fi = ln.get(1, 0)
                    names.append(self.funcs[fi] if fi < len(self.funcs) else "")
                    lines.append((self.func_files[fi] if fi < len(self.funcs) else "",
                                  ln.get(2, 0)))
                elif f in (1, 2):
                    d[f] = x
            ftype = [v for k, v in (self.attrs[i] for i in ai) if k == "profile.frame.type"]
            m = self.maps[d.get(1, 0)] if d.get(1, 0) < len(self.maps) else ("", "")
            # inlined callees first, the out-of-line caller last
            self.locs.append(((m[0], m[1], d.get(2, 0), ftype[0] if ftype else None),
                              names[-1] if names else "", lines[-1] if lines else ("", 0)))
        self.stacks = []
        for s in T[7]:
            li = []
            for f, w, x in fields(s):
                if f == 1:
                    li += packed(w, x)
            self.stacks.append([self.locs[i] for i in li])


def _resource(b, strings):
    res = {}
    for f, _, kv in fields(b):
        if f == 1:
            d = message(kv)     # KeyValue: key 1, value 2, key_strindex 3
            k = strings[d[3]] if 3 in d else d.get(1, b"").decode()
            res[k] = _anyval(d[2], strings) if 2 in d else None
    return res


def _sample(b, D, res, kind):
    s = {"res": res, "pid": res.get("process.pid"), "service": res.get("service.name"),
         "kind": kind, "ts": [], "values": [], "attrs": {}, "stack": [], "funcs": [],
         "lines": [],
         "trace_id": None, "span_id": None}
    ident = [0, (), 0]      # stack, attribute and link indices
    for f, w, v in fields(b):
        if f == 1:
            ident[0] = v
            frames = D.stacks[v]
            s["stack"] = [fr for fr, _, _ in frames]
            s["funcs"] = [fn for _, fn, _ in frames]
            s["lines"] = [ln for _, _, ln in frames]
        elif f == 2:
            ident[1] += tuple(packed(w, v))
            for i in packed(w, v):
                k, val = D.attrs[i]
                s["attrs"][k] = val
        elif f == 3:
            ident[2] = v
            s["trace_id"], s["span_id"] = D.links[v] if v else (None, None)
        elif f == 4:
            s["values"] += [s64(x) for x in packed(w, v)]
        elif f == 5:
            if w == 1:
                s["ts"].append(v)
            else:
                s["ts"] += [int.from_bytes(v[i:i + 8], "little") for i in range(0, len(v), 8)]
    s["_ident"] = tuple(ident)
    s["tid"] = s["attrs"].get("thread.id")
    s["thread"] = s["attrs"].get("thread.name")
    if kind == "off_cpu":
        s["count"] = len(s["ts"]) or 1
    else:
        s["count"] = sum(s["values"]) if s["values"] else len(s["ts"])
    return s


def read_otlp(src):
    raw = _load(src)
    dic, rps = b"", []
    for fn, _, v in fields(raw):
        if fn == 2:
            dic = v
        elif fn == 1:
            rps.append(v)
    D = _Dict(dic)
    out = []
    for rp in rps:
        res, scopes = {}, []
        for f, _, x in fields(rp):
            if f == 1:
                res = _resource(x, D.strings)
            elif f == 2:
                scopes.append(x)
        for sc in scopes:
            mine, waits = [], {}
            for f, _, prof in fields(sc):
                if f != 2:
                    continue
                kind = None
                for pf, _, pv in fields(prof):
                    if pf == 1:
                        kind = D.strings[message(pv).get(1, 0)]
                for pf, _, pv in fields(prof):
                    if pf == 2:
                        x = _sample(pv, D, res, kind)
                        if kind == "off_cpu_waits":
                            waits.setdefault(x["_ident"], []).append(x)
                        else:
                            mine.append(x)
            for x in mine:
                w = waits.get(x["_ident"]) if x["kind"] == "off_cpu" and not x["ts"] else None
                if w:
                    x["count"] = sum(sum(y["values"]) for y in w)
                    w[:] = []
            for ws in waits.values():
                if ws:
                    x = dict(ws[0], kind="off_cpu", values=[])
                    x["count"] = sum(sum(y["values"]) for y in ws)
                    mine.append(x)
            out += mine
    return out
