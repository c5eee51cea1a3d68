// SPDX-License-Identifier: MIT
/*
 * ctx_attrs.c - see ctx_attrs.h.
 */
#include <string.h>

#include "base/utf8.h"
#include "collector/tracectx/ctx_attrs.h"

uint32_t sp_ctx_attrs__decode(const uint8_t *buf, size_t len,
			      struct sp_ctx_attr out[SP_CTX_ATTRS_KEYS], uint32_t *dropped)
{
	uint32_t n = 0, lost = 0, j;
	size_t off = 0;

	while (buf && off + 2 <= len && off + 2 + buf[off + 1] <= len) {
		struct sp_ctx_attr a = {
			.key = buf[off], .len = buf[off + 1], .value = buf + off + 2,
		};

		off += 2 + (size_t)a.len;
		for (j = 0; j < n && out[j].key != a.key; j++)
			;
		if (j < n)
			out[j] = a;		/* last duplicate wins */
		else if (n < SP_CTX_ATTRS_KEYS)
			out[n++] = a;
		else
			lost++;
	}
	if (off < len)
		lost++;				/* a partial entry at the end */
	if (dropped)
		*dropped = lost;
	return n;
}

uint32_t sp_ctx_attrs__canon(const uint8_t *buf, size_t len, uint8_t dst[SP_CTX_ATTRS_MAX],
			     uint32_t *dropped)
{
	struct sp_ctx_attr a[SP_CTX_ATTRS_KEYS];
	uint32_t n, i, off = 0;

	if (len > SP_CTX_ATTRS_MAX)
		len = SP_CTX_ATTRS_MAX;
	n = sp_ctx_attrs__decode(buf, len, a, dropped);
	/* Each kept entry is one of the input's, so the total fits in len. */
	for (i = 0; i < n; i++) {
		dst[off] = a[i].key;
		dst[off + 1] = a[i].len;
		memcpy(dst + off + 2, a[i].value, a[i].len);
		off += 2u + a[i].len;
	}
	return off;
}

void sp_ctx_attrs__string(const struct sp_ctx_attr *a, char dst[256])
{
	sp_utf8__sanitize(a->value, a->len, dst);
}
