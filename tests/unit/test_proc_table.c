// SPDX-License-Identifier: MIT
/*
 * test_proc_table.c - the process table (collector/proc_table.h).
 *
 * Real /proc: this test process (a function of the test binary and of libc
 * resolve to mappings with the right path and build id), a deleted file
 * mapped executable (read through map_files), a child that is reaped
 * before its maps are read (maps_gone), a child that exits after being read
 * (late samples keep resolving), pid reuse after on_exit (re-read), the
 * refresh rate limit.  A fake proc_root: malformed and overlong maps lines
 * counted, anonymous executable memory, the root/PATH fallback with its
 * inode check, unreadable maps, and every bound: procs (with eviction of
 * gone processes), registry mappings, mappings per process.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "testutil.h"

#include "collector/procs/proc_table.h"

#define MS 1000000ULL

static uint64_t now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

__attribute__((noinline)) static int probe_function(int x)
{
	return x * 3 + 1;
}

static uint64_t probe_addr(void)
{
	return (uint64_t)(uintptr_t)&probe_function;
}

static void self_exe(char *buf, size_t size)
{
	ssize_t n = readlink("/proc/self/exe", buf, size - 1);

	assert_true(n > 0);
	buf[n] = '\0';
}

static void assert_same_id(const struct sp_build_id *a, const struct sp_build_id *b)
{
	assert_int_equal(a->len, b->len);
	assert_memory_equal(a->id, b->id, a->len);
}

/* ------------------------------------------------------------ real /proc */

static void test_self(void **state)
{
	struct sp_proc_table *t = sp_proc_table__new(NULL);
	const struct sp_proc_table_stats *st;
	const struct sp_mapping_info *m, *k;
	const struct sp_proc_info *pi;
	struct sp_build_id want, kid;
	char exe[PATH_MAX], comm[32] = "";
	uint32_t pid = (uint32_t)getpid(), id, id2, libc;
	uint64_t addr = probe_addr();
	FILE *f;

	(void)state;
	assert_non_null(t);
	st = sp_proc_table__stats(t);
	assert_int_equal(probe_function(1), 4);

	/* kernel mapping: id 1, always there */
	assert_int_equal(sp_proc_table__kernel_mapping(t), 1);
	assert_int_equal(sp_proc_table__n_mappings(t), 1);
	k = sp_proc_table__mapping(t, 1);
	assert_non_null(k);
	assert_true(k->kernel);
	assert_string_equal(k->path, "[kernel.kallsyms]");
	assert_true(k->start == 0xffff800000000000ULL && k->limit == UINT64_MAX);
	if (sp_buildid__kernel(&kid) == 0)
		assert_same_id(&k->build_id, &kid);
	assert_null(sp_proc_table__mapping(t, 0));
	assert_null(sp_proc_table__mapping(t, 2));
	assert_null(sp_proc_table__proc(t, pid));

	id = sp_proc_table__resolve(t, pid, addr, now());
	assert_true(id >= 2);
	m = sp_proc_table__mapping(t, id);
	assert_non_null(m);
	assert_false(m->kernel);
	self_exe(exe, sizeof(exe));
	assert_string_equal(m->path, exe);
	assert_true(m->start <= addr && addr < m->limit);
	assert_int_equal(sp_buildid__from_path("/proc/self/exe", &want), 0);
	assert_same_id(&m->build_id, &want);
	assert_int_equal(st->procs_seen, 1);
	assert_int_equal(st->maps_reads, 1);
	assert_int_equal(st->addr_unmapped, 0);

	/* Same address again, and one in libc: no new read. */
	id2 = sp_proc_table__resolve(t, pid, addr + 1, now());
	assert_int_equal(id2, id);
	libc = sp_proc_table__resolve(t, pid, (uint64_t)(uintptr_t)&getpid, now());
	assert_true(libc >= 2 && libc != id);
	m = sp_proc_table__mapping(t, libc);
	assert_non_null(strstr(m->path, "libc"));
	assert_true(m->build_id.len > 0);
	assert_int_equal(st->maps_reads, 1);

	pi = sp_proc_table__proc(t, pid);
	assert_non_null(pi);
	assert_int_equal(pi->pid, pid);
	assert_false(pi->gone);
	assert_string_equal(pi->exe_path, exe);
	f = fopen("/proc/self/comm", "r");
	assert_non_null(f);
	assert_non_null(fgets(comm, sizeof(comm), f));
	fclose(f);
	comm[strcspn(comm, "\n")] = '\0';
	assert_string_equal(pi->comm, comm);

	/* exec: forget and re-read; build ids now come from the cache and
	 * the interned mapping ids are the same. */
	sp_proc_table__on_exec(t, pid, "renamed", now());
	assert_int_equal(st->maps_reads, 2);
	assert_true(st->buildid_cache_hits > 0);
	assert_string_equal(sp_proc_table__proc(t, pid)->comm, "renamed");
	assert_int_equal(sp_proc_table__resolve(t, pid, addr, now()), id);
	assert_int_equal(st->maps_reads, 2);
	assert_int_equal(st->maps_gone + st->maps_unreadable + st->maps_malformed_lines, 0);

	sp_proc_table__free(t);
	sp_proc_table__free(NULL);
}

static void test_unknown_address_and_refresh(void **state)
{
	struct sp_proc_table_config cfg = { .refresh_interval_ns = 50 * MS };
	struct sp_proc_table *t = sp_proc_table__new(&cfg);
	const struct sp_proc_table_stats *st = sp_proc_table__stats(t);
	uint32_t pid = (uint32_t)getpid();
	int on_stack = 0;
	void *heap = malloc(64);
	uint64_t t0 = 1000 * MS;

	(void)state;
	assert_non_null(t);
	assert_true(sp_proc_table__resolve(t, pid, probe_addr(), t0) > 0);
	assert_int_equal(st->maps_reads, 1);

	/* Unmapped, stack (not executable), heap: 0 and counted.  Misses
	 * re-read maps once per interval at most. */
	assert_int_equal(sp_proc_table__resolve(t, pid, 0x10, t0 + 1), 0);
	assert_int_equal(st->addr_unmapped, 1);
	assert_int_equal(st->maps_reads, 1);
	assert_int_equal(sp_proc_table__resolve(t, pid, (uint64_t)(uintptr_t)&on_stack,
						t0 + 49 * MS), 0);
	assert_int_equal(sp_proc_table__resolve(t, pid, (uint64_t)(uintptr_t)heap,
						t0 + 49 * MS), 0);
	assert_int_equal(st->addr_unmapped, 3);
	assert_int_equal(st->maps_reads, 1);
	assert_int_equal(sp_proc_table__resolve(t, pid, 0x10, t0 + 50 * MS), 0);
	assert_int_equal(st->maps_reads, 2);
	assert_int_equal(sp_proc_table__resolve(t, pid, 0x10, t0 + 60 * MS), 0);
	assert_int_equal(st->maps_reads, 2);
	/* A clock that goes backwards does not cause a read storm. */
	assert_int_equal(sp_proc_table__resolve(t, pid, 0x10, 5), 0);
	assert_int_equal(st->maps_reads, 2);
	assert_int_equal(st->addr_unmapped, 6);
	/* A kernel address is not a user mapping. */
	assert_int_equal(sp_proc_table__resolve(t, pid, 0xffffffff81000000ULL, t0 + 60 * MS), 0);
	free(heap);
	sp_proc_table__free(t);
}

