/*
 * ctx_worker.c - a libspanctx user for test_tracectx_models.py, compiled by
 * that test in each TLS model (variable in the main executable, TLSDESC in
 * a shared library, legacy general-dynamic, -static, dlopen).
 *
 * Publishes its process context, enters one span with fixed ids
 * (trace 0x11 * 16 with byte 15 = MODEL, span 0x22 * 8), prints "ready",
 * then burns CPU inside the span for SECONDS.  With LATE set, it first burns
 * outside any span for LATE seconds and publishes only then.
 * Usage: ctx_worker MODEL SECONDS [LATE] [LIBPATH (dlopen build)]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "burn.h"
#include "spanctx.h"

#ifdef CTX_DLOPEN
#include <dlfcn.h>
static int (*p_init)(const char *, const char *const *, size_t);
static int (*p_enter)(struct spanctx_scope *, const uint8_t *, const uint8_t *, uint8_t);
#else
#define p_init spanctx_init
#define p_enter spanctx_span_enter
#endif

int main(int argc, char **argv)
{
	uint8_t trace[16], span[8];
	struct spanctx_scope scope;
	int model = argc > 1 ? atoi(argv[1]) : 1;
	double seconds = argc > 2 ? atof(argv[2]) : 2, late = argc > 3 ? atof(argv[3]) : 0;

#ifdef CTX_DLOPEN
	void *h = dlopen(argc > 4 ? argv[4] : "libspanctx.so", RTLD_NOW);

	if (!h || !(p_init = dlsym(h, "spanctx_init")) ||
	    !(p_enter = dlsym(h, "spanctx_span_enter"))) {
		fprintf(stderr, "ctx_worker: dlopen: %s\n", dlerror());
		return 1;
	}
#endif
	if (late > 0)
		burn(late);
	memset(trace, 0x11, sizeof(trace));
	trace[15] = (uint8_t)model;
	memset(span, 0x22, sizeof(span));
	if (p_init("ctx-worker", NULL, 0) || p_enter(&scope, trace, span, 1)) {
		fprintf(stderr, "ctx_worker: libspanctx failed\n");
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	burn(seconds);
	return 0;
}
