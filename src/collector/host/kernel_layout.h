/* SPDX-License-Identifier: MIT */
/*
 * kernel_layout.h - where the running kernel's code is, so that kernel
 * frames leave the host as locations that mean the same on every host and
 * every boot of one kernel build (docs/formats.md "Kernel frames").
 *
 * A kernel address falls in one of three kinds of place; each is one
 * profile mapping (a "slot"):
 *
 *   slot 0  "[kernel.kallsyms]"  the kernel image [_text, end of its text):
 *           build id = the kernel's (/sys/kernel/notes); the location is
 *           the link-time address: runtime - slide, where slide = runtime
 *           _text - link-time _text (KASLR moves the whole image by one
 *           slide).  memory_start = the link-time _text, so (address -
 *           memory_start) is the offset from _text whatever the base.
 *   slot 1  "[kernel.boot]"      code placed at run time (BPF programs and
 *           trampolines, ftrace trampolines, modules not identified):
 *           build id field = the boot id (16 bytes of
 *           /proc/sys/kernel/random/boot_id), runtime address as is: only a
 *           snapshot of that boot names it.
 *   slot 2+ "[module:NAME]"      a loadable module's .text: build id = the
 *           module's (/sys/module/NAME/notes/.note.gnu.build-id), location =
 *           offset in its .text (runtime - the .text address from
 *           /sys/module/NAME/sections/.text), memory_start 0;
 *           "[module-section:NAME:SECTION]" each other executable section
 *           of it (.text.unlikely, .text.hot, .noinstr.text, .exit.text,
 *           .init.text while the module is "Loading", ...): the same build
 *           id, location = offset in that section (runtime - its address
 *           from /sys/module/NAME/sections/SECTION), memory_start 0.  The
 *           section travels by name because only the name means the same
 *           on both sides: the kernel places a module's sections in its own
 *           order, the symbolizer finds the section of that name in the
 *           .ko (docs/formats.md "Kernel frames").
 *
 * The link-time _text: x86-64's __START_KERNEL, 0xffffffff80000000 +
 * CONFIG_PHYSICAL_START rounded up to CONFIG_PHYSICAL_ALIGN, from the
 * kernel's configuration (/proc/config.gz, else /boot/config-RELEASE);
 * without one, the x86-64 default 0xffffffff81000000.  A symbolizer must
 * use memory_start, not assume the base: a guess that is off shifts every
 * location of that build alike and still resolves.
 *
 * Sources (bounded reads): /proc/kallsyms (or SPANPROF_KALLSYMS_PATH) for
 * _text and the last kernel-image text symbol (the image's text ends
 * SP_KSYMS_TAIL_MAX after it at most); PROC/modules (name, size, state,
 * core address); SYS/module/NAME/sections/ (at most 512 entries read; executable sections are known by name - .text, .text.*, *.text,
 * .fixup, .altinstr_replacement -, at most SP_KMOD_SECTIONS_MAX besides
 * .text per module, names of at most SP_KSECT_NAME_MAX - 1 bytes of
 * [A-Za-z0-9._$-]; the rest are counted in modules_sections_skipped).  A
 * section ends at the next section of its module above it (or the
 * module's end: never past the core's end, never longer than the
 * module's size); .init.* sections count only while the module is
 * "Loading" (the kernel frees them after init but sysfs keeps listing
 * their old addresses);
 * SYS/module/NAME/notes/.note.gnu.build-id.  Reading sections needs root
 * (the addresses read as 0 otherwise; such a module is left out, counted;
 * a refresh that finds them hidden keeps the table it has: the agent reads
 * the list before it drops its privileges, so a module loaded after that
 * is not identified and its frames go to [kernel.boot]).
 *
 * Failure: __new fails (-EPERM, with a message naming kptr_restrict) when
 * kernel addresses read as 0, -ENOENT without _text; without modules
 * (CONFIG_MODULES=n: no PROC/modules) there are just no module slots.
 * Callers then keep the kernel's old mapping (runtime addresses).
 *
 * Threads: __map and the getters read; __refresh writes (rereads the
 * module list when __map has missed in the module area since the last
 * read, at most once per SP_KLAYOUT_REFRESH_S).  The caller serializes
 * __refresh against everything else (the agent: under its process-table
 * lock, before each snapshot).  Slot pointers stay valid until the next
 * __refresh.
 */
#ifndef SPANPROF_COLLECTOR_KERNEL_LAYOUT_H
#define SPANPROF_COLLECTOR_KERNEL_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buildid.h"
#include "base/kallsyms_format.h"

