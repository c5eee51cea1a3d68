// SPDX-License-Identifier: MIT
/*
 * utf8.c - see utf8.h.
 */
#include <string.h>

#include "base/utf8.h"

/* (utf8.h) */
unsigned sp_utf8__seq(const uint8_t *s, size_t n)
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

size_t sp_utf8__sanitize(const uint8_t *s, size_t n, char *dst)
{
	size_t i = 0, o = 0;

	while (i < n) {
		unsigned k = sp_utf8__seq(s + i, n - i);

		if (k == 1 && (s[i] < 0x20 || s[i] == 0x7f))
			k = 0;
		if (!k) {
			dst[o++] = '?';
			i++;
			continue;
		}
		memcpy(dst + o, s + i, k);
		o += k;
		i += k;
	}
	dst[o] = 0;
	return o;
}
