// SPDX-License-Identifier: MIT
/*
 * bench_aggregator.c - ns per sp_agg__add for a realistic mix.
 *
 * 1000 distinct stacks of 30 frames (10 kernel + 20 user), 1e6 adds in a
 * fixed pseudo-random order, so after the first touch of each stack nearly
 * every add is a merge.  Two configurations: the default budget (64 MiB,
 * 65536 entries) without timestamps, and 128 MiB with timestamps (the
 * default 64 MiB event log holds ~754 K events, fewer than 1e6).  Prints
 * min and median over several runs, plus the cost of one foreach (which
 * groups the timestamps) and of reset.  Then "cold": bursts of adds after
 * a cache sweep, as at 97 Hz (bench_cold).  Any drop is an error here.
 *
 *   make O=build build/bench/bench_aggregator && build/bench/bench_aggregator [runs]
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collector/pipeline/aggregator.h"
#include "benchutil.h"

#define NSTACKS	1000
#define NFRAMES	30
#define NADDS	1000000
#define MAXRUNS	31

struct bstack {
	struct sp_agg_key key;
	uint64_t addrs[NFRAMES];
	uint32_t maps[NFRAMES];
};

static int sum_cb(const struct sp_agg_entry *e, void *ctx)
{
	*(uint64_t *)ctx += e->count + (e->timestamps ? e->timestamps[0] : 0);
	return 0;
}

static struct bstack st[NSTACKS];
static uint16_t order[NADDS];

static int bench(const struct sp_agg_config *cfg, int runs)
{
	uint64_t add_ns[MAXRUNS], fe_ns[MAXRUNS], rs_ns[MAXRUNS], sink = 0;
	struct sp_agg *a = NULL;
	int ret = 1, r, i;

	a = sp_agg__new(cfg);
	if (!a) {
		fprintf(stderr, "sp_agg__new: %s\n", strerror(errno));
		goto out;
	}
	for (r = 0; r < runs; r++) {
		uint64_t t0 = bench__ns(CLOCK_MONOTONIC), t1, t2, t3;

		for (i = 0; i < NADDS; i++) {
			const struct bstack *s = &st[order[i]];
			struct sp_agg_frames fr = { .addrs = s->addrs, .mappings = s->maps };

			if (sp_agg__add(a, &s->key, &fr, (uint64_t)i, 1)) {
				fprintf(stderr, "unexpected drop at %d\n", i);
				goto out;
			}
		}
		t1 = bench__ns(CLOCK_MONOTONIC);
		sp_agg__foreach(a, sum_cb, &sink);
		t2 = bench__ns(CLOCK_MONOTONIC);
		sp_agg__reset(a);
		t3 = bench__ns(CLOCK_MONOTONIC);
		add_ns[r] = t1 - t0;
		fe_ns[r] = t2 - t1;
		rs_ns[r] = t3 - t2;
	}
	qsort(add_ns, (size_t)runs, sizeof(uint64_t), bench__cmp_u64);
	qsort(fe_ns, (size_t)runs, sizeof(uint64_t), bench__cmp_u64);
	qsort(rs_ns, (size_t)runs, sizeof(uint64_t), bench__cmp_u64);
	printf("budget %zu MiB, timestamps %s: %d stacks x %d frames, %d adds, "
	       "%d runs, bytes_reserved %zu\n", cfg->byte_budget >> 20,
	       cfg->keep_timestamps ? "kept" : "off", NSTACKS, NFRAMES, NADDS,
	       runs, sp_agg__stats(a)->bytes_reserved);
	printf("  add      ns/op  min %.1f  median %.1f\n",
	       (double)add_ns[0] / NADDS, (double)add_ns[runs / 2] / NADDS);
	printf("  foreach  ms     min %.2f  median %.2f\n",
	       fe_ns[0] / 1e6, fe_ns[runs / 2] / 1e6);
	printf("  reset    us     min %.1f  median %.1f\n",
	       rs_ns[0] / 1e3, rs_ns[runs / 2] / 1e3);
	ret = sink ? 0 : 1;
out:
	sp_agg__free(a);
	return ret;
}

/*
 * Cold: as the collector sees it at 97 Hz, where the consumer drains a
 * burst of samples every few hundred ms and other programs run between
 * (an entry's lines were last touched about a second before).  Each round
 * sweeps a buffer larger than the caches, then times a burst of adds of
 * stacks already in the aggregator (hits).
 */
