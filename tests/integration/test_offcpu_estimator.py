"""The off-CPU sampling estimator converges on the truth (bias test).

Waits are captured at switch-out with probability 1/N and written with
weight blocked_ns * N (bpf/offcpu.bpf.c explains why that is unbiased for
every stack).  build/fixtures/offcpu_waits estimator runs THREADS threads
that each repeat 4 x est_short_span (1 ms sleep) + 1 x est_long_span (4 ms
sleep) and measure each call's off-CPU time (wall - thread CPU).

Fixed sampling (--off-cpu-sample 4) over RUNS runs, per span function:
  - the pooled estimate sum(E)/sum(T) is within 3% of 1, or 3 standard
    errors of it when that is wider (bias),
  - every run is within 5 predicted standard deviations, where the
    predicted relative SD of one run is sqrt((N-1) * sum d_i^2) / sum d_i,
    computed from the run's own waits (weight / N = d_i),
  - the spread of the runs is 0.3x..3x the predicted SD: the sampler really
    samples (not exact by accident) and is no noisier than theory,
  - the sampler skipped 3/4 of the tracked switch-outs (+-3%).
Adaptive sampling (--off-cpu-rate 900, N re-derived per CPU every 50 ms):
  pooled bias within 3% with a mean sampling factor > 1.5.
"""
import math
import os
import subprocess

from spt import *

require_root()
FIX = os.path.join(BUILD, "fixtures", "offcpu_waits")
RUNS = int(os.environ.get("OFFCPU_EST_RUNS", "6"))
# 12 threads for 2 s: as many waits per run as 8 threads for 3 s (the
# statistics depend on the count of waits, not on the seconds), 1 s less
# per run.  The adaptive runs' captures are a rate (per CPU and second):
# ADAPTIVE_RATE 900 for 2 s captures what 600 did for 3 s, out of as many
# switch-outs, so their N and their spread are what they were.
SECS = os.environ.get("OFFCPU_EST_SECS", "2")
THREADS = "12"
ADAPTIVE_RATE = "900"
SPANS = ("est_short_span", "est_long_span")


def func_ranges(path):
    out = subprocess.run(["nm", "-S", "--defined-only", path], capture_output=True,
                         text=True, check=True).stdout
    r = {}
    for line in out.splitlines():
        p = line.split()
        if len(p) == 4 and p[3] in SPANS:
            a = int(p[0], 16)
            r[p[3]] = (a, a + int(p[1], 16))
    loads = []
    out = subprocess.run(["readelf", "-lW", path], capture_output=True, text=True,
                         check=True).stdout
    for line in out.splitlines():
        p = line.split()
        if p and p[0] == "LOAD":
            loads.append((int(p[1], 16), int(p[2], 16), int(p[4], 16)))
    return r, loads


RANGES, LOADS = func_ranges(FIX)
check(set(RANGES) == set(SPANS), "fixture functions %s found by nm -S" % ", ".join(SPANS))


def span_of(prof, s):
    for lid in s["locs"]:
        mid, addr = prof["locations"][lid]
        m = prof["mappings"].get(mid)
        if not m or os.path.realpath(m["file"]) != os.path.realpath(FIX):
            continue
        off = addr - m["start"] + m["offset"]
        for fo, va, sz in LOADS:
            if fo <= off < fo + sz:
                v = off - fo + va
                for n, (a, b) in RANGES.items():
                    if a <= v < b:
                        return n
    return None


def one_run(d, i, opts, n_fixed):
    out = os.path.join(d, "est%d.pb.gz" % i)
    js = os.path.join(d, "est%d.json" % i)
    truth = os.path.join(d, "est%d.truth.json" % i)
    record(["--off-cpu", "--off-cpu-min-us", "0", "-o", out, "--summary-json", js] + opts
           + ["--", FIX, "estimator", SECS, truth, THREADS])
    prof, summ, t = read_pprof(out), load_json(js), load_json(truth)
    names = [x for x, _ in prof["sample_types"]]
    iw, ins = names.index("off_cpu_waits"), names.index("off_cpu")
    est = {n: 0 for n in SPANS}
    sq = {n: 0.0 for n in SPANS}	# sum over captured waits of (N-1) * N * d^2
    for s in prof["samples"]:
        if len(s["values"]) <= ins or not s["values"][iw]:
            continue
        n = span_of(prof, s)
        if n:
            est[n] += s["values"][ins]
            if n_fixed:
                # one sample may merge several waits of equal stack; each
                # kept wait i contributes (N-1) d_i^2 to the variance and is
                # kept with prob 1/N, so E[sum over kept of N (N-1) d_i^2]
                # = sum over all waits (N-1) d_i^2.  With merged samples the
                # mean d of the merge stands in for each d_i.
                w = s["values"][ins] / s["values"][iw] / n_fixed
                sq[n] += s["values"][iw] * n_fixed * (n_fixed - 1) * w * w
    b = summ["bpf"]
    check(summ["offcpu"]["identity_ok"] and b["ringbuf_dropped_offcpu"] == 0
          and b["offcpu_state_full"] == 0,
          "run %d: every switch accounted, no ring or state drops" % i)
    tracked = b["offcpu_captured"] + b["offcpu_sampled_out"]
    return est, {n: t["spans"][n]["ns"] for n in SPANS}, sq, tracked, b