/* A deleted executable file stays resolvable with its build id
 * (map_files needs root; skipped otherwise). */
static void test_deleted_file(void **state)
{
	struct sp_proc_table *t;
	const struct sp_mapping_info *m;
	struct sp_build_id want;
	char path[128], buf[65536];
	struct stat st;
	ssize_t n;
	void *map;
	int in, out;
	uint32_t id;

	(void)state;
	if (geteuid() != 0)
		skip();
	snprintf(path, sizeof(path), "%s/copy_exe", tu_dir);
	in = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	out = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
	assert_true(in >= 0 && out >= 0);
	while ((n = read(in, buf, sizeof(buf))) > 0)
		assert_int_equal(write(out, buf, (size_t)n), n);
	close(in);
	close(out);
	out = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(out >= 0);
	assert_int_equal(fstat(out, &st), 0);
	map = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_EXEC, MAP_PRIVATE, out, 0);
	close(out);
	if (map == MAP_FAILED) {
		unlink(path);
		skip();	/* noexec /tmp */
	}
	assert_int_equal(unlink(path), 0);
	assert_int_equal(sp_buildid__from_path("/proc/self/exe", &want), 0);

	t = sp_proc_table__new(NULL);
	assert_non_null(t);
	id = sp_proc_table__resolve(t, (uint32_t)getpid(), (uint64_t)(uintptr_t)map + 100, now());
	assert_true(id >= 2);
	m = sp_proc_table__mapping(t, id);
	assert_string_equal(m->path, path);	/* " (deleted)" stripped */
	assert_int_equal(m->offset, 0);
	assert_same_id(&m->build_id, &want);
	sp_proc_table__free(t);
	munmap(map, (size_t)st.st_size);
}

static void test_child_reaped_before_read(void **state)
{
	struct sp_proc_table *t = sp_proc_table__new(NULL);
	const struct sp_proc_table_stats *st = sp_proc_table__stats(t);
	const struct sp_proc_info *pi;
	pid_t child = fork();

	(void)state;
	assert_true(child >= 0);
	if (child == 0)
		_exit(0);
	assert_int_equal(waitpid(child, NULL, 0), child);

	assert_int_equal(sp_proc_table__resolve(t, (uint32_t)child, probe_addr(), now()), 0);
	assert_int_equal(st->maps_gone, 1);
	assert_int_equal(st->addr_unmapped, 1);
	pi = sp_proc_table__proc(t, (uint32_t)child);
	assert_non_null(pi);
	assert_true(pi->gone);
	assert_string_equal(pi->exe_path, "");
	/* More samples for it: still one lost process, each sample counted. */
	assert_int_equal(sp_proc_table__resolve(t, (uint32_t)child, probe_addr(),
						now() + 1000 * MS), 0);
	assert_int_equal(st->maps_gone, 1);
	assert_int_equal(st->addr_unmapped, 2);
	sp_proc_table__on_exit(t, (uint32_t)child);
	sp_proc_table__on_exit(t, 999999999);	/* never seen: ignored */
	sp_proc_table__free(t);
}

/* A child of this process (the same layout as ours) that waits in pause()
 * until it is killed; returned once it runs.  The caller kills and reaps
 * it. */
