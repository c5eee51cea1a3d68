/* SPDX-License-Identifier: MIT */
/*
 * test_export_files.c - rotating files: names, atomic writes, max_files
 * (oldest removed, files of an earlier run counted, stale temp files
 * removed), max_file_bytes, content decodes; a full disk (a 64 KiB tmpfs
 * mounted by the test; needs root, and fails rather than skips when the
 * mount does not work) counts files_failed and leaves no temp file.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "testutil.h"

#include "test_profile_fixture.h"
#include "export/exporter.h"

#define MAX_NAMES 64

static char g_mounted[128];	/* unmounted by the teardown even when a check fails */

static int unmount_teardown(void **state)
{
	(void)state;
	if (g_mounted[0]) {
		if (umount2(g_mounted, MNT_DETACH))
			fprintf(stderr, "umount %s: %s\n", g_mounted, strerror(errno));
		g_mounted[0] = '\0';
	}
	return tu_teardown_dir(state);
}

struct listing {
	char names[MAX_NAMES][64];
	int n;		/* profile-* files */
	int tmp;	/* .profile-*.tmp files */
	int other;
};

/* by the timestamp in the name, as the exporter orders them */
static int cmp_name(const void *a, const void *b)
{
	unsigned long long x = strtoull((const char *)a + 8, NULL, 10);
	unsigned long long y = strtoull((const char *)b + 8, NULL, 10);

	return x < y ? -1 : x > y;
}

static void list_dir(const char *dir, struct listing *l)
{
	DIR *d = opendir(dir);
	struct dirent *de;

	assert_non_null(d);
	memset(l, 0, sizeof(*l));
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (!strncmp(de->d_name, "profile-", 8)) {
			assert_true(l->n < MAX_NAMES);
			snprintf(l->names[l->n++], 64, "%.63s", de->d_name);
		} else if (!strncmp(de->d_name, ".profile-", 9)) {
			l->tmp++;
		} else {
			l->other++;
		}
	}
	closedir(d);
	qsort(l->names, (size_t)l->n, sizeof(l->names[0]), cmp_name);
}

static void touch(const char *dir, const char *name)
{
	char path[256];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	close(fd);
}

static struct sp_exporter *mk(struct sp_export_config *cfg)
{
	struct sp_exporter *e = NULL;
	char err[256];
	int r = sp_exporter__new(cfg, &e, err, sizeof(err));

	if (r)
		fail_msg("sp_exporter__new: %d: %s", r, err);
	return e;
}

static void test_files_rotation(void **state)
{
	const char *dir = tu_dir;
	char path[256];
	struct sp_profile *p = fx_build(), *q = NULL;
	struct sp_export_config cfg;
	struct sp_export_stats st;
	struct sp_exporter *e;
	struct listing l;
	char written[8][64];

	(void)state;
	/* an earlier run left 4 files (names shorter than 20 digits too), a
	 * temp file and something else */
	touch(dir, "profile-1.otlp.pb");
	touch(dir, "profile-00000000000000000002.otlp.pb.gz");
	touch(dir, "profile-3.otlp.pb.gz");
	touch(dir, "profile-4.otlp.pb");
	touch(dir, ".profile-00000000000000000005.tmp");
	touch(dir, "README");

	sp_export_config__init(&cfg);
	cfg.output_dir = dir;
	cfg.max_files = 3;
	e = mk(&cfg);
	list_dir(dir, &l);
	assert_int_equal(l.n, 3);	/* the oldest one went at start */
	assert_int_equal(l.tmp, 0);
	assert_int_equal(l.other, 1);	/* not ours: kept */
	assert_string_equal(l.names[0], "profile-00000000000000000002.otlp.pb.gz");
	sp_exporter__stats(e, &st);
	assert_int_equal(st.files_removed, 1);

	for (int i = 0; i < 5; i++) {
		assert_int_equal(sp_exporter__submit(e, p), 0);
		assert_int_equal(sp_exporter__flush(e, 5000), 0);
		list_dir(dir, &l);
		assert_int_equal(l.n, 3);
		assert_int_equal(l.tmp, 0);
		snprintf(written[i], 64, "%s", l.names[2]);	/* the newest */
		assert_non_null(strstr(written[i], ".otlp.pb.gz"));
		assert_int_equal(strlen(written[i]), strlen("profile-") + 20 + strlen(".otlp.pb.gz"));
		if (i)
			assert_true(strcmp(written[i], written[i - 1]) > 0);
	}
	/* the last three written are what is left */
	for (int i = 0; i < 3; i++)
		assert_string_equal(l.names[i], written[2 + i]);
	sp_exporter__stats(e, &st);
	assert_int_equal(st.files_written, 5);
	assert_int_equal(st.files_failed, 0);
	assert_int_equal(st.files_removed, 1 + 5);
	assert_int_equal(st.batches_exported, 5);	/* files only: a file is an export */
	assert_int_equal(st.batches_submitted, 5);
	assert_int_equal(st.requests, 0);

	/* content: a gzip'd ExportProfilesServiceRequest equal to the input */
	snprintf(path, sizeof(path), "%s/%s", dir, written[4]);
	assert_int_equal(sp_profile__read_file(path, &q), 0);
	fx_assert_equal(p, q, FX_NO_HAS_FLAGS);
	sp_profile__free(q);
	sp_exporter__free(e);

	/* no gzip: plain .otlp.pb; max_file_bytes refuses a larger batch */
	sp_export_config__init(&cfg);
	cfg.output_dir = dir;
	cfg.max_files = 3;
	cfg.gzip = false;
	cfg.max_file_bytes = 64;
	e = mk(&cfg);
	assert_int_equal(sp_exporter__submit(e, p), 0);
	assert_int_equal(sp_exporter__flush(e, 5000), 0);
	sp_exporter__stats(e, &st);
	assert_int_equal(st.files_failed, 1);
	assert_int_equal(st.files_written, 0);
	assert_int_equal(st.batches_dropped_failed, 1);
	sp_exporter__free(e);
	cfg.max_file_bytes = 0;	/* default */
	e = mk(&cfg);
	assert_int_equal(sp_exporter__submit(e, p), 0);
	assert_int_equal(sp_exporter__flush(e, 5000), 0);
	sp_exporter__stats(e, &st);
	assert_int_equal(st.files_written, 1);
	sp_exporter__free(e);
	list_dir(dir, &l);
	assert_int_equal(l.n, 3);
	assert_non_null(strstr(l.names[2], ".otlp.pb"));
	assert_null(strstr(l.names[2], ".gz"));
	assert_true(strcmp(l.names[2], written[4]) > 0);	/* newer than the last run */
	snprintf(path, sizeof(path), "%s/%s", dir, l.names[2]);
	assert_int_equal(sp_profile__read_file(path, &q), 0);
	assert_int_equal(q->n_samples, p->n_samples);
	sp_profile__free(q);

	sp_profile__free(p);
}

