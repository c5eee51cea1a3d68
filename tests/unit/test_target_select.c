// SPDX-License-Identifier: MIT
/*
 * test_target_select.c - the agent's target selection
 * (collector/procs/target_select.h): cgroup prefixes match at '/'
 * boundaries on any hierarchy's line, selectors are bounded and checked,
 * verdicts are cached per pid and forgotten on exec, a process that
 * cannot be read is not selected (counted), and one without a service
 * name yet is deferred (asked again when due, selected when the name
 * appears, excluded for good after SP_SELECT_RETRIES); on a private proc
 * root of real files.
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

/* The service names the hook gives (the agent's is the resources' own:
 * sp_pipeline__service_name, exercised by test_agent_select.py). */
static const char *late_name;		/* pid 13: none until set */
static unsigned asked_again;

static const char *svc_of(uint32_t pid, bool look_again, void *ctx)
{
	(void)ctx;
	asked_again += look_again;
	return pid == 12 ? "cart" : pid == 13 ? late_name : pid == 14 || pid == 11 ? "other" : NULL;
}

/* root/PID/cgroup holding text. */
static void write_cgroup(const char *root, int pid, const char *text)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%d", root, pid);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%d/cgroup", root, pid);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
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
	assert_true(sp_target_select__wants(t, 1, 0, &fresh));	/* no selector: all */
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
	sp_target_select__set_service(t, svc_of, NULL);
	for (int pid = 12; pid <= 14; pid++)
		write_cgroup(root, pid, "0::/system.slice/y.service\n");
	assert_true(sp_target_select__wants(t, 12, 1000, NULL));	/* by service.name */
	assert_false(sp_target_select__wants(t, 14, 1000, &fresh));	/* another name */
	assert_true(fresh);
	/* no name yet: deferred, not final, asked again when due, and
	 * selected once the name appears */
	assert_false(sp_target_select__wants(t, 13, 1000, &fresh));
	assert_false(fresh);
	assert_int_equal(sp_target_select__stats(t)->deferred, 1);
	assert_false(sp_target_select__wants(t, 13, 1000 + SP_SELECT_RETRY_MS - 1, &fresh));
	assert_false(fresh);
	assert_int_equal(asked_again, 0);			/* not due yet */
	assert_false(sp_target_select__wants(t, 13, 1000 + SP_SELECT_RETRY_MS, &fresh));
	assert_int_equal(asked_again, 1);
	late_name = "cart";
	assert_true(sp_target_select__wants(t, 13, 1000 + 2 * SP_SELECT_RETRY_MS, &fresh));
	assert_true(fresh);
	assert_int_equal(asked_again, 2);
	assert_true(sp_target_select__wants(t, 13, 1000 + 99 * SP_SELECT_RETRY_MS, &fresh));
	assert_false(fresh);					/* cached */
	/* never a name: excluded for good after SP_SELECT_RETRIES */
	late_name = NULL;
	sp_target_select__forget(t, 13);
	{
		uint64_t now = 5000;
		int calls = 0;

		while (!sp_target_select__wants(t, 13, now, &fresh) && !fresh && calls < 100) {
			now += SP_SELECT_RETRY_MS;
			calls++;
		}
		assert_true(fresh);
		assert_int_equal(calls, SP_SELECT_RETRIES);
		assert_false(sp_target_select__wants(t, 13, now + 100000, NULL));
	}
	assert_int_equal(sp_target_select__stats(t)->deferred, 2);
	for (int pid = 10; pid <= 11; pid++)
		write_cgroup(root, pid, pid == 10 ? v1 : "0::/system.slice/x.service\n");
	assert_true(sp_target_select__wants(t, 10, 0, &fresh));
	assert_true(fresh);
	assert_true(sp_target_select__wants(t, 10, 0, &fresh));
	assert_false(fresh);				/* cached */
	assert_false(sp_target_select__wants(t, 11, 0, &fresh));
	assert_true(fresh);
	assert_false(sp_target_select__wants(t, 99, 0, &fresh));	/* no such process */
	assert_int_equal(sp_target_select__stats(t)->unreadable, 1);
	snprintf(path, sizeof(path), "%s/11/cgroup", root);
	f = fopen(path, "w");
	fputs(v1, f);
	fclose(f);
	assert_false(sp_target_select__wants(t, 11, 0, NULL));	/* still the cached verdict */
	sp_target_select__forget(t, 11);			/* it exec'd */
	assert_true(sp_target_select__wants(t, 11, 0, NULL));
	assert_int_equal(sp_target_select__stats(t)->included, 4);	/* 10, 11, 12, 13 */
	assert_int_equal(sp_target_select__stats(t)->excluded, 4);	/* 11, 99, 14, 13 */
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
