/* SPDX-License-Identifier: MIT */
/*
 * spanctx_hammer.c - build/spanctx-hammer: a torn-write hammer for readers
 * of the OTEP 4947 thread context (the BPF sampler's integration test).
 *
 * Contract: each of --threads threads switches its published context as
 * fast as it can for --duration seconds, through the libspanctx API only:
 * enter a span, republish it with an attribute, enter a nested span, leave
 * both (so NULL is published between iterations).  Every record it ever
 * publishes satisfies, for i in 0..7,
 *
 *   span_id[i] == trace_id[i] ^ trace_id[15 - i] ^ salt ^ 0xa5,
 *   with bit 0 of span_id[0] forced to 1,
 *
 * where salt is the value of attribute key 0 ("hammer.salt", two lower-case
 * hex digits) when present, else 0; attribute key 1 ("hammer.trace"), when
 * present, is the trace id again (32 lower-case hex digits).  trace_flags is always 1.  A reader
 * that ever sees a record with valid == 1 violating this mixed two
 * contexts.  Prints one line: threads, seconds, context switches per
 * second (each iteration publishes 6 pointers).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "spanctx.h"

static atomic_bool stop;

static void derive_span(const uint8_t t[16], uint8_t salt, uint8_t out[8])
{
	for (int i = 0; i < 8; i++)
		out[i] = (uint8_t)(t[i] ^ t[15 - i] ^ salt ^ 0xa5);
	out[0] |= 1;
}

static const char hex[] = "0123456789abcdef";

static void *hammer(void *arg)
{
	uint64_t n = (uint64_t)(uintptr_t)arg << 48, iters = 0;

	spanctx_set_thread_name("spanctx-hammer");
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		struct spanctx_scope a, b;
		struct spanctx_context c;
		uint8_t t[16], s[8], salt = (uint8_t)(n * 7 + 3);
		char thex[33];

		memcpy(t, &n, 8);
		memcpy(t + 8, &n, 8);
		t[15] ^= 0x5a;
		spanctx_trace_id_hex(t, thex);
		derive_span(t, 0, s);
		if (spanctx_span_enter(&a, t, s, 1))
			break;
		spanctx_span_set_attr(1, thex, 32);
		memset(&c, 0, sizeof(c));
		memcpy(c.trace_id, t, 16);
		derive_span(t, salt, c.span_id);
		c.trace_flags = 1;
		c.attrs_size = 4;
		c.attrs[0] = 0;
		c.attrs[1] = 2;
		c.attrs[2] = (uint8_t)hex[salt >> 4];
		c.attrs[3] = (uint8_t)hex[salt & 15];
		spanctx_restore(&b, &c);
		spanctx_span_set_attr(1, thex, 32);
		spanctx_span_leave(&b);
		spanctx_span_leave(&a);
		n++;
		iters++;
	}
	return (void *)(uintptr_t)iters;
}

int main(int argc, char **argv)
{
	static const char *const keys[] = { "hammer.salt", "hammer.trace" };
	double secs = 5;
	int threads = 1, i;
	pthread_t t[64];
	uint64_t total = 0;

	for (i = 1; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--duration") == 0)
			secs = atof(argv[i + 1]);
		else if (strcmp(argv[i], "--threads") == 0)
			threads = atoi(argv[i + 1]);
		else
			break;
	}
	if (i != argc || secs <= 0 || threads < 1 || threads > 64) {
		fprintf(stderr, "usage: spanctx-hammer [--duration SEC] [--threads N<=64]\n");
		return 2;
	}
	if (spanctx_init("spanctx-hammer", keys, 2))
		return 1;
	for (i = 0; i < threads; i++)
		if (pthread_create(&t[i], NULL, hammer, (void *)(uintptr_t)(i + 1)))
			return 1;
	usleep((useconds_t)(secs * 1e6));
	atomic_store(&stop, true);
	for (i = 0; i < threads; i++) {
		void *r;

		pthread_join(t[i], &r);
		total += (uint64_t)(uintptr_t)r;
	}
	printf("spanctx-hammer: pid=%d threads=%d seconds=%.1f "
	       "iterations=%llu publishes_per_sec=%.0f\n", (int)getpid(),
	       threads, secs, (unsigned long long)total, 6.0 * (double)total / secs);
	spanctx_shutdown();
	return 0;
}
