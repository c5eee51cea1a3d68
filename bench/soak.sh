#!/usr/bin/env bash
# bench/soak.sh - the long churn soak of `spanprof agent` (issue 7).
#
# For DURATION seconds (default 1800 = 30 min):
#   - spanprof agent at HZ (97) with --off-cpu, exporting every INTERVAL
#     (10 s) to a loopback OTLP endpoint that answers 503 to every third
#     request (a python3 http.server written below; 200 with an empty
#     ExportProfilesServiceResponse otherwise) and counts the samples it
#     accepted by decoding the bodies (tests/integration/spt.py's reader);
#   - an exec load: WORKERS (4) processes vfork+exec'ing a tiny static
#     binary at RATE (1000) per second in all, reaping every child (it
#     measures and prints the rate it sustains);
#   - the agent's RSS (VmRSS) sampled every 30 s, and /metrics with it.
# At the end: the loop stops, the agent gets SIGTERM (it flushes), and the
# accounting identity is checked:
#   produced (samples received from the ring + ring buffer drops)
#     = exported (samples in bodies the endpoint accepted)
#     + dropped by reason (aggregator full, memory guard, malformed,
#       snapshot/encode failures, export: queue full or retries exhausted).
# Output: OUT (default $O/soak/) holds rss.tsv, metrics-*.txt, agent.log,
# execs.log, server.json and report.txt (what docs/reliability.md quotes).
# Exit 0 when the agent did not crash and the identity holds.
#
#   sudo bash bench/soak.sh                       # 30 minutes
#   sudo DURATION=300 O=build-rel bash bench/soak.sh
set -u
cd "$(dirname "$0")/.."
ROOT=$PWD
O=${O:-build}
DURATION=${DURATION:-1800}
RATE=${RATE:-1000}
WORKERS=${WORKERS:-4}
HZ=${HZ:-97}
INTERVAL=${INTERVAL:-10}
OUT=${OUT:-$O/soak}
SPANPROF=$ROOT/$O/spanprof
[ -x "$SPANPROF" ] || { echo "soak: $SPANPROF not built (make O=$O)" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || { echo "soak: needs root (BPF)" >&2; exit 1; }
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
work=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT

# ------------------------------------------------------------ exec loop
# WORKERS processes, each paced at RATE/WORKERS, vfork+execve a tiny static
# binary (one syscall: exit(0)) and reap it: the generator costs little
# more than the exec itself, so the rate reached measures the machine and
# the agent, not the loop (posix_spawn of /bin/true from one process, the
# first version, sustained 847/s here).  EXEC_BIN=/bin/true uses a dynamic
# binary instead.
cat >"$work/tiny.c" <<'EOF'
/* exit(0) with no libc: the cheapest complete exec. */
void _start(void)
{
	__asm__ volatile("mov $60, %eax\n\txor %edi, %edi\n\tsyscall");
}
EOF
cat >"$work/execloop.c" <<'EOF'
/* execloop RATE SECONDS WORKERS BIN: WORKERS children each vfork+exec BIN at
 * RATE/WORKERS per second for SECONDS, reaping every child; counts live in
 * shared memory, the parent prints the achieved rate every 30 s and in
 * total. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void worker(double rate, double t0, double secs, char *bin,
		   _Atomic unsigned long *n, _Atomic unsigned long *fails)
{
	char *args[] = { bin, NULL };
	unsigned long mine = 0;
	double t;

	while ((t = now()) - t0 < secs) {
		double due = t0 + mine / rate;	/* behind: exec now; ahead: sleep */
		pid_t pid;

		if (t < due) {
			struct timespec ts = { 0, (long)((due - t) * 1e9) };

			nanosleep(&ts, NULL);
		}
		pid = vfork();
		if (pid == 0) {
			execve(bin, args, environ);
			_exit(127);
		}
		if (pid < 0 || waitpid(pid, NULL, 0) != pid) {
			atomic_fetch_add(fails, 1);
			continue;
		}
		mine++;
		atomic_fetch_add(n, 1);
	}
	_exit(0);
}

int main(int argc, char **argv)
{
	double rate = argc > 4 ? atof(argv[1]) : 0, secs = argc > 4 ? atof(argv[2]) : 0;
	int workers = argc > 4 ? atoi(argv[3]) : 0;
	_Atomic unsigned long *sh;
	double t0 = now(), last = t0, t;
	unsigned long n_last = 0, n;

	if (rate <= 0 || workers < 1) {
		fprintf(stderr, "usage: execloop RATE SECONDS WORKERS BIN\n");
		return 2;
	}
	sh = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		return 1;
	for (int i = 0; i < workers; i++)
		if (fork() == 0)
			worker(rate / workers, t0, secs, argv[4], &sh[0], &sh[1]);
	while (now() - t0 < secs) {
		sleep(1);
		t = now();
		if (t - last >= 30) {
			n = atomic_load(&sh[0]);
			printf("%.0f s: %.0f execs/s (last 30 s)\n", t - t0, (n - n_last) / (t - last));
			fflush(stdout);
			last = t;
			n_last = n;
		}
	}
	while (wait(NULL) > 0)
		;
	t = now();
	n = atomic_load(&sh[0]);
	printf("total %lu execs in %.1f s = %.0f execs/s (target %.0f, %d workers), "
	       "exec failures %lu\n", n, t - t0, n / (t - t0), rate, workers,
	       (unsigned long)atomic_load(&sh[1]));
	return 0;
}
EOF
cc -O2 -Wall -o "$work/execloop" "$work/execloop.c" || exit 1
cc -O2 -static -nostdlib -o "$work/tiny" "$work/tiny.c" || exit 1
EXEC_BIN=${EXEC_BIN:-$work/tiny}