static pid_t fork_paused(void)
{
	int pfd[2];
	pid_t child;
	char c;

	assert_int_equal(pipe(pfd), 0);
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		close(pfd[0]);
		if (write(pfd[1], "r", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(pfd[1]);
	assert_int_equal(read(pfd[0], &c, 1), 1);
	close(pfd[0]);
	return child;
}

/* lazy_exec: an exec's read waits for the image's first sample; an image
 * that exits unsampled is never read; a re-read asked for meanwhile is
 * left to that sample; one gone by its first sample is counted per sample
 * by reason, and its name's next execs are read at once while that pays
 * (8 of credit, -1 per unsampled exit, +4 per sampled exec). */
static void test_lazy_exec(void **state)
{
	struct sp_proc_table_config cfg = { .lazy_exec = true };
	struct sp_proc_table *t = sp_proc_table__new(&cfg);
	const struct sp_proc_table_stats *st = sp_proc_table__stats(t);
	const struct sp_proc_info *pi;
	pid_t child = fork_paused(), dead;
	uint32_t pid = (uint32_t)child, id, i;

	(void)state;
	assert_non_null(t);
	assert_true(sp_proc_table__on_exec(t, pid, "lazykid", now()));
	assert_int_equal(st->maps_reads, 0);
	assert_int_equal(st->exec_reads_deferred, 1);
	assert_int_equal(sp_proc_table__reread(t, pid, now()), -ENOENT);
	assert_int_equal(st->rereads_pending, 1);
	assert_int_equal(st->maps_reads, 0);
	/* Its first sample: read now, once. */
	assert_true(sp_proc_table__sampled(t, pid, now()));
	assert_false(sp_proc_table__sampled(t, pid, now()));
	assert_int_equal(st->maps_reads, 1);
	assert_int_equal(st->exec_reads_on_sample, 1);
	id = sp_proc_table__resolve(t, pid, probe_addr(), now());
	assert_true(id >= 2);
	assert_int_equal(st->maps_reads, 1);
	pi = sp_proc_table__proc(t, pid);
	assert_int_equal(pi->unread, SP_PROC_UNREAD_NONE);
	/* Exec'd again and gone unsampled: never read. */
	assert_true(sp_proc_table__on_exec(t, pid, "lazykid", now()));
	sp_proc_table__on_exit(t, pid);
	assert_int_equal(st->exec_reads_saved, 1);
	assert_int_equal(st->maps_reads, 1);
	kill(child, SIGKILL);
	assert_int_equal(waitpid(child, NULL, 0), child);

	/* Gone by its first sample: unread by reason, its name learned. */
	dead = fork();
	assert_true(dead >= 0);
	if (dead == 0)
		_exit(0);
	assert_true(sp_proc_table__on_exec(t, (uint32_t)dead, "shorty", now()));
	assert_int_equal(waitpid(dead, NULL, 0), dead);
	assert_true(sp_proc_table__sampled(t, (uint32_t)dead, now()));
	assert_int_equal(sp_proc_table__resolve(t, (uint32_t)dead, probe_addr(), now()), 0);
	pi = sp_proc_table__proc(t, (uint32_t)dead);
	assert_true(pi->gone);
	assert_int_equal(pi->unread, SP_PROC_UNREAD_DEFERRED);
	assert_int_equal(st->exec_names_learned, 1);
	sp_proc_table__on_exit(t, (uint32_t)dead);

	/* The name's execs are read at once now: one sampled earns 4, so
	 * 8 + 4 = 12 more exiting unsampled make it lazy again.  Another name
	 * stays lazy. */
	child = fork_paused();
	pid = (uint32_t)child;
	assert_true(sp_proc_table__on_exec(t, pid, "other", now()));
	assert_false(sp_proc_table__on_exec(t, pid, "shorty", now()));
	assert_true(sp_proc_table__touch(t, pid));	/* sampled */
	sp_proc_table__on_exit(t, pid);
	for (i = 0; i < 12; i++) {
		uint64_t reads = st->maps_reads;

		assert_false(sp_proc_table__on_exec(t, pid, "shorty", now()));
		assert_int_equal(st->maps_reads, reads + 1);
		sp_proc_table__on_exit(t, pid);
	}
	assert_int_equal(st->exec_reads_learned, 13);
	assert_true(sp_proc_table__on_exec(t, pid, "shorty", now()));
	assert_int_equal(st->exec_names_learned, 1);
	kill(child, SIGKILL);
	assert_int_equal(waitpid(child, NULL, 0), child);
	sp_proc_table__free(t);
}

static void test_child_exits_after_read(void **state)
{
	struct sp_proc_table *t = sp_proc_table__new(NULL);
	const struct sp_proc_table_stats *st = sp_proc_table__stats(t);
	pid_t child;
	uint32_t id, reads;

	(void)state;
	child = fork_paused();

	/* Forked: same layout as ours. */
	id = sp_proc_table__resolve(t, (uint32_t)child, probe_addr(), now());
	assert_true(id >= 2);
	assert_false(sp_proc_table__proc(t, (uint32_t)child)->gone);
	kill(child, SIGKILL);
	assert_int_equal(waitpid(child, NULL, 0), child);

	/* A late sample after the exit event: one re-read is tried, /proc is
	 * gone, the old maps answer; it is not a lost process. */
	sp_proc_table__on_exit(t, (uint32_t)child);
	assert_true(sp_proc_table__proc(t, (uint32_t)child)->gone);
	reads = (uint32_t)st->maps_reads;
	assert_int_equal(sp_proc_table__resolve(t, (uint32_t)child, probe_addr(), now()), id);
	assert_int_equal(st->maps_reads, reads + 1);
	assert_int_equal(st->maps_gone, 0);
	assert_true(sp_proc_table__proc(t, (uint32_t)child)->gone);
	/* and no further reads while the old maps answer */
	assert_int_equal(sp_proc_table__resolve(t, (uint32_t)child, probe_addr(),
						now() + 1000 * MS), id);
	assert_int_equal(st->maps_reads, reads + 1);
	sp_proc_table__free(t);
}

/* The real late sample: the exit event is handled while the process is a
 * zombie, whose /proc/PID/maps still opens and reads empty (its mm is
 * gone).  That read must not replace what was known. */
static void test_zombie_keeps_maps(void **state)
{
	struct sp_proc_table *t = sp_proc_table__new(NULL);
	char path[64], buf[512];
	pid_t child;
	uint32_t id;
	bool zombie = false;

	(void)state;
	child = fork_paused();
	id = sp_proc_table__resolve(t, (uint32_t)child, probe_addr(), now());
	assert_true(id >= 2);
	kill(child, SIGKILL);
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)child);
	for (int i = 0; i < 2000 && !zombie; i++) {	/* up to 2 s */
		FILE *f = fopen(path, "r");
		char *rp;

		assert_non_null(f);
		rp = fgets(buf, sizeof(buf), f) ? strrchr(buf, ')') : NULL;
		fclose(f);
		zombie = rp && rp[1] == ' ' && rp[2] == 'Z';
		if (!zombie)
			usleep(1000);
	}
	assert_true(zombie);
	sp_proc_table__on_exit(t, (uint32_t)child);
	assert_int_equal(sp_proc_table__resolve(t, (uint32_t)child, probe_addr(), now()), id);
	assert_true(sp_proc_table__proc(t, (uint32_t)child)->gone);
	assert_int_equal(waitpid(child, NULL, 0), child);
	sp_proc_table__free(t);
}

static void test_pid_reuse(void **state)
{
	struct sp_proc_table *t = sp_proc_table__new(NULL);
	const struct sp_proc_table_stats *st = sp_proc_table__stats(t);
	uint32_t pid = (uint32_t)getpid(), id;

	(void)state;
	id = sp_proc_table__resolve(t, pid, probe_addr(), now());
	assert_true(id >= 2);
	assert_int_equal(st->maps_reads, 1);
	sp_proc_table__on_exit(t, pid);
	assert_true(sp_proc_table__proc(t, pid)->gone);
	/* "Same pid, new process": must be read again, and is alive. */
	assert_int_equal(sp_proc_table__resolve(t, pid, probe_addr(), now()), id);
	assert_int_equal(st->maps_reads, 2);
	assert_false(sp_proc_table__proc(t, pid)->gone);
	assert_int_equal(st->procs_seen, 1);
	assert_int_equal(st->maps_gone, 0);
	sp_proc_table__free(t);
}

/* ------------------------------------------------------------ fake /proc */

static void fake_proc(uint32_t pid, const char *maps, size_t len)
{
	char path[256];
	int fd;

	snprintf(path, sizeof(path), "%s/%u", tu_dir, pid);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%u/maps", tu_dir, pid);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, maps, len), (ssize_t)len);
	close(fd);
}

static void fake_proc_s(uint32_t pid, const char *maps)
{
	fake_proc(pid, maps, strlen(maps));
}

static struct sp_proc_table *fake_table(uint32_t procs, uint32_t mappings, uint32_t per_proc)
{
	struct sp_proc_table_config cfg = {
		.max_procs = procs, .max_mappings = mappings,
		.max_maps_per_proc = per_proc, .buildid_cache_entries = 16,
		.refresh_interval_ns = 10 * MS, .proc_root = tu_dir,
	};
	struct sp_proc_table *t = sp_proc_table__new(&cfg);

	assert_non_null(t);
	return t;
}

/* [vdso] with the configured image's build id and length; a [vdso] of
 * another length (a 32-bit process's image) stays unknown.  Two
 * processes' anonymous memory at one range are two entries. */
