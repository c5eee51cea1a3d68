"""The Go demo service under spanprof record (issue 13).

build/spanprof-go-demo (examples/go-demo: net/http, so a cgo binary with
glibc's TLS; each request in pprof.Do with trace_id, span_id and
http.route) serves its own load for 4 s, half the requests with a W3C
traceparent.  Recorded as pprof with --off-cpu --off-cpu-goroutines.

Checks: samples carry the ids of requests the demo logged (never others),
with the http.route label; samples carry trace ids the demo took from a
traceparent; off-CPU samples (the contended mutex, the sleep) carry ids
too; go tool pprof reads the labels (-tagfocus selects exactly one trace's
samples); report --by-span lists the logged spans.
"""
import json
import os
import subprocess

from spt import *

require_root()
d = tmpdir()
demo = os.path.join(BUILD, "spanprof-go-demo")
truth_path, prof = os.path.join(d, "truth.jsonl"), os.path.join(d, "demo.pb.gz")
record(["-F", "97", "--off-cpu", "--off-cpu-goroutines", "-o", prof, "--", demo,
        "-listen", "127.0.0.1:0", "-load", "4", "-duration", "4", "-truth", truth_path])
reqs = [json.loads(l) for l in open(truth_path)]
check(len(reqs) > 50, "%d requests logged" % len(reqs))
by_ids = {(r["trace_id"], r["span_id"]): r for r in reqs}
p = read_pprof(prof)
st = {n: i for i, n in enumerate(p["strings"])}
kinds = [t for t, _ in p["sample_types"]]
with_ids = off_ids = 0
wrong = []
for s in p["samples"]:
    lab = s["labels"]
    if "trace_id" not in lab:
        continue
    r = by_ids.get((lab["trace_id"], lab.get("span_id")))
    if r is None or lab.get("http.route") != "/api/checkout":
        wrong.append(lab)
        continue
    # pprof columns: [samples, cpu] for on-CPU, [off_cpu_waits, off_cpu] for waits
    if "off_cpu_reason" in lab:
        off_ids += s["values"][kinds.index("off_cpu_waits")]
    else:
        with_ids += s["values"][kinds.index("samples")]
print("on-CPU samples with ids %d, off-CPU waits with ids %d" % (with_ids, off_ids), flush=True)
check(not wrong, "every sample with ids is a logged request's, with its http.route (wrong: %s)" %
      wrong[:3])
check(with_ids >= 50 and off_ids >= 20, "on-CPU (%d) and off-CPU (%d) samples carry ids" %
      (with_ids, off_ids))
parented = [r for r in reqs if r["parent_span_id"]]
check(parented and len(parented) < len(reqs), "requests with and without traceparent")
# the trace id of a parented request (taken from its traceparent) with the most samples
per_tid = {}
for s in p["samples"]:
    t = s["labels"].get("trace_id")
    if t:
        per_tid[t] = per_tid.get(t, 0) + 1
tids = sorted((per_tid.get(r["trace_id"], 0), r["trace_id"]) for r in parented)
n_tid, tid = tids[-1]
check(n_tid >= 2, "samples carry a trace id taken from a traceparent (%s: %d samples)" % (tid, n_tid))
out = go_pprof(["-traces", "-sample_index=samples", "-tagfocus", "trace_id=" + tid, prof]) + \
    go_pprof(["-traces", "-sample_index=off_cpu_waits", "-tagfocus", "trace_id=" + tid, prof])
shown = [l.split(":", 1)[1].strip() for l in out.splitlines() if l.strip().startswith("trace_id:")]
check(len(shown) >= n_tid and set(shown) == {tid},
      "go tool pprof -tagfocus trace_id=%s shows only that trace's samples (%d shown, %d "
      "expected at least; others: %s)" % (tid, len(shown), n_tid, sorted(set(shown) - {tid})[:3]))
r = subprocess.run([os.path.join(BUILD, "spanprof-symbolizer"), "report", prof, "--by-span",
                    "--allow-root"], capture_output=True, text=True, timeout=120)
listed = sum(1 for x in reqs if x["span_id"] in r.stdout)
check(r.returncode == 0 and listed >= 20, "report --by-span lists %d logged spans" % listed)
shutil.rmtree(d)
