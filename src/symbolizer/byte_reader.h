/* SPDX-License-Identifier: MIT */
/*
 * byte_reader.h - a bounded little-endian reader over untrusted section
 * bytes, shared by the DWARF decoders (dwarf_line.c, die_reader.c).
 *
 * Contract: a read past end sets bad, moves p to end and returns 0 (NULL
 * for a string); once bad, every read returns 0.  The caller checks bad
 * once after a group of reads instead of after each.  LEB128 values wider
 * than 64 bits keep their low 64 bits.  Header-only (static inline): these
 * run once per byte of a line program or a DIE.
 */
#ifndef SPANPROF_SYMBOLIZER_BYTE_READER_H
#define SPANPROF_SYMBOLIZER_BYTE_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct sp_rd {
	const uint8_t *p, *end;
	bool bad;		/* a read went past end */
};

static inline void sp_rd__fail(struct sp_rd *r)
{
	r->bad = true;
	r->p = r->end;
}

/* An unsigned value of n bytes (n <= 8). */
static inline uint64_t sp_rd__n(struct sp_rd *r, unsigned n)
{
	uint64_t v = 0;

	if (r->bad || (size_t)(r->end - r->p) < n) {
		sp_rd__fail(r);
		return 0;
	}
	for (unsigned i = 0; i < n; i++)
		v |= (uint64_t)r->p[i] << (8 * i);
	r->p += n;
	return v;
}

static inline uint64_t sp_rd__uleb(struct sp_rd *r)
{
	uint64_t v = 0;
	unsigned shift = 0;

	while (!r->bad) {
		uint8_t b;

		if (r->p >= r->end) {
			sp_rd__fail(r);
			return 0;
		}
		b = *r->p++;
		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80))
			break;
	}
	return v;
}

static inline int64_t sp_rd__sleb(struct sp_rd *r)
{
	uint64_t v = 0;
	unsigned shift = 0;
	uint8_t b = 0;

	while (!r->bad) {
		if (r->p >= r->end) {
			sp_rd__fail(r);
			return 0;
		}
		b = *r->p++;
		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80))
			break;
	}
	if (shift < 64 && (b & 0x40))
		v |= ~0ull << shift;
	return (int64_t)v;
}

static inline void sp_rd__skip(struct sp_rd *r, uint64_t n)
{
	if (r->bad || n > (uint64_t)(r->end - r->p)) {
		sp_rd__fail(r);
		return;
	}
	r->p += n;
}

/* A NUL-terminated string inside [p, end), or NULL (bad). */
static inline const char *sp_rd__str(struct sp_rd *r)
{
	const uint8_t *nul;
	const char *s;

	if (r->bad)
		return NULL;
	nul = memchr(r->p, 0, (size_t)(r->end - r->p));
	if (!nul) {
		sp_rd__fail(r);
		return NULL;
	}
	s = (const char *)r->p;
	r->p = nul + 1;
	return s;
}

#endif /* SPANPROF_SYMBOLIZER_BYTE_READER_H */