static void test_fake_vdso_and_anon(void **state)
{
	static const char m1[] =
		"7f0000000000-7f0000002000 r-xp 00000000 00:00 0 [vdso]\n"
		"7f1000000000-7f1000100000 rwxp 00000000 00:00 0 \n";
	static const char m2[] =
		"7f0000000000-7f0000001000 r-xp 00000000 00:00 0 [vdso]\n"
		"7f1000000000-7f1000100000 rwxp 00000000 00:00 0 \n";
	struct sp_proc_table_config cfg = {
		.max_procs = 8, .max_mappings = 64, .max_maps_per_proc = 64,
		.buildid_cache_entries = 16, .refresh_interval_ns = 10 * MS, .proc_root = tu_dir,
		.vdso_len = 0x2000,
	};
	const struct sp_mapping_info *m;
	struct sp_proc_table *t;
	uint32_t a, b;

	(void)state;
	cfg.vdso_build_id.len = 20;
	memset(cfg.vdso_build_id.id, 0xab, 20);
	fake_proc(201, m1, strlen(m1));
	fake_proc(202, m2, strlen(m2));
	t = sp_proc_table__new(&cfg);
	assert_non_null(t);
	m = sp_proc_table__mapping(t, sp_proc_table__resolve(t, 201, 0x7f0000001000ULL, MS));
	assert_non_null(m);
	assert_int_equal(m->kind, SP_MAP_VDSO);
	assert_string_equal(m->path, "[vdso]");
	assert_int_equal(m->build_id.len, 20);
	assert_int_equal(m->build_id.id[19], 0xab);
	assert_int_equal(sp_proc_table__resolve(t, 202, 0x7f0000000800ULL, MS), 0);
	a = sp_proc_table__resolve(t, 201, 0x7f1000000010ULL, MS);
	b = sp_proc_table__resolve(t, 202, 0x7f1000000010ULL, MS);
	assert_true(a && b && a != b);
	assert_int_equal(sp_proc_table__mapping(t, a)->pid, 201);
	assert_int_equal(sp_proc_table__mapping(t, b)->pid, 202);
	sp_proc_table__free(t);
}

static void test_fake_malformed_lines(void **state)
{
	char maps[16384];
	size_t n = 0;
	struct sp_proc_table *t;
	const struct sp_proc_table_stats *st;
	const struct sp_mapping_info *m;
	uint32_t id;

	(void)state;
	n += (size_t)sprintf(maps + n,
		"00400000-00401000 r--p 00000000 08:01 10 /bin/fake\n"
		"00401000-00402000 r-xp 00001000 08:01 10 /bin/fake\n"
		"garbage line\n"
		"00402000-00401000 r-xp 00000000 08:01 10 /bin/backwards\n"
		"00500000-00600000 rwxp 00000000 00:00 0 \n"		/* JIT */
		"\n"
		"zzzz-00701000 r-xp 00000000 08:01 11 /bin/bad\n"
		"00800000-00801000 r-xp 00000000 08:01 12 /usr/lib/with space.so (deleted)\n"
		"7ffd00000000-7ffd00002000 r-xp 00000000 00:00 0 [vdso]\n");
	/* An overlong line (bigger than any path) is one malformed line. */
	n += (size_t)sprintf(maps + n, "00900000-00901000 r-xp 00000000 08:01 13 /");
	memset(maps + n, 'a', 9000);
	n += 9000;
	maps[n++] = '\n';
	/* The last line has no newline. */
	n += (size_t)sprintf(maps + n, "00a00000-00a01000 r-xp 00000000 08:01 14 /bin/last");
	fake_proc(100, maps, n);

	t = fake_table(8, 64, 64);
	st = sp_proc_table__stats(t);
	id = sp_proc_table__resolve(t, 100, 0x401800, 1000 * MS);
	assert_true(id >= 2);
	m = sp_proc_table__mapping(t, id);
	assert_string_equal(m->path, "/bin/fake");
	assert_true(m->start == 0x401000 && m->limit == 0x402000 && m->offset == 0x1000);
	assert_int_equal(m->build_id.len, 0);	/* no such file */
	assert_int_equal(st->maps_malformed_lines, 5);
	assert_int_equal(st->maps_reads, 1);

	m = sp_proc_table__mapping(t, sp_proc_table__resolve(t, 100, 0x800000, 1000 * MS));
	assert_non_null(m);
	assert_string_equal(m->path, "/usr/lib/with space.so");
	m = sp_proc_table__mapping(t, sp_proc_table__resolve(t, 100, 0xa00fff, 1000 * MS));
	assert_non_null(m);
	assert_string_equal(m->path, "/bin/last");
	assert_int_equal(st->no_build_id, 3);

	/* Read-only part of the file, vdso (no vDSO build id configured),
	 * the overlong line's range: unmapped, and known ranges need no
	 * re-read.  Anonymous executable memory (JIT) is this process's own
	 * "[anon]" entry. */
	assert_int_equal(sp_proc_table__resolve(t, 100, 0x400800, 1000 * MS), 0);
	id = sp_proc_table__resolve(t, 100, 0x500000, 2000 * MS);
	m = sp_proc_table__mapping(t, id);
	assert_non_null(m);
	assert_int_equal(m->kind, SP_MAP_ANON);
	assert_int_equal(m->pid, 100);
	assert_string_equal(m->path, "[anon]");
	assert_true(m->start == 0x500000 && m->limit == 0x600000 && !m->build_id.len);
	assert_int_equal(st->addr_anon, 1);
	assert_int_equal(sp_proc_table__resolve(t, 100, 0x7ffd00000010ULL, 3000 * MS), 0);
	assert_int_equal(st->addr_unmapped, 2);
	assert_int_equal(st->maps_reads, 1);	/* JIT/vdso are known ranges */
	assert_int_equal(sp_proc_table__resolve(t, 100, 0x900800, 3000 * MS), 0);
	assert_int_equal(st->maps_reads, 2);
	assert_int_equal(st->maps_malformed_lines, 10);
	assert_int_equal(st->maps_gone + st->maps_unreadable, 0);
	/* No /proc/100/comm or exe in the fake tree. */
	assert_string_equal(sp_proc_table__proc(t, 100)->comm, "");
	assert_string_equal(sp_proc_table__proc(t, 100)->exe_path, "");
	sp_proc_table__free(t);
}

