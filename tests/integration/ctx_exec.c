/*
 * ctx_exec.c - for test_tracectx_exec_quiet.py: a process that publishes
 * its trace context, then execs a program that publishes none.
 *
 * "ctx_exec pub SECONDS QUIET_PATH QUIET_SECONDS": publishes the process
 * context, enters a span (trace 0x33 * 16, span 0x44 * 8), burns CPU in it
 * for SECONDS, then execs QUIET_PATH (a copy of this very file, so its
 * TLS variable sits at the same offset) as "quiet".
 * "quiet SECONDS": never publishes a process context (no OTEL_CTX mapping,
 * so nothing tells a collector to read its TLS), yet writes a valid record
 * (trace 0x55 * 16, span 0x66 * 8) into the TLS variable and burns CPU for
 * SECONDS.  A collector that kept the first image's descriptor reads those
 * ids; one that reset it on the exec reads none.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "burn.h"
#include "spanctx.h"

static int in_span(uint8_t tb, uint8_t sb, struct spanctx_scope *scope)
{
	uint8_t trace[16], span[8];

	memset(trace, tb, sizeof(trace));
	memset(span, sb, sizeof(span));
	return spanctx_span_enter(scope, trace, span, 1);
}

int main(int argc, char **argv)
{
	struct spanctx_scope scope;

	if (argc == 5 && !strcmp(argv[1], "pub")) {
		if (spanctx_init("ctx-exec", NULL, 0) || in_span(0x33, 0x44, &scope)) {
			fprintf(stderr, "ctx_exec: libspanctx failed\n");
			return 1;
		}
		burn(atof(argv[2]));
		spanctx_span_leave(&scope);
		execl(argv[3], argv[3], "quiet", argv[4], (char *)NULL);
		perror("ctx_exec: exec");
		return 1;
	}
	if (argc == 3 && !strcmp(argv[1], "quiet")) {
		if (in_span(0x55, 0x66, &scope)) {
			fprintf(stderr, "ctx_exec: libspanctx failed\n");
			return 1;
		}
		burn(atof(argv[2]));
		return 0;
	}
	fprintf(stderr, "usage: ctx_exec pub SECONDS QUIET_PATH QUIET_SECONDS | quiet SECONDS\n");
	return 2;
}
