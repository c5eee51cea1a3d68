// SPDX-License-Identifier: MIT
/*
 * test_kallsyms_subset.c - the kernel symbol subset `spanprof record`
 * writes beside a profile (collector/host/kallsyms_want.h,
 * sp_kallsyms__capture_want; base/kallsyms_format.h "A subset").
 *
 * The proof is a comparison: one profile is symbolized twice, once with
 * the whole snapshot (sp_kallsyms__capture_mods) and once with the
 * subset, and every kernel location must get the same name (or stay
 * unresolved in both, with the same counters).
 *   - On a fake /proc/kallsyms (SPANPROF_KALLSYMS_PATH) built for the
 *     edges: several symbols at one address (the reader's choice), a
 *     covering symbol whose successor is far away (the subset must keep
 *     where it ends, or the tail bound would cut it), an end marker, the
 *     image's last symbol (tail), module frames by build id (only the
 *     module with frames gets its "# module" line), boot frames, a
 *     legacy runtime-address mapping, and locations that name nothing.
 *   - As root on the real /proc/kallsyms and the real kernel layout:
 *     thousands of addresses spread over the image, every module and BPF
 *     code, mapped by sp_kernel_layout__map as the collector maps them;
 *     the sizes of both files are printed.
 *   - Truncated and garbled subsets do not load (-EINVAL, the frames are
 *     counted as no snapshot); a subset never hides a whole snapshot of
 *     its build id in a set, and a subset in a snapshot directory is not
 *     used.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "testutil.h"

#include "base/buildid.h"
#include "base/hex.h"
#include "collector/host/kallsyms.h"
#include "collector/host/kallsyms_want.h"
#include "collector/host/kernel_layout.h"
#include "profile/codec.h"
#include "profile/profile.h"
#include "symbolizer/kallsyms.h"
#include "symbolizer/symbolize.h"

#define KID_HEX "deadbeef"
#define MOD1_HEX "abcdef0123456789abcdef0123456789abcdef01"
#define MOD2_HEX "1111111111111111111111111111111111111111"
#define LINK_TEXT 0xffffffff81000000ull
#define RT_TEXT 0xffffffff9a000000ull

static const char fake[] =
	"ffffffff9a000000 T _text\n"
	"ffffffff9a000000 T startup_64\n"
	"ffffffff9a000100 t a_fn\n"
	"ffffffff9a000100 T a_fn_alias\n"	/* one address: T wins */
	"ffffffff9a000200 T b_fn\n"		/* 1 MiB to its successor */
	"ffffffff9a000300 D data_sym\n"	/* not text */
	"ffffffff9a100000 T far_fn\n"
	"ffffffff9a100100 T _etext\n"		/* end marker */
	"ffffffff9a100200 T after_marker\n"
	"ffffffff9a150000 T unused_1\n"		/* where after_marker ends */
	"ffffffff9a160000 T unused_2\n"		/* in no subset here */
	"ffffffff9a200000 T last_vm_fn\n"	/* followed by a module: tail */
	"ffffffffc0100000 t m_a\t[mymod]\n"
	"ffffffffc0100080 t m_b\t[mymod]\n"
	"ffffffffc0200000 t o_a\t[othermod]\n"	/* where m_b ends */
	"ffffffffc0200100 t o_b\t[othermod]\n"
	"ffffffffc0300000 t bpf_prog_x\t[bpf]\n"
	"ffffffffc0400000 t big_prog\t[bpf]\n"	/* 128 KiB long */
	"ffffffffc0420000 t next_prog\t[bpf]\n";

static struct sp_build_id kid(void)
{
	return (struct sp_build_id){ .len = 4, .id = { 0xde, 0xad, 0xbe, 0xef } };
}

static void mod(struct sp_kmod *m, const char *name, const char *hex, uint64_t text,
		uint64_t size)
{
	memset(m, 0, sizeof(*m));
	snprintf(m->name, sizeof(m->name), "%s", name);
	m->build_id.len = (uint32_t)(strlen(hex) / 2);
	for (size_t i = 0; i < m->build_id.len; i++)
		m->build_id.id[i] = (uint8_t)(sp_hex_digit(hex[2 * i]) << 4 |
					      sp_hex_digit(hex[2 * i + 1]));
	m->text = text;
	m->size = size;
}

