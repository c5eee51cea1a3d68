/* SPDX-License-Identifier: MIT */
/*
 * jitdump.h - a JIT runtime's jitdump (jit-PID.dump, the binary file
 * `perf inject --jit` reads: V8 --perf-prof, perf's JVMTI agent, Python
 * 3.13 -X perf_jit, .NET DOTNET_PerfMapEnabled) converted into perf-map
 * text, "START SIZE NAME\n" per code load, so that the collector ships it
 * through the same chained pieces as a perf map (jit_maps.h) and the
 * symbolizer names it with the same parser (symbolizer/perf_map.h).  This
 * is a change of format, not a lookup: no address is resolved here
 * (design invariant 2); the code bytes the file carries are never read.
 *
 * File header (host byte order; the writer's host is the reader's: a live
 * local process):
 *
 *   offset  size  field
 *   0       4     magic 0x4A695444 ("JiTD"; read as 0x4454694A when the
 *                 writer's byte order is not ours: refused, -EPROTO)
 *   4       4     version, 1 (anything else: -EPROTO)
 *   8       4     total_size: header bytes, SP_JITDUMP_HDR..SP_JITDUMP_HDR_MAX
 *   12      4     elf_mach (ELF e_machine): must be this host's (-EPROTO)
 *   16      4     pad1
 *   20      4     pid
 *   24      8     timestamp
 *   32      8     flags
 *
 * Records follow at total_size, each with a 16-byte header and its
 * payload, no padding:
 *
 *   0       4     id
 *   4       4     total_size: the whole record, >= 16 (less: the file
 *                 cannot be followed further, bad record, stop)
 *   8       8     timestamp
 *
 *   id 0 JIT_CODE_LOAD  (payload at 16)
 *   16      4     pid
 *   20      4     tid
 *   24      8     vma
 *   32      8     code_addr   (the address a sampled PC hits)
 *   40      8     code_size
 *   48      8     code_index  (unique per load; a MOVE names it)
 *   56      n+1   name, NUL-terminated
 *   57+n    code_size  the code (skipped: the record's end is its size)
 *
 *   id 1 JIT_CODE_MOVE
 *   16 pid u32, 20 tid u32, 24 vma u64, 32 old_code_addr u64,
 *   40 new_code_addr u64, 48 code_size u64, 56 code_index u64  (64 bytes)
 *
 *   id 2 JIT_CODE_DEBUG_INFO
 *   16      8     code_addr   (of the LOAD it describes, which follows it)
 *   24      8     nr_entry
 *   32      ...   nr_entry entries, each:
 *                 0 addr u64 (absolute), 8 line u32, 12 discrim u32,
 *                 16 file name, NUL-terminated
 *
 *   id 4 JIT_CODE_UNWINDING_INFO, and any id not known: skipped by their
 *   size (counted).  id 3 JIT_CODE_CLOSE: the end; nothing after it is
 *   read.
 *
 * Rules (refused records are counted and skipped by their size, never
 * fatal unless the size itself is unusable):
 *   - LOAD: the name's NUL within the record and the code_size bytes
 *     after it inside total_size (else bad_record); code_size 0 or
 *     code_addr + code_size past 2^64 (bad_range); an empty name
 *     (bad_name); a name longer than SP_JITDUMP_NAME_MAX is cut (names_cut)
 *     - the rest of a long name is never read.  Control bytes (a '\n' in a
 *     name would split the line) become '?'.
 *   - MOVE: named from the LOAD with the same code_index when that load is
 *     still in the caller's table of SP_JITDUMP_SLOTS recent loads (direct
 *     mapped by code_index; its name is read again from the file, and the
 *     record there must still be that LOAD); else counted in moves_unknown.
 *     The moved range is a new line (the later line wins in the perf-map
 *     parser, as the new place is the one in force).
 *   - DEBUG_INFO: the format puts it before the LOAD it describes, so it
 *     is remembered (its offset and code_addr: one pending table, no
 *     copy) and applies to the next LOAD of that code_addr; a table still
 *     pending when another DEBUG_INFO or CLOSE comes is counted in
 *     debug_unused.  When its LOAD comes the table is read again from the
 *     file and written before the LOAD's line as
 *         "@F FILE\n"      the file of the rows after it (written when it
 *                          changes; "@F" alone: none), control bytes '?'
 *         "@L OFF LINE\n"  a row: from code_addr + OFF on, LINE (both hex)
 *     in the record's order; the symbolizer (symbolizer/perf_map.h) gives
 *     the row covering an address.  A row outside the LOAD's code
 *     [code_addr, code_addr + code_size) is dropped (debug_rows_out).
 *     V8 writes every row SP_JITDUMP_V8_BIAS bytes late (the ELF header
 *     `perf inject --jit` puts before the code: v8's perf-jit.cc adds it;
 *     verified here on node 20, whose first row is at +0x40): for a load
 *     named "JS:..." (V8's JavaScript code, the only V8 code with a table)
 *     that much is taken off each row's address.
 *     The whole table is refused, the LOAD's line still written: entries
 *     that do not fit in the record or a file name without its NUL
 *     (debug_bad); nr_entry 0 (debug_bad); more than
 *     SP_JITDUMP_DEBUG_MAX_ENTRIES entries, a file name longer than
 *     SP_JITDUMP_FILE_MAX, or more than SP_JITDUMP_DEBUG_TEXT_MAX bytes of
 *     text (debug_too_big).  A MOVE does not carry the table along.
 *     A file name that is not text (invalid UTF-8, a control character)
 *     names no file: node 20 writes freed bytes there at times (">-\xf6>"
 *     and "\x01WK+" for hot.js; 22 and 37 table entries of ~160,000 in two
 *     runs); such a row is written with no file ("@F"), its line kept, and
 *     counted (debug_bad_names).
 *     discrim is not carried.
 *   - A record that does not end inside the file's current size waits (a
 *     runtime is writing it): conversion stops before it, nothing counted.
 *
 * Memory: none allocated; the caller owns the state, its slot table and
 * the output buffer.  Not thread safe per state.
 */
