/* SPDX-License-Identifier: MIT */
/*
 * bpf_metrics.h - every BPF counter as Prometheus text, generated from the
 * counter table (collector/pipeline/counters.h) the record summary uses:
 * one family per sp_counter_families row, in the table's order, each with
 * its HELP and TYPE once, then one series per counter of that family.
 */
#ifndef SPANPROF_BPF_METRICS_H
#define SPANPROF_BPF_METRICS_H

#include <stdint.h>

#include "collector/agent/metrics.h"
#include "spanprof/abi.h"

void sp_bpf_metrics__render(struct sp_metrics_buf *b, const uint64_t bpf[SP_CNT__MAX]);

#endif