/* This boot's id as 32 hex digits (the capture writes the real one). */
static void boot_hex(char out[33])
{
	char raw[64] = "";
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
	size_t o = 0;

	assert_non_null(f);
	assert_non_null(fgets(raw, sizeof(raw), f));
	fclose(f);
	for (size_t i = 0; raw[i] && o < 32; i++)
		if (sp_hex_digit(raw[i]) >= 0)
			out[o++] = raw[i];
	out[o] = '\0';
	assert_int_equal(o, 32);
}

struct floc {
	int m;		/* index into the mappings below */
	uint64_t addr;
};

enum { M_IMAGE, M_MOD1, M_BOOT, M_LEGACY, M_MOD2_NOFRAMES, M_N };

/* The fake profile: one mapping per kind, the locations given. */
static struct sp_profile *fake_profile(const struct floc *fl, size_t n, int32_t *locs)
{
	struct sp_profile *p = sp_profile__new();
	struct sp_mapping m[M_N] = { { 0 } };
	int32_t mi[M_N];
	char boot[33];

	assert_non_null(p);
	boot_hex(boot);
	m[M_IMAGE].filename = sp_profile__intern(p, SP_KALLSYMS_FN_KERNEL);
	m[M_IMAGE].build_id = sp_profile__intern(p, KID_HEX);
	m[M_IMAGE].memory_start = LINK_TEXT;
	m[M_IMAGE].memory_limit = LINK_TEXT + 0x400000;
	m[M_MOD1].filename = sp_profile__intern(p, "[module:mymod]");
	m[M_MOD1].build_id = sp_profile__intern(p, MOD1_HEX);
	m[M_MOD1].memory_limit = 0x1000;
	m[M_BOOT].filename = sp_profile__intern(p, SP_KALLSYMS_FN_BOOT);
	m[M_BOOT].build_id = sp_profile__intern(p, boot);
	m[M_BOOT].memory_start = SP_KALLSYMS_LEGACY_START;
	m[M_BOOT].memory_limit = UINT64_MAX;
	m[M_LEGACY].filename = sp_profile__intern(p, SP_KALLSYMS_FN_KERNEL);
	m[M_LEGACY].build_id = sp_profile__intern(p, KID_HEX);
	m[M_LEGACY].memory_start = SP_KALLSYMS_LEGACY_START;
	m[M_LEGACY].memory_limit = UINT64_MAX;
	m[M_MOD2_NOFRAMES].filename = sp_profile__intern(p, "[module:othermod]");
	m[M_MOD2_NOFRAMES].build_id = sp_profile__intern(p, MOD2_HEX);
	m[M_MOD2_NOFRAMES].memory_limit = 0x1000;
	for (int i = 0; i < M_N; i++)
		assert_true((mi[i] = sp_profile__add_mapping(p, &m[i])) > 0);
	for (size_t i = 0; i < n; i++) {
		struct sp_location l = { .frame_kind = SP_FRAME_KERNEL, .mapping = mi[fl[i].m],
					 .address = fl[i].addr };

		assert_true((locs[i] = sp_profile__add_location(p, &l)) > 0);
	}
	return p;
}

static const char *name_of(struct sp_profile *p, int32_t loc)
{
	const struct sp_location *l = &p->locations[loc];

	if (l->n_lines != 1)
		return "";
	return sp_profile__str(p, p->functions[l->lines[0].function].name);
}

static void symbolize_with(const char *snap, struct sp_profile *p, struct sp_symbolize_stats *st)
{
	struct sp_ksyms_set *s;

	assert_int_equal(sp_ksyms_set__new(&s), 0);
	assert_int_equal(sp_ksyms_set__add_file(s, snap), 0);
	assert_int_equal(sp_symbolize__profile_ks(NULL, s, p, st), 0);
	sp_ksyms_set__free(s);
}

static long file_size(const char *path)
{
	struct stat sb;

	assert_int_equal(stat(path, &sb), 0);
	return (long)sb.st_size;
}

