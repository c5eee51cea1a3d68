// SPDX-License-Identifier: MIT
/*
 * test_target_select.c - the agent's target selection
 * (collector/procs/target_select.h): cgroup prefixes match at '/'
 * boundaries on any hierarchy's line, selectors are bounded and checked,
 * verdicts are cached per pid and forgotten on exec, and a process that
 * cannot be read is not selected (counted); on a private proc root of
 * real files.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collector/procs/target_select.h"

static const char v1[] = "12:cpu,cpuacct:/kubepods/burstable/pod1234/abcd\n"
			 "9:name=systemd:/\n0::/\n";

static void test_cgroup_match(void **state)
{
	(void)state;
	assert_true(sp_target_select__cgroup_match(v1, "/kubepods/burstable/pod1234"));
	assert_true(sp_target_select__cgroup_match(v1, "/kubepods/burstable/pod1234/"));
	assert_true(sp_target_select__cgroup_match(v1, "/kubepods"));
	assert_false(sp_target_select__cgroup_match(v1, "/kubepods/burstable/pod12"));
	assert_false(sp_target_select__cgroup_match(v1, "/system.slice"));
	assert_true(sp_target_select__cgroup_match(v1, "/"));
	assert_false(sp_target_select__cgroup_match("garbage without colons", "/"));
	assert_false(sp_target_select__cgroup_match("", "/a"));
}

static void test_selectors_and_cache(void **state)
{
	char root[] = "/tmp/test_target_select.XXXXXX", path[256], big[300], cmd[300];
	struct sp_target_select *t = sp_target_select__new(NULL);
	bool fresh;
	FILE *f;

	(void)state;
	assert_non_null(t);
	assert_false(sp_target_select__active(t));
	assert_true(sp_target_select__wants(t, 1, &fresh));	/* no selector: all */
	assert_int_equal(sp_target_select__add_cgroup(t, "kubepods"), -EINVAL);
	assert_int_equal(sp_target_select__add_exe(t, ""), -EINVAL);
	memset(big, 'x', sizeof(big) - 1);
	big[0] = '/';
	big[sizeof(big) - 1] = 0;
	assert_int_equal(sp_target_select__add_cgroup(t, big), -E2BIG);
	for (int i = 0; i < SP_SELECT_MAX; i++)
		assert_int_equal(sp_target_select__add_exe(t, "x"), 0);
	assert_int_equal(sp_target_select__add_exe(t, "x"), -E2BIG);
	sp_target_select__free(t);

	assert_non_null(mkdtemp(root));
	t = sp_target_select__new(root);
	assert_int_equal(sp_target_select__add_cgroup(t, "/kubepods/burstable/pod1234"), 0);
	assert_int_equal(sp_target_select__add_service(t, "cart"), 0);
	snprintf(path, sizeof(path), "%s/12", root);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/12/environ", root);
	f = fopen(path, "w");
	assert_non_null(f);
	fwrite("A=1\0OTEL_RESOURCE_ATTRIBUTES=service.name=cart", 1, 47, f);
	fclose(f);
	assert_true(sp_target_select__wants(t, 12, NULL));	/* by service.name */
	for (int pid = 10; pid <= 11; pid++) {
		snprintf(path, sizeof(path), "%s/%d", root, pid);
		mkdir(path, 0755);
		snprintf(path, sizeof(path), "%s/%d/cgroup", root, pid);
		f = fopen(path, "w");
		assert_non_null(f);
		fputs(pid == 10 ? v1 : "0::/system.slice/x.service\n", f);
		fclose(f);
	}
	assert_true(sp_target_select__wants(t, 10, &fresh));
	assert_true(fresh);
	assert_true(sp_target_select__wants(t, 10, &fresh));
	assert_false(fresh);				/* cached */
	assert_false(sp_target_select__wants(t, 11, &fresh));
	assert_true(fresh);
	assert_false(sp_target_select__wants(t, 99, &fresh));	/* no such process */
	assert_int_equal(sp_target_select__stats(t)->unreadable, 1);
	snprintf(path, sizeof(path), "%s/11/cgroup", root);
	f = fopen(path, "w");
	fputs(v1, f);
	fclose(f);
	assert_false(sp_target_select__wants(t, 11, NULL));	/* still the cached verdict */
	sp_target_select__forget(t, 11);			/* it exec'd */
	assert_true(sp_target_select__wants(t, 11, NULL));
	assert_int_equal(sp_target_select__stats(t)->included, 3);
	assert_int_equal(sp_target_select__stats(t)->excluded, 2);
	sp_target_select__free(t);
	sp_target_select__free(NULL);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cgroup_match),
		cmocka_unit_test(test_selectors_and_cache),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
