"""Hostile thread-record attributes are bounded, counted and never crash.

attrs_hostile (compiled here with the libspanctx sources; see its header)
runs four threads, each publishing one hand-written OTEP 4947 record:
an attrs_size of 65535 over 600 bytes of entries, a key index outside the
key map with bytes that are not UTF-8, and two records that end at the edge
of an inaccessible page (one whose attrs fit, one whose attrs_size claims
bytes in that page).  Sampled by the real BPF program at 997 Hz:

- every case's samples keep their trace and span ids;
- case 1: only whole entries within the 128-byte bound arrive (k0/k1 with
  their last values there), ctx_attrs_truncated and attrs_dropped count it;
- case 2: the key outside the map is named "attr.200"; invalid bytes become
  '?' in values and in key names from the map (labels are valid UTF-8); an
  attribute named "trace_id" arrives as "attr.trace_id" and the sample's
  real trace id is untouched;
- case 3: the attrs arrive although the fast one-read path faulted;
- case 4: no attributes, and ctx_attrs_errors counts the unreadable attrs.
"""
import os
import subprocess

from spt import *

require_root()
d = tmpdir()
root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
inc = os.path.join(root, "lib", "spanctx")
srcs = [os.path.join(inc, f) for f in sorted(os.listdir(inc)) if f.endswith(".c")]
prog = os.path.join(d, "attrs_hostile")
p = subprocess.run(["cc", "-O1", "-g", "-fno-omit-frame-pointer", "-D_GNU_SOURCE", "-I" + inc,
                    "-Wall", "-Werror", os.path.join(root, "tests", "integration", "attrs_hostile.c")]
                   + srcs + ["-Wl,--export-dynamic-symbol=otel_thread_ctx_v1", "-lpthread",
                             "-o", prog], capture_output=True, text=True)
if p.returncode:
    fail("cc attrs_hostile: %s" % p.stderr)

out = os.path.join(d, "attrs.pb.gz")
js = os.path.join(d, "attrs.json")
record(["-F", "997", "-o", out, "--summary-json", js, "--", prog, "3"])
j = load_json(js)
prof = read_pprof(out)
by_case, events, bad_span = {}, {}, []
for s in prof["samples"]:
    t = s["labels"].get("trace_id")
    if t and t == t[:2] * 16 and 1 <= int(t[:2], 16) <= 4:
        c = int(t[:2], 16)
        if s["labels"]["span_id"] != ("%02x" % (0x40 + c)) * 8:
            bad_span.append((c, s["labels"]["span_id"]))
        by_case.setdefault(c, []).append(s)
        events[c] = events.get(c, 0) + s["values"][0]
print("samples per case:", dict(sorted(events.items())),
      "bpf:", {k: j["bpf"][k] for k in ("ctx_ok", "ctx_attrs_truncated", "ctx_attrs_errors")},
      "consumer:", {k: j["consumer"][k] for k in ("attrs_samples", "attrs_dropped")}, flush=True)
check(not bad_span, "every case's samples keep their span id (%s)" % bad_span[:3])
for c in range(1, 5):
    check(events.get(c, 0) >= 50, "case %d sampled with its ids (%d samples)" % (c, events.get(c, 0)))


def attrs(s):
    return {k: v for k, v in s["labels"].items() if k.startswith("k") or k.startswith("attr.")}


# Case 1: 128 bytes hold 12 whole 10-byte entries (k0, k1 alternating, the
# last k0 is entry 10 and the last k1 entry 11: first bytes 'K' and 'L'); the
# 13th entry is cut at the bound and dropped.
want1 = {"k0": "Kbcdefgh", "k1": "Lbcdefgh"}
check(all(attrs(s) == want1 for s in by_case[1]),
      "case 1: the whole entries within the bound arrive, last value wins (%s)" % attrs(by_case[1][0]))
check(j["bpf"]["ctx_attrs_truncated"] >= events[1], "case 1: truncation counted in BPF")
check(j["consumer"]["attrs_dropped"] >= events[1], "case 1: the cut entry counted as dropped")
want2 = {"attr.200": "out", "k1": "a??b", "k?": "z", "attr.trace_id": "fake"}
check(all(attrs(s) == want2 for s in by_case[2]),
      "case 2: unknown key named by index, invalid bytes replaced (%s)" % attrs(by_case[2][0]))
check(all(attrs(s) == {"k0": "edge"} for s in by_case[3]),
      "case 3: attrs read although the record ends at an inaccessible page (%s)" % attrs(by_case[3][0]))
check(all(attrs(s) == {} for s in by_case[4]), "case 4: unreadable attrs are left out")
check(j["bpf"]["ctx_attrs_errors"] >= events[4], "case 4: unreadable attrs counted (%d)" % (
    j["bpf"]["ctx_attrs_errors"]))