/* The uncompressed text of a snapshot file. */
static char *snapshot_text(const char *path, size_t *len)
{
	uint8_t *gz, *raw;
	size_t gz_len;

	assert_int_equal(tu_read_file(path, &gz, &gz_len), 0);
	assert_int_equal(sp_gunzip(gz, gz_len, 64u << 20, &raw, len), 0);
	free(gz);
	return (char *)raw;
}

static size_t count_lines(const char *t, size_t len, const char *prefix)
{
	size_t n = 0, pl = strlen(prefix);

	for (size_t i = 0; i < len;) {
		const char *nl = memchr(t + i, '\n', len - i);
		size_t ll = nl ? (size_t)(nl - (t + i)) : len - i;

		n += ll >= pl && !memcmp(t + i, prefix, pl);
		i += ll + 1;
	}
	return n;
}

static void test_subset_fake(void **state)
{
	static const struct floc fl[] = {
		{ M_IMAGE, LINK_TEXT + 0x110 },		/* a_fn_alias + 0x10 */
		{ M_IMAGE, LINK_TEXT + 0x80000 },	/* b_fn + 0x7fe00: far from b_fn */
		{ M_IMAGE, LINK_TEXT + 0x100110 },	/* past _etext: nothing */
		{ M_IMAGE, LINK_TEXT + 0x200100 },	/* last_vm_fn + 0x100 */
		{ M_IMAGE, LINK_TEXT + 0x220000 },	/* past last_vm_fn's tail */
		{ M_IMAGE, LINK_TEXT },			/* _text itself */
		{ M_IMAGE, LINK_TEXT - 0x10 },		/* below memory_start */
		{ M_MOD1, 0x84 },			/* m_b + 4 */
		{ M_MOD1, 0x2000 },			/* past the module's size */
		{ M_BOOT, 0xffffffffc0300010ull },	/* bpf_prog_x + 0x10 */
		{ M_BOOT, 0xffffffffc0100010ull },	/* m_a, as a boot frame */
		{ M_LEGACY, RT_TEXT + 0x204 },		/* b_fn + 4, runtime */
		{ M_BOOT, 0xffffffffc0410000ull },	/* big_prog + 64 KiB */
	};
	static const char *const want_names[] = {
		"a_fn_alias", "b_fn", "", "last_vm_fn", "", "startup_64", "", "m_b [mymod]",
		"", "bpf_prog_x [bpf]", "m_a [mymod]", "b_fn",
		"big_prog [bpf]",
	};
	enum { N = sizeof(fl) / sizeof(fl[0]) };
	struct sp_kmod mods[2];
	struct sp_build_id id = kid();
	struct sp_kallsyms_want want;
	struct sp_symbolize_stats st_full, st_sub;
	struct sp_profile *pf, *ps;
	int32_t lf[N], ls[N];
	char in[PATH_MAX], full[PATH_MAX], sub[PATH_MAX], err[256] = "", *t;
	size_t tl;

	(void)state;
	tu_path(in, sizeof(in), "fake_kallsyms");
	tu_path(full, sizeof(full), "full.kallsyms.gz");
	tu_path(sub, sizeof(sub), "sub.kallsyms.gz");
	assert_int_equal(tu_write_file(in, fake, strlen(fake)), 0);
	setenv(SP_KALLSYMS_PATH_ENV, in, 1);
	mod(&mods[0], "mymod", MOD1_HEX, 0xffffffffc0100000ull, 0x1000);
	mod(&mods[1], "othermod", MOD2_HEX, 0xffffffffc0200000ull, 0x1000);

	pf = fake_profile(fl, N, lf);
	ps = fake_profile(fl, N, ls);
	assert_int_equal(sp_kallsyms__capture_mods(full, &id, mods, 2, err, sizeof(err)), 0);
	assert_int_equal(sp_kallsyms_want__of_profile(ps, mods, 2, &want), 0);
	assert_false(sp_kallsyms_want__empty(&want));
	assert_int_equal(want.n_mods, 1);	/* othermod has no frame */
	assert_string_equal(want.mods[0].name, "mymod");
	assert_int_equal(sp_kallsyms__capture_want(sub, &id, &want, err, sizeof(err)), 0);
	sp_kallsyms_want__release(&want);
	sp_kallsyms_want__release(&want);	/* idempotent */
	{
		struct stat sb;

		assert_int_equal(stat(sub, &sb), 0);
		assert_int_equal(sb.st_mode & 07777, 0644);
	}

	symbolize_with(full, pf, &st_full);
	symbolize_with(sub, ps, &st_sub);
	for (size_t i = 0; i < N; i++) {
		assert_string_equal(name_of(pf, lf[i]), want_names[i]);
		assert_string_equal(name_of(ps, ls[i]), name_of(pf, lf[i]));
	}
	assert_int_equal(st_sub.resolved_kernel, st_full.resolved_kernel);
	assert_int_equal(st_sub.unresolved_kernel, st_full.unresolved_kernel);
	assert_int_equal(st_sub.unresolved_kernel_not_found, st_full.unresolved_kernel_not_found);
	assert_int_equal(st_full.resolved_kernel, 9);

	/* what the subset holds: the header says so, fewer symbols, one module */
	t = snapshot_text(sub, &tl);
	assert_non_null(strstr(t, " scope=profile\n"));
	assert_int_equal(count_lines(t, tl, SP_KALLSYMS_MODULE_PREFIX), 1);
	assert_int_equal(count_lines(t, tl, SP_KALLSYMS_MODULE_PREFIX "mymod "), 1);
	assert_int_equal(count_lines(t, tl, "ffffffffc0200000 "), 1);	/* m_b's end */
	assert_int_equal(count_lines(t, tl, "ffffffffc0200100 "), 0);	/* o_b */
	assert_int_equal(count_lines(t, tl, "ffffffff9a160000 "), 0);	/* unused_2 */
	assert_int_equal(count_lines(t, tl, "ffffffff9a000300 "), 0);	/* data */
	assert_int_equal(count_lines(t, tl, "ffffffff9a000100 "), 2);	/* both at a_fn */
	assert_int_equal(count_lines(t, tl, "ffffffff9a100000 "), 1);	/* b_fn's end */
	free(t);
	t = snapshot_text(full, &tl);
	assert_null(strstr(t, "scope="));
	assert_int_equal(count_lines(t, tl, SP_KALLSYMS_MODULE_PREFIX), 2);
	free(t);

	/* a profile without kernel frames wants nothing */
	{
		struct sp_profile *e = sp_profile__new();

		assert_int_equal(sp_kallsyms_want__of_profile(e, mods, 2, &want), 0);
		assert_true(sp_kallsyms_want__empty(&want));
		sp_kallsyms_want__release(&want);
		sp_profile__free(e);
	}
	unsetenv(SP_KALLSYMS_PATH_ENV);
	sp_profile__free(pf);
	sp_profile__free(ps);
}

