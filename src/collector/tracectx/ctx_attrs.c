// SPDX-License-Identifier: MIT
/*
 * ctx_attrs.c - see ctx_attrs.h.
 */
#include <string.h>

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

/* Length of the valid UTF-8 sequence at s[0..n), or 0 (RFC 3629: no
 * overlongs, no surrogates, nothing above U+10FFFF). */
static unsigned utf8_seq(const uint8_t *s, size_t n)
{
	unsigned len, i;
	uint32_t cp;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2, cp = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3, cp = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4, cp = s[0] & 0x07;
	else
		return 0;
	if (n < len)
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
	    (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
		return 0;
	return len;
}

void sp_ctx_attrs__string(const struct sp_ctx_attr *a, char dst[256])
{
	size_t i = 0, o = 0;

	while (i < a->len) {
		unsigned k = utf8_seq(a->value + i, a->len - i);

		if (k == 1 && (a->value[i] < 0x20 || a->value[i] == 0x7f))
			k = 0;
		if (!k) {
			dst[o++] = '?';
			i++;
			continue;
		}
		memcpy(dst + o, a->value + i, k);
		o += k;
		i += k;
	}
	dst[o] = 0;
}

bool sp_ctx_attrs__utf8_valid(const uint8_t *s, size_t n)
{
	for (size_t i = 0; i < n;) {
		unsigned k = utf8_seq(s + i, n - i);

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
