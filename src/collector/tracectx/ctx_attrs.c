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

bool sp_ctx_attrs__utf8_valid(const uint8_t *s, size_t n)
{
	for (size_t i = 0; i < n;) {
		unsigned k = sp_utf8__seq(s + i, n - i);

		if (!k)
			return false;
		i += k;
	}
	return true;
}

/* Length of v[0..n) without a trailing incomplete UTF-8 sequence (what a
 * cut in the middle of a character leaves). */
static size_t utf8_trim_cut(const uint8_t *v, size_t n)
{
	size_t i = n, k = 0;

	while (i > 0 && k < 3 && (v[i - 1] & 0xc0) == 0x80) {
		i--;
		k++;
	}
	if (i > 0 && v[i - 1] >= 0xc0) {
		uint8_t lead = v[i - 1];
		size_t want = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : 2;

		if (k + 1 < want)
			return i - 1;	/* the sequence was cut */
	}
	return n;
}

uint32_t sp_ctx_attrs__canon_go(const uint8_t *buf, size_t len, sp_ctx_attrs_key_fn key_index,
				void *ctx, uint8_t dst[SP_CTX_ATTRS_MAX], uint32_t *dropped,
				uint32_t *bad_utf8)
{
	struct sp_ctx_attr a[SP_CTX_ATTRS_KEYS];
	uint32_t n = 0, lost = 0, bad = 0, off = 0, j;
	size_t p = 0;

	if (len > SP_CTX_ATTRS_MAX)
		len = SP_CTX_ATTRS_MAX;
	while (buf && p + 2 <= len && p + 2 + (size_t)buf[p] + buf[p + 1] <= len) {
		const uint8_t *key = buf + p + 2;
		uint8_t klen = buf[p], vlen = buf[p + 1];
		struct sp_ctx_attr at;
		int idx;

		p += 2 + (size_t)klen + vlen;
		if (vlen == SP_GO_VALUE_MAX)
			vlen = (uint8_t)utf8_trim_cut(key + klen, vlen);
		if (!sp_ctx_attrs__utf8_valid(key, klen) ||
		    !sp_ctx_attrs__utf8_valid(key + klen, vlen))
			bad++;
		idx = klen && key_index ? key_index(key, klen, ctx) : -1;
		if (idx < 0 || idx > 255) {
			lost++;
			continue;
		}
		at = (struct sp_ctx_attr){ .key = (uint8_t)idx, .len = vlen, .value = key + klen };
		for (j = 0; j < n && a[j].key != at.key; j++)
			;
		if (j < n)
			a[j] = at;		/* last duplicate wins */
		else if (n < SP_CTX_ATTRS_KEYS)
			a[n++] = at;
		else
			lost++;
	}
	if (p < len)
		lost++;				/* a partial entry at the end */
	/* sorted by key index: insertion sort of at most 15 */
	for (uint32_t i = 1; i < n; i++) {
		struct sp_ctx_attr x = a[i];

		for (j = i; j > 0 && a[j - 1].key > x.key; j--)
			a[j] = a[j - 1];
		a[j] = x;
	}
	/* each output entry is 2 + vlen <= its input's 2 + klen + vlen */
	for (uint32_t i = 0; i < n; i++) {
		dst[off] = a[i].key;
		dst[off + 1] = a[i].len;
		memcpy(dst + off + 2, a[i].value, a[i].len);
		off += 2u + a[i].len;
	}
	if (dropped)
		*dropped = lost;
	if (bad_utf8)
		*bad_utf8 = bad;
	return off;
}
