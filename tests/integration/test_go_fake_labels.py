"""Go label layouts and hostile labels, against memory laid out by hand
exactly as the Go runtime lays it out (issue 13).

tests/fixtures/go_fake.c looks like a Go binary to discovery (a
.go.buildinfo naming go1.19.8, or go1.24.0 for go_fake_slice; the g TLS
slot as cgo's runtime.tlsg) and builds g -> m -> curg -> labels for each
scenario: valid ids, no labels, no goroutine (m.curg NULL), no g, ids that
are not hex or have the wrong length, two trace ids, a count of 2^40
(slice) or 2^62 with B=200 (map), labels or a key or a value pointing into
unmapped memory, invalid UTF-8, 40 labels, and for the map a table caught
mid-grow (trace_id still in oldbuckets, the evacuated old slot holding a
stale span_id) and an overflow bucket.  A second thread serves other ids
all the time.  No Go >= 1.24 binary runs here (Debian has Go 1.19 only):
go_fake_slice is the test of the 1.24+ reader.

How the 1.24+ layout is known to be right: labelMap = struct{ LabelSet },
LabelSet = struct{ list []label }, label = struct{ key, value string }
(golang/go src/runtime/pprof/label.go, 1.24 and later); Go 1.19's own
DWARF in the golabels fixture gives the same types' layout, checked here:
label 32 bytes (key 0, value 16), LabelSet 24 (list 0), []label 24 (array
0, len 8, cap 16).  g.labels 352 and m.curg 192 for 1.24 come from the
version table (go_offsets.c, OTel's values read from 1.24's DWARF).

Checks per scenario (by the scenario function on each sample's stack):
samples carry exactly the expected ids or none, never the other thread's
ids; every hostile case is counted (bad ids, read errors, labels cut or
unreadable, no goroutine, no labels, invalid UTF-8) and nothing crashes.
"""
import bisect
import json
import os
import re
import subprocess

from spt import *

require_root()


def dwarf_struct(exe, name):
    """{member: offset} and byte size of a struct in exe's DWARF (readelf)."""
    out = subprocess.run(["readelf", "--debug-dump=info", exe], capture_output=True,
                         text=True).stdout.splitlines()
    for i, line in enumerate(out):
        if line.rstrip().endswith("DW_AT_name        : " + name) and \
                "DW_TAG_structure_type" in out[i - 1]:
            size, members, cur = None, {}, None
            for l in out[i + 1:i + 3000]:
                if "DW_AT_byte_size" in l and size is None:
                    size = int(l.split(":")[-1])
                elif "DW_TAG_member" in l:
                    cur = "?"
                elif "DW_AT_name" in l and cur == "?":
                    cur = l.split(":")[-1].strip()
                elif "DW_AT_data_member_location" in l and cur:
                    members[cur] = int(l.split(":")[-1])
                    cur = None
                elif re.search(r"<1><", l):
                    break
            return size, members
    return None, {}


golabels = os.path.join(BUILD, "fixtures", "go", "golabels")
lab = dwarf_struct(golabels, "runtime/pprof.label")
lset = dwarf_struct(golabels, "runtime/pprof.LabelSet")
sl = dwarf_struct(golabels, "[]runtime/pprof.label")
gostr = dwarf_struct(golabels, "string")
check(lab == (32, {"key": 0, "value": 16}) and lset == (24, {"list": 0}) and
      sl == (24, {"array": 0, "len": 8, "cap": 16}) and gostr == (16, {"str": 0, "len": 8}),
      "Go's DWARF lays out label %s, LabelSet %s, []label %s, string %s as go_fake does" %
      (lab, lset, sl, gostr))
g = dwarf_struct(golabels, "runtime.g")[1]
m = dwarf_struct(golabels, "runtime.m")[1]
check(g.get("m") == 48 and g.get("labels") == 360 and m.get("curg") == 192,
      "Go 1.19's runtime.g.m 48, g.labels 360, m.curg 192 as go_fake's 1.19 build")

EXPECT_IDS = {"valid", "huge_count", "bad_utf8", "map_growing", "map_overflow"}
EXPECT_NONE = {"no_labels", "no_curg", "no_g", "nonhex", "length", "duplicate",
               "unmapped_labels", "unmapped_key", "unmapped_value"}
MAYBE = {"many"}        # 40 labels, ids past the read bound: cut, or found


