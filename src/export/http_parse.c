/* SPDX-License-Identifier: MIT */
/*
 * http_parse.c - Retry-After, retryable statuses and
 * OTEL_EXPORTER_OTLP_HEADERS (contract: http_parse.h).
 *
 * Retry-After (RFC 9110 10.2.3) is either delay-seconds (1*DIGIT) or an
 * HTTP-date (RFC 9110 5.6.7) in one of three forms:
 *   IMF-fixdate  "Sun, 06 Nov 1994 08:49:37 GMT"
 *   RFC 850      "Sunday, 06-Nov-94 08:49:37 GMT"
 *   asctime      "Sun Nov  6 08:49:37 1994"
 * Parsed by hand, strictly: exact separators and widths, case-sensitive
 * names, day within its month (leap years), hour < 24, minute < 60,
 * second <= 60, year 1900..9999, and the day name must be the date's
 * weekday.  Leading and trailing OWS (SP, HTAB) are ignored.  A two-digit
 * RFC 850 year more than 50 years in the future names the most recent past
 * year with those digits (RFC 9110).  delay-seconds saturate at max_ms, so
 * no input overflows.
 *
 * Headers: entries separated by ',', each "key=value"; key and value
 * trimmed of OWS; keys must be RFC 9110 tokens; values are percent-decoded
 * after trimming ("%20" keeps a space) and may not contain control
 * characters other than HTAB after decoding (no CR/LF injection).  Empty
 * entries (",," or a trailing ',') are skipped.  More than 64 entries or an
 * entry over 8 KiB is -E2BIG; a malformed entry is -EINVAL; a negative
 * return from cb stops the walk and is returned.
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "base/hex.h"
#include "export/http_parse.h"

#define SP_HDR_MAX_COUNT 64
#define SP_HDR_MAX_BYTES 8192

static const char *const wkday_short[7] = {
	"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat",
};
static const char *const wkday_long[7] = {
	"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday",
};
static const char *const month_names[12] = {
	"Jan", "Feb", "Mar", "Apr", "May", "Jun",
	"Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
};

static bool is_ows(char c)
{
	return c == ' ' || c == '\t';
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

struct cur {
	const char *p;
	const char *end;
};

static bool cur_lit(struct cur *c, const char *s)
{
	size_t n = strlen(s);

	if ((size_t)(c->end - c->p) < n || memcmp(c->p, s, n))
		return false;
	c->p += n;
	return true;
}

/* exactly n digits */
static bool cur_num(struct cur *c, int n, int *out)
{
	int v = 0;

	if (c->end - c->p < n)
		return false;
	for (int i = 0; i < n; i++) {
		if (!is_digit(c->p[i]))
			return false;
		v = v * 10 + (c->p[i] - '0');
	}
	c->p += n;
	*out = v;
	return true;
}

/* Index of the name at the cursor (longest match not needed: callers pass
 * lists whose entries are not prefixes of one another). */
static int cur_name(struct cur *c, const char *const *names, int n)
{
	for (int i = 0; i < n; i++)
		if (cur_lit(c, names[i]))
			return i;
	return -1;
}

struct hdate {
	int wday, mday, mon, year, hh, mm, ss;
};

static bool cur_time(struct cur *c, struct hdate *d)
{
	return cur_num(c, 2, &d->hh) && cur_lit(c, ":") && cur_num(c, 2, &d->mm) &&
	       cur_lit(c, ":") && cur_num(c, 2, &d->ss);
}

static bool parse_imf(struct cur c, struct hdate *d)
{
	return (d->wday = cur_name(&c, wkday_short, 7)) >= 0 && cur_lit(&c, ", ") &&
	       cur_num(&c, 2, &d->mday) && cur_lit(&c, " ") &&
	       (d->mon = cur_name(&c, month_names, 12)) >= 0 && cur_lit(&c, " ") &&
	       cur_num(&c, 4, &d->year) && cur_lit(&c, " ") && cur_time(&c, d) &&
	       cur_lit(&c, " GMT") && c.p == c.end;
}

static bool parse_rfc850(struct cur c, struct hdate *d, int now_year)
{
	int yy;

	if (!((d->wday = cur_name(&c, wkday_long, 7)) >= 0 && cur_lit(&c, ", ") &&
	      cur_num(&c, 2, &d->mday) && cur_lit(&c, "-") &&
	      (d->mon = cur_name(&c, month_names, 12)) >= 0 && cur_lit(&c, "-") &&
	      cur_num(&c, 2, &yy) && cur_lit(&c, " ") && cur_time(&c, d) &&
	      cur_lit(&c, " GMT") && c.p == c.end))
		return false;
	d->year = now_year - now_year % 100 + yy;
	if (d->year > now_year + 50)
		d->year -= 100;
	return true;
}

static bool parse_asctime(struct cur c, struct hdate *d)
{
	if ((d->wday = cur_name(&c, wkday_short, 7)) < 0 || !cur_lit(&c, " ") ||
	    (d->mon = cur_name(&c, month_names, 12)) < 0 || !cur_lit(&c, " "))
		return false;
	/* day: 2DIGIT or SP 1DIGIT */
	if (cur_lit(&c, " ")) {
		if (!cur_num(&c, 1, &d->mday))
			return false;
	} else if (!cur_num(&c, 2, &d->mday)) {
		return false;
	}
	return cur_lit(&c, " ") && cur_time(&c, d) && cur_lit(&c, " ") &&
	       cur_num(&c, 4, &d->year) && c.p == c.end;
}

