// SPDX-License-Identifier: MIT
/*
 * test_symbolizer.c - unit tests of src/symbolizer: build-id validation
 * and path tricks, the debug-info finder (build-id directories, hint path,
 * debuginfod negative cache against a refused port), the resolver on the
 * -O2 fixture (functions, inlined chains, file offsets, the cache bound,
 * lookups in two modules at once on the C++ fixture unw_sort_cpp),
 * profile symbolization with its counters, and the reports (folded, top,
 * by span, flame graph escaping) on hand-made profiles.
 *
 * The fixture is $SPANPROF_BUILD/fixtures/sym_inline_O2 (default
 * build/fixtures/...); tests that need it are skipped when it is missing.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "testutil.h"

#include "profile/profile.h"
#include "symbolizer/debuginfo.h"
#include "symbolizer/dwarf_line.h"
#include "symbolizer/report.h"
#include "symbolizer/ktree.h"
#include "symbolizer/relobj.h"
#include "symbolizer/resolve.h"
#include "symbolizer/symbolize.h"

extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len,
			    int *status);

static char fixture[PATH_MAX];

static bool have_fixture(void)
{
	const char *b = getenv("SPANPROF_BUILD");
	char rel[PATH_MAX];

	snprintf(rel, sizeof(rel), "%s/fixtures/sym_inline_O2", b && *b ? b : "build");
	/* Absolute: tests link to it from temporary build-id directories. */
	return realpath(rel, fixture) != NULL && access(fixture, R_OK) == 0;
}

/* Value and size of a FUNC symbol of the ELF file path (its vaddr): the
 * one named name, or with name ending in '*' the first whose name starts
 * with what comes before the '*' and whose size is not 0. */
static bool elf_func_sym(const char *path, const char *name, uint64_t *va, uint64_t *size)
{
	size_t plen = strlen(name);
	bool prefix = plen && name[plen - 1] == '*';
	Elf_Scn *scn = NULL;
	bool found = false;
	Elf *elf;
	int fd;

	elf_version(EV_CURRENT);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return false;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	while (elf && !found && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB)
			continue;
		d = elf_getdata(scn, NULL);
		for (size_t i = 0; d && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym s;
			const char *n;

			if (!gelf_getsym(d, (int)i, &s))
				break;
			n = elf_strptr(elf, sh.sh_link, s.st_name);
			if (n && GELF_ST_TYPE(s.st_info) == STT_FUNC &&
			    (prefix ? !strncmp(n, name, plen - 1) && s.st_size : !strcmp(n, name))) {
				*va = s.st_value;
				*size = s.st_size;
				found = true;
				break;
			}
		}
	}
	elf_end(elf);
	close(fd);
	return found;
}

/* Value and size of a FUNC symbol of the fixture (its ELF vaddr). */
static bool fixture_sym(const char *name, uint64_t *va, uint64_t *size)
{
	return elf_func_sym(fixture, name, va, size);
}

/* ELF vaddr -> file offset through the fixture's PT_LOAD headers. */
static uint64_t fixture_off(uint64_t va)
{
	uint64_t off = UINT64_MAX;
	size_t n = 0;
	Elf *elf;
	int fd = open(fixture, O_RDONLY);

	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (elf && !elf_getphdrnum(elf, &n))
		for (size_t i = 0; i < n; i++) {
			GElf_Phdr ph;

			if (gelf_getphdr(elf, (int)i, &ph) &&
			    ph.p_type == PT_LOAD && va >= ph.p_vaddr &&
			    va < ph.p_vaddr + ph.p_filesz)
				off = va - ph.p_vaddr + ph.p_offset;
		}
	elf_end(elf);
	close(fd);
	return off;
}

/* ------------------------------------------------------------ build ids */

static void test_buildid_validate(void **state)
{
	char long_id[SP_BUILDID_MAX_HEX + 3];

	(void)state;
	assert_int_equal(sp_buildid__validate("ab"), 0);
	assert_int_equal(sp_buildid__validate(
				 "0123456789abcdef0123456789abcdef01234567"), 0);
	assert_int_equal(sp_buildid__validate(NULL), -EINVAL);
	assert_int_equal(sp_buildid__validate(""), -EINVAL);
	assert_int_equal(sp_buildid__validate("a"), -EINVAL);
	assert_int_equal(sp_buildid__validate("abc"), -EINVAL);
	assert_int_equal(sp_buildid__validate("AB"), -EINVAL);
	assert_int_equal(sp_buildid__validate("../../etc"), -EINVAL);
	assert_int_equal(sp_buildid__validate("ab/../../etc/passwd"), -EINVAL);
	assert_int_equal(sp_buildid__validate("ab cd"), -EINVAL);
	assert_int_equal(sp_buildid__validate("0x12"), -EINVAL);
	memset(long_id, 'a', SP_BUILDID_MAX_HEX);
	long_id[SP_BUILDID_MAX_HEX] = '\0';
	assert_int_equal(sp_buildid__validate(long_id), 0);
	long_id[SP_BUILDID_MAX_HEX] = 'a';
	long_id[SP_BUILDID_MAX_HEX + 1] = 'a';
	long_id[SP_BUILDID_MAX_HEX + 2] = '\0';
	assert_int_equal(sp_buildid__validate(long_id), -EINVAL);
}

static void test_finder_rejects_bad_ids(void **state)
{
	struct sp_debuginfo *di;
	struct sp_debuginfo_stats st;
	const char *dirs[] = { "/" };
	struct sp_debuginfo_opts o = { .dirs = dirs, .n_dirs = 1,
				       .no_debuginfod = true };
	char *path = (char *)1;

	(void)state;
	assert_int_equal(sp_debuginfo__new(&o, &di), 0);
	/* "/.build-id/../../etc/passwd" must never be formed */
	assert_int_equal(sp_debuginfo__find(di, "../../etc/passwd", "/etc/passwd",
					    &path, NULL), -EINVAL);
	assert_null(path);
	assert_int_equal(sp_debuginfo__find(di, "AB", NULL, &path, NULL),
			 -EINVAL);
	sp_debuginfo__stats(di, &st);
	assert_int_equal(st.invalid_build_id, 2);
	assert_int_equal(st.not_found, 2);
	sp_debuginfo__free(di);
	sp_debuginfo__free(NULL);
}