#ifndef SPANPROF_COLLECTOR_JITDUMP_H
#define SPANPROF_COLLECTOR_JITDUMP_H

#include <stddef.h>
#include <stdint.h>

#define SP_JITDUMP_MAGIC 0x4A695444u
#define SP_JITDUMP_MAGIC_SWAPPED 0x4454694Au
#define SP_JITDUMP_VERSION 1
#define SP_JITDUMP_HDR 40
#define SP_JITDUMP_HDR_MAX 4096
#define SP_JITDUMP_REC_HDR 16
#define SP_JITDUMP_LOAD_FIXED 56	/* record header + LOAD fields before the name */
#define SP_JITDUMP_MOVE_SIZE 64
#define SP_JITDUMP_NAME_MAX 4096
#define SP_JITDUMP_DEBUG_FIXED 32	/* record header + code_addr, nr_entry */
#define SP_JITDUMP_DEBUG_ENTRY_FIXED 16	/* an entry before its file name */
#define SP_JITDUMP_DEBUG_MAX_ENTRIES 4096
#define SP_JITDUMP_FILE_MAX 1024
#define SP_JITDUMP_DEBUG_TEXT_MAX (64u << 10)
#define SP_JITDUMP_V8_BIAS 0x40	/* sizeof(Elf64_Ehdr) */
/* the longest load line: two 16-digit numbers, 2 spaces, name, '\n' */
#define SP_JITDUMP_LOAD_LINE_MAX (16 + 1 + 16 + 1 + SP_JITDUMP_NAME_MAX + 1)
/* the most text one record turns into: a load's line and its line table */
#define SP_JITDUMP_LINE_MAX (SP_JITDUMP_LOAD_LINE_MAX + SP_JITDUMP_DEBUG_TEXT_MAX)
#define SP_JITDUMP_SLOTS 512

enum sp_jitdump_rec_id {
	SP_JIT_CODE_LOAD = 0,
	SP_JIT_CODE_MOVE = 1,
	SP_JIT_CODE_DEBUG_INFO = 2,
	SP_JIT_CODE_CLOSE = 3,
	SP_JIT_CODE_UNWINDING_INFO = 4,
};

/* A code load remembered for MOVE: index, and where its record starts
 * (0: empty). */
struct sp_jitdump_slot {
	uint64_t code_index;
	uint64_t off;
};

struct sp_jitdump_stats {
	uint64_t records;		/* complete records looked at */
	uint64_t loads;			/* LOAD records turned into a line */
	uint64_t moves;			/* MOVE records turned into a line */
	uint64_t moves_unknown;		/* MOVE of a load not in the table */
	uint64_t debug_info;		/* DEBUG_INFO tables written with their LOAD */
	uint64_t debug_rows;		/* ... their rows written */
	uint64_t debug_unused;		/* DEBUG_INFO no LOAD of its address took */
	uint64_t debug_bad;		/* DEBUG_INFO refused: sizes, NULs, no entry */
	uint64_t debug_too_big;		/* ... refused: entries, file name, text */
	uint64_t debug_rows_out;	/* rows outside their load's code, dropped */
	uint64_t debug_bad_names;	/* rows whose file name is not text: no file */
	uint64_t skipped;		/* UNWINDING_INFO and unknown ids */
	uint64_t bad_record;		/* sizes that do not add up */
	uint64_t bad_range;
	uint64_t bad_name;
	uint64_t names_cut;
};

struct sp_jitdump {
	uint64_t off;			/* next record's offset (0: header not read) */
	int state;			/* 0 reading, 1 closed (CLOSE seen), <0 refused */
	uint64_t dbg_off;		/* the pending DEBUG_INFO's offset (0: none) */
	uint64_t dbg_addr;		/* ... and its code_addr */
	struct sp_jitdump_slot *slots;	/* SP_JITDUMP_SLOTS, the caller's (may be NULL) */
};

/* Reads len bytes at off: 0, or a negative errno (-ENODATA: fewer there). */
typedef int (*sp_jitdump_read_fn)(void *ctx, uint8_t *buf, size_t len, uint64_t off);

/* A new file: state reading, offset 0, the slot table (if any) emptied. */
void sp_jitdump__reset(struct sp_jitdump *d);

/* Converts the complete records of the file from d->off on (the header
 * first, when d->off is 0) to perf-map lines appended at out + *out_len,
 * never past cap; size is the file's size now.  Stops before a record
 * that is not complete yet, when less than SP_JITDUMP_LINE_MAX of out is
 * left, after CLOSE, or at a record whose size cannot be followed.  Adds
 * to *st.  Returns 0 (d->off and *out_len moved by what was converted),
 * the read function's negative errno (nothing of the failing record
 * taken), or, when the file is refused (bad header: -EINVAL; other byte
 * order, version or machine: -EPROTO; a record size below 16: -EBADMSG),
 * that errno, also left in d->state: later calls return it at once.  In
 * every case the lines of the records taken before it are in out and
 * counted in *out_len. */
int sp_jitdump__convert(struct sp_jitdump *d, sp_jitdump_read_fn rd, void *ctx, uint64_t size,
			char *out, size_t cap, size_t *out_len, struct sp_jitdump_stats *st);

#endif /* SPANPROF_COLLECTOR_JITDUMP_H */