/* No map_files: PID/root/PATH is opened, if the inode still matches. */
static void test_fake_root_fallback(void **state)
{
	char exe[PATH_MAX], maps[3 * PATH_MAX + 512], link[256];
	struct sp_proc_table *t;
	const struct sp_proc_table_stats *st;
	const struct sp_mapping_info *m;
	struct sp_build_id want;
	struct stat sb;

	(void)state;
	self_exe(exe, sizeof(exe));
	assert_int_equal(stat(exe, &sb), 0);
	assert_int_equal(sp_buildid__from_path(exe, &want), 0);
	snprintf(maps, sizeof(maps),
		 "1000-2000 r-xp 00000000 08:01 %llu %s\n"
		 "3000-4000 r-xp 00000000 08:01 %llu %s\n"
		 "5000-6000 r-xp 00000000 08:01 %llu %s (deleted)\n",
		 (unsigned long long)sb.st_ino, exe,
		 (unsigned long long)sb.st_ino + 1, exe,
		 (unsigned long long)sb.st_ino, exe);
	fake_proc_s(200, maps);
	snprintf(link, sizeof(link), "%s/200/root", tu_dir);
	unlink(link);
	assert_int_equal(symlink("/", link), 0);

	t = fake_table(8, 64, 64);
	st = sp_proc_table__stats(t);
	m = sp_proc_table__mapping(t, sp_proc_table__resolve(t, 200, 0x1000, 0));
	assert_non_null(m);
	assert_same_id(&m->build_id, &want);
	/* inode mismatch: replaced file, no id */
	m = sp_proc_table__mapping(t, sp_proc_table__resolve(t, 200, 0x3000, 0));
	assert_non_null(m);
	assert_int_equal(m->build_id.len, 0);
	/* deleted and no map_files: the path names another file now */
	m = sp_proc_table__mapping(t, sp_proc_table__resolve(t, 200, 0x5000, 0));
	assert_non_null(m);
	assert_int_equal(m->build_id.len, 0);
	assert_int_equal(st->no_build_id, 2);
	assert_int_equal(st->buildid_cache_misses, 1);
	sp_proc_table__free(t);
}

static void copy_file(const char *from, const char *to)
{
	char buf[65536];
	ssize_t n;
	int in = open(from, O_RDONLY | O_CLOEXEC);
	int out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);

	assert_true(in >= 0 && out >= 0);
	while ((n = read(in, buf, sizeof(buf))) > 0)
		assert_int_equal(write(out, buf, (size_t)n), n);
	close(in);
	close(out);
}

/* PID/root is a container root: an absolute symlink inside it resolves
 * inside it, and a FIFO (or anything not a regular file) where a library
 * was is neither opened for reading nor blocks. */
static void test_fake_container_root(void **state)
{
	char croot[256], p[512], maps[1024];
	struct sp_proc_table *t;
	const struct sp_mapping_info *m;
	struct sp_build_id want;
	struct stat elf, fifo;

	(void)state;
	snprintf(croot, sizeof(croot), "%s/croot", tu_dir);
	mkdir(croot, 0755);
	snprintf(p, sizeof(p), "%s/bin", croot);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/lib", croot);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/bin/spanprof-test-elf", croot);
	copy_file("/proc/self/exe", p);
	assert_int_equal(stat(p, &elf), 0);
	assert_int_equal(sp_buildid__from_path(p, &want), 0);
	snprintf(p, sizeof(p), "%s/lib/link.so", croot);
	assert_int_equal(symlink("/bin/spanprof-test-elf", p), 0);
	snprintf(p, sizeof(p), "%s/lib/fifo.so", croot);
	assert_int_equal(mkfifo(p, 0644), 0);
	assert_int_equal(stat(p, &fifo), 0);

	snprintf(maps, sizeof(maps),
		 "1000-2000 r-xp 00000000 08:01 %llu /lib/link.so\n"
		 "3000-4000 r-xp 00000000 08:01 %llu /lib/fifo.so\n"
		 "5000-6000 r-xp 00000000 08:01 %llu /../../lib/link.so\n",
		 (unsigned long long)elf.st_ino, (unsigned long long)fifo.st_ino,
		 (unsigned long long)elf.st_ino);
	fake_proc_s(210, maps);
	snprintf(p, sizeof(p), "%s/210/root", tu_dir);
	unlink(p);
	assert_int_equal(symlink(croot, p), 0);

	t = fake_table(8, 64, 64);
	m = sp_proc_table__mapping(t, sp_proc_table__resolve(t, 210, 0x1000, 0));
	assert_non_null(m);
	assert_same_id(&m->build_id, &want);
	m = sp_proc_table__mapping(t, sp_proc_table__resolve(t, 210, 0x3000, 0));
	assert_non_null(m);
	assert_int_equal(m->build_id.len, 0);
	/* ".." cannot climb out of the root either */
	m = sp_proc_table__mapping(t, sp_proc_table__resolve(t, 210, 0x5000, 0));
	assert_non_null(m);
	assert_same_id(&m->build_id, &want);
	assert_int_equal(sp_proc_table__stats(t)->buildid_cache_misses, 1);
	assert_int_equal(sp_proc_table__stats(t)->buildid_cache_hits, 1);
	sp_proc_table__free(t);
}

static void test_fake_unreadable(void **state)
{
	char path[256];
	struct sp_proc_table *t;
	const struct sp_proc_table_stats *st;

	(void)state;
	/* maps is a directory: open works, read fails (EISDIR). */
	snprintf(path, sizeof(path), "%s/300", tu_dir);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/300/maps", tu_dir);
	mkdir(path, 0755);
	t = fake_table(8, 64, 64);
	st = sp_proc_table__stats(t);
	assert_int_equal(sp_proc_table__resolve(t, 300, 0x1000, 0), 0);
	assert_int_equal(st->maps_unreadable, 1);
	assert_int_equal(st->maps_gone, 0);
	assert_false(sp_proc_table__proc(t, 300)->gone);
	/* empty maps (a zombie): read fine, nothing mapped */
	fake_proc_s(301, "");
	assert_int_equal(sp_proc_table__resolve(t, 301, 0x1000, 0), 0);
	assert_int_equal(st->maps_unreadable, 1);
	assert_int_equal(st->addr_unmapped, 2);
	sp_proc_table__free(t);
}

static void test_fake_table_full(void **state)
{
	struct sp_proc_table *t;
	const struct sp_proc_table_stats *st;
	uint32_t pid;

	(void)state;
	for (pid = 400; pid < 404; pid++)
		fake_proc_s(pid, "1000-2000 r-xp 00000000 08:01 1 /bin/x\n");
	t = fake_table(2, 64, 64);
	st = sp_proc_table__stats(t);
	assert_true(sp_proc_table__resolve(t, 400, 0x1000, 0) > 0);
	assert_true(sp_proc_table__resolve(t, 401, 0x1000, 0) > 0);
	assert_int_equal(sp_proc_table__resolve(t, 402, 0x1000, 0), 0);
	assert_int_equal(st->procs_table_full, 1);
	assert_null(sp_proc_table__proc(t, 402));
	sp_proc_table__on_exec(t, 403, "x", 0);	/* no slot either */
	assert_int_equal(st->procs_table_full, 2);

	/* A gone process is evicted for a new one; the oldest exit first. */
	sp_proc_table__on_exit(t, 401);
	sp_proc_table__on_exit(t, 400);
	assert_true(sp_proc_table__resolve(t, 402, 0x1000, 0) > 0);
	assert_null(sp_proc_table__proc(t, 401));
	assert_non_null(sp_proc_table__proc(t, 400));
	assert_true(sp_proc_table__resolve(t, 403, 0x1000, 0) > 0);
	assert_null(sp_proc_table__proc(t, 400));
	assert_int_equal(st->procs_table_full, 2);
	assert_int_equal(st->procs_seen, 4);
	/* The same mapping in four processes at the same address: one id. */
	assert_int_equal(sp_proc_table__n_mappings(t), 2);
	sp_proc_table__free(t);
}

