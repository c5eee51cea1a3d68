/* SPDX-License-Identifier: MIT */
/*
 * bpf_metrics.c - see bpf_metrics.h.
 */
#include <stddef.h>

#include "collector/agent/bpf_metrics.h"
#include "collector/pipeline/counters.h"

void sp_bpf_metrics__render(struct sp_metrics_buf *b, const uint64_t bpf[SP_CNT__MAX])
{
	for (int f = 0; f < SP_CF__MAX; f++) {
		const struct sp_counter_family_info *fam = &sp_counter_families[f];

		sp_metrics__family(b, fam->metric, SP_METRIC_COUNTER, fam->help);
		for (int i = 0; i < SP_CNT__MAX; i++) {
			const struct sp_counter_info *c = &sp_counters[i];
			const char *labels[] = { fam->label, c->value, NULL };

			if (c->family != (enum sp_counter_family)f)
				continue;
			sp_metrics__u64(b, fam->metric, fam->label ? labels : NULL, bpf[i]);
		}
	}
}