/* A profile that encodes to ~size bytes and does not compress. */
static struct sp_profile *big_profile(uint32_t n_samples)
{
	struct sp_profile *p = sp_profile__new();
	uint64_t x = 0x243f6a8885a308d3ull;
	struct sp_resource r = { 0 };
	int32_t res;

	assert_non_null(p);
	p->time_unix_ns = FX_T0;
	p->duration_ns = 1000000000ull;
	p->period_ns[SP_KIND_ONCPU] = FX_PERIOD;
	r.pid = 42;
	res = OK(sp_profile__add_resource(p, &r));
	for (uint32_t i = 0; i < n_samples; i++) {
		struct sp_location loc = { 0 };
		struct sp_sample s = { 0 };
		int32_t locs[4];
		uint64_t ts;

		for (int k = 0; k < 4; k++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			loc.address = x;
			locs[k] = OK(sp_profile__add_location(p, &loc));
		}
		s.resource = res;
		s.stack = OK(sp_profile__add_stack(p, locs, 4));
		s.kind = SP_KIND_ONCPU;
		s.count = 1;
		s.value_ns = FX_PERIOD;
		ts = FX_T0 + (x >> 36);
		s.n_timestamps = 1;
		s.timestamps = &ts;
		OK(sp_profile__add_sample(p, &s));
	}
	return p;
}

static void test_files_disk_full(void **state)
{
	const char *dir = tu_dir;
	struct sp_profile *p = big_profile(300);
	struct sp_export_config cfg;
	struct sp_export_stats st;
	struct sp_exporter *e;
	struct listing l;
	uint8_t *raw = NULL, *gz = NULL;
	size_t raw_len, gz_len;
	int n = 8;

	(void)state;
	assert_int_equal(sp_otlp__encode(p, &raw, &raw_len), 0);
	assert_int_equal(sp_gzip(raw, raw_len, &gz, &gz_len), 0);
	print_message("disk full: batch of %zu bytes (%zu gzip'd) on a 64 KiB tmpfs\n", raw_len,
		      gz_len);
	assert_true(gz_len > 12 << 10);
	free(raw);
	free(gz);

	if (mount("tmpfs", dir, "tmpfs", MS_NOSUID | MS_NODEV, "size=64k,mode=0755")) {
		int err = errno;

		fail_msg("mount -t tmpfs -o size=64k on %s: %s (the test needs root)", dir,
			 strerror(err));
	}
	snprintf(g_mounted, sizeof(g_mounted), "%s", dir);
	sp_export_config__init(&cfg);
	cfg.output_dir = dir;
	cfg.max_files = 100;
	e = mk(&cfg);
	for (int i = 0; i < n; i++) {
		assert_int_equal(sp_exporter__submit(e, p), 0);
		assert_int_equal(sp_exporter__flush(e, 5000), 0);
	}
	sp_exporter__stats(e, &st);
	list_dir(dir, &l);
	print_message("disk full: %llu written, %llu failed, %d files on disk\n",
		      (unsigned long long)st.files_written, (unsigned long long)st.files_failed,
		      l.n);
	assert_true(st.files_written >= 1);
	assert_true(st.files_failed >= 1);
	assert_int_equal(st.files_written + st.files_failed, n);
	assert_int_equal(st.batches_exported, st.files_written);
	assert_int_equal(st.batches_dropped_failed, st.files_failed);
	assert_int_equal(l.n, (int)st.files_written);
	assert_int_equal(l.tmp, 0);	/* failed writes leave nothing */
	sp_exporter__free(e);

	/* with room made by rotation (max_files 1) writes succeed again */
	cfg.max_files = 1;
	e = mk(&cfg);
	assert_int_equal(sp_exporter__submit(e, p), 0);
	assert_int_equal(sp_exporter__flush(e, 5000), 0);
	sp_exporter__stats(e, &st);
	assert_int_equal(st.files_written, 1);
	sp_exporter__free(e);

	sp_profile__free(p);
	g_mounted[0] = '\0';
	if (umount2(dir, MNT_DETACH))
		fail_msg("umount %s: %s", dir, strerror(errno));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_files_rotation, tu_setup_dir, tu_teardown_dir),
		cmocka_unit_test_setup_teardown(test_files_disk_full, tu_setup_dir, unmount_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