static int days_in_month(int mon, int year)
{
	static const int dim[12] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;

	return mon == 1 && leap ? 29 : dim[mon];
}

/* Validates d and converts it to seconds since the epoch. */
static int hdate_to_time(const struct hdate *d, time_t *out)
{
	struct tm tm = { 0 };
	time_t t;

	if (d->year < 1900 || d->year > 9999 || d->mon < 0 || d->mon > 11 ||
	    d->mday < 1 || d->mday > days_in_month(d->mon, d->year) ||
	    d->hh > 23 || d->mm > 59 || d->ss > 60)
		return -EINVAL;
	tm.tm_year = d->year - 1900;
	tm.tm_mon = d->mon;
	tm.tm_mday = d->mday;
	tm.tm_hour = d->hh;
	tm.tm_min = d->mm;
	tm.tm_sec = d->ss;
	t = timegm(&tm);
	if (t == (time_t)-1 && !(d->year == 1969 && d->mon == 11 && d->mday == 31))
		return -EINVAL;
	if (tm.tm_wday != d->wday)
		return -EINVAL;
	*out = t;
	return 0;
}

int sp_http__parse_retry_after(const char *value, size_t len, time_t now, uint64_t max_ms,
			       uint64_t *delay_ms)
{
	struct cur c;
	struct hdate d;
	struct tm now_tm;
	time_t t;
	int r;

	if (!value || !delay_ms)
		return -EINVAL;
	c.p = value;
	c.end = value + len;
	while (c.p < c.end && is_ows(*c.p))
		c.p++;
	while (c.end > c.p && is_ows(c.end[-1]))
		c.end--;
	if (c.p == c.end)
		return -EINVAL;

	if (is_digit(*c.p)) {
		uint64_t secs = 0;
		bool sat = false;

		for (const char *p = c.p; p < c.end; p++) {
			if (!is_digit(*p))
				return -EINVAL;
			if (sat)
				continue;
			/* secs <= max_ms / 1000 here, so this cannot overflow */
			secs = secs * 10 + (uint64_t)(*p - '0');
			sat = secs > max_ms / 1000;
		}
		*delay_ms = sat ? max_ms : secs * 1000;
		if (*delay_ms > max_ms)
			*delay_ms = max_ms;
		return 0;
	}

	memset(&d, 0, sizeof(d));
	if (!gmtime_r(&now, &now_tm))
		return -EINVAL;
	if (!parse_imf(c, &d) && !parse_rfc850(c, &d, now_tm.tm_year + 1900) &&
	    !parse_asctime(c, &d))
		return -EINVAL;
	r = hdate_to_time(&d, &t);
	if (r)
		return r;
	if (t <= now) {
		*delay_ms = 0;
	} else {
		uint64_t s = (uint64_t)(t - now);

		*delay_ms = s > max_ms / 1000 ? max_ms : s * 1000;
	}
	return 0;
}

int sp_http__status_retryable(long status)
{
	return status == 429 || status == 502 || status == 503 || status == 504;
}

/* RFC 9110 tchar */
static bool is_tchar(unsigned char c)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit((char)c))
		return true;
	return c && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

static void trim(const char **b, const char **e)
{
	while (*b < *e && is_ows(**b))
		(*b)++;
	while (*e > *b && is_ows((*e)[-1]))
		(*e)--;
}

/* One "key=value" entry [b, e) into buf (key NUL value NUL). */
static int parse_entry(const char *b, const char *e, char *buf, const char **key,
		       const char **val)
{
	const char *eq = memchr(b, '=', (size_t)(e - b));
	const char *kb = b, *ke, *vb, *ve;
	char *o = buf;

	if (!eq)
		return -EINVAL;
	ke = eq;
	vb = eq + 1;
	ve = e;
	trim(&kb, &ke);
	trim(&vb, &ve);
	if (kb == ke)
		return -EINVAL;
	/* key + NUL + value + NUL must fit; decoding only shrinks */
	if ((size_t)(ke - kb) + (size_t)(ve - vb) + 2 > SP_HDR_MAX_BYTES)
		return -E2BIG;
	for (const char *p = kb; p < ke; p++) {
		if (!is_tchar((unsigned char)*p))
			return -EINVAL;
		*o++ = *p;
	}
	*o++ = '\0';
	*key = buf;
	*val = o;
	for (const char *p = vb; p < ve; p++) {
		unsigned char c = (unsigned char)*p;

		if (c == '%') {
			int hi, lo;

			if (ve - p < 3 || (hi = sp_hex_digit(p[1])) < 0 || (lo = sp_hex_digit(p[2])) < 0)
				return -EINVAL;
			c = (unsigned char)(hi << 4 | lo);
			p += 2;
		}
		if ((c < 0x20 && c != '\t') || c == 0x7f)
			return -EINVAL;
		*o++ = (char)c;
	}
	*o = '\0';
	return 0;
}

int sp_http__parse_headers(const char *s, sp_header_cb cb, void *ctx)
{
	char buf[SP_HDR_MAX_BYTES];
	int n = 0;

	if (!s || !cb)
		return -EINVAL;
	while (*s) {
		const char *e = strchrnul(s, ',');
		const char *b = s, *t = e;
		const char *key, *val;
		int r;

		trim(&b, &t);
		if (b < t) {
			if (++n > SP_HDR_MAX_COUNT)
				return -E2BIG;
			r = parse_entry(b, t, buf, &key, &val);
			if (r)
				return r;
			r = cb(key, val, ctx);
			if (r < 0)
				return r;
		}
		s = *e ? e + 1 : e;
	}
	return 0;
}