# ------------------------------------------------------------ flaky endpoint
cat >"$work/flaky.py" <<'EOF'
import gzip, http.server, json, os, signal, sys, tempfile, threading
sys.path.insert(0, sys.argv[3])
from spt import read_otlp
port_file, out = sys.argv[1], sys.argv[2]
st = {"requests": 0, "accepted": 0, "refused_503": 0, "samples_accepted": 0,
      "samples_without_timestamps": 0, "bytes": 0, "decode_errors": 0}
lock = threading.Lock()
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        with lock:
            st["requests"] += 1
            st["bytes"] += len(body)
            fail = st["requests"] % 3 == 0
        if fail:
            with lock:
                st["refused_503"] += 1
            self.send_response(503)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        n = nots = 0
        try:
            with tempfile.NamedTemporaryFile(suffix=".pb") as f:
                f.write(body)
                f.flush()
                for s in read_otlp(f.name):
                    if s["ts"]:
                        n += len(s["ts"])
                    else:
                        nots += 1
                        n += sum(s["values"]) if s["kind"] == "samples" else 1
        except Exception:
            with lock:
                st["decode_errors"] += 1
        with lock:
            st["accepted"] += 1
            st["samples_accepted"] += n
            st["samples_without_timestamps"] += nots
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()
    def log_message(self, *a):
        pass
srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
open(port_file, "w").write(str(srv.server_address[1]))
def stop(*a):
    threading.Thread(target=srv.shutdown).start()
signal.signal(signal.SIGTERM, stop)
srv.serve_forever()
with lock:
    json.dump(st, open(out, "w"))
EOF
python3 "$work/flaky.py" "$work/port" "$OUT/server.json" "$ROOT/tests/integration" &
server=$!
pids+=("$server")
for _ in $(seq 50); do [ -s "$work/port" ] && break; sleep 0.1; done
port=$(cat "$work/port")
mport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')

metrics() { python3 -c "import urllib.request,sys; sys.stdout.write(urllib.request.urlopen('http://127.0.0.1:$mport/metrics', timeout=5).read().decode())"; }

# ------------------------------------------------------------ agent
"$SPANPROF" agent -F "$HZ" --off-cpu --interval "$INTERVAL" \
	--endpoint "http://127.0.0.1:$port" --metrics-addr "127.0.0.1:$mport" \
	2>"$OUT/agent.log" &
agent=$!
pids+=("$agent")
for _ in $(seq 100); do metrics >/dev/null 2>&1 && break; sleep 0.2; done
metrics >"$OUT/metrics-0.txt" || { echo "soak: the agent did not come up" >&2; cat "$OUT/agent.log" >&2; exit 1; }
echo "soak: agent pid $agent, endpoint port $port (503 every third request), metrics $mport;" \
	"$DURATION s at $HZ Hz + off-CPU, $RATE execs/s target"

"$work/execloop" "$RATE" "$DURATION" "$WORKERS" "$EXEC_BIN" >"$OUT/execs.log" &
loader=$!
pids+=("$loader")
printf 't_s\trss_kib\tprocess_resident_bytes\n' >"$OUT/rss.tsv"
t0=$SECONDS
crashed=0
while kill -0 "$loader" 2>/dev/null; do
	sleep 30 &
	wait $! 2>/dev/null
	t=$((SECONDS - t0))
	if ! kill -0 "$agent" 2>/dev/null; then
		crashed=1
		echo "soak: the agent died at $t s" >&2
		break
	fi
	rss=$(awk '/^VmRSS/ {print $2}' "/proc/$agent/status")
	metrics >"$OUT/metrics-$t.txt" 2>/dev/null
	prb=$(awk '/^process_resident_memory_bytes/ {print $2}' "$OUT/metrics-$t.txt")
	printf '%s\t%s\t%s\n' "$t" "$rss" "$prb" >>"$OUT/rss.tsv"
	echo "soak: $t s: agent RSS $rss KiB; $(tail -n 1 "$OUT/execs.log")"
done
wait "$loader" 2>/dev/null
metrics >"$OUT/metrics-final.txt" 2>/dev/null
# the agent's CPU time (utime + stime, clock ticks) over its life
awk -v hz="$(getconf CLK_TCK)" '{print ($14 + $15) / hz}' "/proc/$agent/stat" >"$OUT/agent_cpu_s" 2>/dev/null
kill -TERM "$agent"
wait "$agent"
agent_rc=$?
kill -TERM "$server"
wait "$server"