def run(variant):
    d = tmpdir()
    exe = os.path.join(BUILD, "fixtures", variant)
    out, js, truth_path = (os.path.join(d, n) for n in ("p.otlp.pb", "s.json", "t.json"))
    record(["-F", "997", "--format", "otlp", "-o", out, "--summary-json", js, "--", exe,
            "3", truth_path])
    summ, truth = load_json(js), load_json(truth_path)
    ids, other = (truth["trace_id"], truth["span_id"]), \
        (truth["other_trace_id"], truth["other_span_id"])
    check(summ["go"]["procs"] == 1 and summ["go"]["procs_table"] == 1,
          "%s: discovered as Go 1.%d, offsets from the version table (%s)" %
          (variant, truth["minor"], summ["go"]))
    syms = sorted((a, e, n) for n, (a, e) in nm_ranges(exe, "").items())
    starts = [a for a, _, _ in syms]

    def where(stack):
        for (_, _, addr, t) in stack:
            i = bisect.bisect_right(starts, addr) - 1
            if t == "native" and i >= 0 and addr < syms[i][1]:
                n = syms[i][2]
                if n.startswith("scenario_") or n == "other_thread_work":
                    return n
        return None

    seen, bad = {}, []
    for s in read_otlp(out):
        if s["kind"] != "samples":
            continue
        w = where(s["stack"])
        if not w:
            continue
        got = (s["trace_id"], s["span_id"]) if s["trace_id"] else None
        n = s["count"]  # samples merged into one (compact OTLP) count each
        sc = w[len("scenario_"):] if w.startswith("scenario_") else "other"
        st = seen.setdefault(sc, {"n": 0, "ids": 0})
        st["n"] += n
        st["ids"] += n if got else 0
        ok = (got == other if sc == "other" else
              got == ids if sc in EXPECT_IDS else
              got is None if sc in EXPECT_NONE else got in (None, ids))
        if not ok:
            bad.append((sc, got))
        if sc == "valid" and got and s["attrs"].get("route") != "/api/pay":
            bad.append((sc, "route label", s["attrs"]))
        if sc == "bad_utf8" and got and s["attrs"].get("r?") != "??/pay?":
            bad.append((sc, "mended label", s["attrs"]))
    print("%s: samples per scenario %s" % (variant, seen), flush=True)
    check(not bad, "%s: every sample carries exactly its scenario's ids or none, never the "
          "other thread's (wrong: %s)" % (variant, bad[:4]))
    want = EXPECT_IDS | EXPECT_NONE | {"other"}
    check(all(seen.get(k, {}).get("n", 0) >= 20 for k in want),
          "%s: at least 20 samples in each scenario" % variant)
    check(all(seen[k]["ids"] >= 0.95 * seen[k]["n"] for k in EXPECT_IDS | {"other"}),
          "%s: scenarios with ids carry them (>= 95%%; the rest were set up mid-sample)" %
          variant)
    b = summ["bpf"]
    check(b["go_bad_ids"] > 0 and b["go_read_errors"] > 0 and b["go_labels_cut"] > 0 and
          b["go_label_errors"] > 0 and b["go_no_goroutine"] > 0 and b["go_no_labels"] > 0 and
          summ["consumer"]["go_labels_bad_utf8"] > 0,
          "%s: hostile labels counted: bad ids %d, unreadable %d, cut %d, unreadable labels "
          "%d, no goroutine %d, no labels %d, invalid UTF-8 %d" %
          (variant, b["go_bad_ids"], b["go_read_errors"], b["go_labels_cut"],
           b["go_label_errors"], b["go_no_goroutine"], b["go_no_labels"],
           summ["consumer"]["go_labels_bad_utf8"]))
    # no runtime.gcSweep (no GC epoch probe) and no runtime.mheap_ (no
    # sweepgen address) in these binaries: every label set read uncached
    check(b["go_label_cache_off"] > 0 and b["go_label_cache_hits"] == 0 and
          b["go_label_cache_misses"] == 0 and summ["go"]["gc_unsupported"] >= 1 and
          summ["go"]["label_cache_off"] >= 1,
          "%s: label sets read without the cache (no gcSweep, no sweepgen address): off %d, "
          "hits %d, misses %d (%s)" % (variant, b["go_label_cache_off"],
                                       b["go_label_cache_hits"], b["go_label_cache_misses"],
                                       summ["go"]))
    shutil.rmtree(d)


run("go_fake")          # map labels (Go <= 1.23)
run("go_fake_slice")    # sorted-slice labels (Go >= 1.24)