static void test_fake_mapping_caps(void **state)
{
	char maps[4096];
	size_t n = 0;
	struct sp_proc_table *t;
	const struct sp_proc_table_stats *st;
	int i;

	(void)state;
	for (i = 0; i < 6; i++)
		n += (size_t)sprintf(maps + n, "%x-%x r-xp 00000000 08:01 %d /lib/l%d.so\n",
				     0x10000 * (i + 1), 0x10000 * (i + 1) + 0x1000, i, i);
	fake_proc_s(500, maps);

	/* registry: kernel + 2 */
	t = fake_table(8, 3, 64);
	st = sp_proc_table__stats(t);
	assert_true(sp_proc_table__resolve(t, 500, 0x10000, 0) > 0);
	assert_true(sp_proc_table__resolve(t, 500, 0x20000, 0) > 0);
	assert_int_equal(sp_proc_table__resolve(t, 500, 0x30000, 0), 0);
	assert_int_equal(st->mappings_full, 4);
	assert_int_equal(sp_proc_table__n_mappings(t), 3);
	assert_int_equal(st->addr_unmapped, 1);
	assert_int_equal(st->maps_reads, 1);
	sp_proc_table__free(t);

	/* per process: 4 of 6 */
	t = fake_table(8, 64, 4);
	st = sp_proc_table__stats(t);
	assert_true(sp_proc_table__resolve(t, 500, 0x40000, 0) > 0);
	assert_int_equal(sp_proc_table__resolve(t, 500, 0x50000, 0), 0);
	assert_int_equal(st->maps_per_proc_full, 1);
	assert_int_equal(sp_proc_table__n_mappings(t), 5);
	sp_proc_table__free(t);
}

static void test_fake_exec_rereads(void **state)
{
	struct sp_proc_table *t;
	const struct sp_proc_table_stats *st;
	const struct sp_mapping_info *m;

	(void)state;
	fake_proc_s(600, "1000-2000 r-xp 00000000 08:01 1 /bin/before\n");
	t = fake_table(8, 64, 64);
	st = sp_proc_table__stats(t);
	m = sp_proc_table__mapping(t, sp_proc_table__resolve(t, 600, 0x1000, 0));
	assert_string_equal(m->path, "/bin/before");
	fake_proc_s(600, "1000-2000 r-xp 00000000 08:01 2 /bin/after\n");
	/* Without exec, the old mapping still answers. */
	m = sp_proc_table__mapping(t, sp_proc_table__resolve(t, 600, 0x1000, 1000 * MS));
	assert_string_equal(m->path, "/bin/before");
	sp_proc_table__on_exec(t, 600, "after", 1000 * MS);
	m = sp_proc_table__mapping(t, sp_proc_table__resolve(t, 600, 0x1000, 1000 * MS));
	assert_string_equal(m->path, "/bin/after");
	assert_string_equal(sp_proc_table__proc(t, 600)->comm, "after");
	assert_int_equal(st->maps_reads, 2);
	/* Old ids stay valid. */
	assert_string_equal(sp_proc_table__mapping(t, 2)->path, "/bin/before");
	sp_proc_table__free(t);
}

/* ------------------------------------------------------------ lifetimes */

static void fake_gone(uint32_t pid)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%u/maps", tu_dir, pid);
	unlink(path);
	snprintf(path, sizeof(path), "%s/%u", tu_dir, pid);
	rmdir(path);
}

/* Three executable mappings at an ASLR-like base unique to cycle; the
 * executable's path is unique to the cycle every 7th time (a temporary
 * build product), so path strings churn too. */
static void fake_exec_maps(uint32_t pid, uint32_t cycle)
{
	uint64_t base = 0x100000000ULL + (uint64_t)cycle * 0x100000;
	char maps[512];

	if (cycle % 7 == 0)
		snprintf(maps, sizeof(maps),
			 "%llx-%llx r-xp 00001000 08:01 %u /tmp/build/cc%u\n",
			 (unsigned long long)base, (unsigned long long)base + 0x1000, cycle, cycle);
	else
		snprintf(maps, sizeof(maps), "%llx-%llx r-xp 00001000 08:01 1 /bin/app\n",
			 (unsigned long long)base, (unsigned long long)base + 0x1000);
	snprintf(maps + strlen(maps), sizeof(maps) - strlen(maps),
		 "%llx-%llx r-xp 00000000 08:01 2 /lib/libc.so.6\n"
		 "%llx-%llx r-xp 00000000 08:01 3 /lib/ld.so\n",
		 (unsigned long long)base + 0x10000, (unsigned long long)base + 0x11000,
		 (unsigned long long)base + 0x20000, (unsigned long long)base + 0x21000);
	fake_proc_s(pid, maps);
}

#define LT_LIVE 8		/* long-lived processes */
#define LT_CYCLES 10000		/* short-lived ones: exec, samples, exit */
#define LT_PER_EPOCH 50		/* short-lived processes per epoch */
#define LT_NOTES (LT_PER_EPOCH * 4 * 2)

struct lt_note {		/* a sample aggregated in the open epoch */
	uint32_t id;
	uint32_t pid;
	uint64_t start;
};

/* What the snapshot of an epoch needs is still there when it runs. */
static void lt_check(struct sp_proc_table *t, const struct lt_note *notes, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		const struct sp_mapping_info *m = sp_proc_table__mapping(t, notes[i].id);

		assert_non_null(m);
		assert_true(m->start == notes[i].start);
		assert_non_null(sp_proc_table__proc(t, notes[i].pid));
	}
}

/* 10,000 short processes (pids reused, every one at new addresses) with an
 * export every 50: the table holds the live set plus about two epochs of
 * exited processes, never the history; ids are recycled, so the registry's
 * high-water mark (its touched memory) stays put; and no id an open or
 * unexported epoch uses is freed or changed.  Without recycling the small
 * registry (1024) would be full after ~340 processes. */
