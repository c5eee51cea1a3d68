/* SPDX-License-Identifier: MIT */
/*
 * kallsyms.h - kernel symbol snapshots (the collector's copy of
 * /proc/kallsyms, format in base/kallsyms_format.h): parse,
 * resolve kernel addresses, and find the snapshot of a kernel build id.
 *
 * Contract:
 *   - Input is untrusted.  A snapshot is text, gzip'd or not (detected from
 *     the bytes), read through a bounded stream: at most
 *     SP_KALLSYMS_MAX_BYTES decompressed bytes (more is -EFBIG), lines of at
 *     most SP_KALLSYMS_MAX_LINE bytes (longer ones are skipped whole and
 *     counted), at most SP_KSYMS_MAX_SYMS symbols (more is -E2BIG), a last
 *     line without a newline is parsed like any other.
 *   - The first line must be the header
 *       # spanprof-kallsyms v1 build-id=HEX [key=value ...]
 *     with a valid build id (lower-case hex, even length, 2..128); else
 *     -EINVAL.  Unknown keys are ignored; captured-at, kernel and boot-id
 *     are kept for display.  "# module NAME build-id=HEX text=ADDR
 *     size=SIZE" lines (base/kallsyms_format.h) are kept, at most
 *     SP_KSYMS_MAX_MODULES, and "# module-section NAME SECTION addr=ADDR
 *     size=SIZE" lines of a module listed before them, at most
 *     SP_KALLSYMS_SECTIONS_MAX per module (malformed ones, or ones of no
 *     module, count as comments); other lines
 *     starting with '#' are comments.
 *   - Symbol lines are "ADDR TYPE NAME" or "ADDR TYPE NAME\t[MODULE]" (a
 *     space before '[' is accepted too) as in /proc/kallsyms: ADDR is 1..16
 *     hex digits (strict: no 0x, no sign, nothing else), TYPE one of
 *     t T w W (other types are skipped and counted: the snapshot keeps text
 *     only), NAME 1..SP_KALLSYMS_MAX_NAME printable non-space bytes, MODULE
 *     1..SP_KALLSYMS_MAX_NAME printable bytes without ']' or space.  Anything
 *     else is a malformed line: skipped and counted, never fatal.
 *   - Lines need not be sorted; the table is sorted after parsing.  Several
 *     symbols at one address keep one (deterministically, whatever the
 *     input order: global T before weak W before local t/w, then fewer
 *     leading '_', then the smaller name); the others are counted as
 *     duplicates.  A symbol at address 0 is skipped (kptr_restrict output).
 *   - Resolution: the symbol covering ADDR is the last one starting at or
 *     below it; it ends where the next symbol starts.  A symbol followed by
 *     a symbol of another module (or by nothing) has no known end and is
 *     taken to span at most SP_KSYMS_TAIL_MAX bytes.  Addresses below the
 *     first symbol or past those ends are -ERANGE; addresses that land on
 *     an end marker (_etext, _einittext, __entry_text_end, ...) are
 *     -ERANGE too (the gap after a text section is data, not a function).
 *   - A loaded snapshot is immutable: resolving is thread safe.  Returned
 *     strings live as long as the snapshot.
 *   - sp_ksyms_set: snapshots keyed by build id.  A whole snapshot is
     preferred over a subset of the same build id (both may be held: a
     subset beside its profile, a whole one from --kallsyms or a
     directory); while only a subset is held, directories are still
     searched for a whole one; a subset found in a directory is not
     loaded (counted as load_failed).  Files added with
 *     sp_ksyms_set__add_file are loaded at once; directories are searched
 *     lazily, on the first request for a build id, for DIR/<build-id>
 *     .kallsyms.gz (the build id is validated before any path is formed).
 *     At most SP_KSYMS_SET_MAX snapshots are held; a build id not found in
 *     any directory is not searched again for SP_KSYMS_RETRY_S seconds.
 *     Thread safe (one mutex around lookups and loads).
 *   - Errors are negative errno.
 */
#ifndef SPANPROF_SYMBOLIZER_KALLSYMS_H
#define SPANPROF_SYMBOLIZER_KALLSYMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/kallsyms_format.h"

#define SP_KSYMS_MAX_SYMS (4u << 20)
#define SP_KSYMS_TAIL_MAX SP_KALLSYMS_TAIL_MAX
#define SP_KSYMS_SET_MAX 64
#define SP_KSYMS_MAX_MODULES 8192
#define SP_KSYMS_MOD_NAME 64
#define SP_KSYMS_RETRY_S 60

struct sp_ksyms_stats {
	uint64_t lines;
	uint64_t symbols;		/* kept, after dedup */
	uint64_t skipped_type;		/* not text (t T w W) */
	uint64_t skipped_zero;		/* address 0 */
	uint64_t malformed;		/* bad hex, fields, names */
	uint64_t too_long;		/* lines over SP_KALLSYMS_MAX_LINE */
	uint64_t duplicates;		/* same address as a kept symbol */
	uint64_t comments;		/* malformed "# module" lines included */
	uint64_t modules;		/* "# module" lines kept */
	uint64_t module_sections;	/* "# module-section" lines kept */
	bool unsorted;			/* input was not in address order */
};

