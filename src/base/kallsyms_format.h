/* SPDX-License-Identifier: MIT */
/*
 * kallsyms_format.h - the kernel symbol snapshot file, the one definition
 * shared by its writer (src/collector/host/kallsyms.c, `spanprof record`)
 * and its reader (src/symbolizer/kallsyms.c).  docs/formats.md "Kernel
 * symbol snapshot" describes it in prose; this is what the code uses.
 *
 *   FILE.kallsyms.gz (gzip'd text, '\n' line ends):
 *
 *   line 1   SP_KALLSYMS_MAGIC then space-separated key=value:
 *            build-id=HEX      required; the kernel's GNU build id,
 *                              lower-case hex
 *            captured-at=NS    CLOCK_REALTIME nanoseconds
 *            kernel=RELEASE    uname -r
 *            boot-id=UUID      /proc/sys/kernel/random/boot_id
 *            scope=profile     a subset: only the symbols one profile's
 *                              kernel frames need (see below); absent
 *                              for a whole snapshot
 *            readers ignore keys they do not know; an incompatible layout
 *            changes the "v1" in the magic
 *   then     ADDR ' ' TYPE ' ' NAME ['\t' '[' MODULE ']']
 *            as /proc/kallsyms prints it: ADDR 1..16 hex digits, TYPE one
 *            of t T w W (sp_kallsyms_format__is_text), NAME and MODULE
 *            1..SP_KALLSYMS_MAX_NAME printable bytes; address order;
 *            lines starting with '#' after the header are comments, but
 *   # module NAME build-id=HEX text=ADDR size=SIZE
 *            (SP_KALLSYMS_MODULE_PREFIX) describes a loaded module at
 *            capture time: its GNU build id ("-" when it has none) and the
 *            runtime address and size of its .text, hex without 0x; a
 *            module frame (module build id, offset in .text) is named with
 *            the symbols of [NAME] at text + offset.  Readers that do not
 *            know the line skip it as a comment.
 *
 * Kernel-image symbols (no [MODULE]) keep their runtime addresses; the
 * snapshot's own _text symbol gives the slide of the boot it was taken in,
 * so a location given as an offset from _text (docs/formats.md "Kernel
 * frames") is looked up at snapshot _text + offset.
 *
 * A subset (scope=profile, `spanprof record`) keeps, for every kernel
 * address of its profile, all lines at the address of the symbol covering
 * it and all lines at the next symbol address after that (so the
 * covering symbol ends where it ends in the whole snapshot), the _text
 * and _stext lines, and the "# module" lines of the modules the profile
 * has frames in.  Resolving any of those addresses in the subset gives
 * what the whole snapshot gives; any other address may resolve to
 * nothing or to a wrong neighbour, so a subset names only its own
 * profile and never stands for the kernel in a store.
 *
 * Kernel frame mappings (docs/formats.md "Kernel frames"):
 * SP_KALLSYMS_FN_KERNEL (build id = the kernel's; memory_start = the
 * link-time _text, or at most SP_KALLSYMS_LEGACY_START for runtime
 * addresses), SP_KALLSYMS_FN_BOOT (build id field = the boot id; runtime
 * addresses), SP_KALLSYMS_FN_MODULE "NAME]" (build id = the module's;
 * offsets in its .text), SP_KALLSYMS_FN_MODULE_SECTION "NAME:SECTION]"
 * (build id = the module's; offsets in its executable section SECTION:
 * .text.unlikely, .init.text, ...).  The second prefix differs from the
 * first so that a symbolizer that predates it never takes such an offset
 * for one in .text: it leaves the frame unresolved instead.
 *
 * Module section lines follow their module's line:
 *   # module-section NAME SECTION addr=HEX size=HEX
 * (where that section sat in the boot of the capture; readers that do not
 * know them take them as comments).  At most SP_KALLSYMS_SECTIONS_MAX per
 * module; section names are 1..SP_KALLSYMS_SECTION_NAME_MAX - 1 bytes of
 * [A-Za-z0-9._$-] (sp_kallsyms_format__section_ok) on both sides.
 *
 * Bounds both sides keep: a line is at most SP_KALLSYMS_MAX_LINE bytes, a
 * snapshot (and the /proc/kallsyms it is made from) at most
 * SP_KALLSYMS_MAX_BYTES uncompressed.
 */
