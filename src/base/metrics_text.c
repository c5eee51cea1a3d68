// SPDX-License-Identifier: MIT
/*
 * metrics_text.c - Prometheus text exposition writer (contract:
 * metrics_text.h).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/metrics_text.h"

void sp_metrics_buf__init(struct sp_metrics_buf *b, char *mem, size_t cap)
{
	b->p = mem;
	b->len = 0;
	b->cap = cap;
	b->truncated = false;
	b->bad_name = false;
	if (cap)
		mem[0] = '\0';
}

bool sp_metrics__valid_name(const char *n)
{
	if (!n || !*n)
		return false;
	if (!((*n >= 'a' && *n <= 'z') || (*n >= 'A' && *n <= 'Z') || *n == '_' || *n == ':'))
		return false;
	for (n++; *n; n++)
		if (!((*n >= 'a' && *n <= 'z') || (*n >= 'A' && *n <= 'Z') ||
		      (*n >= '0' && *n <= '9') || *n == '_' || *n == ':'))
			return false;
	return true;
}

static bool valid_label(const char *n)
{
	/* label names: [a-zA-Z_][a-zA-Z0-9_]*, no ':' */
	return sp_metrics__valid_name(n) && !strchr(n, ':');
}

/* A line is assembled in a scratch buffer and appended whole, so the text
 * never ends in half a line. */
struct line {
	char s[1024];
	size_t n;
	bool over;
};

static void put(struct line *l, const char *fmt, ...)
{
	va_list ap;
	int w;

	if (l->over)
		return;
	va_start(ap, fmt);
	w = vsnprintf(l->s + l->n, sizeof(l->s) - l->n, fmt, ap);
	va_end(ap);
	if (w < 0 || (size_t)w >= sizeof(l->s) - l->n)
		l->over = true;
	else
		l->n += w;
}

static void put_escaped(struct line *l, const char *v, bool quote)
{
	for (; *v && !l->over; v++) {
		if (*v == '\\')
			put(l, "\\\\");
		else if (*v == '\n')
			put(l, "\\n");
		else if (quote && *v == '"')
			put(l, "\\\"");
		else
			put(l, "%c", *v);
	}
}

static int commit(struct sp_metrics_buf *b, struct line *l)
{
	if (l->over)
		return -E2BIG;
	if (b->truncated || b->len + l->n + 1 > b->cap) {
		b->truncated = true;
		return -ENOSPC;
	}
	memcpy(b->p + b->len, l->s, l->n);
	b->len += l->n;
	b->p[b->len] = '\0';
	return 0;
}

static const char *type_name(enum sp_metric_type t)
{
	switch (t) {
	case SP_METRIC_COUNTER:
		return "counter";
	case SP_METRIC_GAUGE:
		return "gauge";
	case SP_METRIC_SUMMARY:
		return "summary";
	default:
		return "histogram";
	}
}

int sp_metrics__family(struct sp_metrics_buf *b, const char *name, enum sp_metric_type t,
		       const char *help)
{
	struct line l = { .n = 0 };
	size_t nl = name ? strlen(name) : 0;

	if (!sp_metrics__valid_name(name) ||
	    (t == SP_METRIC_COUNTER && (nl < 6 || strcmp(name + nl - 6, "_total")))) {
		b->bad_name = true;
		return -EINVAL;
	}
	put(&l, "# HELP %s ", name);
	put_escaped(&l, help ? help : "", false);
	put(&l, "\n# TYPE %s %s\n", name, type_name(t));
	return commit(b, &l);
}

static int sample(struct sp_metrics_buf *b, const char *name, const char *const *labels,
		  const char *value)
{
	struct line l = { .n = 0 };

	if (!sp_metrics__valid_name(name)) {
		b->bad_name = true;
		return -EINVAL;
	}
	put(&l, "%s", name);
	if (labels && labels[0]) {
		put(&l, "{");
		for (int i = 0; labels[i] && labels[i + 1]; i += 2) {
			if (!valid_label(labels[i])) {
				b->bad_name = true;
				return -EINVAL;
			}
			put(&l, "%s%s=\"", i ? "," : "", labels[i]);
			put_escaped(&l, labels[i + 1], true);
			put(&l, "\"");
		}
		put(&l, "}");
	}
	put(&l, " %s\n", value);
	return commit(b, &l);
}

int sp_metrics__u64(struct sp_metrics_buf *b, const char *name, const char *const *labels,
		    uint64_t v)
{
	char s[32];

	snprintf(s, sizeof(s), "%llu", (unsigned long long)v);
	return sample(b, name, labels, s);
}

int sp_metrics__single_u64(struct sp_metrics_buf *b, const char *name, enum sp_metric_type t,
			   const char *help, uint64_t v)
{
	int err = sp_metrics__family(b, name, t, help);

	return err ? err : sp_metrics__u64(b, name, NULL, v);
}

/* The shortest of %.15g, %.16g, %.17g that reads back as exactly v (what
 * Prometheus's own clients print): 0.1 stays "0.1", and a Unix time such
 * as 1764597600.25 keeps every digit (%.9g rounded it to ten seconds). */
void sp_metrics__format_f64(double v, char *out, size_t len)
{
	for (int prec = 15; prec <= 17; prec++) {
		snprintf(out, len, "%.*g", prec, v);
		if (strtod(out, NULL) == v)
			return;
	}
}

int sp_metrics__f64(struct sp_metrics_buf *b, const char *name, const char *const *labels,
		    double v)
{
	char s[40];

	if (v != v)
		snprintf(s, sizeof(s), "NaN");
	else if (v > 1.7976931348623157e308)
		snprintf(s, sizeof(s), "+Inf");
	else if (v < -1.7976931348623157e308)
		snprintf(s, sizeof(s), "-Inf");
	else
		sp_metrics__format_f64(v, s, sizeof(s));
	return sample(b, name, labels, s);
}