static void test_lifetimes_bounded(void **state)
{
	static struct lt_note notes[2][LT_NOTES];
	uint32_t n_notes[2] = { 0, 0 }, cur = 0, live_ids[LT_LIVE];
	uint32_t hwm_after_warmup = 0, max_tracked = 0, max_maps = 0;
	const struct sp_proc_table_stats *st;
	struct sp_proc_table *t;
	uint64_t epoch;

	(void)state;
	t = fake_table(256, 1024, 16);
	st = sp_proc_table__stats(t);
	for (uint32_t i = 0; i < LT_LIVE; i++) {
		fake_exec_maps(2000 + i, 1000000 + i);
		sp_proc_table__on_exec(t, 2000 + i, "live", 0);
		live_ids[i] = sp_proc_table__resolve(t, 2000 + i,
						     0x100000000ULL + (1000000ULL + i) * 0x100000 + 0x10010, 0);
		assert_true(live_ids[i] > 1);
	}
	for (uint32_t c = 0; c < LT_CYCLES; c++) {
		uint32_t pid = 3000 + c % 97;	/* pids come back */
		uint64_t base = 0x100000000ULL + (uint64_t)c * 0x100000;
		uint64_t now_ns = (uint64_t)c * MS;

		fake_exec_maps(pid, c);
		sp_proc_table__on_exec(t, pid, "short", now_ns);
		for (uint32_t k = 0; k < 3; k++) {
			uint64_t addr = base + k * 0x10000 + 0x10;
			uint32_t id = sp_proc_table__resolve(t, pid, addr, now_ns);
			struct lt_note *nt = &notes[cur][n_notes[cur]++];

			assert_true(id > 1);
			nt->id = id;
			nt->pid = pid;
			nt->start = base + k * 0x10000;
		}
		sp_proc_table__on_exit(t, pid);
		fake_gone(pid);
		/* A late sample after the exit still resolves. */
		if (c % 5 == 0) {
			struct lt_note *nt = &notes[cur][n_notes[cur]++];

			nt->id = sp_proc_table__resolve(t, pid, base + 0x10, now_ns + MS);
			nt->pid = pid;
			nt->start = base;
			assert_true(nt->id > 1);
		}
		if (c % LT_PER_EPOCH == LT_PER_EPOCH - 1) {
			/* Swap: close the epoch; the previous one is exported
			 * now, while this one waits for the next swap (the
			 * agent's two aggregators). */
			epoch = sp_proc_table__next_epoch(t);
			if (epoch > 1) {
				lt_check(t, notes[!cur], n_notes[!cur]);
				sp_proc_table__release(t, epoch - 1, NULL, NULL);
			}
			lt_check(t, notes[cur], n_notes[cur]);
			cur = !cur;
			n_notes[cur] = 0;
		}
		if (c == 1000)
			hwm_after_warmup = sp_proc_table__n_mappings(t);
		if (st->procs_tracked > max_tracked)
			max_tracked = (uint32_t)st->procs_tracked;
		if (st->mappings_tracked > max_maps)
			max_maps = (uint32_t)st->mappings_tracked;
	}
	/* Bounded by live + ~3 epochs of short processes (97 distinct pids
	 * at most among them), not by 10,000. */
	assert_true(max_tracked <= LT_LIVE + 97);
	assert_true(max_maps <= 1 + 3 * LT_LIVE + 3 * 4 * LT_PER_EPOCH);
	assert_int_equal(sp_proc_table__n_mappings(t), hwm_after_warmup);
	assert_int_equal(st->mappings_full, 0);
	assert_int_equal(st->procs_table_full, 0);
	assert_int_equal(st->procs_seen, LT_LIVE + 97);
	assert_true(st->mappings_released >= 3 * (LT_CYCLES - 4 * LT_PER_EPOCH));

	/* Two quiet epochs later only the live set is left. */
	for (int i = 0; i < 3; i++) {
		epoch = sp_proc_table__next_epoch(t);
		sp_proc_table__release(t, epoch, NULL, NULL);
	}
	assert_int_equal(st->procs_tracked, LT_LIVE);
	assert_int_equal(st->mappings_tracked, 1 + 3 * LT_LIVE);
	for (uint32_t i = 0; i < LT_LIVE; i++) {
		assert_int_equal(sp_proc_table__resolve(t, 2000 + i,
			0x100000000ULL + (1000000ULL + i) * 0x100000 + 0x10010, 0), live_ids[i]);
		assert_string_equal(sp_proc_table__mapping(t, live_ids[i])->path, "/lib/libc.so.6");
	}
	for (uint32_t i = 0; i < LT_LIVE; i++)
		fake_gone(2000 + i);
	sp_proc_table__free(t);
}

/* Writes the six mappings of the long-lived process, generation g. */
static void keep_maps(uint32_t g)
{
	char maps[1024];
	size_t n = 0;

	for (uint32_t k = 0; k < 6; k++)
		n += (size_t)snprintf(maps + n, sizeof(maps) - n,
				      "%x-%x r-xp 00000000 08:01 %u /lib/keep%u.so\n",
				      0x100000 * (g + 1) + 0x10000 * k,
				      0x100000 * (g + 1) + 0x10000 * k + 0x1000, k, k);
	fake_proc_s(800, maps);
}

/* Recycling deletes from the registry's hash indexes: a small registry
 * (index of 128 slots) under churn.  A long-lived process re-execs every
 * 50 cycles (so its mappings land among the churn's, often displaced from
 * their home slots) and its maps are re-read every cycle: each re-read
 * must find its six mappings again (same ids), or a deletion broke a probe
 * chain. */
static void test_registry_churn_keeps_lookups(void **state)
{
	const struct sp_proc_table_stats *st;
	struct sp_proc_table *t;
	uint32_t ids[6], id;

	(void)state;
	t = fake_table(64, 32, 16);
	st = sp_proc_table__stats(t);
	for (uint32_t c = 0; c < 3000; c++) {
		uint64_t now_ns = (uint64_t)(c + 1) * 20 * MS;
		uint32_t g = c / 50;

		fake_exec_maps(801, c);
		sp_proc_table__on_exec(t, 801, "churn", now_ns);
		if (c % 50 == 0) {
			keep_maps(g);
			sp_proc_table__on_exec(t, 800, "keep", now_ns);
			for (uint32_t k = 0; k < 6; k++) {
				ids[k] = sp_proc_table__resolve(t, 800, 0x100000 * (g + 1) +
								0x10000 * k, now_ns);
				assert_true(ids[k] > 1);
			}
		}
		sp_proc_table__on_exit(t, 801);
		sp_proc_table__release(t, sp_proc_table__next_epoch(t), NULL, NULL);
		/* A miss re-reads the long-lived process's maps. */
		now_ns += 10 * MS;
		assert_int_equal(sp_proc_table__resolve(t, 800, 0x90000000, now_ns), 0);
		for (uint32_t k = 0; k < 6; k++) {
			id = sp_proc_table__resolve(t, 800, 0x100000 * (g + 1) + 0x10000 * k + 0x10,
						    now_ns);
			assert_int_equal(id, ids[k]);
		}
	}
	assert_int_equal(st->mappings_full, 0);
	assert_true(st->maps_reads > 6000);
	fake_gone(800);
	fake_gone(801);
	sp_proc_table__free(t);
}

static void released_pid(uint32_t pid, void *ctx)
{
	uint32_t *last = ctx;

	*last = pid;
}

