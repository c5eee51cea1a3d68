/* SPDX-License-Identifier: MIT */
/*
 * otel_env.c - see otel_env.h.
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "base/hex.h"
#include "collector/procs/otel_env.h"
#include "collector/tracectx/ctx_attrs.h"

static bool blank(char c)
{
	return c == ' ' || c == '\t';
}

/* Trims blanks from both ends of [*s, *s + *len). */
static void trim(const char **s, size_t *len)
{
	while (*len && blank(**s)) {
		(*s)++;
		(*len)--;
	}
	while (*len && blank((*s)[*len - 1]))
		(*len)--;
}

/* Baggage keys are RFC 7230 tokens: printable ASCII without separators. */
static bool key_char(unsigned char c)
{
	return c > 0x20 && c < 0x7f && !strchr(",=;\"\\ ", c);
}

/* Percent-decodes v[0..len) into dst, made valid UTF-8 (dst holds
 * SP_OTEL_VALUE_MAX + 1 bytes).  1 ok, 0 too long, -EINVAL broken %XX. */
static int decode_value(const char *v, size_t len, char *dst)
{
	uint8_t raw[SP_OTEL_VALUE_MAX];
	size_t n = 0;

	for (size_t i = 0; i < len; i++) {
		int c = (unsigned char)v[i];

		if (c == '%') {
			int hi, lo;

			if (i + 2 >= len)
				return -EINVAL;
			hi = sp_hex_digit(v[i + 1]);
			lo = sp_hex_digit(v[i + 2]);
			if (hi < 0 || lo < 0)
				return -EINVAL;
			c = hi << 4 | lo;
			i += 2;
		}
		if (n == sizeof(raw))
			return 0;
		raw[n++] = (uint8_t)c;
	}
	{
		struct sp_ctx_attr a = { .len = (uint8_t)n, .value = raw };

		sp_ctx_attrs__string(&a, dst);
	}
	return 1;
}

static void put(struct sp_otel_attrs *out, const char *key, size_t klen, const char *val)
{
	uint32_t i;

	for (i = 0; i < out->n; i++)
		if (strlen(out->a[i].key) == klen && !memcmp(out->a[i].key, key, klen))
			break;
	if (i == out->n) {
		if (out->n == SP_OTEL_ATTRS_MAX) {
			out->dropped++;
			return;
		}
		out->n++;
		memcpy(out->a[i].key, key, klen);
		out->a[i].key[klen] = 0;
	}
	strcpy(out->a[i].value, val);
}

int sp_otel_env__parse_attrs(const char *s, size_t len, struct sp_otel_attrs *out,
			     uint32_t *bad_entry)
{
	const char *end = s + len, *p = s;
	uint32_t entry = 0;

	memset(out, 0, sizeof(*out));
	while (p <= end && len) {
		const char *comma = memchr(p, ',', end - p), *eq, *k, *v;
		size_t elen = (comma ? comma : end) - p, klen, vlen;
		char value[SP_OTEL_VALUE_MAX + 1];
		int rc;

		entry++;
		k = p;
		p += elen + 1;
		trim(&k, &elen);
		if (!elen) {
			if (!comma)
				break;
			continue;
		}
		eq = memchr(k, '=', elen);
		if (!eq)
			goto bad;
		klen = eq - k;
		v = eq + 1;
		vlen = elen - klen - 1;
		trim(&k, &klen);
		trim(&v, &vlen);
		if (!klen)
			goto bad;
		for (size_t i = 0; i < klen; i++)
			if (!key_char((unsigned char)k[i]))
				goto bad;
		rc = decode_value(v, vlen, value);
		if (rc < 0)
			goto bad;
		if (rc == 0 || klen > SP_OTEL_KEY_MAX)
			out->dropped++;
		else
			put(out, k, klen, value);
		if (!comma)
			break;
	}
	return 0;
bad:
	memset(out, 0, sizeof(*out));
	if (bad_entry)
		*bad_entry = entry;
	return -EINVAL;
}

int sp_otel_env__scan(const char *env, size_t len, struct sp_otel_identity *out)
{
	static const char svc[] = "OTEL_SERVICE_NAME=", attrs[] = "OTEL_RESOURCE_ATTRIBUTES=";
	const char *p = env, *end = env + len;
	bool have_svc = false, have_attrs = false;

	memset(out, 0, sizeof(*out));
	while (p < end && !(have_svc && have_attrs)) {
		const char *nul = memchr(p, 0, end - p), *e = nul ? nul : end;
		size_t n = e - p;

		if (!have_svc && n >= sizeof(svc) - 1 && !memcmp(p, svc, sizeof(svc) - 1)) {
			const char *v = p + sizeof(svc) - 1;
			size_t vlen = n - (sizeof(svc) - 1);

			have_svc = true;
			if (vlen > SP_OTEL_VALUE_MAX) {
				out->attrs.dropped++;
			} else if (vlen) {
				struct sp_ctx_attr a = { .len = (uint8_t)vlen,
							 .value = (const uint8_t *)v };

				sp_ctx_attrs__string(&a, out->service_name);
			}
		} else if (!have_attrs && n >= sizeof(attrs) - 1 &&
			   !memcmp(p, attrs, sizeof(attrs) - 1)) {
			uint32_t dropped;

			have_attrs = true;
			dropped = out->attrs.dropped;
			if (sp_otel_env__parse_attrs(p + sizeof(attrs) - 1, n - (sizeof(attrs) - 1),
						     &out->attrs, NULL))
				out->invalid = 1;
			out->attrs.dropped += dropped;
		}
		p = e + 1;
	}
	return have_svc || have_attrs;
}

const char *sp_otel_env__get(const struct sp_otel_attrs *attrs, const char *key)
{
	for (uint32_t i = 0; i < attrs->n; i++)
		if (!strcmp(attrs->a[i].key, key))
			return attrs->a[i].value;
	return NULL;
}