#define SP_KLAYOUT_MAX_MODULES 4096
#define SP_KLAYOUT_REFRESH_S 10
#define SP_KMOD_NAME_MAX 64	/* the kernel's MODULE_NAME_LEN */
#define SP_KLAYOUT_DEFAULT_BASE 0xffffffff81000000ULL
#define SP_KMOD_SECTIONS_MAX SP_KALLSYMS_SECTIONS_MAX	/* besides .text */
#define SP_KSECT_NAME_MAX SP_KALLSYMS_SECTION_NAME_MAX

enum {
	SP_KSLOT_VMLINUX = 0,
	SP_KSLOT_BOOT = 1,
	SP_KSLOT_MODULES = 2,	/* first module slot */
};

/* An executable section of a module other than .text. */
struct sp_ksect {
	char name[SP_KSECT_NAME_MAX];	/* ".text.unlikely" */
	uint64_t addr;			/* runtime address */
	uint64_t size;			/* bytes (upper bound) */
};

struct sp_kmod {
	char name[SP_KMOD_NAME_MAX];
	struct sp_build_id build_id;	/* len 0: the module has none */
	uint64_t text;			/* runtime address of its .text */
	uint64_t size;			/* bytes of .text (upper bound) */
	uint32_t n_sects;
	struct sp_ksect sects[SP_KMOD_SECTIONS_MAX];	/* by address */
};

/* The section of mod named name (not .text), or NULL. */
const struct sp_ksect *sp_kmod__section(const struct sp_kmod *mod, const char *name);

/* One profile mapping, as the snapshot emits it. */
struct sp_kernel_slot {
	char filename[sizeof(SP_KALLSYMS_FN_MODULE_SECTION) + SP_KMOD_NAME_MAX + SP_KSECT_NAME_MAX + 2];
	struct sp_build_id build_id;
	uint64_t start, limit, offset;
};

struct sp_kernel_layout_config {
	const char *proc_root;		/* default "/proc" */
	const char *sys_root;		/* default "/sys" */
	const char *config_path;	/* default: /proc/config.gz, /boot/config-R */
	const struct sp_build_id *kernel_id;	/* NULL: /sys/kernel/notes */
};

struct sp_kernel_layout_stats {
	uint64_t text;			/* runtime _text */
	uint64_t base;			/* link-time _text */
	uint64_t image_end;		/* runtime end of the image's text */
	uint64_t modules;		/* module slots now */
	uint64_t modules_no_build_id;	/* loaded modules left without one */
	uint64_t modules_hidden;	/* .text address unreadable (not root) */
	uint64_t module_sections;	/* section slots besides .text now */
	uint64_t module_sections_skipped;	/* executable ones left out (bounds) */
	uint64_t module_reads;		/* module list reads */
	uint64_t boot_frames;		/* __map answers of slot 1 */
};

struct sp_kernel_layout;

int sp_kernel_layout__new(const struct sp_kernel_layout_config *cfg,
			  struct sp_kernel_layout **out, char *err, size_t err_len);
void sp_kernel_layout__free(struct sp_kernel_layout *kl);	/* NULL-safe */

/* The slot of a runtime kernel address and its location in that slot. */
uint32_t sp_kernel_layout__map(struct sp_kernel_layout *kl, uint64_t addr, uint64_t *loc);
uint32_t sp_kernel_layout__n_slots(const struct sp_kernel_layout *kl);
const struct sp_kernel_slot *sp_kernel_layout__slot(const struct sp_kernel_layout *kl,
						    uint32_t i);
const struct sp_kmod *sp_kernel_layout__modules(const struct sp_kernel_layout *kl, size_t *n);
/* Rereads the module list when needed (see above); now_s CLOCK_MONOTONIC
 * seconds.  true when the slots changed. */
bool sp_kernel_layout__refresh(struct sp_kernel_layout *kl, uint64_t now_s);
void sp_kernel_layout__stats(const struct sp_kernel_layout *kl,
			     struct sp_kernel_layout_stats *st);

/* The link-time _text from a kernel configuration text (x86-64 rules
 * above); SP_KLAYOUT_DEFAULT_BASE when it says nothing usable. */
uint64_t sp_kernel_layout__base_from_config(const char *text, size_t len);
/* 16 bytes of a boot id "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"; -EINVAL. */
int sp_kernel_layout__parse_boot_id(const char *s, struct sp_build_id *out);

#endif /* SPANPROF_COLLECTOR_KERNEL_LAYOUT_H */
