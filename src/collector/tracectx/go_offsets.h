/* SPDX-License-Identifier: MIT */
/*
 * go_offsets.h - the Go runtime offsets the BPF label reader needs, by Go
 * version, for binaries without DWARF (the usual release build is
 * `-ldflags=-s -w`).  The one table, with its sources, is in go_offsets.c;
 * a binary that has DWARF is read from its own DWARF instead
 * (go_binary.c), which also tells when the table would have been wrong.
 */
#ifndef SPANPROF_GO_OFFSETS_H
#define SPANPROF_GO_OFFSETS_H

#include <stdbool.h>
#include <stdint.h>

#include "spanprof/abi.h"

#define SP_GO_TABLE_MIN_MINOR 17	/* oldest Go 1.x in the table */
#define SP_GO_TABLE_MAX_MINOR 26	/* newest Go 1.x in the table */

/* Fills g_m, m_curg, g_labels and layout of *d for Go 1.minor (tls_g and
 * go_minor are left alone).  false when minor is outside the table: the
 * caller counts the binary as unknown, it never guesses. */
bool sp_go_offsets__for(uint16_t minor, struct sp_go_desc *d);

/* Go 1.x from a runtime.buildVersion string: "go1.19.8", "go1.22rc1",
 * "go1.21", "devel go1.23-abc123 ..." (a development build names the
 * release it leads to).  0 and *minor, or -EINVAL for anything else
 * (including Go 2 and a missing minor). */
int sp_go_offsets__parse_version(const char *v, uint16_t *minor);

#endif
