// SPDX-License-Identifier: MIT
/*
 * jitdump.c - jitdump records to perf-map lines (contract and byte
 * layout: jitdump.h).
 *
 * Each record is read in steps: its 16-byte header (id, size), then for
 * a LOAD its fixed fields, then at most SP_JITDUMP_NAME_MAX + 1 bytes of
 * the name, which ends where the code starts (the record's last code_size
 * bytes); the code bytes and every other record's payload are skipped by
 * offset, so a 100 MiB dump of code costs the reads of its names.  A
 * DEBUG_INFO is read once, when its LOAD comes, through a window of a few
 * entries (one read per window, not per entry).
 */
#include <elf.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "collector/procs/jitdump.h"
#include "base/utf8.h"

#if defined(__x86_64__)
#define HOST_MACH EM_X86_64
#elif defined(__aarch64__)
#define HOST_MACH EM_AARCH64
#elif defined(__i386__)
#define HOST_MACH EM_386
#else
#define HOST_MACH 0	/* not checked */
#endif

#define PREFIX_MAX (SP_JITDUMP_LOAD_FIXED + SP_JITDUMP_NAME_MAX + 1)

static uint32_t u32_at(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

static uint64_t u64_at(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

void sp_jitdump__reset(struct sp_jitdump *d)
{
	d->off = 0;
	d->state = 0;
	d->dbg_off = 0;
	d->dbg_addr = 0;
	if (d->slots)
		memset(d->slots, 0, SP_JITDUMP_SLOTS * sizeof(*d->slots));
}

static int read_header(struct sp_jitdump *d, sp_jitdump_read_fn rd, void *ctx, uint64_t size)
{
	uint8_t h[SP_JITDUMP_HDR];
	uint32_t magic, total;
	int err;

	if (size < SP_JITDUMP_HDR)
		return 0;	/* being written */
	err = rd(ctx, h, sizeof(h), 0);
	if (err)
		return err;
	magic = u32_at(h);
	if (magic == SP_JITDUMP_MAGIC_SWAPPED)
		return d->state = -EPROTO;
	if (magic != SP_JITDUMP_MAGIC)
		return d->state = -EINVAL;
	total = u32_at(h + 8);
	if (u32_at(h + 4) != SP_JITDUMP_VERSION || (HOST_MACH && u32_at(h + 12) != HOST_MACH))
		return d->state = -EPROTO;
	if (total < SP_JITDUMP_HDR || total > SP_JITDUMP_HDR_MAX)
		return d->state = -EINVAL;
	if (size >= total)
		d->off = total;
	return 0;
}

/* Copies n bytes of name to p, control bytes made '?'; returns the end. */
static char *put_name(char *p, const uint8_t *name, size_t n)
{
	for (size_t i = 0; i < n; i++)
		*p++ = name[i] < 0x20 || name[i] == 0x7f ? '?' : (char)name[i];
	return p;
}

/* Appends "START SIZE NAME\n"; name is n bytes. */
static void put_line(char *out, size_t *out_len, uint64_t addr, uint64_t len, const uint8_t *name,
		     size_t n)
{
	char *p = out + *out_len;

	p += sprintf(p, "%llx %llx ", (unsigned long long)addr, (unsigned long long)len);
	p = put_name(p, name, n);
	*p++ = '\n';
	*out_len = (size_t)(p - out);
}

/* The longest "@L OFF LINE\n" and "@F FILE\n" */
#define ROW_TEXT_MAX (3 + 16 + 1 + 8 + 1)
#define FILE_TEXT_MAX (3 + SP_JITDUMP_FILE_MAX + 1)
/* a few entries of the largest size */
#define DBG_WIN (4 * (SP_JITDUMP_DEBUG_ENTRY_FIXED + SP_JITDUMP_FILE_MAX + 1))

/* True when [s, s+n) is text: valid UTF-8 without control characters. */
static bool is_text(const uint8_t *s, size_t n)
{
	for (size_t i = 0, k; i < n; i += k)
		if (s[i] < 0x20 || s[i] == 0x7f || !(k = sp_utf8__seq(s + i, n - i)))
			return false;
	return true;
}

/* Writes the rows of the DEBUG_INFO at off for the load [addr, addr +
 * size) (jitdump.h), each row's address less bias; the load's line comes
 * after.  On a refused table nothing is written (*out_len as it was) and
 * it is counted.  0, or a negative errno from rd (nothing written). */
static int put_debug(sp_jitdump_read_fn rd, void *ctx, uint64_t off, uint64_t addr,
		     uint64_t size, uint64_t bias, char *out, size_t *out_len,
		     struct sp_jitdump_stats *st)
{
	uint8_t w[DBG_WIN], prev[SP_JITDUMP_FILE_MAX];
	size_t start = *out_len, len = *out_len, prev_n = 0, wlen = 0;
	uint64_t nr, end, pos, wpos = 0, rows = 0, out_rows = 0, bad_names = 0;
	uint64_t *bad = NULL;
	bool have_prev = false;
	int err;

	err = rd(ctx, w, SP_JITDUMP_DEBUG_FIXED, off);
	if (err)
		return err;
	end = off + u32_at(w + 4);
	nr = u64_at(w + 24);
	if (u32_at(w) != SP_JIT_CODE_DEBUG_INFO || u32_at(w + 4) < SP_JITDUMP_DEBUG_FIXED ||
	    u64_at(w + 16) != addr || !nr ||
	    nr > (end - off - SP_JITDUMP_DEBUG_FIXED) / (SP_JITDUMP_DEBUG_ENTRY_FIXED + 1))
		bad = &st->debug_bad;
	else if (nr > SP_JITDUMP_DEBUG_MAX_ENTRIES)
		bad = &st->debug_too_big;
	pos = off + SP_JITDUMP_DEBUG_FIXED;
	for (uint64_t i = 0; i < nr && !bad; i++) {
		uint64_t want = end - pos, ea;
		const uint8_t *e, *nul, *name;
		size_t fn;
		char *p;

		if (want > SP_JITDUMP_DEBUG_ENTRY_FIXED + SP_JITDUMP_FILE_MAX + 1)
			want = SP_JITDUMP_DEBUG_ENTRY_FIXED + SP_JITDUMP_FILE_MAX + 1;
		if (want < SP_JITDUMP_DEBUG_ENTRY_FIXED + 1) {
			bad = &st->debug_bad;	/* the entries run past the record */
			break;
		}
		if (pos < wpos || pos + want > wpos + wlen) {
			wpos = pos;
			wlen = end - pos < DBG_WIN ? (size_t)(end - pos) : DBG_WIN;
			err = rd(ctx, w, wlen, wpos);
			if (err)
				return err;
		}
		e = w + (pos - wpos);
		nul = memchr(e + SP_JITDUMP_DEBUG_ENTRY_FIXED, 0,
			     (size_t)want - SP_JITDUMP_DEBUG_ENTRY_FIXED);
		if (!nul) {
			/* a name longer than the bound, or one the record cuts */
			bad = want == SP_JITDUMP_DEBUG_ENTRY_FIXED + SP_JITDUMP_FILE_MAX + 1
				      ? &st->debug_too_big : &st->debug_bad;
			break;
		}
		fn = (size_t)(nul - (e + SP_JITDUMP_DEBUG_ENTRY_FIXED));
		pos += SP_JITDUMP_DEBUG_ENTRY_FIXED + fn + 1;
		ea = u64_at(e);
		if (ea < addr || ea - addr < bias || ea - addr - bias >= size) {
			out_rows++;
			continue;
		}
		if (len - start + FILE_TEXT_MAX + ROW_TEXT_MAX > SP_JITDUMP_DEBUG_TEXT_MAX) {
			bad = &st->debug_too_big;
			break;
		}
		p = out + len;
		name = e + SP_JITDUMP_DEBUG_ENTRY_FIXED;
		if (!is_text(name, fn)) {
			fn = 0;		/* not a file name (jitdump.h) */
			bad_names++;
		}
		if (!have_prev || fn != prev_n || memcmp(prev, name, fn)) {
			p = put_name(stpcpy(p, fn ? "@F " : "@F"), name, fn);
			*p++ = '\n';
			memcpy(prev, name, fn);
			prev_n = fn;
			have_prev = true;
		}
		p += sprintf(p, "@L %llx %x\n", (unsigned long long)(ea - addr - bias),
			     u32_at(e + 8));
		len = (size_t)(p - out);
		rows++;
	}
	if (bad) {
		(*bad)++;
		return 0;
	}
	*out_len = len;
	st->debug_info++;
	st->debug_rows += rows;
	st->debug_rows_out += out_rows;
	st->debug_bad_names += bad_names;
	return 0;
}

/* Reads the LOAD record at off (rsize bytes) into b: its fixed fields,
 * then its name, never the code after it (code_size tells where the code
 * starts: the record's last code_size bytes).  0 and *name, *n, *cut; a
 * negative errno from rd; or a counter's reason (BAD_*, positive). */
enum { BAD_RECORD = 1, BAD_NAME, BAD_RANGE };

static int read_load(sp_jitdump_read_fn rd, void *ctx, uint64_t off, uint32_t rsize, uint8_t *b,
		     const uint8_t **name, size_t *n, int *cut)
{
	uint64_t code_addr, code_size, area;
	const uint8_t *nul;
	size_t nl;
	int err;

	*cut = 0;
	err = rd(ctx, b, SP_JITDUMP_LOAD_FIXED, off);
	if (err)
		return err;
	code_addr = u64_at(b + 32);
	code_size = u64_at(b + 40);
	if (code_size > rsize - SP_JITDUMP_LOAD_FIXED - 1)
		return BAD_RECORD;	/* no room for a name and the code */
	area = rsize - SP_JITDUMP_LOAD_FIXED - code_size;
	nl = area > SP_JITDUMP_NAME_MAX + 1 ? SP_JITDUMP_NAME_MAX + 1 : (size_t)area;
	err = rd(ctx, b + SP_JITDUMP_LOAD_FIXED, nl, off + SP_JITDUMP_LOAD_FIXED);
	if (err)
		return err;
	nul = memchr(b + SP_JITDUMP_LOAD_FIXED, 0, nl);
	if (nul) {
		*n = (size_t)(nul - (b + SP_JITDUMP_LOAD_FIXED));
	} else if (area > SP_JITDUMP_NAME_MAX) {
		*n = SP_JITDUMP_NAME_MAX;	/* longer: cut, the rest never read */
		*cut = 1;
	} else {
		return BAD_RECORD;	/* the name runs into the code */
	}
	if (!*n)
		return BAD_NAME;
	if (!code_size || code_addr + code_size < code_addr)
		return BAD_RANGE;
	*name = b + SP_JITDUMP_LOAD_FIXED;
	return 0;
}

static void count_bad(struct sp_jitdump_stats *st, int why)
{
	if (why == BAD_RECORD)
		st->bad_record++;
	else if (why == BAD_NAME)
		st->bad_name++;
	else
		st->bad_range++;
}

/* A MOVE: the line for its new place, named from the remembered LOAD. */
static int do_move(struct sp_jitdump *d, sp_jitdump_read_fn rd, void *ctx, const uint8_t *m,
		   char *out, size_t *out_len, struct sp_jitdump_stats *st)
{
	uint64_t new_addr = u64_at(m + 40), code_size = u64_at(m + 48), idx = u64_at(m + 56);
	struct sp_jitdump_slot *s = d->slots ? &d->slots[idx % SP_JITDUMP_SLOTS] : NULL;
	uint8_t b[PREFIX_MAX];
	const uint8_t *name;
	size_t n;
	uint32_t rsize;
	int err, cut;

	if (!code_size || new_addr + code_size < new_addr) {
		st->bad_range++;
		return 0;
	}
	if (!s || !s->off || s->code_index != idx) {
		st->moves_unknown++;
		return 0;
	}
	err = rd(ctx, b, SP_JITDUMP_REC_HDR, s->off);
	if (err)
		return err;
	rsize = u32_at(b + 4);
	if (u32_at(b) != SP_JIT_CODE_LOAD || rsize < SP_JITDUMP_LOAD_FIXED + 1) {
		st->moves_unknown++;	/* the file there is not that load any more */
		return 0;
	}
	err = read_load(rd, ctx, s->off, rsize, b, &name, &n, &cut);
	if (err < 0)
		return err;
	if (err || u64_at(b + 48) != idx) {
		st->moves_unknown++;
		return 0;
	}
	put_line(out, out_len, new_addr, code_size, name, n);
	st->moves++;
	return 0;
}

int sp_jitdump__convert(struct sp_jitdump *d, sp_jitdump_read_fn rd, void *ctx, uint64_t size,
			char *out, size_t cap, size_t *out_len, struct sp_jitdump_stats *st)
{
	uint8_t b[PREFIX_MAX];
	int err = 0;

	if (d->state)
		return d->state < 0 ? d->state : 0;
	if (!d->off) {
		err = read_header(d, rd, ctx, size);
		if (err || !d->off)
			return err;
	}
	while (!d->state && d->off + SP_JITDUMP_REC_HDR <= size && cap - *out_len >= SP_JITDUMP_LINE_MAX) {
		uint32_t id, rsize;

		err = rd(ctx, b, SP_JITDUMP_REC_HDR, d->off);
		if (err)
			return err;
		id = u32_at(b);
		rsize = u32_at(b + 4);
		if (rsize < SP_JITDUMP_REC_HDR) {
			st->bad_record++;
			return d->state = -EBADMSG;
		}
		if (d->off + rsize > size)
			break;	/* not complete yet */
		if (id == SP_JIT_CODE_LOAD) {
			const uint8_t *name;
			size_t n;
			int why, cut;

			if (rsize < SP_JITDUMP_LOAD_FIXED + 1) {
				st->bad_record++;
				goto next;
			}
			why = read_load(rd, ctx, d->off, rsize, b, &name, &n, &cut);
			if (why < 0)
				return why;
			if (why) {
				count_bad(st, why);
				goto next;
			}
			if (d->dbg_off && d->dbg_addr == u64_at(b + 32)) {
				uint64_t bias = n >= 3 && !memcmp(name, "JS:", 3) ? SP_JITDUMP_V8_BIAS
										: 0;

				err = put_debug(rd, ctx, d->dbg_off, d->dbg_addr, u64_at(b + 40),
						bias, out, out_len, st);
				if (err)
					return err;
				d->dbg_off = 0;
			}
			st->names_cut += (uint64_t)cut;
			put_line(out, out_len, u64_at(b + 32), u64_at(b + 40), name, n);
			st->loads++;
			if (d->slots) {
				struct sp_jitdump_slot *s = &d->slots[u64_at(b + 48) % SP_JITDUMP_SLOTS];

				s->code_index = u64_at(b + 48);
				s->off = d->off;
			}
		} else if (id == SP_JIT_CODE_MOVE) {
			if (rsize < SP_JITDUMP_MOVE_SIZE) {
				st->bad_record++;
				goto next;
			}
			err = rd(ctx, b, SP_JITDUMP_MOVE_SIZE, d->off);
			if (!err)
				err = do_move(d, rd, ctx, b, out, out_len, st);
			if (err)
				return err;
		} else if (id == SP_JIT_CODE_CLOSE) {
			st->debug_unused += d->dbg_off != 0;
			d->dbg_off = 0;
			d->state = 1;
		} else if (id == SP_JIT_CODE_DEBUG_INFO) {
			if (rsize < SP_JITDUMP_DEBUG_FIXED) {
				st->debug_bad++;
				goto next;
			}
			err = rd(ctx, b, SP_JITDUMP_DEBUG_FIXED, d->off);
			if (err)
				return err;
			st->debug_unused += d->dbg_off != 0;
			d->dbg_off = d->off;
			d->dbg_addr = u64_at(b + 16);
		} else {
			st->skipped++;
		}
next:
		st->records++;
		d->off += rsize;
	}
	return 0;
}
