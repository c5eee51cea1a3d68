// SPDX-License-Identifier: MIT
/*
 * test_memguard.c - the cgroup memory guard (collector/memguard.h).
 *
 * Parsers: limit files ("max", numbers, v1's 0x7ffffffffffff000 "no limit",
 * garbage), memory.stat keys, /proc/self/cgroup + mountinfo for v1
 * (hybrid host), v2, a container's mount root and a cgroup namespace,
 * escaped mount points.  Then poll() on fake cgroup trees in a temporary
 * directory: v1 with hierarchical limit and inactive file cache, v2 with a
 * tighter ancestor, no limit (guard off), and the 75%/60% hysteresis.
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
#include <unistd.h>

#include "collector/agent/memguard.h"

static void test_parse_limit(void **state)
{
	uint64_t v = 1;

	(void)state;
	assert_int_equal(sp_memguard__parse_limit("max\n", &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(sp_memguard__parse_limit("1048576\n", &v), 0);
	assert_int_equal(v, 1048576);
	assert_int_equal(sp_memguard__parse_limit("9223372036854771712\n", &v), 0);
	assert_int_equal(v, 0);		/* v1's "unlimited" */
	assert_int_equal(sp_memguard__parse_limit("99999999999999999999999\n", &v), 0);
	assert_int_equal(v, 0);		/* overflow: no limit */
	assert_int_equal(sp_memguard__parse_limit("0\n", &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(sp_memguard__parse_limit("", &v), -EINVAL);
	assert_int_equal(sp_memguard__parse_limit("-1\n", &v), -EINVAL);
	assert_int_equal(sp_memguard__parse_limit("12abc", &v), -EINVAL);
	assert_int_equal(sp_memguard__parse_limit("maxi", &v), -EINVAL);
	assert_int_equal(sp_memguard__parse_limit(NULL, &v), -EINVAL);
}

static void test_parse_stat(void **state)
{
	const char *s = "cache 100\nrss 200\ninactive_file 7\ntotal_inactive_file 9\n"
			"hierarchical_memory_limit 4096\n";
	uint64_t v;

	(void)state;
	assert_int_equal(sp_memguard__parse_stat(s, "inactive_file", &v), 0);
	assert_int_equal(v, 7);		/* not total_inactive_file's 9 */
	assert_int_equal(sp_memguard__parse_stat(s, "total_inactive_file", &v), 0);
	assert_int_equal(v, 9);
	assert_int_equal(sp_memguard__parse_stat(s, "hierarchical_memory_limit", &v), 0);
	assert_int_equal(v, 4096);
	assert_int_equal(sp_memguard__parse_stat(s, "rs", &v), -ENOENT);
	assert_int_equal(sp_memguard__parse_stat(s, "swap", &v), -ENOENT);
	assert_int_equal(sp_memguard__parse_stat("x \n", "x", &v), -EINVAL);
}

static const char *MI_HYBRID =
	"31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
	"32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
	"35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
	"40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd\n"
	"41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";

static void test_locate_v1_hybrid(void **state)
{
	const char *pc = "9:name=systemd:/\n4:memory:/process_api/abc\n1:cpu,cpuacct:/\n0::/\n";
	char dir[256], mnt[256];

	(void)state;
	assert_int_equal(sp_memguard__locate(pc, MI_HYBRID, dir, sizeof(dir), mnt, sizeof(mnt)),
			 SP_MEMGUARD_V1);
	assert_string_equal(dir, "/sys/fs/cgroup/memory/process_api/abc");
	assert_string_equal(mnt, "/sys/fs/cgroup/memory");
}

static void test_locate_v1_root_and_comounted(void **state)
{
	const char *mi = "35 31 0:32 / /cg/mem\\040x rw - cgroup cgroup rw,memory,cpu\n";
	const char *pc = "4:cpu,memory:/\n";
	char dir[256], mnt[256];

	(void)state;
	assert_int_equal(sp_memguard__locate(pc, mi, dir, sizeof(dir), mnt, sizeof(mnt)),
			 SP_MEMGUARD_V1);
	assert_string_equal(dir, "/cg/mem x");	/* octal escape undone, "/" joins to the mount */
	/* "memory" must be a whole word: "nomemory" is not it */
	assert_int_equal(sp_memguard__locate("4:nomemory:/a\n",
					     "1 1 0:1 / /m rw - cgroup cgroup rw,nomemory\n",
					     dir, sizeof(dir), mnt, sizeof(mnt)),
			 SP_MEMGUARD_NONE);
}

static void test_locate_v2(void **state)
{
	const char *mi = "25 1 0:22 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n";
	char dir[256], mnt[256];

	(void)state;
	assert_int_equal(sp_memguard__locate("0::/system.slice/spanprof-agent.service\n", mi,
					     dir, sizeof(dir), mnt, sizeof(mnt)),
			 SP_MEMGUARD_V2);
	assert_string_equal(dir, "/sys/fs/cgroup/system.slice/spanprof-agent.service");
	/* a container: cgroup namespace shows "/", mount root is the pod's */
	mi = "900 800 0:22 /kubepods/pod1/c1 /sys/fs/cgroup ro - cgroup2 cgroup2 rw\n";
	assert_int_equal(sp_memguard__locate("0::/\n", mi, dir, sizeof(dir), mnt, sizeof(mnt)),
			 SP_MEMGUARD_V2);
	assert_string_equal(dir, "/sys/fs/cgroup");
	/* no cgroupns: the full path starts with the mount root */
	assert_int_equal(sp_memguard__locate("0::/kubepods/pod1/c1/sub\n", mi, dir, sizeof(dir),
					     mnt, sizeof(mnt)),
			 SP_MEMGUARD_V2);
	assert_string_equal(dir, "/sys/fs/cgroup/sub");
	/* nothing mounted */
	assert_int_equal(sp_memguard__locate("0::/x\n", "", dir, sizeof(dir), mnt, sizeof(mnt)),
			 SP_MEMGUARD_NONE);
	assert_int_equal(sp_memguard__locate("garbage", "garbage", dir, sizeof(dir), mnt,
					     sizeof(mnt)),
			 SP_MEMGUARD_NONE);
}

static void test_hysteresis(void **state)
{
	struct sp_memguard g;

	(void)state;
	assert_int_equal(sp_memguard__init(&g, &(struct sp_memguard_config){
		.proc_cgroup = "/nonexistent", .mountinfo = "/nonexistent" }), 0);
	assert_int_equal(g.version, SP_MEMGUARD_NONE);
	assert_int_equal(sp_memguard__update(&g, 74, 100), 0);
	assert_false(g.engaged);
	assert_int_equal(sp_memguard__update(&g, 75, 100), 1);
	assert_true(g.engaged);
	assert_int_equal(sp_memguard__update(&g, 90, 100), 0);
	assert_int_equal(sp_memguard__update(&g, 60, 100), 0);	/* between: holds */
	assert_true(g.engaged);
	assert_int_equal(sp_memguard__update(&g, 59, 100), 1);
	assert_false(g.engaged);
	assert_int_equal(sp_memguard__update(&g, 70, 100), 0);
	assert_false(g.engaged);
	assert_int_equal(sp_memguard__update(&g, 99, 100), 1);
	assert_int_equal(sp_memguard__update(&g, 99, 0), 1);	/* limit removed: off */
	assert_false(g.engaged);
	assert_int_equal(g.engagements, 2);
	assert_int_equal(g.releases, 2);
	/* bad watermarks */
	assert_int_equal(sp_memguard__init(&g, &(struct sp_memguard_config){
		.high = 0.5, .low = 0.6 }), -EINVAL);
	assert_int_equal(sp_memguard__init(&g, &(struct sp_memguard_config){
		.high = 1.5 }), -EINVAL);
}

/* ---------------------------------------------------------- fake trees */
static void put(const char *rel, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", tu_dir, rel);
	for (char *p = path + strlen(tu_dir) + 1; *p; p++) {
		if (*p == '/') {
			*p = '\0';
			mkdir(path, 0755);
			*p = '/';
		}
	}
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void init_fake(struct sp_memguard *g, const char *pc, const char *mi_fmt)
{
	char mi[1024], pcp[512], mip[512];
	struct sp_memguard_config cfg;

	snprintf(mi, sizeof(mi), mi_fmt, tu_dir);
	put("proc_cgroup", pc);
	put("mountinfo", mi);
	snprintf(pcp, sizeof(pcp), "%s/proc_cgroup", tu_dir);
	snprintf(mip, sizeof(mip), "%s/mountinfo", tu_dir);
	cfg = (struct sp_memguard_config){ .proc_cgroup = pcp, .mountinfo = mip };
	assert_int_equal(sp_memguard__init(g, &cfg), 0);
}

/* How much the unwind tables may change: 100 MiB limit, release at 60
 * MiB, growth up to the midpoint 67.5 MiB, reclaim target 55 MiB. */
static void test_reclaim_delta(void **state)
{
	struct sp_memguard g;
	const int64_t M = 1ll << 20;

	(void)state;
	assert_int_equal(sp_memguard__init(&g, &(struct sp_memguard_config){
		.proc_cgroup = "/nonexistent", .mountinfo = "/nonexistent" }), 0);
	assert_true(sp_memguard__reclaim_delta(&g) == SP_MEMGUARD_NO_CAP);	/* no limit */
	sp_memguard__update(&g, 40 * M, 100 * M);
	assert_true(sp_memguard__reclaim_delta(&g) == 27 * M + M / 2);	/* room under mid */
	sp_memguard__update(&g, 70 * M, 100 * M);
	assert_true(sp_memguard__reclaim_delta(&g) == 0);		/* hold */
	sp_memguard__update(&g, 80 * M, 100 * M);			/* engaged */
	assert_true(g.engaged);
	assert_true(sp_memguard__reclaim_delta(&g) == -25 * M);	/* down to 55 */
	sp_memguard__update(&g, 62 * M, 100 * M);			/* still engaged */
	assert_true(sp_memguard__reclaim_delta(&g) == -7 * M);
	sp_memguard__update(&g, 54 * M, 100 * M);			/* released */
	assert_false(g.engaged);
	assert_true(sp_memguard__reclaim_delta(&g) == 13 * M + M / 2);
}

static void test_poll_v1(void **state)
{
	struct sp_memguard g;

	(void)state;
	put("mem/agent/memory.limit_in_bytes", "1000\n");
	put("mem/agent/memory.usage_in_bytes", "700\n");
	put("mem/agent/memory.stat", "cache 1\nhierarchical_memory_limit 900\n"
				     "total_inactive_file 50\n");
	init_fake(&g, "4:memory:/agent\n0::/\n",
		  "35 31 0:32 / %s/mem rw - cgroup cgroup rw,memory\n");
	assert_int_equal(g.version, SP_MEMGUARD_V1);
	assert_int_equal(sp_memguard__poll(&g), 0);
	assert_int_equal(g.limit, 900);		/* the hierarchical limit is tighter */
	assert_int_equal(g.usage, 650);		/* inactive file cache subtracted */
	assert_false(g.engaged);		/* 650 < 675 */
	put("mem/agent/memory.usage_in_bytes", "760\n");
	assert_int_equal(sp_memguard__poll(&g), 1);
	assert_true(g.engaged);
	put("mem/agent/memory.usage_in_bytes", "600\n");
	assert_int_equal(sp_memguard__poll(&g), 0);	/* 550 > 540: holds */
	put("mem/agent/memory.usage_in_bytes", "580\n");
	assert_int_equal(sp_memguard__poll(&g), 1);
	assert_false(g.engaged);
	/* unlimited: off */
	put("mem/agent/memory.limit_in_bytes", "9223372036854771712\n");
	put("mem/agent/memory.stat", "hierarchical_memory_limit 9223372036854771712\n");
	put("mem/agent/memory.usage_in_bytes", "999999\n");
	assert_int_equal(sp_memguard__poll(&g), 0);
	assert_int_equal(g.limit, 0);
	assert_false(g.engaged);
	/* unreadable: counted, state kept (the limit is read at a refresh:
	 * without a limit no usage can make a decision read it) */
	put("mem/agent/memory.limit_in_bytes", "garbage\n");
	assert_int_equal(sp_memguard__poll(&g), 0);
	sp_memguard__refresh(&g);
	assert_true(sp_memguard__poll(&g) < 0);
	assert_int_equal(g.read_errors, 1);
	sp_memguard__close(&g);
	sp_memguard__close(&g);		/* twice: a no-op */
}

/* Between refreshes only the usage file is read (kept open, pread); the
 * limit and memory.stat are read again when the usage with the last
 * inactive_file would change the state, and at a refresh. */
static void test_poll_refresh(void **state)
{
	struct sp_memguard g;
	char mi[1024], pcp[512], mip[512];

	(void)state;
	put("cg2/pod/memory.max", "1000\n");
	put("cg2/pod/memory.current", "500\n");
	put("cg2/pod/memory.stat", "inactive_file 100\n");
	snprintf(mi, sizeof(mi), "25 1 0:22 / %s/cg2 rw - cgroup2 cgroup2 rw\n", tu_dir);
	put("proc_cgroup", "0::/pod\n");
	put("mountinfo", mi);
	snprintf(pcp, sizeof(pcp), "%s/proc_cgroup", tu_dir);
	snprintf(mip, sizeof(mip), "%s/mountinfo", tu_dir);
	assert_int_equal(sp_memguard__init(&g, &(struct sp_memguard_config){
		.proc_cgroup = pcp, .mountinfo = mip, .refresh_ms = 3600 * 1000 }), 0);
	assert_true(g.usage_fd >= 0);
	assert_int_equal(sp_memguard__poll(&g), 0);
	assert_int_equal(g.full_reads, 1);
	assert_int_equal(g.usage, 400);
	/* far from the watermarks: the new usage is read, stat and limit not */
	put("cg2/pod/memory.current", "600\n");
	put("cg2/pod/memory.stat", "inactive_file 300\n");
	put("cg2/pod/memory.max", "2000\n");
	assert_int_equal(sp_memguard__poll(&g), 0);
	assert_int_equal(g.full_reads, 1);
	assert_int_equal(g.usage, 500);			/* 600 - the last 100 */
	assert_int_equal(g.limit, 1000);
	/* 900 - 100 >= 750 would engage: read again first, and with the new
	 * limit and inactive_file it does not (600 of 2000) */
	put("cg2/pod/memory.current", "900\n");
	assert_int_equal(sp_memguard__poll(&g), 0);
	assert_int_equal(g.full_reads, 2);
	assert_int_equal(g.limit, 2000);
	assert_int_equal(g.usage, 600);
	assert_false(g.engaged);
	/* a refresh reads them whatever the usage */
	put("cg2/pod/memory.stat", "inactive_file 0\n");
	sp_memguard__refresh(&g);
	assert_int_equal(sp_memguard__poll(&g), 0);
	assert_int_equal(g.full_reads, 3);
	assert_int_equal(g.usage, 900);
	/* the poll's pace: 900 of 2000 is under half the limit */
	assert_int_equal(sp_memguard__poll_ms(&g), SP_MEMGUARD_POLL_FAR_MS);
	put("cg2/pod/memory.current", "1000\n");
	assert_int_equal(sp_memguard__poll(&g), 0);
	assert_int_equal(sp_memguard__poll_ms(&g), SP_MEMGUARD_POLL_NEAR_MS);
	put("cg2/pod/memory.max", "max\n");
	sp_memguard__refresh(&g);
	assert_int_equal(sp_memguard__poll(&g), 0);
	assert_int_equal(sp_memguard__poll_ms(&g), 3600 * 1000);	/* no limit: the refresh */
	sp_memguard__close(&g);
	assert_int_equal(g.usage_fd, -1);
	assert_int_equal(sp_memguard__poll_ms(NULL), SP_MEMGUARD_POLL_FAR_MS);
	/* a low --mem-high (40%): near from 15% of the limit */
	put("cg2/pod/memory.max", "2000\n");
	put("cg2/pod/memory.current", "400\n");
	assert_int_equal(sp_memguard__init(&g, &(struct sp_memguard_config){
		.proc_cgroup = pcp, .mountinfo = mip, .high = 0.4, .low = 0.3 }), 0);
	assert_int_equal(sp_memguard__poll(&g), 0);
	assert_int_equal(sp_memguard__poll_ms(&g), SP_MEMGUARD_POLL_NEAR_MS);	/* 20% */
	sp_memguard__close(&g);
}

static void test_poll_v2_ancestor(void **state)
{
	struct sp_memguard g;

	(void)state;
	put("cg2/memory.current", "1\n");	/* the root has no memory.max */
	put("cg2/pod/memory.max", "2000\n");
	put("cg2/pod/agent/memory.max", "max\n");
	put("cg2/pod/agent/memory.current", "1600\n");
	put("cg2/pod/agent/memory.stat", "anon 1\ninactive_file 100\n");
	init_fake(&g, "0::/pod/agent\n", "25 1 0:22 / %s/cg2 rw - cgroup2 cgroup2 rw\n");
	assert_int_equal(g.version, SP_MEMGUARD_V2);
	assert_int_equal(sp_memguard__poll(&g), 1);
	assert_int_equal(g.limit, 2000);		/* from the ancestor */
	assert_int_equal(g.usage, 1500);
	assert_true(g.engaged);				/* 1500 >= 1500 */
	sp_memguard__close(&g);
	/* hybrid host: cgroup2 without the memory controller -> off */
	init_fake(&g, "0::/nomem\n", "25 1 0:22 / %s/cg2 rw - cgroup2 cgroup2 rw\n");
	assert_int_equal(g.version, SP_MEMGUARD_NONE);
	assert_int_equal(sp_memguard__poll(&g), 0);
	assert_false(g.engaged);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_limit),
		cmocka_unit_test(test_parse_stat),
		cmocka_unit_test(test_locate_v1_hybrid),
		cmocka_unit_test(test_locate_v1_root_and_comounted),
		cmocka_unit_test(test_locate_v2),
		cmocka_unit_test(test_hysteresis),
		cmocka_unit_test(test_reclaim_delta),
		cmocka_unit_test_setup_teardown(test_poll_v1, tu_setup_dir, tu_teardown_dir),
		cmocka_unit_test_setup_teardown(test_poll_v2_ancestor, tu_setup_dir, tu_teardown_dir),
		cmocka_unit_test_setup_teardown(test_poll_refresh, tu_setup_dir, tu_teardown_dir),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
