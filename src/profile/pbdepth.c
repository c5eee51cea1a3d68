/* SPDX-License-Identifier: MIT */
/*
 * pbdepth.c - see pbdepth.h.
 */
#include <errno.h>

#include "base/pb_wire.h"
#include "pbdepth.h"

enum {
	K_REQ = SP_PB_OTLP_REQUEST, K_RP, K_RES, K_SP, K_SCOPE, K_DICT, K_KVU, K_KV,
	K_ANY, K_ARRAY, K_KVLIST,
};

/* Field numbers: opentelemetry-proto v1.11 (docs/formats.md). */
const struct sp_pb_edge sp_pb_otlp_request_edges[] = {
	{ K_REQ, 1, K_RP },	/* resource_profiles */
	{ K_REQ, 2, K_DICT },	/* dictionary */
	{ K_RP, 1, K_RES },	/* resource */
	{ K_RP, 2, K_SP },	/* scope_profiles */
	{ K_RES, 1, K_KV },	/* attributes */
	{ K_SP, 1, K_SCOPE },	/* scope */
	{ K_SCOPE, 3, K_KV },	/* attributes */
	{ K_DICT, 6, K_KVU },	/* attribute_table */
	{ K_KVU, 2, K_ANY },	/* value */
	{ K_KV, 2, K_ANY },	/* value */
	{ K_ANY, 5, K_ARRAY },	/* array_value */
	{ K_ANY, 6, K_KVLIST },	/* kvlist_value */
	{ K_ARRAY, 1, K_ANY },	/* values */
	{ K_KVLIST, 1, K_KV },	/* values */
};
const size_t sp_pb_otlp_request_n_edges =
	sizeof(sp_pb_otlp_request_edges) / sizeof(sp_pb_otlp_request_edges[0]);

static uint8_t sub_kind(const struct sp_pb_edge *edges, size_t n, uint8_t kind, uint64_t field)
{
	for (size_t i = 0; i < n; i++)
		if (edges[i].kind == kind && edges[i].field == field)
			return edges[i].sub;
	return 0;
}

static int walk(const uint8_t *p, const uint8_t *end, uint8_t kind,
		const struct sp_pb_edge *edges, size_t n, int depth)
{
	if (depth < 0)
		return -EBADMSG;
	while (p < end) {
		uint64_t key, v;
		uint8_t sub;

		if (sp_pb_wire__varint(&p, end, &key))
			return -EBADMSG;
		switch (key & 7) {
		case 0:
			if (sp_pb_wire__varint(&p, end, &v))
				return -EBADMSG;
			break;
		case 1:
			if (end - p < 8)
				return -EBADMSG;
			p += 8;
			break;
		case 5:
			if (end - p < 4)
				return -EBADMSG;
			p += 4;
			break;
		case 2:
			if (sp_pb_wire__varint(&p, end, &v) || v > (uint64_t)(end - p))
				return -EBADMSG;
			sub = sub_kind(edges, n, kind, key >> 3);
			if (sub && walk(p, p + v, sub, edges, n, depth - 1))
				return -EBADMSG;
			p += v;
			break;
		default:	/* groups and reserved wire types */
			return -EBADMSG;
		}
	}
	return 0;
}

int sp_pb__check_depth(const uint8_t *buf, size_t len, uint8_t root,
		       const struct sp_pb_edge *edges, size_t n_edges, int max_depth)
{
	return walk(buf, buf + len, root, edges, n_edges, max_depth);
}
