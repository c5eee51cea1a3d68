// SPDX-License-Identifier: MIT
/*
 * test_kernel_layout.c - the collector's kernel layout (collector/host/
 * kernel_layout.h) on a fake host: a kallsyms whose image sits at a KASLR
 * slide, a kernel configuration naming the link-time _text, a module list
 * with sysfs sections and build-id notes.  This machine's kernel has no
 * modules (CONFIG_MODULES=n), so the fake is the only place a module slot
 * is built from real-format inputs; the symbolizer's side of the same
 * frames is test_kallsyms.c's test_symbolize_layout_frames.
 *
 * Checked: image frames become link-time addresses (runtime - slide);
 * module frames (module build id from notes/.note.gnu.build-id, offset in
 * .text, .text ending at the next section); addresses in no module go to
 * the boot slot (boot id) and count as misses; a module loaded later gets
 * a slot at the next refresh (rate-limited); modules without a build id
 * or with hidden addresses are counted; all-zero kallsyms addresses
 * (kptr_restrict) make __new fail with -EPERM.
 */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "testutil.h"

#include "collector/host/kallsyms.h"
#include "collector/host/kernel_layout.h"

static const uint8_t mod_id[20] = { 0xab, 0xcd, 0xef, 1, 2, 3, 4, 5, 6, 7,
				    8, 9, 10, 11, 12, 13, 14, 15, 16, 17 };

static void put(const char *rel, const void *buf, size_t len)
{
	char p[PATH_MAX], d[PATH_MAX];

	tu_path(p, sizeof(p), rel);
	/* make the parents */
	for (char *s = strchr(p + strlen(tu_dir) + 1, '/'); s; s = strchr(s + 1, '/')) {
		snprintf(d, sizeof(d), "%.*s", (int)(s - p), p);
		mkdir(d, 0755);
	}
	assert_int_equal(tu_write_file(p, buf, len), 0);
}

static void puts_(const char *rel, const char *text)
{
	put(rel, text, strlen(text));
}

/* A GNU build-id note as the kernel shows it in sysfs. */
static void put_note(const char *rel, const uint8_t *id, size_t n)
{
	uint8_t b[64] = { 0 };
	uint32_t h[3] = { 4, (uint32_t)n, 3 };

	memcpy(b, h, sizeof(h));
	memcpy(b + 12, "GNU", 4);
	memcpy(b + 16, id, n);
	put(rel, b, 16 + ((n + 3) & ~3u));
}

static void fake_host(void)
{
	char p[PATH_MAX];

	puts_("kallsyms",
	      "ffffffff9a000000 T _text\n"
	      "ffffffff9a000100 T first_fn\n"
	      "ffffffff9a200000 T last_fn\n"
	      "ffffffffc1230000 t mod_a\t[mymod]\n");
	setenv(SP_KALLSYMS_PATH_ENV, tu_path(p, sizeof(p), "kallsyms"), 1);
	puts_("config", "CONFIG_X=y\nCONFIG_PHYSICAL_START=0x2000000\n"
			"CONFIG_PHYSICAL_ALIGN=0x200000\n");
	puts_("proc/sys/kernel/random/boot_id", "11111111-2222-3333-4444-555555555555\n");
	puts_("proc/modules",
	      "mymod 16384 0 - Live 0xffffffffc1230000\n"
	      "nobid 8192 0 - Live 0xffffffffc1300000\n"
	      "hid 4096 0 - Live 0x0000000000000000\n");
	puts_("sys/module/mymod/sections/.text", "0xffffffffc1230000\n");
	puts_("sys/module/mymod/sections/.data", "0xffffffffc1231000\n");
	put_note("sys/module/mymod/notes/.note.gnu.build-id", mod_id, sizeof(mod_id));
	puts_("sys/module/nobid/sections/.text", "0xffffffffc1300000\n");
	puts_("sys/module/hid/sections/.text", "0x0000000000000000\n");
}