/* A module's executable section other than .text: its frames travel as
 * "[module-section:NAME:SECTION]" offsets (kernel_layout.h); the whole
 * snapshot and the subset both carry the "# module-section" line and name
 * them at that section's address + offset, in that module's symbols. */
static void test_subset_sections(void **state)
{
	static const char text[] =
		"ffffffff9a000000 T _text\n"
		"ffffffff9a000100 T a_fn\n"
		"ffffffffc0100000 t m_a\t[mymod]\n"
		"ffffffffc0180000 t m_cold.cold\t[mymod]\n"
		"ffffffffc0180040 t m_cold2.cold\t[mymod]\n"
		"ffffffffc0200000 t o_a\t[othermod]\n";
	static const char *const want_names[] = { "m_cold.cold [mymod]", "m_cold2.cold [mymod]",
						  "", "", "m_a [mymod]" };
	static const struct { const char *fn; uint64_t addr; } locs[] = {
		{ "[module-section:mymod:.text.unlikely]", 0x10 },
		{ "[module-section:mymod:.text.unlikely]", 0x44 },
		{ "[module-section:mymod:.text.unlikely]", 0x2000 },	/* past its size */
		{ "[module-section:mymod:.text.hot]", 0x10 },	/* no such section */
		{ "[module:mymod]", 0x4 },
	};
	enum { N = sizeof(locs) / sizeof(locs[0]) };
	struct sp_kmod m;
	struct sp_build_id id = kid();
	struct sp_kallsyms_want want;
	struct sp_symbolize_stats st_full, st_sub;
	struct sp_profile *pp[2];
	int32_t li[2][N];
	char in[PATH_MAX], full[PATH_MAX], sub[PATH_MAX], err[256] = "", *t;
	size_t tl;

	(void)state;
	tu_path(in, sizeof(in), "sect_kallsyms");
	tu_path(full, sizeof(full), "sect_full.kallsyms.gz");
	tu_path(sub, sizeof(sub), "sect_sub.kallsyms.gz");
	assert_int_equal(tu_write_file(in, text, strlen(text)), 0);
	setenv(SP_KALLSYMS_PATH_ENV, in, 1);
	mod(&m, "mymod", MOD1_HEX, 0xffffffffc0100000ull, 0x1000);
	m.n_sects = 1;
	snprintf(m.sects[0].name, sizeof(m.sects[0].name), ".text.unlikely");
	m.sects[0].addr = 0xffffffffc0180000ull;
	m.sects[0].size = 0x1000;
	for (int k = 0; k < 2; k++) {
		pp[k] = sp_profile__new();
		assert_non_null(pp[k]);
		for (size_t i = 0; i < N; i++) {
			struct sp_mapping mp = { .filename = sp_profile__intern(pp[k], locs[i].fn),
						 .build_id = sp_profile__intern(pp[k], MOD1_HEX),
						 .memory_limit = 0x1000 };
			struct sp_location l = { .frame_kind = SP_FRAME_KERNEL,
						 .address = locs[i].addr };

			assert_true((l.mapping = sp_profile__add_mapping(pp[k], &mp)) > 0);
			assert_true((li[k][i] = sp_profile__add_location(pp[k], &l)) > 0);
		}
	}
	assert_int_equal(sp_kallsyms__capture_mods(full, &id, &m, 1, err, sizeof(err)), 0);
	assert_int_equal(sp_kallsyms_want__of_profile(pp[1], &m, 1, &want), 0);
	assert_int_equal(want.n_mods, 1);
	assert_int_equal(want.mods[0].n_sects, 1);
	assert_int_equal(sp_kallsyms__capture_want(sub, &id, &want, err, sizeof(err)), 0);
	sp_kallsyms_want__release(&want);
	symbolize_with(full, pp[0], &st_full);
	symbolize_with(sub, pp[1], &st_sub);
	for (size_t i = 0; i < N; i++) {
		assert_string_equal(name_of(pp[0], li[0][i]), want_names[i]);
		assert_string_equal(name_of(pp[1], li[1][i]), want_names[i]);
	}
	assert_int_equal(st_full.resolved_kernel, 3);
	assert_int_equal(st_sub.resolved_kernel, 3);
	assert_int_equal(st_full.unresolved_kernel, 2);
	for (int k = 0; k < 2; k++) {
		t = snapshot_text(k ? sub : full, &tl);
		assert_int_equal(count_lines(t, tl, SP_KALLSYMS_SECTION_PREFIX
					     "mymod .text.unlikely addr=ffffffffc0180000 size=1000"),
				 1);
		free(t);
		sp_profile__free(pp[k]);
	}
	unsetenv(SP_KALLSYMS_PATH_ENV);
}

