"""Hostile pprof labels from a real Go 1.19 program (issue 13).

tests/fixtures/go/golabels -mode hostile burns CPU under label sets a
reader must refuse or cut, each in its own function main.hostile<Case>:
ids not hex, upper case, the wrong length, all zero, a trace id without a
span id, invalid UTF-8 in the trace id and in another label, 40 labels,
a 40-byte key and a 120-byte value; and one valid set (main.hostileValid).
(Shapes Go cannot make - huge counts, pointers into unmapped memory - are
in test_go_fake_labels.py.)

Checks: only hostileValid's samples carry ids, exactly the logged ones;
"many" may carry them (the map's bucket order decides whether the ids are
among the 16 labels read) but never others; the long value is cut to 64
bytes of whole characters and the long key dropped, both counted; bad ids
and invalid UTF-8 are counted.
"""
import bisect
import os
import re

from spt import *

require_root()
d = tmpdir()
exe = os.path.join(BUILD, "fixtures", "go", "golabels")
run = record_go(d, "of the hostile Go labels", exe, ["-mode", "hostile", "-duration", "3"],
                timestamps=False)
out, cases = run.out, run.truth
ids = (cases[0]["trace_id"], cases[0]["span_id"])
# hostile<Case> only: not hostile itself nor its closures (main.hostile.func1,
# the pprof.Do callback, had a sample in one CI run)
syms = sorted((a, e, n) for n, (a, e) in nm_ranges(exe, "main.hostile").items()
              if re.match(r"main\.hostile[A-Z]\w*$", n))
starts = [a for a, _, _ in syms]


def case_of(stack):
    for (_, _, addr, t) in stack:
        i = bisect.bisect_right(starts, addr) - 1
        if t == "native" and i >= 0 and addr < syms[i][1]:
            return syms[i][2][len("main.hostile"):].lower()
    return None


seen, wrong, long_vals = {}, [], set()
for s in read_otlp(out):
    c = case_of(s["stack"]) if s["kind"] == "samples" else None
    if not c:
        continue
    got = (s["trace_id"], s["span_id"]) if s["trace_id"] else None
    n = s["count"]  # samples merged into one (compact OTLP) count each
    st = seen.setdefault(c, [0, 0])
    st[0] += n
    st[1] += n if got is not None else 0
    if (c == "valid" and got != ids) or (c == "many" and got not in (None, ids)) or \
            (c not in ("valid", "many") and got is not None):
        wrong.append((c, got))
    if c == "long":
        long_vals.add(s["attrs"].get("key"))
        if any(len(k) > 32 for k in s["attrs"]):
            wrong.append((c, "a 40-byte key kept"))
print("samples per case [total, with ids]: %s" % seen, flush=True)
check(len(seen) == len(cases) and all(v[0] >= 10 for v in seen.values()),
      "every case sampled (%d cases)" % len(seen))
check(not wrong, "only the valid label set yields ids, exactly its own (wrong: %s)" % wrong[:4])
check(seen["valid"][1] >= 0.95 * seen["valid"][0], "the valid set's samples carry ids (%s)" %
      seen["valid"])
check(long_vals == {"é" * 32}, "a 120-byte value is cut to 64 bytes of whole characters (%s)" %
      [v[:8] + "..." if v else v for v in long_vals])
summ = run.summary
b = summ["bpf"]
check(b["go_bad_ids"] > 0 and b["go_labels_cut"] > 0 and summ["consumer"]["go_labels_bad_utf8"] > 0,
      "counted: bad ids %d, labels cut %d, invalid UTF-8 %d" %
      (b["go_bad_ids"], b["go_labels_cut"], summ["consumer"]["go_labels_bad_utf8"]))
shutil.rmtree(d)