static void test_finder_dirs_and_hint(void **state)
{
	char id[SP_BUILDID_MAX_HEX + 1], p[PATH_MAX], fake[] =
		"00112233445566778899aabbccddeeff00112233";
	struct sp_debuginfo_stats st;
	enum sp_debuginfo_source src;
	struct sp_debuginfo *di;
	const char *dir = tu_dir;
	char *path = NULL;

	(void)state;
	if (!have_fixture())
		skip();
	assert_int_equal(sp_buildid__read_file(fixture, id, sizeof(id)), 0);
	assert_int_equal(sp_buildid__validate(id), 0);
	snprintf(p, sizeof(p), "%s/.build-id", dir);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/.build-id/%.2s", dir, id);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/.build-id/%.2s/%s.debug", dir, id, id + 2);
	assert_int_equal(symlink(fixture, p), 0);
	/* a file at the fake id's path whose own build id differs */
	snprintf(p, sizeof(p), "%s/.build-id/00", dir);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/.build-id/00/%s.debug", dir, fake + 2);
	assert_int_equal(symlink(fixture, p), 0);

	{
		const char *dirs[] = { "/nonexistent", dir };
		struct sp_debuginfo_opts o = { .dirs = dirs, .n_dirs = 2,
					       .no_debuginfod = true };

		assert_int_equal(sp_debuginfo__new(&o, &di), 0);
	}
	assert_int_equal(sp_debuginfo__find(di, id, NULL, &path, &src), 0);
	assert_int_equal(src, SP_DI_DIR);
	assert_non_null(strstr(path, "/.build-id/"));
	free(path);
	path = NULL;
	assert_int_equal(sp_debuginfo__find(di, fake, NULL, &path, &src),
			 -ENOENT);
	assert_null(path);
	/* refused for its build id, and said so: another build id's file is
	 * there, not nothing */
	assert_int_equal(src, SP_DI_MISMATCH);
	/* hint: used only when its build id matches */
	assert_int_equal(sp_debuginfo__find(di, fake, fixture, &path, &src),
			 -ENOENT);
	sp_debuginfo__stats(di, &st);
	assert_int_equal(st.found_dir, 1);
	assert_int_equal(st.not_found, 2);
	assert_int_equal(st.rejected_build_id, 2);
	sp_debuginfo__free(di);

	{
		struct sp_debuginfo_opts o = { .no_debuginfod = true };

		assert_int_equal(sp_debuginfo__new(&o, &di), 0);
	}
	assert_int_equal(sp_debuginfo__find(di, id, fixture, &path, &src), 0);
	assert_int_equal(src, SP_DI_PATH);
	assert_string_equal(path, fixture);
	free(path);
	sp_debuginfo__stats(di, &st);
	assert_int_equal(st.found_path, 1);
	sp_debuginfo__free(di);

	/* DIR may name the .build-id directory itself */
	snprintf(p, sizeof(p), "%s/.build-id", dir);
	{
		const char *dirs[] = { p };
		struct sp_debuginfo_opts o = { .dirs = dirs, .n_dirs = 1,
					       .no_debuginfod = true };

		assert_int_equal(sp_debuginfo__new(&o, &di), 0);
	}
	assert_int_equal(sp_debuginfo__find(di, id, NULL, &path, &src), 0);
	assert_int_equal(src, SP_DI_DIR);
	free(path);
	sp_debuginfo__free(di);
}

/* Kernel debug files by name (ktree.h): which hints ask, which files are
 * indexed (.ko, .ko.debug, vmlinux in lib/modules/RELEASE/ and
 * boot/vmlinux-RELEASE; not symbolic links, not other names), '-' read as
 * '_', several releases under one name in path order. */
static void test_ktree(void **state)
{
	static const char *const files[] = {
		"lib/modules/6.1.0-b/kernel/fs/xfs/xfs.ko",
		"lib/modules/6.1.0-a/kernel/fs/xfs/xfs.ko",
		"lib/modules/6.1.0-a/kernel/sound/snd-hda-intel.ko.debug",
		"lib/modules/6.1.0-a/vmlinux",
		"lib/modules/6.1.0-a/kernel/fs/xfs/xfs.ko.xz",
		"lib/modules/6.1.0-a/modules.dep",
		"boot/vmlinux-6.1.0-a",
		"boot/System.map-6.1.0-a",
	};
	char buf[SP_KTREE_NAME_MAX], p[PATH_MAX], q[PATH_MAX];
	struct sp_ktree *t;
	const char *got;
	size_t it = 0;

	(void)state;
	assert_true(sp_ktree__hint_name("[module:snd-hda-intel]", buf, sizeof(buf)));
	assert_string_equal(buf, "snd_hda_intel");
	assert_true(sp_ktree__hint_name("[kernel.kallsyms]", buf, sizeof(buf)));
	assert_string_equal(buf, "vmlinux");
	assert_false(sp_ktree__hint_name("/usr/lib/x.so", buf, sizeof(buf)));
	assert_false(sp_ktree__hint_name("[module:../../etc]", buf, sizeof(buf)));
	assert_false(sp_ktree__hint_name("[module:x]y", buf, sizeof(buf)));
	assert_false(sp_ktree__hint_name("[module:]", buf, sizeof(buf)));
	assert_true(sp_ktree__hint_name("[module-section:snd-hda-intel:.text.unlikely]", buf,
					sizeof(buf)));
	assert_string_equal(buf, "snd_hda_intel");
	assert_false(sp_ktree__hint_name("[module-section:x]", buf, sizeof(buf)));	/* no section */
	assert_false(sp_ktree__hint_name("[module-section::.text.hot]", buf, sizeof(buf)));
	assert_false(sp_ktree__hint_name("[module-section:x:.te/xt]", buf, sizeof(buf)));
	assert_false(sp_ktree__hint_name("[module-section:../a:.text.hot]", buf, sizeof(buf)));
	assert_false(sp_ktree__hint_name("[module-section:x:.text.hot]y", buf, sizeof(buf)));
	assert_false(sp_ktree__hint_name(NULL, buf, sizeof(buf)));
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		char *slash;
		FILE *f;

		snprintf(p, sizeof(p), "%s/%s", tu_dir, files[i]);
		for (slash = strchr(p + strlen(tu_dir) + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
			*slash = '\0';
			mkdir(p, 0755);
			*slash = '/';
		}
		assert_non_null(f = fopen(p, "w"));
		fclose(f);
	}
	/* a symbolic link to a tree is not followed */
	snprintf(p, sizeof(p), "%s/lib/modules/6.1.0-a", tu_dir);
	snprintf(q, sizeof(q), "%s/lib/modules/6.1.0-link", tu_dir);
	assert_int_equal(symlink(p, q), 0);

	assert_int_equal(sp_ktree__build(tu_dir, &t), 0);
	snprintf(p, sizeof(p), "%s/%s", tu_dir, files[1]);
	assert_non_null(got = sp_ktree__next(t, "xfs", &it));
	assert_string_equal(got, p);
	snprintf(p, sizeof(p), "%s/%s", tu_dir, files[0]);
	assert_non_null(got = sp_ktree__next(t, "xfs", &it));
	assert_string_equal(got, p);
	assert_null(sp_ktree__next(t, "xfs", &it));
	it = 0;
	assert_non_null(sp_ktree__next(t, "snd_hda_intel", &it));
	assert_null(sp_ktree__next(t, "snd_hda_intel", &it));
	it = 0;
	assert_non_null(got = sp_ktree__next(t, "vmlinux", &it));
	assert_non_null(strstr(got, "/boot/vmlinux-6.1.0-a"));
	assert_non_null(got = sp_ktree__next(t, "vmlinux", &it));
	assert_non_null(strstr(got, "/lib/modules/6.1.0-a/vmlinux"));
	assert_null(sp_ktree__next(t, "vmlinux", &it));
	it = 0;
	assert_null(sp_ktree__next(t, "modules.dep", &it));
	it = 0;
	assert_null(sp_ktree__next(t, "zzz", &it));
	assert_int_equal(sp_ktree__skipped(t), 0);
	sp_ktree__free(t);
	sp_ktree__free(NULL);
	/* no tree at all: an empty index */
	assert_int_equal(sp_ktree__build("/nonexistent", &t), 0);
	it = 0;
	assert_null(sp_ktree__next(t, "xfs", &it));
	sp_ktree__free(t);
}