/* A truncated or garbled subset does not load; a subset never hides a
 * whole snapshot of its build id. */
static void test_subset_hostile(void **state)
{
	static const struct floc fl[] = { { M_IMAGE, LINK_TEXT + 0x110 } };
	struct sp_build_id id = kid();
	struct sp_kallsyms_want want;
	struct sp_symbolize_stats st;
	struct sp_ksyms_set *s;
	struct sp_ksyms *k;
	struct sp_profile *p;
	int32_t loc;
	char in[PATH_MAX], sub[PATH_MAX], bad[PATH_MAX], full[PATH_MAX], dir[PATH_MAX];
	char err[256], *t;
	uint8_t *gz;
	size_t gz_len, tl;

	(void)state;
	tu_path(in, sizeof(in), "fake_kallsyms2");
	tu_path(sub, sizeof(sub), "sub2.kallsyms.gz");
	tu_path(bad, sizeof(bad), "bad.kallsyms.gz");
	tu_path(dir, sizeof(dir), "ksdir");
	assert_int_equal(tu_write_file(in, fake, strlen(fake)), 0);
	setenv(SP_KALLSYMS_PATH_ENV, in, 1);
	p = fake_profile(fl, 1, &loc);
	assert_int_equal(sp_kallsyms_want__of_profile(p, NULL, 0, &want), 0);
	assert_int_equal(sp_kallsyms__capture_want(sub, &id, &want, err, sizeof(err)), 0);
	sp_kallsyms_want__release(&want);
	assert_int_equal(tu_read_file(sub, &gz, &gz_len), 0);

	/* cut anywhere inside the gzip stream: refused, not half-read */
	for (size_t cut = 1; cut < gz_len; cut += 7) {
		assert_int_equal(tu_write_file(bad, gz, cut), 0);
		assert_int_equal(sp_ksyms__load(bad, &k, NULL), -EINVAL);
		assert_null(k);
	}
	assert_int_equal(sp_ksyms_set__new(&s), 0);
	assert_int_equal(sp_ksyms_set__add_file(s, bad), -EINVAL);
	assert_int_equal(sp_symbolize__profile_ks(NULL, s, p, &st), 0);
	assert_string_equal(name_of(p, loc), "");
	assert_int_equal(st.unresolved_kernel_no_snapshot, 1);
	sp_ksyms_set__free(s);

	/* garbled: the subset's text with its header broken, and with NULs */
	t = snapshot_text(sub, &tl);
	t[2] = 'X';
	assert_int_equal(tu_write_file(bad, t, tl), 0);
	assert_int_equal(sp_ksyms__load(bad, &k, NULL), -EINVAL);
	t[2] = 's';
	memset(strchr(t, '\n') + 1, 0, tl - (size_t)(strchr(t, '\n') + 1 - t));
	assert_int_equal(tu_write_file(bad, t, tl), 0);
	assert_int_equal(sp_ksyms__load(bad, &k, NULL), 0);	/* lines skipped, counted */
	assert_true(sp_ksyms__is_subset(k));
	sp_ksyms__free(k);
	free(t);

	/* a subset first, then a whole snapshot of the build id: the whole one
	 * names what the subset lacks (after_marker is in no profile here) */
	assert_int_equal(mkdir(dir, 0755), 0);
	assert_true((size_t)snprintf(full, sizeof(full), "%s/" KID_HEX SP_KALLSYMS_SUFFIX, dir) <
		    sizeof(full));
	assert_int_equal(sp_kallsyms__capture(full, &id, err, sizeof(err)), 0);
	{
		static const struct floc other[] = { { M_IMAGE, LINK_TEXT + 0x100210 } };
		struct sp_profile *q = fake_profile(other, 1, &loc);

		assert_int_equal(sp_ksyms_set__new(&s), 0);
		assert_int_equal(sp_ksyms_set__add_file(s, sub), 0);
		assert_int_equal(sp_symbolize__profile_ks(NULL, s, q, &st), 0);
		assert_string_not_equal(name_of(q, loc), "after_marker");	/* subset only */
		sp_ksyms_set__free(s);
		sp_profile__free(q);

		q = fake_profile(other, 1, &loc);
		assert_int_equal(sp_ksyms_set__new(&s), 0);
		assert_int_equal(sp_ksyms_set__add_file(s, sub), 0);
		assert_int_equal(sp_ksyms_set__add_dir(s, dir), 0);
		assert_int_equal(sp_symbolize__profile_ks(NULL, s, q, &st), 0);
		assert_string_equal(name_of(q, loc), "after_marker");	/* the whole one */
		sp_ksyms_set__free(s);
		sp_profile__free(q);

		/* a subset added after a whole one is a duplicate */
		assert_int_equal(sp_ksyms_set__new(&s), 0);
		assert_int_equal(sp_ksyms_set__add_file(s, full), 0);
		assert_int_equal(sp_ksyms_set__add_file(s, sub), 0);
		{
			struct sp_ksyms_set_stats ss;

			sp_ksyms_set__stats(s, &ss);
			assert_int_equal(ss.loaded, 1);
			assert_int_equal(ss.duplicate_build_id, 1);
		}
		assert_false(sp_ksyms__is_subset(sp_ksyms_set__get(s, KID_HEX)));
		sp_ksyms_set__free(s);
	}
	/* a subset in a snapshot directory is not taken for the kernel's */
	rename(sub, full);
	assert_int_equal(sp_ksyms_set__new(&s), 0);
	assert_int_equal(sp_ksyms_set__add_dir(s, dir), 0);
	assert_null(sp_ksyms_set__get(s, KID_HEX));
	sp_ksyms_set__free(s);

	unsetenv(SP_KALLSYMS_PATH_ENV);
	free(gz);
	sp_profile__free(p);
}