#ifndef SPANPROF_BASE_KALLSYMS_FORMAT_H
#define SPANPROF_BASE_KALLSYMS_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#define SP_KALLSYMS_MAGIC "# spanprof-kallsyms v1 "
#define SP_KALLSYMS_KEY_BUILD_ID "build-id"
#define SP_KALLSYMS_KEY_CAPTURED_AT "captured-at"
#define SP_KALLSYMS_KEY_KERNEL "kernel"
#define SP_KALLSYMS_KEY_BOOT_ID "boot-id"
#define SP_KALLSYMS_KEY_TEXT "text"
#define SP_KALLSYMS_KEY_SIZE "size"
#define SP_KALLSYMS_KEY_SCOPE "scope"
#define SP_KALLSYMS_SCOPE_PROFILE "profile"
#define SP_KALLSYMS_MODULE_PREFIX "# module "
#define SP_KALLSYMS_SECTION_PREFIX "# module-section "
#define SP_KALLSYMS_KEY_ADDR "addr"
#define SP_KALLSYMS_SECTIONS_MAX 16
#define SP_KALLSYMS_SECTION_NAME_MAX 48
#define SP_KALLSYMS_SUFFIX ".kallsyms.gz"	/* PROFILE.kallsyms.gz, DIR/BUILD_ID.kallsyms.gz */

#define SP_KALLSYMS_MAX_BYTES (64u << 20)
#define SP_KALLSYMS_MAX_LINE 1024
#define SP_KALLSYMS_MAX_NAME 512	/* the kernel's KSYM_NAME_LEN */
/* A symbol followed by nothing of its own image (or module) is taken to
 * span at most this many bytes; the kernel image's text ends this far
 * after its last symbol. */
#define SP_KALLSYMS_TAIL_MAX (64u << 10)

#define SP_KALLSYMS_FN_KERNEL "[kernel.kallsyms]"
#define SP_KALLSYMS_FN_BOOT "[kernel.boot]"
#define SP_KALLSYMS_FN_MODULE "[module:"
#define SP_KALLSYMS_FN_MODULE_SECTION "[module-section:"
#define SP_KALLSYMS_LEGACY_START 0xffff800000000000ULL

/* The symbol types a snapshot keeps: text, global or local, strong or weak. */
static inline bool sp_kallsyms_format__is_text(char type)
{
	return type == 't' || type == 'T' || type == 'w' || type == 'W';
}

/* A section name both sides accept (see above). */
static inline bool sp_kallsyms_format__section_ok(const char *s, size_t len)
{
	if (!len || len >= SP_KALLSYMS_SECTION_NAME_MAX)
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '_' || c == '$' || c == '-'))
			return false;
	}
	return true;
}

/* The module and section a module mapping's file name names:
 * "[module:NAME]" (section ".text") or "[module-section:NAME:SECTION]".
 * name/sect point into fn (lengths in *nlen, *slen); false for any other
 * file name, an empty or '/'-holding NAME, or a SECTION that is not
 * sp_kallsyms_format__section_ok. */
static inline bool sp_kallsyms_format__module_fn(const char *fn, const char **name, size_t *nlen,
						 const char **sect, size_t *slen)
{
	const char *p, *end;
	bool with_sect;

	if (!fn)
		return false;
	with_sect = !strncmp(fn, SP_KALLSYMS_FN_MODULE_SECTION,
			     sizeof(SP_KALLSYMS_FN_MODULE_SECTION) - 1);
	if (with_sect)
		p = fn + sizeof(SP_KALLSYMS_FN_MODULE_SECTION) - 1;
	else if (!strncmp(fn, SP_KALLSYMS_FN_MODULE, sizeof(SP_KALLSYMS_FN_MODULE) - 1))
		p = fn + sizeof(SP_KALLSYMS_FN_MODULE) - 1;
	else
		return false;
	end = strchr(p, ']');
	if (!end || end[1])
		return false;
	*name = p;
	*nlen = (size_t)(end - p);
	*sect = ".text";
	*slen = 5;
	if (with_sect) {
		const char *colon = memchr(p, ':', *nlen);

		if (!colon)
			return false;
		*nlen = (size_t)(colon - p);
		*sect = colon + 1;
		*slen = (size_t)(end - colon - 1);
		if (!sp_kallsyms_format__section_ok(*sect, *slen))
			return false;
	}
	return *nlen && !memchr(p, '/', *nlen);
}

#endif /* SPANPROF_BASE_KALLSYMS_FORMAT_H */
