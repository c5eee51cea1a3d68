/*
 * attrs_hostile.c - OTEP 4947 records with hostile attributes, for
 * test_tracectx_attrs.py.  Compiled by that test together with the
 * libspanctx sources (the variable then lives in the main executable).
 *
 * Publishes its process context with the attribute key map {"k0", "k1",
 * "k\xff" (not UTF-8), "trace_id" (a fixed label's name)},
 * then runs one thread per case, each publishing one hand-written record
 * (trace id = CASE repeated, span id = 0x40 + CASE repeated) and burning CPU
 * inside it for SECONDS:
 *
 *   1  attrs_size 65535, 600 bytes of entries (more than the sampler's
 *      128-byte bound: truncated, the entry cut at the bound dropped)
 *   2  a key index outside the key map, bytes that are not UTF-8, the key
 *      whose name is not UTF-8, and the key named like the trace id label
 *   3  a record whose attrs end exactly at the end of a mapping followed by
 *      an inaccessible page (the sampler's one-read fast path faults; the
 *      header and the attrs must still be read)
 *   4  like 3, but attrs_size claims bytes inside the inaccessible page
 *      (attrs unreadable: the sample keeps its ids, without attributes)
 *
 * Prints "ready" when every thread has published.  Usage: attrs_hostile SECONDS
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "spanctx.h"

#define NCASES 4
#define HDR 28

static volatile unsigned long sink;
static double seconds;
static pthread_barrier_t published;
static uint8_t big_rec[HDR + 600] __attribute__((aligned(8)));
static uint8_t odd_rec[HDR + 64] __attribute__((aligned(8)));

static void header(uint8_t *r, int c, uint16_t attrs_size)
{
	memset(r, c, 16);
	memset(r + 16, 0x40 + c, 8);
	r[24] = 1;	/* valid */
	r[25] = 1;	/* sampled */
	memcpy(r + 26, &attrs_size, 2);
}

/* A record ending exactly at the end of a page that is followed by a
 * PROT_NONE page; attrs_size may claim more than is there. */
static uint8_t *edge_record(int c, const uint8_t *attrs, uint16_t n, uint16_t attrs_size)
{
	long pg = sysconf(_SC_PAGESIZE);
	uint8_t *m = mmap(NULL, 2 * pg, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), *r;

	if (m == MAP_FAILED || mprotect(m + pg, pg, PROT_NONE))
		exit(1);
	r = m + pg - HDR - n;	/* 2-byte aligned: n is even */
	header(r, c, attrs_size);
	memcpy(r + HDR, attrs, n);
	return r;
}

static void *run(void *arg)
{
	int c = (int)(intptr_t)arg;
	static const uint8_t edge_attrs[] = { 0, 4, 'e', 'd', 'g', 'e' };
	static const uint8_t bad[] = { 200, 3, 'o', 'u', 't', 1, 4, 'a', 0xff, 0x01, 'b', 2, 1, 'z',
					3, 4, 'f', 'a', 'k', 'e' };
	struct timespec t0, t;
	void *rec = NULL;

	if (c == 1) {
		header(big_rec, c, 65535);
		for (int off = 0; off + 10 <= 600; off += 10) {
			big_rec[HDR + off] = (uint8_t)(off / 10 % 2);	/* k0, k1, k0, ... */
			big_rec[HDR + off + 1] = 8;
			memcpy(big_rec + HDR + off + 2, "abcdefgh", 8);
			big_rec[HDR + off + 2] = (uint8_t)('A' + off / 10 % 26);
		}
		rec = big_rec;
	} else if (c == 2) {
		header(odd_rec, c, sizeof(bad));
		memcpy(odd_rec + HDR, bad, sizeof(bad));
		rec = odd_rec;
	} else if (c == 3) {
		rec = edge_record(c, edge_attrs, sizeof(edge_attrs), sizeof(edge_attrs));
	} else {
		rec = edge_record(c, edge_attrs, sizeof(edge_attrs), 100);
	}
	otel_thread_ctx_v1 = rec;
	pthread_barrier_wait(&published);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		for (int i = 0; i < 200000; i++)
			sink += i ^ (sink >> 3);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < seconds);
	otel_thread_ctx_v1 = NULL;
	return NULL;
}

int main(int argc, char **argv)
{
	static const char *const keys[] = { "k0", "k1", "k\xff", "trace_id" };
	pthread_t th[NCASES];

	seconds = argc > 1 ? atof(argv[1]) : 3;
	if (spanctx_init("attrs-hostile", keys, 4))
		return 1;
	pthread_barrier_init(&published, NULL, NCASES + 1);
	for (int i = 0; i < NCASES; i++)
		if (pthread_create(&th[i], NULL, run, (void *)(intptr_t)(i + 1)))
			return 1;
	pthread_barrier_wait(&published);
	printf("ready\n");
	fflush(stdout);
	for (int i = 0; i < NCASES; i++)
		pthread_join(th[i], NULL);
	return 0;
}