/* The epoch rules one by one: a process gone in epoch N survives
 * release(N); a late sample or a kernel-only sample (touch) keeps it for
 * its own epoch; its mappings outlive it by one release; an id whose file
 * is mapped again before release is reused as is. */
static void test_release_rules(void **state)
{
	const struct sp_proc_table_stats *st;
	struct sp_proc_table *t;
	uint32_t x, y, z, released = 0;
	uint64_t e;

	(void)state;
	t = fake_table(16, 64, 16);
	st = sp_proc_table__stats(t);
	fake_proc_s(700, "1000-2000 r-xp 00000000 08:01 1 /bin/a\n");
	x = sp_proc_table__resolve(t, 700, 0x1000, 0);	/* epoch 1 */
	assert_true(x > 1);
	sp_proc_table__on_exit(t, 700);
	fake_gone(700);
	e = sp_proc_table__next_epoch(t);
	assert_true(e == 1);
	sp_proc_table__release(t, 1, released_pid, &released);
	assert_non_null(sp_proc_table__proc(t, 700));	/* gone in epoch 1 */
	assert_int_equal(released, 0);

	/* A late sample in epoch 2, against the old maps. */
	assert_int_equal(sp_proc_table__resolve(t, 700, 0x1800, 1 * MS), x);
	e = sp_proc_table__next_epoch(t);		/* closes 2 */
	assert_true(sp_proc_table__touch(t, 700));	/* kernel-only, epoch 3 */
	sp_proc_table__release(t, e, released_pid, &released);
	assert_non_null(sp_proc_table__proc(t, 700));	/* sampled in epoch 3 */
	/* Sent back to the gone list then, with epoch 3: one more epoch of
	 * grace for further late samples. */
	e = sp_proc_table__next_epoch(t);		/* closes 3 */
	sp_proc_table__release(t, e, released_pid, &released);
	assert_non_null(sp_proc_table__proc(t, 700));
	e = sp_proc_table__next_epoch(t);		/* closes 4 */
	sp_proc_table__release(t, e, released_pid, &released);
	assert_null(sp_proc_table__proc(t, 700));
	assert_int_equal(released, 700);
	assert_int_equal(st->procs_released, 1);
	assert_false(sp_proc_table__touch(t, 700));
	/* Its mapping was dropped in epoch 5: still valid until release(5). */
	assert_string_equal(sp_proc_table__mapping(t, x)->path, "/bin/a");

	/* Mapped again (same file, same range) before that: same id, kept. */
	fake_proc_s(701, "1000-2000 r-xp 00000000 08:01 1 /bin/a\n");
	assert_int_equal(sp_proc_table__resolve(t, 701, 0x1000, 2 * MS), x);
	e = sp_proc_table__next_epoch(t);		/* closes 5 */
	sp_proc_table__release(t, e, NULL, NULL);
	assert_string_equal(sp_proc_table__mapping(t, x)->path, "/bin/a");
	assert_int_equal(st->mappings_released, 0);

	/* Exec replaces the maps (epoch 6): the old id stays valid for the
	 * samples of epoch 6, and is recycled once epoch 6 is released. */
	fake_proc_s(701, "5000-6000 r-xp 00000000 08:01 9 /bin/b\n");
	sp_proc_table__on_exec(t, 701, "b", 3 * MS);
	y = sp_proc_table__resolve(t, 701, 0x5000, 3 * MS);
	assert_true(y > 1 && y != x);
	assert_string_equal(sp_proc_table__mapping(t, x)->path, "/bin/a");
	e = sp_proc_table__next_epoch(t);		/* closes 6 */
	assert_non_null(sp_proc_table__mapping(t, x));
	sp_proc_table__release(t, e, NULL, NULL);
	assert_null(sp_proc_table__mapping(t, x));
	assert_int_equal(st->mappings_released, 1);
	fake_proc_s(702, "9000-a000 r-xp 00000000 08:01 7 /bin/c\n");
	z = sp_proc_table__resolve(t, 702, 0x9000, 4 * MS);
	assert_int_equal(z, x);				/* recycled */
	assert_string_equal(sp_proc_table__mapping(t, z)->path, "/bin/c");
	assert_int_equal(sp_proc_table__n_mappings(t), 3);
	assert_int_equal(st->mappings_tracked, 3);
	assert_int_equal(st->procs_tracked, 2);
	fake_gone(701);
	fake_gone(702);
	sp_proc_table__free(t);
}

/* The table notes an OTEP 4719 OTEL_CTX mapping when it reads maps, so
 * trace-context discovery needs no second read for processes without one. */
static void test_otel_ctx_mapping_noted(void **state)
{
	struct sp_proc_table *t;
	const struct sp_proc_info *pi;
	uint64_t addr = (uint64_t)(uintptr_t)test_otel_ctx_mapping_noted;
	void *m;
	int fd;

	(void)state;
	t = sp_proc_table__new(NULL);
	assert_non_null(t);
	assert_int_not_equal(sp_proc_table__resolve(t, getpid(), addr, 1), 0);
	pi = sp_proc_table__proc(t, getpid());
	assert_non_null(pi);
	assert_false(pi->has_otel_ctx);

	fd = memfd_create("OTEL_CTX", MFD_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 4096), 0);
	m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(m != MAP_FAILED);
	sp_proc_table__on_exec(t, getpid(), NULL, 2);	/* forces a re-read */
	pi = sp_proc_table__proc(t, getpid());
	assert_true(pi->has_otel_ctx);

	munmap(m, 4096);
	close(fd);
	sp_proc_table__on_exec(t, getpid(), NULL, 3);
	assert_false(sp_proc_table__proc(t, getpid())->has_otel_ctx);
	sp_proc_table__free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_self),
		cmocka_unit_test(test_unknown_address_and_refresh),
		cmocka_unit_test(test_deleted_file),
		cmocka_unit_test(test_child_reaped_before_read),
		cmocka_unit_test(test_child_exits_after_read),
		cmocka_unit_test(test_zombie_keeps_maps),
		cmocka_unit_test(test_pid_reuse),
		cmocka_unit_test(test_fake_malformed_lines),
		cmocka_unit_test(test_fake_vdso_and_anon),
		cmocka_unit_test(test_fake_root_fallback),
		cmocka_unit_test(test_fake_container_root),
		cmocka_unit_test(test_fake_unreadable),
		cmocka_unit_test(test_fake_table_full),
		cmocka_unit_test(test_fake_mapping_caps),
		cmocka_unit_test(test_fake_exec_rereads),
		cmocka_unit_test(test_lazy_exec),
		cmocka_unit_test(test_otel_ctx_mapping_noted),
		cmocka_unit_test(test_lifetimes_bounded),
		cmocka_unit_test(test_release_rules),
		cmocka_unit_test(test_registry_churn_keeps_lookups),
	};

	return cmocka_run_group_tests_name("proc_table", tests, tu_setup_dir, tu_teardown_dir);
}
