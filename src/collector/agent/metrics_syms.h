/* SPDX-License-Identifier: MIT */
/*
 * metrics_syms.h - the agent's /metrics families for host symbols: JIT
 * perf-map reads (what was copied, refused and why), the kernel layout,
 * store writes and the upload to `spanprof-symbolizer serve` (queue,
 * outcomes, HTTP attempts).
 */
#ifndef SPANPROF_AGENT_METRICS_SYMS_H
#define SPANPROF_AGENT_METRICS_SYMS_H

#include "base/metrics_text.h"

struct sp_hostsyms;
struct sp_uploader;

void sp_agent_metrics__syms(struct sp_metrics_buf *b, struct sp_hostsyms *hs,
			    struct sp_uploader *up);

#endif
