// SPDX-License-Identifier: MIT
/*
 * test_counters.c - the BPF counter name table (collector/pipeline/
 * counters.h) and what is generated from it: the agent's /metrics families
 * (sp_counters__write_metrics) and the record summary's JSON.
 *
 * Table: a row for every enum sp_counter, names unique, every family used,
 * label and value both or neither, one-counter families unlabelled, label
 * values unique within a family, metric names valid counters.  Metrics:
 * each counter, given a value no other has, shows exactly once, under its
 * family's one HELP and TYPE.  Summary JSON: every counter under its name.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#include "collector/pipeline/counters.h"
#include "collector/pipeline/summary.h"

static unsigned count_of(const char *hay, const char *needle)
{
	unsigned n = 0;

	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

static void test_table(void **state)
{
	unsigned used[SP_CF__MAX] = { 0 };

	(void)state;
	for (int f = 0; f < SP_CF__MAX; f++) {
		const struct sp_counter_family_info *fam = &sp_counter_families[f];
		size_t len;

		assert_non_null(fam->metric);
		assert_non_null(fam->help);
		assert_true(sp_metrics__valid_name(fam->metric));
		len = strlen(fam->metric);
		assert_true(len > 6 && !strcmp(fam->metric + len - 6, "_total"));
		assert_int_equal(strncmp(fam->metric, "spanprof_bpf_", 13), 0);
		for (int g = 0; g < f; g++)
			assert_string_not_equal(fam->metric, sp_counter_families[g].metric);
	}
	for (int i = 0; i < SP_CNT__MAX; i++) {
		const struct sp_counter_info *c = &sp_counters[i];

		assert_non_null(c->name);	/* a row for every counter */
		assert_true(c->family >= 0 && c->family < SP_CF__MAX);
		assert_true(!sp_counter_families[c->family].label == !c->value);
		used[c->family]++;
		for (int j = 0; j < i; j++) {
			assert_string_not_equal(c->name, sp_counters[j].name);
			if (c->family == sp_counters[j].family && c->value)
				assert_string_not_equal(c->value, sp_counters[j].value);
		}
	}
	for (int f = 0; f < SP_CF__MAX; f++) {
		assert_true(used[f] > 0);
		if (!sp_counter_families[f].label)
			assert_int_equal(used[f], 1);
	}
}

/* Distinct values that cannot be substrings of one another's lines. */
static uint64_t value_of(int i)
{
	return 7100000000ull + 1000003ull * (uint64_t)i;
}

static void test_metrics_every_counter(void **state)
{
	static char mem[64 << 10];
	struct sp_metrics_buf b;
	uint64_t bpf[SP_CNT__MAX];

	(void)state;
	for (int i = 0; i < SP_CNT__MAX; i++)
		bpf[i] = value_of(i);
	sp_metrics_buf__init(&b, mem, sizeof(mem));
	sp_counters__write_metrics(&b, bpf);
	assert_false(b.truncated);
	assert_false(b.bad_name);
	for (int f = 0; f < SP_CF__MAX; f++) {
		char line[256];

		snprintf(line, sizeof(line), "# TYPE %s counter\n", sp_counter_families[f].metric);
		assert_int_equal(count_of(mem, line), 1);
		snprintf(line, sizeof(line), "# HELP %s ", sp_counter_families[f].metric);
		assert_int_equal(count_of(mem, line), 1);
	}
	for (int i = 0; i < SP_CNT__MAX; i++) {
		const struct sp_counter_info *c = &sp_counters[i];
		const struct sp_counter_family_info *fam = &sp_counter_families[c->family];
		char line[256];

		if (fam->label)
			snprintf(line, sizeof(line), "\n%s{%s=\"%s\"} %llu\n", fam->metric,
				 fam->label, c->value, (unsigned long long)bpf[i]);
		else
			snprintf(line, sizeof(line), "\n%s %llu\n", fam->metric,
				 (unsigned long long)bpf[i]);
		if (count_of(mem, line) != 1)
			fail_msg("counter %s: %s not found once in\n%s", c->name, line, mem);
	}
	/* One series per counter and nothing else. */
	{
		unsigned series = 0;

		for (const char *p = mem; *p; p = strchr(p, '\n') + 1)
			series += *p != '#';
		assert_int_equal(series, SP_CNT__MAX);
	}
}

static void test_summary_json_names(void **state)
{
	struct sp_summary s;
	char path[128];
	uint8_t *text = NULL;
	size_t len = 0;

	(void)state;
	memset(&s, 0, sizeof(s));
	for (int i = 0; i < SP_CNT__MAX; i++)
		s.bpf[i] = value_of(i);
	tu_path(path, sizeof(path), "summary.json");
	assert_int_equal(sp_summary__write_json(path, &s), 0);
	assert_int_equal(tu_read_file(path, &text, &len), 0);
	for (int i = 0; i < SP_CNT__MAX; i++) {
		char kv[128];

		snprintf(kv, sizeof(kv), "\"%s\": %llu", sp_counters[i].name,
			 (unsigned long long)s.bpf[i]);
		assert_int_equal(count_of((const char *)text, kv), 1);
	}
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_metrics_every_counter),
		cmocka_unit_test_setup_teardown(test_summary_json_names, tu_setup_dir,
						tu_teardown_dir),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