/* ------------------------------------------------------------ real kernel */

static int read_proc_text(uint64_t **out, size_t *n)
{
	FILE *f = fopen("/proc/kallsyms", "r");
	char line[1100], name[600], t;
	unsigned long long a;
	size_t cap = 0;

	*out = NULL;
	*n = 0;
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llx %c %599s", &a, &t, name) != 3 || !a ||
		    !sp_kallsyms_format__is_text(t))
			continue;
		/* BPF programs and ftrace trampolines come and go while the
		 * test runs (other tests load BPF): the two snapshots are taken
		 * at different moments, so only what stays put is compared */
		if (strstr(line, "[bpf]") || strstr(line, "[__builtin__ftrace]"))
			continue;
		if (*n == cap) {
			cap = cap ? cap * 2 : 1 << 16;
			*out = realloc(*out, cap * sizeof(**out));
			assert_non_null(*out);
		}
		(*out)[(*n)++] = a;
	}
	fclose(f);
	return 0;
}

static bool volatile_name(const char *name)
{
	return !strncmp(name, "bpf_prog_", 9) || !strncmp(name, "bpf_trampoline_", 15);
}

static void test_subset_real(void **state)
{
	struct sp_kernel_layout_config kc = { 0 };
	struct sp_kernel_layout *kl = NULL;
	const struct sp_kmod *mods;
	struct sp_kallsyms_want want;
	struct sp_symbolize_stats st_full, st_sub;
	struct sp_profile *pf, *ps;
	struct sp_build_id id;
	uint64_t *syms = NULL, seed = 0x9e3779b97f4a7c15ull;
	size_t n_syms = 0, n_mods, n_locs = 0, agree = 0, moved = 0;
	int32_t *lf, *ls;
	char full[PATH_MAX], sub[PATH_MAX], err[320] = "";

	(void)state;
	unsetenv(SP_KALLSYMS_PATH_ENV);
	if (geteuid() != 0 || read_proc_text(&syms, &n_syms) || n_syms < 1000 ||
	    sp_buildid__kernel(&id) ||
	    sp_kernel_layout__new(&kc, &kl, err, sizeof(err))) {
		print_message("needs root, visible kernel addresses and a kernel build id (%s)\n",
			      err);
		sp_kernel_layout__free(kl);
		free(syms);
		skip();
	}
	mods = sp_kernel_layout__modules(kl, &n_mods);
	tu_path(full, sizeof(full), "real_full.kallsyms.gz");
	tu_path(sub, sizeof(sub), "real_sub.kallsyms.gz");
	pf = sp_profile__new();
	ps = sp_profile__new();
	lf = calloc(8192, sizeof(*lf));
	ls = calloc(8192, sizeof(*ls));
	assert_true(pf && ps && lf && ls);
	/* addresses as the collector sees them: some symbol starts, some
	 * inside, spread over everything listed (image, modules, BPF) */
	for (size_t i = 0; i < 8192 && n_syms; i++) {
		uint64_t a, loc;
		uint32_t slot;
		struct sp_profile *pp[2] = { pf, ps };

		seed ^= seed << 13;
		seed ^= seed >> 7;
		seed ^= seed << 17;
		a = syms[seed % n_syms] + (i % 3 ? (seed >> 32) % 0x400 : 0);
		slot = sp_kernel_layout__map(kl, a, &loc);
		for (int w = 0; w < 2; w++) {
			const struct sp_kernel_slot *ks = sp_kernel_layout__slot(kl, slot);
			char hex[2 * SP_BUILD_ID_MAX + 1];
			struct sp_mapping m = { .memory_start = ks->start, .memory_limit = ks->limit,
						.file_offset = ks->offset };
			struct sp_location l = { .frame_kind = SP_FRAME_KERNEL, .address = loc };
			int32_t r;

			sp_buildid__hex(&ks->build_id, hex);
			m.filename = sp_profile__intern(pp[w], ks->filename);
			m.build_id = sp_profile__intern(pp[w], hex);
			l.mapping = sp_profile__add_mapping(pp[w], &m);
			assert_true(l.mapping > 0);
			r = sp_profile__add_location(pp[w], &l);
			assert_true(r > 0);
			(w ? ls : lf)[n_locs] = r;
		}
		n_locs++;
	}
	assert_int_equal(sp_kallsyms__capture_mods(full, &id, mods, n_mods, err, sizeof(err)), 0);
	assert_int_equal(sp_kallsyms_want__of_profile(ps, mods, n_mods, &want), 0);
	assert_int_equal(sp_kallsyms__capture_want(sub, &id, &want, err, sizeof(err)), 0);
	sp_kallsyms_want__release(&want);
	symbolize_with(full, pf, &st_full);
	symbolize_with(sub, ps, &st_sub);
	for (size_t i = 0; i < n_locs; i++) {
		if (volatile_name(name_of(pf, lf[i])) || volatile_name(name_of(ps, ls[i]))) {
			moved++;	/* an offset that ran into a BPF image */
			continue;
		}
		if (strcmp(name_of(pf, lf[i]), name_of(ps, ls[i])))
			fail_msg("location %zu: whole snapshot %s, subset %s", i,
				 name_of(pf, lf[i]), name_of(ps, ls[i]));
		agree++;
	}
	assert_int_equal(st_sub.resolved_kernel, st_full.resolved_kernel);
	assert_true(st_full.resolved_kernel >= n_locs * 9 / 10);
	print_message("real kernel: %zu locations (%" PRIu64 " named), %zu modules; whole "
		      "snapshot %ld bytes, subset %ld bytes\n", n_locs, st_full.resolved_kernel,
		      n_mods, file_size(full), file_size(sub));
	assert_true(file_size(sub) < file_size(full));
	assert_int_equal(agree + moved, n_locs);
	assert_true(moved < n_locs / 50);

	/* a small profile: 20 locations make a small file */
	{
		struct sp_profile *small = sp_profile__new();

		for (size_t i = 1; i <= 20 && i < ps->n_locations; i++) {
			struct sp_location l = ps->locations[i];
			const struct sp_mapping *pm = &ps->mappings[l.mapping];
			struct sp_mapping m = *pm;

			l.n_lines = 0;
			m.filename = sp_profile__intern(small, sp_profile__str(ps, pm->filename));
			m.build_id = sp_profile__intern(small, sp_profile__str(ps, pm->build_id));
			m.has_functions = false;
			l.mapping = sp_profile__add_mapping(small, &m);
			assert_true(sp_profile__add_location(small, &l) > 0);
		}
		assert_int_equal(sp_kallsyms_want__of_profile(small, mods, n_mods, &want), 0);
		assert_int_equal(sp_kallsyms__capture_want(sub, &id, &want, err, sizeof(err)), 0);
		sp_kallsyms_want__release(&want);
		print_message("20 kernel locations: subset %ld bytes\n", file_size(sub));
		assert_true(file_size(sub) < 8192);
		sp_profile__free(small);
	}
	free(lf);
	free(ls);
	free(syms);
	sp_profile__free(pf);
	sp_profile__free(ps);
	sp_kernel_layout__free(kl);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_subset_fake),
		cmocka_unit_test(test_subset_sections),
		cmocka_unit_test(test_subset_hostile),
		cmocka_unit_test(test_subset_real),
	};

	return cmocka_run_group_tests(tests, tu_setup_dir, tu_teardown_dir);
}