static struct sp_kernel_layout *make(void)
{
	char proc[PATH_MAX], sys[PATH_MAX], cfgp[PATH_MAX], err[256] = "";
	struct sp_build_id kid = { .len = 4, .id = { 1, 2, 3, 4 } };
	struct sp_kernel_layout_config c = {
		.proc_root = tu_path(proc, sizeof(proc), "proc"),
		.sys_root = tu_path(sys, sizeof(sys), "sys"),
		.config_path = tu_path(cfgp, sizeof(cfgp), "config"),
		.kernel_id = &kid,
	};
	struct sp_kernel_layout *kl = NULL;
	int rc = sp_kernel_layout__new(&c, &kl, err, sizeof(err));

	if (rc)
		fprintf(stderr, "layout: %s\n", err);
	assert_int_equal(rc, 0);
	return kl;
}

static uint32_t slot_named(struct sp_kernel_layout *kl, const char *name)
{
	for (uint32_t i = 0; i < sp_kernel_layout__n_slots(kl); i++)
		if (!strcmp(sp_kernel_layout__slot(kl, i)->filename, name))
			return i;
	fail_msg("no slot %s", name);
	return 0;
}

static void test_slots(void **state)
{
	struct sp_kernel_layout_stats st;
	struct sp_kernel_layout *kl;
	const struct sp_kernel_slot *s;
	uint64_t loc;
	uint32_t mi;

	(void)state;
	fake_host();
	kl = make();
	sp_kernel_layout__stats(kl, &st);
	assert_int_equal(st.text, 0xffffffff9a000000ull);
	assert_int_equal(st.base, 0xffffffff82000000ull);
	assert_int_equal(st.modules, 2);		/* mymod, nobid */
	assert_int_equal(st.modules_no_build_id, 1);
	assert_int_equal(st.modules_hidden, 1);
	assert_int_equal(sp_kernel_layout__n_slots(kl), SP_KSLOT_MODULES + 2);

	s = sp_kernel_layout__slot(kl, SP_KSLOT_VMLINUX);
	assert_string_equal(s->filename, "[kernel.kallsyms]");
	assert_int_equal(s->build_id.len, 4);
	assert_int_equal(s->start, 0xffffffff82000000ull);
	assert_int_equal(sp_kernel_layout__map(kl, 0xffffffff9a000123ull, &loc), SP_KSLOT_VMLINUX);
	assert_int_equal(loc, 0xffffffff82000123ull);	/* runtime - slide */
	assert_true(loc >= s->start && loc < s->limit);

	mi = slot_named(kl, "[module:mymod]");
	s = sp_kernel_layout__slot(kl, mi);
	assert_int_equal(s->build_id.len, 20);
	assert_memory_equal(s->build_id.id, mod_id, 20);
	assert_int_equal(s->start, 0);
	assert_int_equal(s->limit, 0x1000);		/* .text up to .data */
	assert_int_equal(sp_kernel_layout__map(kl, 0xffffffffc1230084ull, &loc), mi);
	assert_int_equal(loc, 0x84);
	assert_int_equal(slot_named(kl, "[module:nobid]") >= SP_KSLOT_MODULES, 1);
	assert_int_equal(sp_kernel_layout__slot(kl, slot_named(kl, "[module:nobid]"))->build_id.len,
			 0);

	/* past mymod's .text (in its .data) and in no module: the boot slot */
	assert_int_equal(sp_kernel_layout__map(kl, 0xffffffffc1231004ull, &loc), SP_KSLOT_BOOT);
	assert_int_equal(loc, 0xffffffffc1231004ull);
	s = sp_kernel_layout__slot(kl, SP_KSLOT_BOOT);
	assert_string_equal(s->filename, "[kernel.boot]");
	assert_int_equal(s->build_id.len, 16);
	assert_int_equal(s->build_id.id[0], 0x11);
	assert_int_equal(s->build_id.id[15], 0x55);
	sp_kernel_layout__stats(kl, &st);
	assert_int_equal(st.boot_frames, 1);
	sp_kernel_layout__free(kl);
	sp_kernel_layout__free(NULL);
}