d = tmpdir()

# ---------------------------------------------------------------- fixed N
N = 4
rows = []
skipped = tracked_all = 0
for i in range(RUNS):
    est, tru, sq, tracked, b = one_run(d, i, ["--off-cpu-sample", str(N)], N)
    rows.append((est, tru, sq))
    skipped += b["offcpu_sampled_out"]
    tracked_all += tracked
    print("run %d: " % i + ", ".join("%s est %.1f ms / truth %.1f ms (%+.1f%%, pred sd %.1f%%)" % (
        n, est[n] / 1e6, tru[n] / 1e6, 100 * (est[n] / tru[n] - 1),
        100 * math.sqrt(sq[n]) / tru[n]) for n in SPANS), flush=True)

frac = skipped / tracked_all
check(abs(frac - (N - 1) / N) <= 0.03,
      "1 in %d: %.1f%% of %d tracked switch-outs were sampled out (expected %.1f%%)" % (
          N, 100 * frac, tracked_all, 100 * (N - 1) / N))
for n in SPANS:
    ratios = [r[0][n] / r[1][n] for r in rows]
    pred = [math.sqrt(r[2][n]) / r[1][n] for r in rows]
    pooled = sum(r[0][n] for r in rows) / sum(r[1][n] for r in rows)
    mean_pred = sum(pred) / len(pred)
    sd = math.sqrt(sum((x - sum(ratios) / len(ratios)) ** 2 for x in ratios) / (len(ratios) - 1))
    se = mean_pred / math.sqrt(len(rows))
    print("%s: pooled ratio %.4f (bias %+.2f%%, standard error %.2f%%), run sd %.2f%% vs "
          "predicted %.2f%%" % (n, pooled, 100 * (pooled - 1), 100 * se, 100 * sd,
                                100 * mean_pred), flush=True)
    # 3% or 3 standard errors of the pooled ratio, whichever is wider: for
    # est_long_span the standard error is ~1.3%, so a fixed 3% bound failed
    # an unbiased estimator about 1 run in 45 (seen twice: -3.16%, -3.21%).
    bound = max(0.03, 3 * se)
    check(abs(pooled - 1) <= bound, "%s: estimator bias %+.2f%% within %.1f%% (3%% or 3 standard "
          "errors) over %d runs" % (n, 100 * (pooled - 1), 100 * bound, len(rows)))
    worst = max(abs(x - 1) / p for x, p in zip(ratios, pred))
    check(worst <= 5, "%s: every run within 5 predicted sd (worst %.1f)" % (n, worst))
    check(0.3 * mean_pred <= sd <= 3 * mean_pred,
          "%s: run-to-run sd %.2f%% is 0.3x..3x the predicted %.2f%% (it samples, and no "
          "noisier than theory)" % (n, 100 * sd, 100 * mean_pred))

# ---------------------------------------------------------------- adaptive
tot_e = tot_t = 0
ns = []
for i in range(max(2, (2 * RUNS) // 3)):
    est, tru, _, tracked, b = one_run(d, 100 + i, ["--off-cpu-rate", ADAPTIVE_RATE], 0)
    tot_e += sum(est.values())
    tot_t += sum(tru.values())
    ns.append(tracked / max(1, b["offcpu_captured"]))
    print("adaptive run %d: est %.1f ms / truth %.1f ms (%+.1f%%), mean N %.2f" % (
        i, sum(est.values()) / 1e6, sum(tru.values()) / 1e6,
        100 * (sum(est.values()) / sum(tru.values()) - 1), ns[-1]), flush=True)
check(min(ns) > 1.5, "adaptive sampling sampled (mean N per run %s)" % ["%.2f" % x for x in ns])
check(abs(tot_e / tot_t - 1) <= 0.03, "adaptive: pooled bias %+.2f%% within 3%%" % (
    100 * (tot_e / tot_t - 1)))
