// SPDX-License-Identifier: MIT
/*
 * log_sanitize.c - see log_sanitize.h.
 */
#include <string.h>

#include "base/log_sanitize.h"

void sp_log_sanitize(const char *s, size_t len, char *out, size_t out_len)
{
	size_t n = 0;

	if (!out_len)
		return;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (n + 1 >= out_len) {
			if (out_len >= 4)
				memcpy(out + out_len - 4, "...", 3);
			n = out_len - 1;
			break;
		}
		out[n++] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
	}
	out[n] = '\0';
}