static void test_refresh(void **state)
{
	struct sp_kernel_layout_stats st;
	struct sp_kernel_layout *kl;
	uint64_t loc;

	(void)state;
	fake_host();
	kl = make();
	/* a module loaded after the first read */
	puts_("proc/modules",
	      "mymod 16384 0 - Live 0xffffffffc1230000\n"
	      "late 4096 0 - Live 0xffffffffc1400000\n");
	puts_("sys/module/late/sections/.text", "0xffffffffc1400000\n");
	put_note("sys/module/late/notes/.note.gnu.build-id", mod_id, 8);
	/* no miss yet: nothing reread */
	assert_false(sp_kernel_layout__refresh(kl, 1000));
	assert_int_equal(sp_kernel_layout__map(kl, 0xffffffffc1400010ull, &loc), SP_KSLOT_BOOT);
	assert_true(sp_kernel_layout__refresh(kl, 2000));
	assert_int_equal(sp_kernel_layout__map(kl, 0xffffffffc1400010ull, &loc),
			 slot_named(kl, "[module:late]"));
	assert_int_equal(loc, 0x10);
	/* a second miss within SP_KLAYOUT_REFRESH_S: not reread */
	sp_kernel_layout__map(kl, 0xffffffffc1500000ull, &loc);
	sp_kernel_layout__stats(kl, &st);
	assert_false(sp_kernel_layout__refresh(kl, 2000 + SP_KLAYOUT_REFRESH_S - 1));
	{
		struct sp_kernel_layout_stats st2;

		sp_kernel_layout__stats(kl, &st2);
		assert_int_equal(st2.module_reads, st.module_reads);
	}
	sp_kernel_layout__free(kl);
}

/* Every executable section of a module is a slot of its own
 * ("[module-section:NAME:SECTION]", offsets in that section), bounded by
 * the next section of the module above it; .init.* only while the module
 * is "Loading"; names outside the allowed set and sections over
 * SP_KMOD_SECTIONS_MAX are left out, counted. */
