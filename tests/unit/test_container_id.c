// SPDX-License-Identifier: MIT
/*
 * test_container_id.c - container.id from /proc/PID/cgroup text
 * (collector/container_id.h): docker (v1 and systemd scope), containerd
 * and Kubernetes (cgroupfs and systemd drivers), cri-o, upper case, and
 * what must not match (pod UIDs, 63/65 hex digits, hex inside a word, no
 * container); the cache on a fake /proc (hit, miss read, eviction).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "testutil.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "collector/procs/container_id.h"

#define ID "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define ID2 "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"

static void ok(const char *text, const char *want)
{
	char out[SP_CONTAINER_ID_LEN + 1];

	assert_int_equal(sp_container_id__parse(text, out), 0);
	assert_string_equal(out, want);
}

static void none(const char *text)
{
	char out[SP_CONTAINER_ID_LEN + 1];

	assert_int_equal(sp_container_id__parse(text, out), -ENOENT);
}

static void test_parse(void **state)
{
	(void)state;
	ok("12:memory:/docker/" ID "\n0::/\n", ID);
	ok("0::/system.slice/docker-" ID ".scope\n", ID);
	ok("0::/kubepods/besteffort/pod3b4f1a2c-1d2e-4f5a-9b8c-7d6e5f4a3b2c/" ID "\n", ID);
	ok("0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod3b4f1a2c_1d2e_4f5a"
	   "_9b8c_7d6e5f4a3b2c.slice/cri-containerd-" ID ".scope\n", ID);
	ok("0::/kubepods.slice/kubepods-pod1.slice/crio-" ID ".scope\n", ID);
	ok("0::/docker/" ID2 "/nested/" ID "\n", ID);	/* the deepest */
	ok("4:memory:/docker/0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF\n",
	   ID);
	none("0::/\n");
	none("0::/user.slice/user-1000.slice/session-3.scope\n");
	none("0::/kubepods/besteffort/pod3b4f1a2c-1d2e-4f5a-9b8c-7d6e5f4a3b2c\n");
	none("0::/docker/0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde\n");
	none("0::/docker/0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0\n");
	none("0::/docker/x" ID "\n");
	none("");
	none(NULL);
}

static void test_cache(void **state)
{
	char path[128];
	struct sp_container_ids *c;
	FILE *f;

	(void)state;
	snprintf(path, sizeof(path), "%s/42", tu_dir);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/42/cgroup", tu_dir);
	f = fopen(path, "w");
	fputs("0::/docker/" ID "\n", f);
	fclose(f);
	c = sp_container_ids__new(2, tu_dir);
	assert_non_null(c);
	assert_string_equal(sp_container_ids__get(c, 42), ID);	/* miss: read now */
	sp_container_ids__note(c, 42);
	f = fopen(path, "w");
	fputs("0::/\n", f);	/* changed on disk: the noted value answers */
	fclose(f);
	assert_string_equal(sp_container_ids__get(c, 42), ID);
	assert_null(sp_container_ids__get(c, 7));		/* no such pid */
	assert_null(sp_container_ids__get(c, 0));
	sp_container_ids__note(c, 7);				/* gone: not stored */
	assert_int_equal(sp_container_ids__stats(c)->found, 2);	/* the miss read and the note */
	sp_container_ids__free(c);
	sp_container_ids__free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test_setup_teardown(test_cache, tu_setup_dir, tu_teardown_dir),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
