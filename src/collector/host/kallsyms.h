/* SPDX-License-Identifier: MIT */
/*
 * kallsyms.h - capture a kernel symbol snapshot next to a recording.
 *
 * This is data capture, not symbolization (design invariant 2): the
 * collector copies the text symbols of /proc/kallsyms, as they are, into a
 * file that the unprivileged symbolizer later uses to name kernel frames.
 * The format is base/kallsyms_format.h (docs/formats.md "Kernel symbol
 * snapshot"):
 *
 *   # spanprof-kallsyms v1 build-id=HEX captured-at=NS kernel=RELEASE
 *     boot-id=UUID                                    (one line)
 *   ADDR TYPE NAME            (vmlinux)
 *   ADDR TYPE NAME\t[MODULE]  (modules, BPF programs, trampolines)
 *
 * gzip'd, lines in address order (ties in /proc/kallsyms order), only
 * types t T w W, only lines the symbolizer's reader accepts.  The agent
 * keeps and ships the whole snapshot; `spanprof record -o FILE` writes
 * FILE.kallsyms.gz holding only what its profile's kernel frames need
 * (sp_kallsyms__capture_want, the subset of base/kallsyms_format.h, with
 * the header key scope=profile).
 *
 * Contract of sp_kallsyms__capture():
 *   - Reads /proc/kallsyms (or SP_KALLSYMS_PATH_ENV's value, for tests)
 *     with bounds: at most SP_KALLSYMS_MAX_BYTES bytes (more is -EFBIG),
 *     lines longer than SP_KALLSYMS_MAX_LINE and malformed lines are
 *     skipped (their number goes into the error text only on failure).
 *   - Refuses with -EPERM and a message naming kernel.kptr_restrict when
 *     every text address reads as 0 (not privileged enough to see them),
 *     and with -ENOENT when no text symbol was found.
 *   - kernel_id may be NULL or empty: the running kernel's build id is
 *     then read from /sys/kernel/notes (-ENOENT if there is none).
 *   - Writes out_path atomically: a temporary file in the same directory
 *     (O_EXCL, random suffix), the gzip'd snapshot, fsync'd, mode 0644 (the report
 *     runs unprivileged and must read it), then rename(2).  On failure the
 *     temporary file is removed and out_path is untouched.
 *   - Memory: the file once, 16 bytes per kept symbol, the snapshot text
 *     and its gzip'd copy, freed before returning.  Not for the ingest path: call it once per recording.
 *   - Returns 0 or a negative errno; err (may be NULL) gets a one-line
 *     reason on failure.
 */
#ifndef SPANPROF_COLLECTOR_KALLSYMS_H
#define SPANPROF_COLLECTOR_KALLSYMS_H

#include <stddef.h>
#include <stdint.h>

#include "base/buildid.h"
#include "base/kallsyms_format.h"
#include "collector/host/kernel_layout.h"

#define SP_KALLSYMS_PATH_ENV "SPANPROF_KALLSYMS_PATH"

int sp_kallsyms__capture(const char *out_path, const struct sp_build_id *kernel_id,
			 char *err, size_t err_len);
/* The same with a "# module" line for each of mods (kernel_layout.h). */
int sp_kallsyms__capture_mods(const char *out_path, const struct sp_build_id *kernel_id,
			      const struct sp_kmod *mods, size_t n_mods, char *err,
			      size_t err_len);
/* What one profile's kernel frames need (kallsyms_want.h builds it from a
 * profile).  Addresses in any order, repeats allowed. */
struct sp_kallsyms_want {
	uint64_t *addrs;		/* runtime addresses: boot, legacy, module text + offset */
	size_t n_addrs;
	uint64_t *text_offs;		/* kernel image: offsets from the snapshot's _text */
	size_t n_text_offs;
	struct sp_kmod *mods;		/* the "# module" lines to write */
	size_t n_mods;
};

/* The subset of want (base/kallsyms_format.h "A subset"), written as
 * __capture writes; want NULL keeps only _text, _stext and the header. */
int sp_kallsyms__capture_want(const char *out_path, const struct sp_build_id *kernel_id,
			      const struct sp_kallsyms_want *want, char *err, size_t err_len);
/* The snapshot's gzip'd bytes in *gz (free() them), for an upload. */
int sp_kallsyms__snapshot(const struct sp_build_id *kernel_id, const struct sp_kmod *mods,
			  size_t n_mods, uint8_t **gz, size_t *gz_len, char *err,
			  size_t err_len);
/* The runtime address of _text and the end of the kernel image's text
 * (its last text symbol without a module + SP_KALLSYMS_TAIL_MAX), from the
 * same source and with the same bounds as a capture. */
int sp_kallsyms__text_range(uint64_t *text, uint64_t *image_end, char *err, size_t err_len);

#endif /* SPANPROF_COLLECTOR_KALLSYMS_H */