static void test_sections(void **state)
{
	struct sp_kernel_layout_stats st;
	struct sp_kernel_layout *kl;
	const struct sp_kernel_slot *s;
	const struct sp_kmod *mods;
	char f[128];
	size_t n;
	uint64_t loc;
	uint32_t u;

	(void)state;
	fake_host();
	puts_("proc/modules",
	      "secmod 65536 0 - Live 0xffffffffc2000000\n"
	      "initmod 8192 0 - Loading 0xffffffffc2100000\n"
	      "livemod 8192 0 - Live 0xffffffffc2200000\n"
	      "bigmod 65536 0 - Live 0xffffffffc2300000\n");
	puts_("sys/module/secmod/sections/.text", "0xffffffffc2000000\n");
	puts_("sys/module/secmod/sections/.text.hot", "0xffffffffc2002000\n");
	puts_("sys/module/secmod/sections/.text.unlikely", "0xffffffffc2003000\n");
	puts_("sys/module/secmod/sections/.noinstr.text", "0xffffffffc2004000\n");
	puts_("sys/module/secmod/sections/.rodata", "0xffffffffc2005000\n");
	puts_("sys/module/secmod/sections/.text.w@rd", "0xffffffffc2006000\n");
	puts_("sys/module/secmod/sections/.data", "0xffffffffc2008000\n");
	puts_("sys/module/secmod/sections/.init.text", "0xffffffffc3000000\n");	/* stale */
	put_note("sys/module/secmod/notes/.note.gnu.build-id", mod_id, sizeof(mod_id));
	puts_("sys/module/initmod/sections/.text", "0xffffffffc2100000\n");
	puts_("sys/module/initmod/sections/.init.text", "0xffffffffc2180000\n");
	puts_("sys/module/livemod/sections/.text", "0xffffffffc2200000\n");
	puts_("sys/module/livemod/sections/.init.text", "0xffffffffc2280000\n");
	puts_("sys/module/bigmod/sections/.text", "0xffffffffc2300000\n");
	for (int i = 0; i < SP_KMOD_SECTIONS_MAX + 4; i++) {
		char v[32];

		snprintf(f, sizeof(f), "sys/module/bigmod/sections/.text.f%d", i);
		snprintf(v, sizeof(v), "0x%llx\n", 0xffffffffc2301000ull + 0x100ull * (unsigned)i);
		puts_(f, v);
	}
	kl = make();
	sp_kernel_layout__stats(kl, &st);
	assert_int_equal(st.modules, 4);
	/* secmod 3 (hot, unlikely, noinstr), initmod 1, bigmod the bound */
	assert_int_equal(st.module_sections, 3 + 1 + SP_KMOD_SECTIONS_MAX);
	assert_int_equal(st.module_sections_skipped, 1 + 4);	/* .text.w@rd, bigmod's 4 */
	assert_int_equal(sp_kernel_layout__n_slots(kl),
			 SP_KSLOT_MODULES + 4 + 3 + 1 + SP_KMOD_SECTIONS_MAX);

	u = slot_named(kl, "[module:secmod]");
	assert_int_equal(sp_kernel_layout__slot(kl, u)->limit, 0x2000);	/* to .text.hot */
	assert_int_equal(sp_kernel_layout__map(kl, 0xffffffffc2001ff0ull, &loc), u);
	assert_int_equal(loc, 0x1ff0);
	u = slot_named(kl, "[module-section:secmod:.text.unlikely]");
	s = sp_kernel_layout__slot(kl, u);
	assert_int_equal(s->start, 0);
	assert_int_equal(s->limit, 0x1000);		/* to .noinstr.text */
	assert_int_equal(s->build_id.len, 20);
	assert_memory_equal(s->build_id.id, mod_id, 20);
	assert_int_equal(sp_kernel_layout__map(kl, 0xffffffffc2003010ull, &loc), u);
	assert_int_equal(loc, 0x10);
	u = slot_named(kl, "[module-section:secmod:.text.hot]");
	assert_int_equal(sp_kernel_layout__map(kl, 0xffffffffc2002fffull, &loc), u);
	assert_int_equal(loc, 0xfff);
	u = slot_named(kl, "[module-section:secmod:.noinstr.text]");
	assert_int_equal(sp_kernel_layout__slot(kl, u)->limit, 0x1000);	/* to .rodata */
	assert_int_equal(sp_kernel_layout__map(kl, 0xffffffffc2004800ull, &loc), u);
	/* .rodata is not code; the stale .init.text of a live module is not mapped */
	assert_int_equal(sp_kernel_layout__map(kl, 0xffffffffc2005010ull, &loc), SP_KSLOT_BOOT);
	assert_int_equal(sp_kernel_layout__map(kl, 0xffffffffc3000010ull, &loc), SP_KSLOT_BOOT);
	/* a module being loaded: its .init.text is live (ends at the module's
	 * size: nothing of it above); a live one's is not */
	u = slot_named(kl, "[module-section:initmod:.init.text]");
	assert_int_equal(sp_kernel_layout__slot(kl, u)->limit, 8192);
	assert_int_equal(sp_kernel_layout__map(kl, 0xffffffffc2180010ull, &loc), u);
	assert_int_equal(loc, 0x10);
	assert_int_equal(sp_kernel_layout__map(kl, 0xffffffffc2280010ull, &loc), SP_KSLOT_BOOT);

	/* the module table carries the sections, by address */
	mods = sp_kernel_layout__modules(kl, &n);
	for (size_t i = 0; i < n; i++) {
		if (strcmp(mods[i].name, "secmod"))
			continue;
		assert_int_equal(mods[i].n_sects, 3);
		assert_string_equal(mods[i].sects[0].name, ".text.hot");
		assert_string_equal(mods[i].sects[2].name, ".noinstr.text");
		assert_non_null(sp_kmod__section(&mods[i], ".text.unlikely"));
		assert_null(sp_kmod__section(&mods[i], ".init.text"));
	}
	sp_kernel_layout__free(kl);
}

static void test_hidden_addresses(void **state)
{
	char proc[PATH_MAX], err[256] = "";
	struct sp_build_id kid = { .len = 4, .id = { 1 } };
	struct sp_kernel_layout_config c = { .proc_root = tu_path(proc, sizeof(proc), "proc"),
					     .kernel_id = &kid };
	struct sp_kernel_layout *kl = NULL;

	(void)state;
	fake_host();
	puts_("kallsyms", "0000000000000000 T _text\n0000000000000000 T first_fn\n");
	assert_int_equal(sp_kernel_layout__new(&c, &kl, err, sizeof(err)), -EPERM);
	assert_null(kl);
	assert_non_null(strstr(err, "kptr_restrict"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_slots),
		cmocka_unit_test(test_refresh),
		cmocka_unit_test(test_sections),
		cmocka_unit_test(test_hidden_addresses),
	};

	return cmocka_run_group_tests_name("kernel_layout", tests, tu_setup_dir, tu_teardown_dir);
}
