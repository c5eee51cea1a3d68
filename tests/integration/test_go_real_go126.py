"""A real Go >= 1.24 runtime under the label reader (issue 13).

Debian ships Go 1.19 only and no registry reachable here ships a newer Go
toolchain, so no Go >= 1.24 program that sets pprof labels can be built
or obtained: the 1.24+ slice layout itself is tested on hand-laid memory
(test_go_fake_labels.py).  What is real here: tsgo, TypeScript's native
compiler, a stripped Go 1.26 binary from npm (installed by
scripts/deps.sh), which never sets labels.  Recorded while it type-checks
a generated file on its goroutines, it proves on a real 1.26 runtime: the
version is read from .go.buildinfo, the offsets come from the version
table (no DWARF), and the chain TLS g -> g.labels, g.m -> m.curg with the
1.26 row's offsets (g.labels 352, m.curg 184) reads what the runtime
holds: every read ends in "no labels" or "no goroutine", none in a read
error, bad ids or a label.  A wrong g.labels offset would take another
field of g (mostly non-NULL pointers and counters) for a labels pointer
and read garbage or fault; a wrong m.curg would follow a pointer that is
not a g.  A field that happens to be NULL would pass: this is not a test
of the slice layout.  Also: the runtime's prctl(PR_SET_VMA_ANON_NAME)
naming its own mappings is not taken for an OTEP 4719 publication.
"""
import os
import subprocess

from spt import *

require_root()
TSGO = "/var/cache/spanprof-deps/tsgo-7.0.0-dev.20260707.2/package/lib/tsgo"
if not os.access(TSGO, os.X_OK):
    # from npm, not Debian: CI's machines reach Debian's archive only
    skip("tsgo (npm @typescript/native-preview-linux-x64) not at %s: scripts/deps.sh "
         "fetches it as root when the npm registry is reachable" % TSGO)
ver = subprocess.run(["go", "version", TSGO], capture_output=True, text=True).stdout.split()
check(len(ver) == 2 and ver[1].startswith("go1.26"), "tsgo is a Go 1.26 binary: %s" % ver)
d = tmpdir()
src = os.path.join(d, "x.ts")
with open(src, "w") as f:
    for i in range(4000):
        f.write("type T%d<A> = { a%d: A; b: T%d<A> extends infer U ? U : never };\n"
                "export function f%d(x: number): string { const y: Array<T%d<string>> = []; "
                "return String(x + %d) + y.length; }\n" % (i, i, max(i - 1, 0), i, i, i))
js = os.path.join(d, "s.json")
p = subprocess.run([SPANPROF, "record", "--no-report", "-q", "-F", "499", "-o",
                    os.path.join(d, "out.pb.gz"), "--summary-json", js, "--", TSGO, "--noEmit",
                    "--strict", src], capture_output=True, text=True, timeout=180)
check(p.returncode == 0, "spanprof record of tsgo (rc=%d %s)" % (p.returncode, p.stderr[-300:]))
summ = load_json(js)
g, b = summ["go"], summ["bpf"]
check(g["procs"] == 1 and g["procs_table"] == 1 and g["procs_failed"] == 0,
      "tsgo got a descriptor from the version table: %s" % g)
reads = sum(b[k] for k in ("go_ids", "go_no_goroutine", "go_no_labels", "go_no_ids",
                           "go_bad_ids", "go_read_errors"))
check(reads >= 100, "enough label reads on tsgo's threads (%d)" % reads)
check(b["go_read_errors"] == 0 and b["go_ids"] == 0 and b["go_bad_ids"] == 0 and
      b["go_no_ids"] == 0 and b["go_no_labels"] > 0 and
      b["go_no_labels"] + b["go_no_goroutine"] == reads,
      "the chain reads a real 1.26 runtime: of %d reads, no labels %d, no goroutine %d, "
      "read errors %d, ids %d, bad ids %d, labels without ids %d" %
      (reads, b["go_no_labels"], b["go_no_goroutine"], b["go_read_errors"], b["go_ids"],
       b["go_bad_ids"], b["go_no_ids"]))
# Go 1.25+ names its anonymous mappings with prctl(PR_SET_VMA_ANON_NAME)
# (" Go: immortal metadata", " Go: heap"; once only on a kernel without
# CONFIG_ANON_VMA_NAME, as here: EINVAL, and the runtime stops trying):
# not a context publication, so no record and no re-read of tsgo
c = summ["consumer"]
check(b["vma_name_other"] >= 1 and c["received_publish"] == 0 and
      b["publish_woke"] + b["publish_quiet"] == 0,
      "the runtime's own mapping names (%d) sent no publication record (%d received)"
      % (b["vma_name_other"], c["received_publish"]))
shutil.rmtree(d)
