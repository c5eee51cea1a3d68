"""An exec drops the old image's trace-context descriptor even when the new
image publishes nothing.

ctx_exec (compiled here with libspanctx) publishes its process context and
burns CPU in a span, then execs a copy of itself under another name that
never publishes a context (no OTEL_CTX mapping) but still writes a valid
record, with other ids, into the same TLS variable at the same offset.
Nothing told the collector to read that image's TLS, so none of its
samples may carry ids: a kept descriptor (the bug: the slot was not reset
when the new maps showed no OTEL_CTX) would read exactly those ids.  The
first image's samples must carry its ids (the descriptor was there to
lose).  spanprof record -- CMD reads maps at exec (eager), the path of the
bug.
"""
import os
import shutil
import subprocess

from spt import *

require_root()
d = tmpdir()
root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
inc = os.path.join(root, "lib", "spanctx")
lib_a = os.path.join(BUILD, "libspanctx.a")
# A sanitized build's libspanctx.a holds sanitizer calls (see
# test_tracectx_models.py): the fixture is built with the same flags.
san = ["-fsanitize=address,undefined"] if b"__asan_" in open(lib_a, "rb").read() else []
pub = os.path.join(d, "ctx_exec")
quiet = os.path.join(d, "ctx_quiet")
p = subprocess.run(["cc", "-O1", "-g", "-fno-omit-frame-pointer", "-Wall", "-Werror", "-I" + inc]
                   + san + [os.path.join(root, "tests", "integration", "ctx_exec.c"), lib_a,
                            "-Wl,--export-dynamic-symbol=otel_thread_ctx_v1", "-lpthread",
                            "-o", pub], capture_output=True, text=True)
if p.returncode:
    fail("cc ctx_exec.c: %s" % p.stderr)
shutil.copy(pub, quiet)     # the same TLS layout, another comm

out = os.path.join(d, "exec.pb.gz")
js = os.path.join(d, "exec.json")
# 1 s in the published span, then 1.5 s in the unpublished one: ~97 and
# ~145 samples at 97 Hz, where 20 of each are needed.
record(["-F", "97", "-o", out, "--summary-json", js, "--", pub, "pub", "1", quiet, "1.5"])
prof = read_pprof(out)
pub_ids = ("33" * 16, "44" * 8)
quiet_ids = ("55" * 16, "66" * 8)


def phase(comm):
    ss = [s for s in prof["samples"] if s["labels"].get("thread_name") == comm]
    n = sum(s["values"][0] for s in ss)
    ids = {}
    for s in ss:
        k = (s["labels"].get("trace_id"), s["labels"].get("span_id"))
        ids[k] = ids.get(k, 0) + s["values"][0]
    return n, ids


n_pub, ids_pub = phase("ctx_exec")
n_quiet, ids_quiet = phase("ctx_quiet")
print("published image: %d samples %s; quiet image: %d samples %s; ctx %s" % (
    n_pub, ids_pub, n_quiet, ids_quiet,
    {k: v for k, v in load_json(js)["ctx"].items() if v}), flush=True)
check(n_pub >= 20 and ids_pub.get(pub_ids, 0) >= 0.9 * n_pub,
      "the publishing image: %d of %d samples carry its ids (>= 90%%)" % (
          ids_pub.get(pub_ids, 0), n_pub))
check(n_quiet >= 20, "the exec'd image was sampled (%d samples, >= 20)" % n_quiet)
with_ids = sum(v for (t, _), v in ids_quiet.items() if t)
check(with_ids == 0,
      "after the exec no sample carries ids: %d of %d do (%d with the unpublished record's, "
      "read through the old image's descriptor)" % (with_ids, n_quiet, ids_quiet.get(quiet_ids, 0)))
