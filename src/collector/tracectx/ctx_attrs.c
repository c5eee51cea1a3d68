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