static void test_finder_negative_cache(void **state)
{
	struct sp_debuginfo_opts o = { .neg_cache_entries = 2 };
	struct sp_debuginfo_stats st;
	struct sp_debuginfo *di;
	const char *cache = tu_dir;
	char *path = NULL;
	const char *a = "aa00000000000000000000000000000000000001";
	const char *b = "bb00000000000000000000000000000000000002";
	const char *c = "cc00000000000000000000000000000000000003";

	(void)state;
	/* port 9 (discard) on loopback: refused at once */
	setenv("DEBUGINFOD_URLS", "http://127.0.0.1:9", 1);
	setenv("DEBUGINFOD_CACHE_PATH", cache, 1);
	setenv("DEBUGINFOD_TIMEOUT", "5", 1);
	assert_int_equal(sp_debuginfo__new(&o, &di), 0);
	assert_int_equal(sp_debuginfo__find(di, a, NULL, &path, NULL), -ENOENT);
	assert_int_equal(sp_debuginfo__find(di, a, NULL, &path, NULL), -ENOENT);
	sp_debuginfo__stats(di, &st);
	assert_int_equal(st.debuginfod_queries, 1);
	assert_int_equal(st.negative_hits, 1);
	assert_int_equal(st.not_found, 2);
	/* bounded: two more ids push a out (FIFO of 2) */
	sp_debuginfo__find(di, b, NULL, &path, NULL);
	sp_debuginfo__find(di, c, NULL, &path, NULL);
	sp_debuginfo__find(di, a, NULL, &path, NULL);
	sp_debuginfo__stats(di, &st);
	assert_int_equal(st.debuginfod_queries, 4);
	assert_int_equal(st.negative_hits, 1);
	sp_debuginfo__find(di, a, NULL, &path, NULL);
	sp_debuginfo__stats(di, &st);
	assert_int_equal(st.negative_hits, 2);
	assert_null(path);
	sp_debuginfo__free(di);
	unsetenv("DEBUGINFOD_URLS");
	unsetenv("DEBUGINFOD_CACHE_PATH");
	unsetenv("DEBUGINFOD_TIMEOUT");
}

/* ------------------------------------------------------------ resolver */

struct rctx {
	struct sp_debuginfo *di;
	struct sp_resolver *r;
	char id[SP_BUILDID_MAX_HEX + 1];
};

static void rctx_init(struct rctx *x, uint32_t cache_entries)
{
	struct sp_debuginfo_opts d = { .no_debuginfod = true };
	struct sp_resolver_opts o = { .cache_entries = cache_entries };

	assert_int_equal(sp_debuginfo__new(&d, &x->di), 0);
	o.di = x->di;
	assert_int_equal(sp_resolver__new(&o, &x->r), 0);
	assert_int_equal(sp_buildid__read_file(fixture, x->id, sizeof(x->id)),
			 0);
}

static void rctx_fini(struct rctx *x)
{
	sp_resolver__free(x->r);
	sp_debuginfo__free(x->di);
}

static const char *base(const char *p)
{
	const char *s = p ? strrchr(p, '/') : NULL;

	return s ? s + 1 : (p ? p : "");
}

static void test_resolver_functions_and_inlines(void **state)
{
	struct sp_resolver_stats st;
	struct sp_frames fr, fo;
	struct rctx x;
	uint64_t va, size;
	int inlined = 0;

	(void)state;
	if (!have_fixture())
		skip();
	rctx_init(&x, 0);
	assert_true(fixture_sym("crunch", &va, &size));
	assert_int_equal(sp_resolver__resolve_vaddr(x.r, x.id, fixture, va,
						     &fr), 0);
	assert_true(fr.n >= 1);
	assert_string_equal(fr.f[fr.n - 1].function, "crunch");
	assert_string_equal(base(fr.f[fr.n - 1].file), "sym_inline.c");
	assert_true(fr.f[fr.n - 1].line > 0);
	assert_true(fr.f[fr.n - 1].decl_line > 0);
	assert_int_equal(fr.source, SP_RES_DWARF);

	for (uint64_t a = va; a < va + size; a++) {
		assert_int_equal(sp_resolver__resolve_vaddr(x.r, x.id, fixture,
							    a, &fr), 0);
		assert_string_equal(fr.f[fr.n - 1].function, "crunch");
		if (fr.n < 2)
			continue;
		inlined++;
		/* inlined callees first: mix, mix2, mix3 or classify */
		assert_non_null(strstr("mix mix2 mix3 classify",
				       fr.f[0].function));
		for (uint8_t i = 1; i < fr.n; i++)
			assert_true(fr.f[i].line > 0);
		/* the same address as a file offset */
		assert_int_equal(sp_resolver__resolve(x.r, x.id, fixture,
						      fixture_off(a), &fo), 0);
		assert_int_equal(fo.n, fr.n);
		assert_string_equal(fo.f[0].function, fr.f[0].function);
		assert_int_equal(fo.f[0].line, fr.f[0].line);
	}
	assert_true(inlined > 0);
	/* the inline trees above came from die_reader, not the libdw walk it
	 * falls back to */
	sp_resolver__stats(x.r, &st);
	assert_true(st.functions_indexed > 0);
	assert_int_equal(st.inline_walks_libdw, 0);
	/* an address past every segment is unresolved */
	assert_int_equal(sp_resolver__resolve(x.r, x.id, fixture, 1ull << 40,
					      &fr), -ENOENT);
	assert_int_equal(fr.n, 0);
	/* bad build id */
	assert_int_equal(sp_resolver__resolve(x.r, "../x", fixture, 0, &fr),
			 -EINVAL);
	rctx_fini(&x);
}

/* The fixture's source compiled -c and linked as kbuild links a module
 * (ld -r --build-id=sha1): an ET_REL file whose sections all sit at 0.
 * Asked at offsets in .text (sp_resolver__resolve_text), every address of
 * crunch gives the chain the linked fixture gives at crunch's vaddr plus
 * the same offset (the same compiler, the same flags: the same code), so
 * relobj.c's layout and relocated DWARF read as the linker's do. */
