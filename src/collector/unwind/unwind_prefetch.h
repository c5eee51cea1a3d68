/* SPDX-License-Identifier: MIT */
/*
 * unwind_prefetch.h - reads, on a deadline-bound helper thread
 * (base/io_deadline.h), the parts of an ELF file the table builder needs,
 * into memory (sp_unw_image): libelf then parses that copy (elf_memory)
 * and never reads the file, so a file system that stops answering - at
 * the first read or any later one - stalls a helper, never the builder.
 *
 * What is read: the ELF header, the program headers, the section
 * headers, the section name table, every section named .eh_frame*,
 * .debug_frame or .debug_* (what cfi_extract.c hands to libdw; .debug_*
 * only while their total is at most 64 MiB, as there, and all of them fit
 * the image), the PT_GNU_EH_FRAME segment, and without an .eh_frame
 * section the rest of the PT_LOAD segment holding it (where cfi_extract.c
 * then looks).
 * Ranges are read in jobs of at most 8 MiB, each within timeout_ms, into
 * the job's own buffer (an abandoned job never writes into the image).
 * At most SP_UNW_IMAGE_MAX bytes per file (else refused, counted).
 *
 * A job past its limit (a read, or an open: __open) marks the file's
 * device: later files on it, and later opens of files known to be on it,
 * fail at once (-ETIMEDOUT, "stalled", counted skipped: no helper spent),
 * until SP_UNW_PREFETCH_MARKS newer marks push it out; at most max_stuck
 * helpers are ever blocked (then -EBUSY).
 * Header fields are untrusted: every offset and size is checked against
 * the file's size; ranges that do not fit are not read (libelf then
 * finds zeros or fails there, as malformed).  One caller thread (the
 * builder).
 */
#ifndef SPANPROF_UNWIND_PREFETCH_H
#define SPANPROF_UNWIND_PREFETCH_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#define SP_UNW_PREFETCH_MARKS 16

struct sp_unw_prefetch;

struct sp_unw_prefetch_stats {
	uint64_t files;			/* prefetched */
	uint64_t bytes;			/* read */
	uint64_t stalled;		/* a read past the limit (device marked) */
	uint64_t skipped;		/* on a marked device, or helpers stuck */
	uint64_t marked_skipped;	/* of them, on a marked device */
	uint64_t open_stalled;		/* __open past the limit (device marked) */
	uint64_t refused;		/* past SP_UNW_IMAGE_MAX: not read */
};

/* timeout_ms per job (0: 2000), max_stuck helpers (0: 4).  NULL with errno. */
struct sp_unw_prefetch *sp_unw_prefetch__new(uint32_t timeout_ms, uint32_t max_stuck);
void sp_unw_prefetch__free(struct sp_unw_prefetch *p);	/* NULL-safe */

/* The builder's open of a file to build, on a helper within the same
 * limit (a FUSE or NFS server that went away blocks open(2) and even
 * fstat(2), not only reads): with pinned_fd >= 0 (an O_PATH pin, stays
 * the caller's) its stat and reopen (base/pin.h); else pin_path (a
 * PID/map_files link) pinned and reopened, and with b, the reopened
 * file's build id read into *b (b->len 0: none).  dev: the st_dev the
 * file had when it was last seen (the process table's stat of its pin),
 * 0 when unknown.  Fills *st.  Returns the caller's readable fd,
 * -ETIMEDOUT (not back within the limit: counted open_stalled, the job
 * abandoned, dev marked; or dev already marked: counted skipped, nothing
 * run), -EBUSY (helpers stuck), or the pin's, stat's or reopen's negative
 * errno. */
struct sp_build_id;

int sp_unw_prefetch__open(struct sp_unw_prefetch *p, int pinned_fd, const char *pin_path,
			  uint64_t dev, struct stat *st, struct sp_build_id *b);

/* The parts of a file the table builder reads, in memory: an anonymous
 * mapping of the file's size (MAP_NORESERVE) where only the ranges read
 * are filled (the rest reads as zeros), for libelf's elf_memory.  The
 * builder reads nothing of the file itself then: no libelf read can
 * block on a file system that stops answering after the prefetch. */
struct sp_unw_image {
	uint8_t *base;
	size_t size;
};

/* Bytes one image may hold (headers, .eh_frame*, the PT_GNU_EH_FRAME
 * segment, .debug_* within cfi_extract.c's 64 MiB): past it the file is
 * refused (-E2BIG, counted refused), as is a file over 16 GiB. */
#define SP_UNW_IMAGE_MAX (96ull << 20)

/* Reads fd's CFI-bearing parts into *img (st: fd's, from __open: no
 * fstat here, it could block).  0 (read: *img is the caller's, released
 * with sp_unw_image__release; img->base NULL for a file under 64 bytes),
 * -EINVAL (not ELF64 little-endian), -ETIMEDOUT (a read stalled now, or
 * earlier on this device: skip the file), -E2BIG (past SP_UNW_IMAGE_MAX),
 * -EBUSY (helpers stuck), -ENOMEM, or a read's errno (EIO: the file
 * shrank).  On an error *img is empty.  fd stays the caller's. */
int sp_unw_prefetch__file(struct sp_unw_prefetch *p, int fd, const struct stat *st,
			  struct sp_unw_image *img);

/* Unmaps the image (NULL-safe, and on an empty one). */
void sp_unw_image__release(struct sp_unw_image *img);

void sp_unw_prefetch__stats(const struct sp_unw_prefetch *p, struct sp_unw_prefetch_stats *out);

#endif
