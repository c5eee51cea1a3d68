// SPDX-License-Identifier: MIT
/*
 * go_offsets.c - see go_offsets.h.
 *
 * x86-64 offsets of runtime.g.m, runtime.m.curg and runtime.g.labels and
 * the label representation, per Go release:
 *
 *   Go         g.m   m.curg  g.labels  labels
 *   1.17-1.20  48    192     360       map[string]string
 *   1.21-1.22  48    192     344       map
 *   1.23       48    192     352       map
 *   1.24       48    192     352       sorted []label slice
 *   1.25       48    184     344       slice
 *   1.26       48    184     352       slice
 *
 * Sources: open-telemetry/opentelemetry-ebpf-profiler
 * interpreter/go/runtime/offsets.go (values read from each release's DWARF
 * with its tools/gooffsets, citing golang/go src/runtime/runtime2.go at
 * 80e2e474 for m, curg, labels); parca-dev/parca-agent
 * bpf/unwinders/go_traceid.h at da59a7c0 agrees for 1.20 (360) and 1.22
 * (344).  Checked here: Go 1.19.8 (Debian 12) from its own DWARF, and the
 * go_labels integration test reads a real 1.19 process with the 1.19 row.
 * The 1.25 m.curg shift comes from gobuf.ret's removal (Go CL 652276),
 * every m field after m.morebuf moves by 8.  The slice layout of 1.24+ is
 * golang/go src/runtime/pprof/label.go: labelMap is struct{ LabelSet },
 * LabelSet is struct{ list []label }, label is struct{ key, value string }.
 * Nothing newer than 1.26 is assumed: a newer binary without DWARF is
 * counted as unknown (OTel too refuses versions past its table).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "collector/tracectx/go_offsets.h"

struct go_row {
	uint16_t from_minor;	/* first Go 1.x of the row; a row lasts until the next */
	uint16_t m_curg;
	uint16_t g_labels;
	uint8_t layout;
};

#define GO_G_M 48	/* stack(16) + stackguard0/1 + _panic + _defer: every version */

static const struct go_row go_rows[] = {
	{ 17, 192, 360, SP_GO_LABELS_MAP },
	{ 21, 192, 344, SP_GO_LABELS_MAP },
	{ 23, 192, 352, SP_GO_LABELS_MAP },
	{ 24, 192, 352, SP_GO_LABELS_SLICE },
	{ 25, 184, 344, SP_GO_LABELS_SLICE },
	{ 26, 184, 352, SP_GO_LABELS_SLICE },
};

bool sp_go_offsets__for(uint16_t minor, struct sp_go_desc *d)
{
	const struct go_row *r = NULL;

	if (!d || minor < SP_GO_TABLE_MIN_MINOR || minor > SP_GO_TABLE_MAX_MINOR)
		return false;
	for (size_t i = 0; i < sizeof(go_rows) / sizeof(go_rows[0]); i++)
		if (go_rows[i].from_minor <= minor)
			r = &go_rows[i];
	d->g_m = GO_G_M;
	d->m_curg = r->m_curg;
	d->g_labels = r->g_labels;
	d->layout = r->layout;
	return true;
}

int sp_go_offsets__parse_version(const char *v, uint16_t *minor)
{
	const char *p;
	char *end;
	unsigned long n;

	if (!v || !minor)
		return -EINVAL;
	if (!strncmp(v, "devel ", 6))
		v += 6;
	if (strncmp(v, "go1.", 4))
		return -EINVAL;
	p = v + 4;
	if (*p < '0' || *p > '9')
		return -EINVAL;
	n = strtoul(p, &end, 10);
	if (n > 1000 || (*end && *end != '.' && *end != '-' && *end != ' ' &&
			 strncmp(end, "rc", 2) && strncmp(end, "beta", 4)))
		return -EINVAL;
	*minor = (uint16_t)n;
	return 0;
}