struct sp_ksym {
	const char *name;
	const char *module;	/* NULL for vmlinux */
	uint64_t start;
	uint64_t offset;	/* address - start */
};

struct sp_ksyms;

/* Parses a snapshot held in memory (gzip'd or plain). */
int sp_ksyms__parse(const void *buf, size_t len, struct sp_ksyms **out,
		    struct sp_ksyms_stats *st);
/* Loads a snapshot file (gzip'd or plain), at most SP_KALLSYMS_MAX_BYTES. */
int sp_ksyms__load(const char *path, struct sp_ksyms **out,
		   struct sp_ksyms_stats *st);
void sp_ksyms__free(struct sp_ksyms *k);	/* NULL-safe */

const char *sp_ksyms__build_id(const struct sp_ksyms *k);
const char *sp_ksyms__kernel(const struct sp_ksyms *k);	/* "" unknown */
const char *sp_ksyms__boot_id(const struct sp_ksyms *k);	/* "" unknown */
uint64_t sp_ksyms__captured_at(const struct sp_ksyms *k);	/* 0 unknown */
size_t sp_ksyms__count(const struct sp_ksyms *k);
/* True for a subset (header key scope, base/kallsyms_format.h): it names
 * the frames of the profile it was written for, nothing else. */
bool sp_ksyms__is_subset(const struct sp_ksyms *k);
/* The runtime address of the kernel image's _text (else _stext) in the
 * snapshot's boot; 0 when it lists neither. */
uint64_t sp_ksyms__text(const struct sp_ksyms *k);
/* The header's boot id as 32 lower-case hex digits, "" unknown. */
const char *sp_ksyms__boot_hex(const struct sp_ksyms *k);
/* The "# module" line of the module with this build id: 0 and its name,
 * .text address and size - or, section not NULL nor ".text", that
 * section's address and size from its "# module-section" line; -ENOENT. */
int sp_ksyms__module(const struct sp_ksyms *k, const char *build_id, const char *section,
		     const char **name, uint64_t *text, uint64_t *size);

/* 0 and *out, or -ERANGE (not covered by any symbol). */
int sp_ksyms__resolve(const struct sp_ksyms *k, uint64_t addr,
		      struct sp_ksym *out);

/* ------------------------------------------------------------ sets */

struct sp_ksyms_set_stats {
	uint32_t loaded;		/* snapshots held */
	uint64_t load_failed;		/* files that did not parse */
	uint64_t dir_lookups;		/* directory searches */
	uint64_t dir_misses;		/* ... that found nothing */
	uint64_t refused;		/* over SP_KSYMS_SET_MAX */
	uint64_t duplicate_build_id;	/* a second file for a build id */
};

struct sp_ksyms_set;

int sp_ksyms_set__new(struct sp_ksyms_set **out);
void sp_ksyms_set__free(struct sp_ksyms_set *s);	/* NULL-safe */

/* Loads path now; 0, or the load's negative errno (nothing added).  A
 * second snapshot of an already held build id is dropped (counted), 0. */
int sp_ksyms_set__add_file(struct sp_ksyms_set *s, const char *path);
/* Takes a parsed snapshot k (freed here when refused or a duplicate). */
int sp_ksyms_set__add(struct sp_ksyms_set *s, struct sp_ksyms *k);
/* Remembers a directory of <build-id>.kallsyms.gz files (not opened yet;
 * at most 16 directories, else -E2BIG). */
int sp_ksyms_set__add_dir(struct sp_ksyms_set *s, const char *dir);

/* The snapshot of build_id, loading it from a directory if needed; NULL
 * when none.  The snapshot stays valid until sp_ksyms_set__free(). */
const struct sp_ksyms *sp_ksyms_set__get(struct sp_ksyms_set *s,
					 const char *build_id);
/* A held snapshot taken in the boot boot_hex (32 hex digits), or NULL
 * (directories are not searched: boot ids name no file). */
const struct sp_ksyms *sp_ksyms_set__get_boot(struct sp_ksyms_set *s, const char *boot_hex);
/* A held snapshot listing the module with this build id (and its name,
 * and the address and size of section - NULL: .text - in that snapshot's
 * boot: sp_ksyms__module), or NULL. */
const struct sp_ksyms *sp_ksyms_set__get_module(struct sp_ksyms_set *s, const char *build_id,
						const char *section, const char **name,
						uint64_t *text, uint64_t *size);
/* True when the set holds no snapshot and has no directory to look in. */
bool sp_ksyms_set__empty(struct sp_ksyms_set *s);
void sp_ksyms_set__stats(struct sp_ksyms_set *s, struct sp_ksyms_set_stats *st);

#endif /* SPANPROF_SYMBOLIZER_KALLSYMS_H */