# ------------------------------------------------------------ report
python3 - "$OUT" "$agent_rc" "$crashed" "$DURATION" "$HZ" "$RATE" <<'EOF' | tee "$OUT/report.txt"
import glob, json, os, re, sys
out, agent_rc, crashed, dur, hz, rate = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6]
def prom(path):
    m = {}
    for line in open(path):
        if line.startswith("#") or not line.strip():
            continue
        k, v = line.rsplit(" ", 1)
        m[k] = float(v)
    return m
def g(m, name, **lab):
    key = name + ("{" + ",".join('%s="%s"' % kv for kv in sorted(lab.items())) + "}" if lab else "")
    if key in m:
        return m[key]
    for k, v in m.items():   # label order as printed
        if k.startswith(name + "{") and all('%s="%s"' % kv in k for kv in lab.items()):
            return v
    return 0.0
rows = [l.split("\t") for l in open(os.path.join(out, "rss.tsv")).read().split("\n")[1:] if l]
rss = [(int(r[0]), int(r[1])) for r in rows if r[1]]
log = open(os.path.join(out, "agent.log")).read()
srv = json.load(open(os.path.join(out, "server.json")))
execs = open(os.path.join(out, "execs.log")).read().strip().splitlines()
fin = re.search(r"received (\d+) samples, aggregated (\d+), submitted (\d+); exported (\d+) of "
                r"(\d+) batches; dropped: aggregator full (\d+), memory guard (\d+), export (\d+)", log)
m = prom(os.path.join(out, "metrics-final.txt")) if os.path.exists(os.path.join(out, "metrics-final.txt")) else {}
print("soak: %s s at %s Hz + off-CPU, exec target %s/s" % (dur, hz, rate))
print("exec loop: %s" % (execs[-1] if execs else "no output"))
print("agent exit status %d%s" % (agent_rc, " (CRASHED during the run)" if crashed else ""))
try:
    cpu = float(open(os.path.join(out, "agent_cpu_s")).read())
    print("agent CPU: %.1f s in %s s = %.1f%% of one CPU" % (cpu, dur, 100 * cpu / float(dur)))
except (OSError, ValueError):
    print("agent CPU: not read")
if rss:
    first = [v for t, v in rss if t <= 120] or [rss[0][1]]
    last = [v for t, v in rss if t >= rss[-1][0] - 300] or [rss[-1][1]]
    print("RSS KiB: first %d, min %d, max %d, last %d; median of the first 2 min %d, of the last 5 min %d"
          % (rss[0][1], min(v for _, v in rss), max(v for _, v in rss), rss[-1][1],
             sorted(first)[len(first) // 2], sorted(last)[len(last) // 2]))
print("endpoint: %d requests, %d answered 503, %d accepted; %d samples in accepted bodies "
      "(%d samples without timestamps), decode errors %d"
      % (srv["requests"], srv["refused_503"], srv["accepted"], srv["samples_accepted"],
         srv["samples_without_timestamps"], srv["decode_errors"]))
ok = not crashed and agent_rc == 0 and srv["decode_errors"] == 0
if not fin:
    print("no final accounting line in agent.log")
    sys.exit(1)
R, A, S, bex, bsub, agg_full, memg, exp_drop = (int(x) for x in fin.groups())
ring = g(m, "spanprof_dropped_samples_total", reason="ringbuf_full")
malformed = g(m, "spanprof_dropped_samples_total", reason="malformed")
snap = g(m, "spanprof_dropped_samples_total", reason="snapshot_failed")
enc = g(m, "spanprof_dropped_samples_total", reason="encode_failed")
E = srv["samples_accepted"]
produced = R + ring
dropped = ring + agg_full + memg + malformed + snap + enc + exp_drop
print("agent final: received %d, aggregated %d, submitted %d; batches exported %d of %d" % (R, A, S, bex, bsub))
print("dropped by reason: ringbuf_full %d (last /metrics), aggregator_full %d, memguard %d, "
      "malformed %d, snapshot_failed %d, encode_failed %d, export %d"
      % (ring, agg_full, memg, malformed, snap, enc, exp_drop))
print("identity: produced %d = exported %d + dropped %d -> %s (difference %d)"
      % (produced, E, dropped, "HOLDS" if produced == E + dropped else "DOES NOT HOLD",
         produced - E - dropped))
print("chain: received %d = aggregated %d + aggregator full %d + memguard %d + malformed %d: %s; "
      "aggregated %d = submitted %d + snapshot/encode %d: %s; submitted %d = exported %d + export drops %d: %s"
      % (R, A, agg_full, memg, malformed, R == A + agg_full + memg + malformed,
         A, S, snap + enc, A == S + snap + enc, S, E, exp_drop, S == E + exp_drop))
ok = ok and produced == E + dropped
print("RESULT: %s" % ("PASS" if ok else "FAIL"))
sys.exit(0 if ok else 1)
EOF