static void test_resolver_relocatable(void **state)
{
	char kmod[PATH_MAX], kid[SP_BUILDID_MAX_HEX + 1];
	uint64_t va, size, kva, ksize;
	struct sp_frames fr, fk;
	struct sp_relobj *o;
	struct rctx x;
	int fd;

	(void)state;
	if (!have_fixture())
		skip();
	snprintf(kmod, sizeof(kmod), "%.*s/sym_inline_kmod.ko",
		 (int)(strrchr(fixture, '/') - fixture), fixture);
	assert_int_equal(access(kmod, R_OK), 0);
	/* not ET_REL: refused, the descriptor closed all the same */
	fd = open(fixture, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(sp_relobj__open(fd, fixture, &o), -ENOEXEC);
	assert_null(o);
	assert_int_equal(fcntl(fd, F_GETFD), -1);
	fd = open(kmod, O_RDONLY);
	assert_int_equal(sp_relobj__open(fd, kmod, &o), 0);
	assert_non_null(sp_relobj__dwarf(o));
	sp_relobj__free(o);
	sp_relobj__free(NULL);

	rctx_init(&x, 0);
	assert_int_equal(sp_buildid__read_file(kmod, kid, sizeof(kid)), 0);
	assert_true(fixture_sym("crunch", &va, &size));
	assert_true(elf_func_sym(kmod, "crunch", &kva, &ksize));
	assert_int_equal(ksize, size);
	for (uint64_t a = 0; a < size; a++) {
		assert_int_equal(sp_resolver__resolve_vaddr(x.r, x.id, fixture, va + a, &fr), 0);
		assert_int_equal(sp_resolver__resolve_text(x.r, kid, kmod, kva + a, &fk), 0);
		assert_int_equal(fk.source, SP_RES_DWARF);
		assert_int_equal(fk.n, fr.n);
		for (uint8_t i = 0; i < fr.n; i++) {
			assert_string_equal(fk.f[i].function, fr.f[i].function);
			assert_string_equal(base(fk.f[i].file), base(fr.f[i].file));
			assert_int_equal(fk.f[i].line, fr.f[i].line);
			assert_int_equal(fk.f[i].column, fr.f[i].column);
		}
	}
	/* past .text: nothing, whatever lies beyond in the layout */
	assert_int_equal(sp_resolver__resolve_text(x.r, kid, kmod, 1u << 24, &fk), -ENOENT);
	rctx_fini(&x);
}

static void test_resolver_cache_bound(void **state)
{
	struct sp_resolver_stats st;
	struct sp_frames fr;
	struct rctx x;
	uint64_t va, size, n = 0;

	(void)state;
	if (!have_fixture())
		skip();
	rctx_init(&x, 8);
	assert_true(fixture_sym("main", &va, &size));
	for (uint64_t a = va; a < va + size && n < 200; a++, n++)
		sp_resolver__resolve_vaddr(x.r, x.id, fixture, a, &fr);
	sp_resolver__stats(x.r, &st);
	assert_int_equal(st.cache_capacity, 8);
	assert_true(st.cache_used <= 8);
	assert_int_equal(st.cache_misses, n);
	assert_int_equal(st.cache_evictions, n - st.cache_used);
	assert_int_equal(st.requests, n);
	/* the last address is still cached */
	sp_resolver__resolve_vaddr(x.r, x.id, fixture, va + n - 1, &fr);
	sp_resolver__stats(x.r, &st);
	assert_int_equal(st.cache_hits, 1);
	assert_int_equal(st.modules, 1);
	rctx_fini(&x);
}

/* Up to max function starts (+ 1 byte) of path's symbol table, spread
 * over it (every step-th FUNC symbol with a size). */
static uint32_t elf_func_addrs(const char *path, uint64_t *out, uint32_t max, uint32_t step)
{
	Elf_Scn *scn = NULL;
	uint32_t n = 0, seen = 0;
	Elf *elf;
	int fd;

	elf_version(EV_CURRENT);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return 0;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	while (elf && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB)
			continue;
		d = elf_getdata(scn, NULL);
		for (size_t i = 0; d && n < max && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym s;

			if (gelf_getsym(d, (int)i, &s) && GELF_ST_TYPE(s.st_info) == STT_FUNC &&
			    s.st_size > 1 && s.st_value && seen++ % step == 0)
				out[n++] = s.st_value + 1;
		}
	}
	elf_end(elf);
	close(fd);
	return n;
}

/* Nothing decoded up front, one unit for one address; under a small unit
 * budget units are given back (and decoded again) with the same answers
 * as under the default budget.  On spanprof-symbolizer itself: a -O2 -g
 * binary of many units. */
