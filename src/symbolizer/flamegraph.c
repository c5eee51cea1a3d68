// SPDX-License-Identifier: MIT
/*
 * flamegraph.c - the report's call trees as one self-contained HTML page.
 *
 * Contract: sp_report__flamegraph() writes flamegraph.html (embedded at
 * build time as sp_flamegraph_html[], see build.mk) with its two markers
 * replaced: @SPANPROF_TITLE@ by the HTML-escaped title and
 * / *@SPANPROF_DATA@* /null by a JSON object (format documented in the
 * template).  Strings are JSON-escaped so that nothing in a frame name can
 * close the <script> element ('<', '>', '&' become \u003c etc.).  Trees are
 * written in preorder with explicit depths, iteratively, so deep stacks
 * cost no recursion here or in the page.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "report.h"
#include "report_internal.h"
#include "sp_flamegraph_html.h"

#define MARK_TITLE "@SPANPROF_TITLE@"
#define MARK_DATA "/*@SPANPROF_DATA@*/null"

static void json_str(FILE *out, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	fputc('"', out);
	for (; *p; p++) {
		unsigned char c = *p;

		if (c == '"' || c == '\\')
			fprintf(out, "\\%c", c);
		else if (c < 0x20 || c == '<' || c == '>' || c == '&' ||
			 c == 0x7f)
			fprintf(out, "\\u%04x", c);
		else if (c == 0xe2 && p[1] == 0x80 &&
			 (p[2] == 0xa8 || p[2] == 0xa9)) {
			fprintf(out, "\\u202%c", p[2] == 0xa8 ? '8' : '9');
			p += 2;
		} else
			fputc(c, out);
	}
	fputc('"', out);
}

static void html_text(FILE *out, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '<':
			fputs("&lt;", out);
			break;
		case '>':
			fputs("&gt;", out);
			break;
		case '&':
			fputs("&amp;", out);
			break;
		case '"':
			fputs("&quot;", out);
			break;
		default:
			fputc(*s, out);
		}
	}
}

/* Preorder arrays of one tree: which = 0 names, 1 values, 2 depths. */
static void tree_array(FILE *out, const struct ktree *t, int which)
{
	int32_t node = t->nodes[0].first_child;
	uint32_t depth = 1;
	bool first = true;

	fputc('[', out);
	while (node >= 0) {
		const struct rnode *nd = &t->nodes[node];

		if (!first)
			fputc(',', out);
		first = false;
		if (which == 0)
			fprintf(out, "%" PRId32, nd->name);
		else if (which == 1)
			fprintf(out, "%" PRIu64, nd->total);
		else
			fprintf(out, "%" PRIu32, depth);
		node = ktree__preorder_next(t, node, &depth);
	}
	fputc(']', out);
}

/* One report's tables: "names":[...], ..., "kinds":[...] (no braces). */
static void write_tables(const struct sp_report *r, FILE *out)
{
	static const char *const ids[] = { "oncpu", "offcpu" };
	static const char *const labels[] = { "on-CPU", "off-CPU" };
	static const char *const units[] = { "samples", "ns" };
	bool first = true;

	fputs("\"names\":[", out);
	for (uint32_t i = 0; i < r->n_names; i++) {
		if (i)
			fputc(',', out);
		json_str(out, r->names[i].s);
	}
	fputs("],\"where\":[", out);
	for (uint32_t i = 0; i < r->n_names; i++) {
		if (i)
			fputc(',', out);
		json_str(out, r->names[i].where ? r->names[i].where : "");
	}
	fputs("],\"dso\":[", out);
	for (uint32_t i = 0; i < r->n_names; i++) {
		if (i)
			fputc(',', out);
		json_str(out, r->names[i].dso ? r->names[i].dso : "");
	}
	fputs("],\"flags\":[", out);
	for (uint32_t i = 0; i < r->n_names; i++)
		fprintf(out, "%s%u", i ? "," : "", r->names[i].flags);
	fputs("],\"kinds\":[", out);
	for (int k = 0; k < SP_KIND__MAX; k++) {
		const struct ktree *t = &r->trees[k];

		if (!sp_report__has_kind(r, k))
			continue;
		if (!first)
			fputc(',', out);
		first = false;
		fprintf(out, "{\"id\":\"%s\",\"label\":\"%s\",\"unit\":\"%s\","
			"\"total\":%" PRIu64 ",\"n\":", ids[k], labels[k],
			units[k], t->total);
		tree_array(out, t, 0);
		fputs(",\"v\":", out);
		tree_array(out, t, 1);
		fputs(",\"d\":", out);
		tree_array(out, t, 2);
		fputc('}', out);
	}
	fputc(']', out);
}

static void write_data(const struct sp_report *r, const char *title,
		       struct sp_report *const *spans, uint32_t n, FILE *out)
{
	fputs("{\"title\":", out);
	json_str(out, title);
	fputc(',', out);
	write_tables(r, out);
	fputs(",\"spans\":[", out);
	for (uint32_t i = 0, w = 0; i < n; i++) {
		char label[16 * 2 + 1 + 8 * 2 + 1];
		const struct sp_link *l;
		size_t o = 0;

		/* a span report keeps one link: its first non-zero one */
		if (spans[i]->n_spans < 1)
			continue;
		l = NULL;
		for (uint32_t j = 0; j < spans[i]->n_spans && !l; j++)
			if (spans[i]->spans[j].link > 0 &&
			    (uint32_t)spans[i]->spans[j].link < spans[i]->n_links)
				l = &spans[i]->links[spans[i]->spans[j].link];
		if (!l)
			continue;
		for (int b = 0; b < 16; b++)
			o += (size_t)snprintf(label + o, sizeof(label) - o, "%02x", l->trace_id[b]);
		label[o++] = '/';
		for (int b = 0; b < 8; b++)
			o += (size_t)snprintf(label + o, sizeof(label) - o, "%02x", l->span_id[b]);
		fprintf(out, "%s{\"label\":\"%s\",", w++ ? "," : "", label);
		write_tables(spans[i], out);
		fputc('}', out);
	}
	fputs("]}", out);
}

int sp_report__flamegraph(const struct sp_report *r, const char *title,
			  FILE *out)
{
	return sp_report__flamegraph_spans(r, title, NULL, 0, out);
}

int sp_report__flamegraph_spans(const struct sp_report *r, const char *title,
				struct sp_report *const *spans, uint32_t n, FILE *out)
{
	const char *tpl = sp_flamegraph_html;
	const char *t = strstr(tpl, MARK_TITLE);
	const char *d = strstr(tpl, MARK_DATA);

	if (!t || !d || d < t)
		return -EINVAL;	/* template and code disagree */
	if (!title)
		title = "spanprof flame graph";
	fwrite(tpl, 1, (size_t)(t - tpl), out);
	html_text(out, title);
	t += strlen(MARK_TITLE);
	fwrite(t, 1, (size_t)(d - t), out);
	write_data(r, title, spans, n, out);
	d += strlen(MARK_DATA);
	fputs(d, out);
	return ferror(out) ? -EIO : 0;
}