#define COLD_SWEEP (64u << 20)
#define COLD_ROUNDS 301
#define COLD_BURST 64

static int bench_cold(const struct sp_agg_config *cfg)
{
	static uint64_t per_round[COLD_ROUNDS];
	volatile uint8_t *sweep = malloc(COLD_SWEEP);
	struct sp_agg *a = sp_agg__new(cfg);
	uint64_t sink = 0;
	int ret = 1, r, i, k = 0;

	if (!a || !sweep) {
		fprintf(stderr, "cold: out of memory\n");
		goto out;
	}
	for (i = 0; i < NSTACKS; i++) {
		struct sp_agg_frames fr = { .addrs = st[i].addrs, .mappings = st[i].maps };

		if (sp_agg__add(a, &st[i].key, &fr, 0, 1))
			goto out;
	}
	for (r = 0; r < COLD_ROUNDS; r++) {
		uint64_t t0, t1;

		for (size_t b = 0; b < COLD_SWEEP; b += 64)
			sweep[b]++;
		t0 = bench__ns(CLOCK_MONOTONIC);
		for (i = 0; i < COLD_BURST; i++, k = (k + 1) % NADDS) {
			const struct bstack *s = &st[order[k]];
			struct sp_agg_frames fr = { .addrs = s->addrs, .mappings = s->maps };

			if (sp_agg__add(a, &s->key, &fr, (uint64_t)k, 1))
				goto out;
		}
		t1 = bench__ns(CLOCK_MONOTONIC);
		per_round[r] = t1 - t0;
	}
	sp_agg__foreach(a, sum_cb, &sink);
	qsort(per_round, COLD_ROUNDS, sizeof(uint64_t), bench__cmp_u64);
	printf("cold: %d rounds of a %u MiB cache sweep, then %d adds (hits)\n", COLD_ROUNDS,
	       COLD_SWEEP >> 20, COLD_BURST);
	printf("  add      ns/op  min %.1f  median %.1f\n", (double)per_round[0] / COLD_BURST,
	       (double)per_round[COLD_ROUNDS / 2] / COLD_BURST);
	ret = sink ? 0 : 1;
out:
	sp_agg__free(a);
	free((void *)sweep);
	return ret;
}

int main(int argc, char **argv)
{
	const struct sp_agg_config no_ts = {
		.byte_budget = 64u << 20, .max_entries = 65536,
		.keep_timestamps = false,
	};
	const struct sp_agg_config ts = {
		.byte_budget = 128u << 20, .max_entries = 65536,
		.keep_timestamps = true,
	};
	uint64_t x = 0x9e3779b97f4a7c15ull;
	int runs = argc > 1 ? atoi(argv[1]) : 7;
	int i, j;

	if (runs < 1 || runs > MAXRUNS)
		runs = 7;
	for (i = 0; i < NSTACKS; i++) {
		memset(&st[i].key, 0, sizeof(st[i].key));
		st[i].key.pid = 1000 + i % 7;
		st[i].key.tid = 2000 + i % 31;
		st[i].key.n_kernel = 10;
		st[i].key.n_user = 20;
		strcpy(st[i].key.comm, "bench");
		for (j = 0; j < NFRAMES; j++) {
			/* shared roots, distinct leaves, like real stacks */
			st[i].addrs[j] = 0x7f0000000000ull +
				(j < 20 ? (uint64_t)i * 0x40 + j : (uint64_t)j * 0x100);
			st[i].maps[j] = j < 10 ? 1 : 2 + (uint32_t)(j % 4);
		}
	}
	for (i = 0; i < NADDS; i++) {	/* xorshift64 */
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		order[i] = (uint16_t)(x % NSTACKS);
	}

	return bench(&no_ts, runs) | bench(&ts, runs) | bench_cold(&no_ts);
}