static void test_resolver_lazy_units_budget(void **state)
{
	enum { MAXA = 400, BUDGET = 128 << 10 };
	struct sp_debuginfo_opts d = { .no_debuginfod = true };
	struct sp_resolver_opts o = { .cache_entries = 16 };
	struct sp_resolver *big = NULL, *small = NULL;
	struct sp_resolver_stats st;
	struct sp_debuginfo *di = NULL;
	char bin[PATH_MAX], id[SP_BUILDID_MAX_HEX + 1];
	static uint64_t addrs[MAXA];
	struct sp_frames a, b;
	const char *dir = getenv("SPANPROF_BUILD");
	uint32_t n, dwarf = 0;

	(void)state;
	snprintf(bin, sizeof(bin), "%s/spanprof-symbolizer", dir ? dir : "build");
	if (access(bin, R_OK))
		skip();
	n = elf_func_addrs(bin, addrs, MAXA, 3);
	assert_true(n > 100);
	assert_int_equal(sp_buildid__read_file(bin, id, sizeof(id)), 0);
	assert_int_equal(sp_debuginfo__new(&d, &di), 0);
	o.di = di;
	/* one address answered from DWARF: its unit only (a fresh resolver
	 * per try: a function without DWARF, e.g. from a static library, is
	 * skipped) */
	for (uint32_t i = n / 2, tries = 0;; i++, tries++) {
		assert_true(i < n && tries < 32);
		assert_int_equal(sp_resolver__new(&o, &big), 0);
		if (!sp_resolver__resolve_vaddr(big, id, bin, addrs[i], &a) &&
		    a.source == SP_RES_DWARF)
			break;
		sp_resolver__free(big);
	}
	sp_resolver__stats(big, &st);
	assert_int_equal(st.units_decoded, 1);
	assert_true(st.unit_bytes > 0);
	o.unit_budget = BUDGET;
	assert_int_equal(sp_resolver__new(&o, &small), 0);

	for (uint32_t i = 0; i < n; i++) {
		int ra = sp_resolver__resolve_vaddr(big, id, bin, addrs[i], &a);
		int rb = sp_resolver__resolve_vaddr(small, id, bin, addrs[i], &b);

		assert_int_equal(ra, rb);
		if (ra)
			continue;
		dwarf += a.source == SP_RES_DWARF;
		assert_int_equal(a.n, b.n);
		for (uint8_t k = 0; k < a.n; k++) {
			assert_string_equal(a.f[k].function, b.f[k].function);
			assert_int_equal(a.f[k].line, b.f[k].line);
		}
		/* the bound holds after every request (a unit larger than the
		 * whole budget is held alone) */
		sp_resolver__stats(small, &st);
		assert_true(st.unit_bytes <= BUDGET || st.units_decoded - st.units_evicted == 1);
	}
	assert_true(dwarf > n / 2);
	sp_resolver__stats(small, &st);
	assert_int_equal(st.unit_budget, BUDGET);
	assert_true(st.units_evicted > 0);
	sp_resolver__stats(big, &st);
	assert_true(st.units_decoded > 20);	/* the addresses span many units */
	assert_int_equal(st.units_evicted, 0);
	sp_resolver__free(small);
	sp_resolver__free(big);
	sp_debuginfo__free(di);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct slow_load {
	struct sp_resolver *r;
	double took;
	int rc;
	int done;	/* atomic */
};

static void *slow_load_thread(void *arg)
{
	struct slow_load *l = arg;
	struct sp_frames fr;
	double t0 = now_s();

	/* a build id on no disk: the finder asks debuginfod, which hangs */
	l->rc = sp_resolver__resolve(l->r, "ab00000000000000000000000000000000000017", NULL, 0x1000,
				     &fr);
	l->took = now_s() - t0;
	__atomic_store_n(&l->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* A module being loaded does not hold up another module (the load runs
 * outside the module table's lock; this was true before the per-module
 * locks too, which this test does not isolate): while one thread
 * waits on a debuginfod that accepts and never answers (a listening socket
 * nobody accepts on: the kernel completes the handshake), another resolves
 * the fixture at once. */
static void test_resolver_load_does_not_block_others(void **state)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct sp_debuginfo_opts d = { 0 };
	struct sp_resolver_opts o = { 0 };
	struct slow_load l = { 0 };
	socklen_t sl = sizeof(sa);
	struct sp_debuginfo *di;
	char url[64], id[SP_BUILDID_MAX_HEX + 1];
	struct sp_frames fr;
	uint64_t va, size;
	pthread_t t;
	double t0, fast;
	int ls;

	(void)state;
	if (!have_fixture())
		skip();
	assert_true(fixture_sym("crunch", &va, &size));
	assert_int_equal(sp_buildid__read_file(fixture, id, sizeof(id)), 0);
	ls = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(ls >= 0);
	assert_int_equal(bind(ls, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(ls, 8), 0);
	assert_int_equal(getsockname(ls, (struct sockaddr *)&sa, &sl), 0);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u", (unsigned)ntohs(sa.sin_port));
	setenv("DEBUGINFOD_URLS", url, 1);
	setenv("DEBUGINFOD_CACHE_PATH", tu_dir, 1);	/* fresh: no cached answer */
	setenv("DEBUGINFOD_TIMEOUT", "3", 1);
	assert_int_equal(sp_debuginfo__new(&d, &di), 0);
	o.di = di;
	assert_int_equal(sp_resolver__new(&o, &l.r), 0);

	assert_int_equal(pthread_create(&t, NULL, slow_load_thread, &l), 0);
	usleep(300 * 1000);	/* the other thread is in its load now */
	t0 = now_s();
	assert_int_equal(sp_resolver__resolve_vaddr(l.r, id, fixture, va, &fr), 0);
	fast = now_s() - t0;
	assert_string_equal(fr.f[fr.n - 1].function, "crunch");
	/* answered while the other load still waits */
	assert_int_equal(__atomic_load_n(&l.done, __ATOMIC_ACQUIRE), 0);
	assert_true(fast < 1.0);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(l.rc, -ENOENT);
	assert_true(l.took >= 2.0);	/* it really waited on the hung server */
	sp_resolver__free(l.r);
	sp_debuginfo__free(di);
	close(ls);
	unsetenv("DEBUGINFOD_URLS");
	unsetenv("DEBUGINFOD_CACHE_PATH");
	unsetenv("DEBUGINFOD_TIMEOUT");
}

/*
 * Lookups in different modules run at the same time.  The evidence is a
 * rendezvous inside the lookup itself: the demangler hook is called by
 * resolve_one under the module's lock (resolve.c), and there each thread
 * waits until the other thread has reached its own demangler call, or
 * until a deadline.  Both reaching it before the deadline is possible
 * only if both lookups were inside their modules at once; executed one
 * after the other (a global lock, or one module's lock), the first waits
 * alone until its deadline.  The control below shows the check telling
 * the two apart: two lookups in the same module (one lock) never meet.
 */
struct par_lookup {
	struct sp_resolver *r;
	pthread_barrier_t *start;
	const char *id;
	const char *path;
	uint64_t va;
	int rc;
	bool hooked;		/* the hook ran inside this thread's lookup */
	bool met;		/* ... and saw the other thread arrive */
	double waited;		/* seconds in the rendezvous */
	char function[128];
};

static struct {
	int arrived;		/* atomic: threads at the rendezvous */
	double wait_s;
} par;
static __thread struct par_lookup *par_self;

static char *par_demangler(const char *name, char *buf, size_t *len, int *status)
{
	struct par_lookup *l = par_self;

	if (l && !l->hooked) {
		double t0 = now_s();

		l->hooked = true;
		__atomic_add_fetch(&par.arrived, 1, __ATOMIC_ACQ_REL);
		while (__atomic_load_n(&par.arrived, __ATOMIC_ACQUIRE) < 2 && now_s() - t0 < par.wait_s)
			usleep(1000);
		l->met = __atomic_load_n(&par.arrived, __ATOMIC_ACQUIRE) >= 2;
		l->waited = now_s() - t0;
	}
	return __cxa_demangle(name, buf, len, status);
}

static void *par_lookup_thread(void *arg)
{
	struct par_lookup *l = arg;
	struct sp_frames fr;

	pthread_barrier_wait(l->start);
	par_self = l;
	l->rc = sp_resolver__resolve_vaddr(l->r, l->id, l->path, l->va, &fr);
	par_self = NULL;
	if (!l->rc && fr.n && fr.f[fr.n - 1].function)
		snprintf(l->function, sizeof(l->function), "%s", fr.f[fr.n - 1].function);
	return NULL;
}

/* Runs two lookups from two threads started together; the hook waits up
 * to wait_s for the other.  Both modules are loaded first (a load is not
 * what is measured). */
static void par_run(struct sp_resolver *r, struct par_lookup l[2], double wait_s)
{
	pthread_barrier_t start;
	pthread_t t[2];

	for (int i = 0; i < 2; i++)
		assert_int_equal(sp_resolver__load(r, l[i].id, l[i].path), 0);
	par.arrived = 0;
	par.wait_s = wait_s;
	assert_int_equal(pthread_barrier_init(&start, NULL, 2), 0);
	sp_resolver__set_demangler(par_demangler);
	for (int i = 0; i < 2; i++) {
		l[i].r = r;
		l[i].start = &start;
		assert_int_equal(pthread_create(&t[i], NULL, par_lookup_thread, &l[i]), 0);
	}
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_join(t[i], NULL), 0);
	sp_resolver__set_demangler(__cxa_demangle);
	pthread_barrier_destroy(&start);
	for (int i = 0; i < 2; i++) {
		print_message("lookup %d: rc %d hook %d met %d waited %.3f s -> %s\n", i, l[i].rc,
			      l[i].hooked, l[i].met, l[i].waited, l[i].function);
		assert_int_equal(l[i].rc, 0);
		assert_true(l[i].hooked);
		/* demangled by the hook's answer: std::__introsort_loop<...> */
		assert_non_null(strstr(l[i].function, "std::__"));
	}
}

/* A copy of the C++ fixture with another build id (last byte of the note's
 * descriptor flipped): a second module with the same symbols. */
static void copy_with_other_id(const char *src, const char *id, const char *dst, char *id2)
{
	uint8_t want[SP_BUILDID_MAX_HEX / 2], *p;
	size_t n = strlen(id) / 2, len;
	FILE *f = fopen(src, "rb");
	char *buf;
	long sz;

	assert_non_null(f);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	sz = ftell(f);
	assert_true(sz > 0);
	rewind(f);
	len = (size_t)sz;
	buf = malloc(len);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, len, f), len);
	fclose(f);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(sscanf(id + 2 * i, "%2hhx", &want[i]), 1);
	p = memmem(buf, len, want, n);
	assert_non_null(p);
	p[n - 1] ^= 0xff;
	f = fopen(dst, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(buf, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
	free(buf);
	assert_int_equal(sp_buildid__read_file(dst, id2, SP_BUILDID_MAX_HEX + 1), 0);
	assert_string_not_equal(id, id2);
}

static void test_resolver_modules_in_parallel(void **state)
{
	struct sp_debuginfo_opts d = { 0 };
	struct sp_resolver_opts o = { 0 };
	struct sp_debuginfo *di;
	struct sp_resolver *r;
	char cpp[PATH_MAX], rel[PATH_MAX], copy[PATH_MAX];
	char id[SP_BUILDID_MAX_HEX + 1], id2[SP_BUILDID_MAX_HEX + 1];
	const char *b = getenv("SPANPROF_BUILD");
	uint64_t va, va2, size;

	(void)state;
	snprintf(rel, sizeof(rel), "%s/fixtures/unw_sort_cpp", b && *b ? b : "build");
	if (!realpath(rel, cpp))
		skip();
	assert_true(elf_func_sym(cpp, "_ZSt16__introsort_loop*", &va, &size));
	assert_true(elf_func_sym(cpp, "_ZSt13__adjust_heap*", &va2, &size));
	assert_int_equal(sp_buildid__read_file(cpp, id, sizeof(id)), 0);
	tu_path(copy, sizeof(copy), "unw_sort_cpp.copy");
	copy_with_other_id(cpp, id, copy, id2);
	unsetenv("DEBUGINFOD_URLS");
	assert_int_equal(sp_debuginfo__new(&d, &di), 0);
	o.di = di;

	/* two modules: both lookups are inside their modules at once (the
	 * deadline is only a bound for a failure; a pass meets in ms) */
	assert_int_equal(sp_resolver__new(&o, &r), 0);
	{
		struct par_lookup l[2] = { { .id = id, .path = cpp, .va = va + 1 },
					   { .id = id2, .path = copy, .va = va + 1 } };

		par_run(r, l, 20.0);
		assert_true(l[0].met && l[1].met);
		assert_true(l[0].waited < 20.0 && l[1].waited < 20.0);
	}
	sp_resolver__free(r);

	/* control: one module, two addresses: its lock makes the second wait
	 * for the first, which leaves the rendezvous alone at its deadline */
	assert_int_equal(sp_resolver__new(&o, &r), 0);
	{
		struct par_lookup l[2] = { { .id = id, .path = cpp, .va = va + 1 },
					   { .id = id, .path = cpp, .va = va2 + 1 } };

		par_run(r, l, 0.5);
		assert_false(l[0].met && l[1].met);
		assert_true(l[0].met != l[1].met);	/* the second found the first gone */
		assert_true((l[0].met ? l[1].waited : l[0].waited) >= 0.5);
	}
	sp_resolver__free(r);
	sp_debuginfo__free(di);
}

static void test_demangle(void **state)
{
	char *d;

	(void)state;
	sp_resolver__set_demangler(NULL);
	assert_null(sp_demangle("_ZN2ns3fooEi"));
	sp_resolver__set_demangler(__cxa_demangle);
	d = sp_demangle("_ZN2ns3fooEi");
	assert_non_null(d);
	assert_string_equal(d, "ns::foo(int)");
	free(d);
	assert_null(sp_demangle("main"));
	assert_null(sp_demangle("_Z"));	/* invalid: status != 0 */
	assert_null(sp_demangle(NULL));
}

/* ------------------------------------------------------------ symbolize */

#define BASE 0x7f0000000000ull

static void test_symbolize_profile(void **state)
{
	struct sp_symbolize_stats st;
	struct sp_profile *p = sp_profile__new();
	struct sp_mapping m = { 0 }, nob = { 0 };
	struct sp_location l = { 0 };
	int32_t mi, mn, locs[5];
	uint64_t va, size;
	struct rctx x;

	(void)state;
	if (!have_fixture())
		skip();
	rctx_init(&x, 0);
	assert_non_null(p);
	m.memory_start = BASE;
	m.memory_limit = BASE + 0x100000;
	m.file_offset = 0;
	m.filename = sp_profile__intern(p, fixture);
	m.build_id = sp_profile__intern(p, x.id);
	mi = sp_profile__add_mapping(p, &m);
	nob.memory_start = BASE + 0x200000;
	nob.memory_limit = BASE + 0x300000;
	nob.filename = sp_profile__intern(p, "/usr/lib/libfoo.so");
	mn = sp_profile__add_mapping(p, &nob);
	assert_true(mi > 0 && mn > 0 && mi != mn);

	assert_true(fixture_sym("crunch", &va, &size));
	l.mapping = mi;
	l.address = BASE + fixture_off(va);
	locs[0] = sp_profile__add_location(p, &l);
	assert_true(fixture_sym("main", &va, &size));
	l.address = BASE + fixture_off(va) + 4;
	locs[1] = sp_profile__add_location(p, &l);
	l.mapping = mn;			/* no build id */
	l.address = BASE + 0x200010;
	locs[2] = sp_profile__add_location(p, &l);
	l.mapping = 0;			/* kernel */
	l.frame_kind = SP_FRAME_KERNEL;
	l.address = 0xffffffff81000000ull;
	locs[3] = sp_profile__add_location(p, &l);
	l.frame_kind = SP_FRAME_NATIVE;	/* outside its mapping */
	l.mapping = mi;
	l.address = BASE - 16;
	locs[4] = sp_profile__add_location(p, &l);

	assert_int_equal(sp_symbolize__profile(x.r, p, &st), 0);
	assert_int_equal(st.locations, 5);
	assert_int_equal(st.resolved, 2);
	assert_int_equal(st.unresolved, 3);
	assert_int_equal(st.unresolved_no_build_id, 1);
	assert_int_equal(st.unresolved_kernel, 1);
	assert_int_equal(st.unresolved_out_of_range, 1);
	{
		const struct sp_location *c = &p->locations[locs[0]];
		const struct sp_function *f =
			&p->functions[c->lines[c->n_lines - 1].function];

		assert_true(c->n_lines >= 1);
		assert_string_equal(sp_profile__str(p, f->name), "crunch");
		assert_string_equal(base(sp_profile__str(p, f->filename)),
				    "sym_inline.c");
		assert_true(c->lines[c->n_lines - 1].line > 0);
	}
	assert_int_equal(p->locations[locs[2]].n_lines, 0);
	assert_int_equal(p->locations[locs[2]].address, BASE + 0x200010);
	assert_true(p->mappings[mi].has_functions);
	assert_true(p->mappings[mi].has_filenames);
	assert_true(p->mappings[mi].has_line_numbers);
	assert_false(p->mappings[mn].has_functions);
	assert_int_equal(sp_profile__validate(p), 0);
	/* a second pass leaves resolved locations alone */
	assert_int_equal(sp_symbolize__profile(x.r, p, &st), 0);
	assert_int_equal(st.already, 2);
	sp_profile__free(p);
	rctx_fini(&x);
}

/* ------------------------------------------------------------ reports */

static int32_t fn(struct sp_profile *p, const char *name)
{
	struct sp_function f = { .name = sp_profile__intern(p, name),
				 .filename = sp_profile__intern(p, "/src/x.c"),
				 .start_line = 10 };

	return sp_profile__add_function(p, &f);
}

static int32_t loc1(struct sp_profile *p, const char *name, uint64_t addr)
{
	struct sp_location l = { .address = addr, .n_lines = 1 };

	l.lines[0].function = fn(p, name);
	l.lines[0].line = 11;
	return sp_profile__add_location(p, &l);
}

static void add(struct sp_profile *p, const int32_t *locs, uint32_t n,
		int kind, int64_t count, int64_t ns, int32_t link,
		const char *reason)
{
	struct sp_sample s = { 0 };

	s.stack = sp_profile__add_stack(p, locs, n);
	assert_true(s.stack >= 0);
	s.kind = (uint8_t)kind;
	s.count = count;
	s.value_ns = ns;
	s.link = link;
	if (reason) {
		s.labels[0].key = sp_profile__intern(p, "off_cpu_reason");
		s.labels[0].str = sp_profile__intern(p, reason);
		s.n_labels = 1;
	}
	assert_true(sp_profile__add_sample(p, &s) >= 0);
}

static struct sp_profile *hand_profile(int32_t *link_a)
{
	struct sp_profile *p = sp_profile__new();
	struct sp_resource r = { .pid = 1 };
	uint8_t tid[16], sid[8];
	int32_t a, b, c, d, in, st[3];
	struct sp_location l = { .address = 0x5000, .n_lines = 2 };

	assert_non_null(p);
	assert_true(sp_profile__add_resource(p, &r) >= 0);
	p->period_ns[SP_KIND_ONCPU] = 1000000;
	memset(tid, 0xab, sizeof(tid));
	memset(sid, 0xcd, sizeof(sid));
	*link_a = sp_profile__add_link(p, tid, sid);
	a = loc1(p, "a", 0x1000);
	b = loc1(p, "b", 0x2000);
	c = loc1(p, "c", 0x3000);
	d = loc1(p, "d", 0x4000);
	/* one location holding "inl" inlined into "e" */
	l.lines[0].function = fn(p, "inl");
	l.lines[1].function = fn(p, "e");
	in = sp_profile__add_location(p, &l);

	st[0] = c, st[1] = b, st[2] = a;	/* leaf first */
	add(p, st, 3, SP_KIND_ONCPU, 3, 3000000, *link_a, NULL);
	st[0] = b, st[1] = a;
	add(p, st, 2, SP_KIND_ONCPU, 2, 2000000, 0, NULL);
	st[0] = a, st[1] = a;			/* recursion */
	add(p, st, 2, SP_KIND_ONCPU, 1, 1000000, 0, NULL);
	st[0] = d;
	add(p, st, 1, SP_KIND_ONCPU, 1, 1000000, 0, NULL);
	st[0] = in;
	add(p, st, 1, SP_KIND_ONCPU, 1, 1000000, 0, NULL);
	st[0] = d, st[1] = a;
	add(p, st, 2, SP_KIND_OFFCPU, 2, 7000000, *link_a, "io");
	add(p, st, 2, SP_KIND_OFFCPU, 1, 500000, *link_a, "runq");
	return p;
}

static __attribute__((noinline)) char *capture(int (*fnp)(const struct sp_report *, FILE *, int),
		     const struct sp_report *r, int arg)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(fnp(r, f, arg), 0);
	fclose(f);
	return buf;
}

static int do_collapsed(const struct sp_report *r, FILE *f, int k)
{
	return sp_report__collapsed(r, k, f);
}

static int do_top(const struct sp_report *r, FILE *f, int n)
{
	return sp_report__top(r, SP_KIND_ONCPU, (uint32_t)n, f);
}

static int do_span(const struct sp_report *r, FILE *f, int n)
{
	return sp_report__by_span(r, (uint32_t)n, f);
}

static int do_fg(const struct sp_report *r, FILE *f, int n)
{
	(void)n;
	return sp_report__flamegraph(r, "t</title><script>x()</script>", f);
}

static void test_report_folded(void **state)
{
	struct sp_report *r;
	struct sp_profile *p;
	int32_t link;
	char *s;

	(void)state;
	p = hand_profile(&link);
	assert_int_equal(sp_report__new(p, NULL, &r), 0);
	sp_profile__free(p);		/* the report keeps what it needs */
	assert_true(sp_report__has_kind(r, SP_KIND_ONCPU));
	assert_true(sp_report__has_kind(r, SP_KIND_OFFCPU));
	s = capture(do_collapsed, r, SP_KIND_ONCPU);
	assert_string_equal(s, "a;a 1\n"
			       "a;b 2\n"
			       "a;b;c 3\n"
			       "d 1\n"
			       "e;inl 1\n");
	free(s);
	s = capture(do_collapsed, r, SP_KIND_OFFCPU);
	assert_string_equal(s, "a;d 7500\n");	/* microseconds */
	free(s);
	sp_report__free(r);
	sp_report__free(NULL);
}

static void test_report_top(void **state)
{
	struct sp_report *r;
	struct sp_profile *p;
	int32_t link;
	char *s;

	(void)state;
	p = hand_profile(&link);
	assert_int_equal(sp_report__new(p, NULL, &r), 0);
	sp_profile__free(p);
	s = capture(do_top, r, 3);
	/* total 8 samples; flat: c 3, b 2, then a/d/inl 1 (lowest id: a) */
	assert_non_null(strstr(s, "on-CPU: 8 samples, 8.0 ms"));
	assert_non_null(strstr(s, "         3  37.50%          3  37.50%  c (x.c:10)\n"
				  "         2  25.00%          5  62.50%  b (x.c:10)\n"
				  "         1  12.50%          6  75.00%  a (x.c:10)\n"));
	/* cumulative: a counted once for the recursive sample: 6 */
	assert_non_null(strstr(s, "Top 3 by cumulative:\n"
				  "      flat   flat%        cum    cum%  function\n"
				  "         1  12.50%          6  75.00%  a (x.c:10)\n"
				  "         2  25.00%          5  62.50%  b (x.c:10)\n"
				  "         3  37.50%          3  37.50%  c (x.c:10)\n"));
	free(s);
	sp_report__free(r);
}

static void test_report_by_span_and_filter(void **state)
{
	struct sp_report_opts o = { .filter_span = true };
	struct sp_report *r;
	struct sp_profile *p;
	int32_t link;
	char *s, *row;

	(void)state;
	p = hand_profile(&link);
	assert_int_equal(sp_report__new(p, NULL, &r), 0);
	s = capture(do_span, r, 2);
	row = strstr(s, "abababababababababababababababab cdcdcdcdcdcdcdcd");
	assert_non_null(row);
	/* 3 samples, 3 ms on-CPU, 3 waits, 7.5 ms off: io 7, runq 0.5 */
	assert_non_null(strstr(row, "       3        3.0      3        7.5"
				    "       0.0       7.0       0.5       0.0"
				    "  d 7.5ms, c 3.0ms\n"));
	assert_non_null(strstr(s, "(no span)"));
	/* the span row comes before the no-span row */
	assert_true(row < strstr(s, "(no span)"));
	free(s);
	sp_report__free(r);

	memset(o.span_id, 0xcd, sizeof(o.span_id));
	assert_int_equal(sp_report__new(p, &o, &r), 0);
	s = capture(do_collapsed, r, SP_KIND_ONCPU);
	assert_string_equal(s, "a;b;c 3\n");
	free(s);
	sp_report__free(r);
	o.span_id[0] = 0;
	assert_int_equal(sp_report__new(p, &o, &r), 0);
	assert_false(sp_report__has_kind(r, SP_KIND_ONCPU));
	sp_report__free(r);
	sp_profile__free(p);
}

/* A wait's kernel leaf is the scheduler; the span's top frame for off-CPU
 * time names the innermost user frame, where the code waited. */
static void test_by_span_offcpu_top_is_user_frame(void **state)
{
	struct sp_profile *p = sp_profile__new();
	struct sp_report *r;
	uint8_t tid[16], sid[8];
	int32_t link, k, st[3];
	char *s;

	(void)state;
	assert_true(sp_profile__add_resource(p, &(struct sp_resource){ .pid = 1 }) >= 0);
	memset(tid, 0x11, sizeof(tid));
	memset(sid, 0x22, sizeof(sid));
	link = sp_profile__add_link(p, tid, sid);
	k = loc1(p, "__schedule", 0x7000);
	p->locations[k].frame_kind = SP_FRAME_KERNEL;
	st[0] = k;
	st[1] = loc1(p, "wait_for_pipe", 0x1000);
	st[2] = loc1(p, "main", 0x2000);
	add(p, st, 3, SP_KIND_OFFCPU, 1, 4000000, link, "sleep");
	assert_int_equal(sp_report__new(p, NULL, &r), 0);
	s = capture(do_span, r, 2);
	assert_non_null(strstr(s, "wait_for_pipe 4.0ms"));
	assert_null(strstr(s, "__schedule 4.0ms"));
	free(s);
	sp_report__free(r);
	sp_profile__free(p);
}

static void test_flamegraph_escaping(void **state)
{
	struct sp_profile *p = sp_profile__new();
	struct sp_report *r;
	int32_t st[2];
	char *s;

	(void)state;
	assert_true(sp_profile__add_resource(p, &(struct sp_resource){ .pid = 1 })
		    >= 0);
	st[0] = loc1(p, "evil</script><img src=x onerror=alert(1)>", 0x10);
	st[1] = loc1(p, "root\"quote\\back\nline", 0x20);
	add(p, st, 2, SP_KIND_ONCPU, 5, 0, 0, NULL);
	assert_int_equal(sp_report__new(p, NULL, &r), 0);
	s = capture(do_fg, r, 0);
	assert_null(strstr(s, "evil</script>"));
	assert_null(strstr(s, "<img src=x"));
	assert_null(strstr(s, "x()</script>"));
	assert_non_null(strstr(s, "evil\\u003c/script\\u003e\\u003cimg"));
	assert_non_null(strstr(s, "root\\\"quote\\\\back\\u000aline"));
	assert_non_null(strstr(s, "<title>t&lt;/title&gt;&lt;script&gt;"));
	/* one <script> pair for the data and one for the code, no more */
	{
		int n = 0;

		for (char *q = s; (q = strstr(q, "</script>")); q++)
			n++;
		assert_int_equal(n, 2);
	}
	assert_null(strstr(s, "http://"));
	assert_null(strstr(s, "https://"));
	free(s);
	sp_report__free(r);
	sp_profile__free(p);
}

/* Paths of a line table as llvm-symbolizer prints them; Go's comp_dir "."
 * joins nothing and drops "./" (what .gopclntab says for the same pc). */
static void test_dline_path_comp_dir(void **state)
{
	const char *dirs[] = { NULL, "sub", "/abs" };
	struct sp_dline_file files[] = {
		{ NULL, 0 }, { "main.go", 0 }, { "./pkg/x.go", 0 }, { "y.go", 1 },
		{ "z.go", 2 }, { "/r/w.go", 1 },
	};
	struct sp_dline_table t = {
		.files = files, .n_files = 6, .dirs = dirs, .n_dirs = 3, .version = 4,
	};
	struct sp_dline_file joined[] = { { "./././a.go", UINT32_MAX } };
	char buf[64];

	(void)state;
	assert_string_equal(sp_dline__path(&t, 1, ".", buf, sizeof(buf)), "main.go");
	assert_string_equal(sp_dline__path(&t, 2, ".", buf, sizeof(buf)), "pkg/x.go");
	assert_string_equal(sp_dline__path(&t, 3, ".", buf, sizeof(buf)), "sub/y.go");
	assert_string_equal(sp_dline__path(&t, 4, ".", buf, sizeof(buf)), "/abs/z.go");
	assert_string_equal(sp_dline__path(&t, 5, ".", buf, sizeof(buf)), "/r/w.go");
	/* any other compilation directory is joined as before */
	assert_string_equal(sp_dline__path(&t, 1, "/src", buf, sizeof(buf)), "/src/main.go");
	assert_string_equal(sp_dline__path(&t, 2, "/src", buf, sizeof(buf)), "/src/./pkg/x.go");
	assert_string_equal(sp_dline__path(&t, 3, "/src", buf, sizeof(buf)), "/src/sub/y.go");
	assert_string_equal(sp_dline__path(&t, 1, "./b", buf, sizeof(buf)), "./b/main.go");
	assert_string_equal(sp_dline__path(&t, 1, NULL, buf, sizeof(buf)), "main.go");
	assert_null(sp_dline__path(&t, 0, ".", buf, sizeof(buf)));
	assert_null(sp_dline__path(&t, 6, ".", buf, sizeof(buf)));
	/* a table whose paths libdw joined already (version 5, no directory) */
	t = (struct sp_dline_table){ .files = joined, .n_files = 1, .version = 5 };
	assert_string_equal(sp_dline__path(&t, 0, ".", buf, sizeof(buf)), "a.go");
	assert_string_equal(sp_dline__path(&t, 0, NULL, buf, sizeof(buf)), "./././a.go");
}

static void test_parse_hex(void **state)
{
	uint8_t b[8];

	(void)state;
	assert_int_equal(sp_report__parse_hex("00f067aa0ba902b7", b, 8), 0);
	assert_int_equal(b[0], 0x00);
	assert_int_equal(b[7], 0xb7);
	assert_int_equal(sp_report__parse_hex("00F067AA0BA902B7", b, 8), 0);
	assert_int_equal(b[1], 0xf0);
	assert_int_equal(sp_report__parse_hex("00f067aa0ba902b", b, 8), -EINVAL);
	assert_int_equal(sp_report__parse_hex("00f067aa0ba902bz", b, 8), -EINVAL);
	assert_int_equal(sp_report__parse_hex(NULL, b, 8), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_buildid_validate),
		cmocka_unit_test(test_finder_rejects_bad_ids),
		cmocka_unit_test_setup_teardown(test_finder_dirs_and_hint, tu_setup_dir,
						tu_teardown_dir),
		cmocka_unit_test_setup_teardown(test_ktree, tu_setup_dir, tu_teardown_dir),
		cmocka_unit_test_setup_teardown(test_finder_negative_cache, tu_setup_dir,
						tu_teardown_dir),
		cmocka_unit_test(test_resolver_functions_and_inlines),
		cmocka_unit_test(test_resolver_relocatable),
		cmocka_unit_test(test_resolver_cache_bound),
		cmocka_unit_test(test_resolver_lazy_units_budget),
		cmocka_unit_test_setup_teardown(test_resolver_load_does_not_block_others, tu_setup_dir,
						tu_teardown_dir),
		cmocka_unit_test_setup_teardown(test_resolver_modules_in_parallel, tu_setup_dir,
						tu_teardown_dir),
		cmocka_unit_test(test_demangle),
		cmocka_unit_test(test_symbolize_profile),
		cmocka_unit_test(test_report_folded),
		cmocka_unit_test(test_report_top),
		cmocka_unit_test(test_report_by_span_and_filter),
		cmocka_unit_test(test_by_span_offcpu_top_is_user_frame),
		cmocka_unit_test(test_flamegraph_escaping),
		cmocka_unit_test(test_dline_path_comp_dir),
		cmocka_unit_test(test_parse_hex),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
