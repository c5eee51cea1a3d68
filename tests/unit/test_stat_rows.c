// SPDX-License-Identifier: MIT
/*
 * test_stat_rows.c - the user-space statistics' name tables
 * (collector/pipeline/stat_rows.h) and what both outputs make of them.
 *
 * Tables: every row named on one side at least, metric names valid,
 * counters ending in _total, a family's rows together (its name never
 * comes back after another family) with one label key, label values and
 * JSON keys unique.  Metrics: given a struct sp_summary whose every byte
 * differs, each metric row's series shows once with its field's value,
 * under one HELP and TYPE per family, and nothing is truncated or refused.
 * JSON: each keyed row's "key": value, once, in the summary file.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#include "collector/pipeline/stat_rows.h"
#include "collector/pipeline/summary.h"

static const struct sp_stat_table *const tables[] = {
	&sp_stat_consumer, &sp_stat_procs, &sp_stat_ctx, &sp_stat_go, &sp_stat_go_more,
	&sp_stat_unwind,
};
#define N_TABLES (sizeof(tables) / sizeof(tables[0]))

static unsigned count_of(const char *hay, const char *needle)
{
	unsigned n = 0;

	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

static uint64_t field(const struct sp_summary *s, const struct sp_stat_row *r)
{
	uint64_t v;

	memcpy(&v, (const char *)s + r->off, sizeof(v));
	return v;
}

/* Distinct values in every uint64_t of the summary: no two fields equal. */
static void fill(struct sp_summary *s)
{
	memset(s, 0, sizeof(*s));
	for (size_t t = 0; t < N_TABLES; t++)
		for (size_t i = 0; i < tables[t]->n; i++) {
			uint64_t v = 7300000000ull + 1000003ull * tables[t]->rows[i].off;

			memcpy((char *)s + tables[t]->rows[i].off, &v, sizeof(v));
		}
}

static void test_tables(void **state)
{
	(void)state;
	for (size_t t = 0; t < N_TABLES; t++) {
		const struct sp_stat_table *tb = tables[t];

		assert_true(tb->n > 0);
		for (size_t i = 0; i < tb->n; i++) {
			const struct sp_stat_row *r = &tb->rows[i];

			assert_true(r->json || r->metric);
			assert_true(r->off + sizeof(uint64_t) <= sizeof(struct sp_summary));
			assert_true(!r->label == !r->value);
			for (size_t j = 0; j < i; j++)
				if (r->json && tb->rows[j].json)
					assert_string_not_equal(r->json, tb->rows[j].json);
			if (!r->metric)
				continue;
			assert_true(sp_metrics__valid_name(r->metric));
			if (r->type == SP_METRIC_COUNTER) {
				size_t len = strlen(r->metric);

				assert_true(len > 6 && !strcmp(r->metric + len - 6, "_total"));
			}
			/* Its family's earlier rows: the opening one, and no other
			 * family's metric row between them and this one. */
			if (!r->help) {
				size_t j = i;
				bool opened = false;

				while (j-- > 0) {
					const struct sp_stat_row *q = &tb->rows[j];

					if (!q->metric)
						continue;
					if (strcmp(q->metric, r->metric))
						fail_msg("%s: a row after another family", r->metric);
					assert_true(q->label && r->label);
					assert_string_equal(q->label, r->label);
					assert_string_not_equal(q->value, r->value);
					if (q->help) {
						opened = true;
						break;
					}
				}
				if (!opened)
					fail_msg("%s: no row opens its family", r->metric);
			}
		}
		/* A family is opened once in all the tables. */
		for (size_t i = 0; i < tb->n; i++) {
			if (!tb->rows[i].help)
				continue;
			for (size_t u = 0; u <= t; u++)
				for (size_t j = 0; j < (u == t ? i : tables[u]->n); j++)
					if (tables[u]->rows[j].help)
						assert_string_not_equal(tables[u]->rows[j].metric,
									tb->rows[i].metric);
		}
	}
}

static void test_metrics(void **state)
{
	static char mem[256 << 10];
	static struct sp_summary s;
	struct sp_metrics_buf b;

	(void)state;
	fill(&s);
	sp_metrics_buf__init(&b, mem, sizeof(mem));
	for (size_t t = 0; t < N_TABLES; t++)
		sp_stat_rows__metrics(&b, *tables[t], &s);
	assert_false(b.truncated);
	assert_false(b.bad_name);
	for (size_t t = 0; t < N_TABLES; t++)
		for (size_t i = 0; i < tables[t]->n; i++) {
			const struct sp_stat_row *r = &tables[t]->rows[i];
			char line[512], val[40];

			if (!r->metric)
				continue;
			if (r->scale)
				sp_metrics__format_f64(field(&s, r) / r->scale, val, sizeof(val));
			else
				snprintf(val, sizeof(val), "%" PRIu64, field(&s, r));
			if (r->label)
				snprintf(line, sizeof(line), "\n%s{%s=\"%s\"} %s\n", r->metric, r->label,
					 r->value, val);
			else
				snprintf(line, sizeof(line), "\n%s %s\n", r->metric, val);
			if (count_of(mem, line) != 1)
				fail_msg("row %s: %s not found once in\n%s", r->metric, line, mem);
			if (r->help) {
				snprintf(line, sizeof(line), "# HELP %s ", r->metric);
				assert_int_equal(count_of(mem, line), 1);
				snprintf(line, sizeof(line), "# TYPE %s %s\n", r->metric,
					 r->type == SP_METRIC_GAUGE ? "gauge" : "counter");
				assert_int_equal(count_of(mem, line), 1);
			}
		}
}

static void test_summary_json(void **state)
{
	static struct sp_summary s;
	char path[128];
	uint8_t *text = NULL;
	size_t len = 0;

	(void)state;
	fill(&s);
	tu_path(path, sizeof(path), "summary.json");
	assert_int_equal(sp_summary__write_json(path, &s), 0);
	assert_int_equal(tu_read_file(path, &text, &len), 0);
	for (size_t t = 0; t < N_TABLES; t++)
		for (size_t i = 0; i < tables[t]->n; i++) {
			const struct sp_stat_row *r = &tables[t]->rows[i];
			char kv[128];

			if (!r->json)
				continue;
			snprintf(kv, sizeof(kv), "\"%s\": %" PRIu64, r->json, field(&s, r));
			if (count_of((const char *)text, kv) != 1)
				fail_msg("row %s: %s not found once in\n%s", r->json, kv, text);
		}
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tables),
		cmocka_unit_test(test_metrics),
		cmocka_unit_test_setup_teardown(test_summary_json, tu_setup_dir, tu_teardown_dir),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
