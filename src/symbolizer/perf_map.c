// SPDX-License-Identifier: MIT
/*
 * perf_map.c - parse a perf map and flatten its overlaps (contract:
 * perf_map.h).
 *
 * Flattening ("the later line wins"): entries sorted by start; a sweep
 * over every start and end address keeps the entries covering the current
 * point in a max-heap by line number (expired ones are popped lazily);
 * between two consecutive boundaries the heap's top owns the addresses.
 * Adjacent pieces of one entry merge back into one segment.  An entry's
 * line rows ("@" lines before it) are one run of m->rows, sorted by offset
 * when the entry is taken; its segments point at the run.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/hex.h"
#include "base/utf8.h"
#include "perf_map.h"

#define NO_FILE UINT32_MAX

struct ent {
	uint64_t start, end;
	uint32_t name;		/* arena offset */
	uint32_t seq;		/* line order */
	uint32_t row0, n_rows;	/* its line rows in m->rows */
};

struct seg {
	uint64_t start, end;
	uint64_t ent_start;	/* where the owning entry starts */
	uint32_t name;
	uint32_t row0, n_rows;
};

struct row {
	uint64_t off;		/* from the entry's start */
	uint32_t line;
	uint32_t file;		/* arena offset, NO_FILE */
	uint32_t seq;		/* order in the text, for a stable sort */
};

struct sp_perf_map {
	struct seg *segs;
	size_t n_segs;
	char *arena;
	size_t arena_len;
	struct row *rows;
	size_t n_rows;
};

/* While parsing: the rows not yet taken by an entry, and their file. */
struct pending {
	size_t row0;		/* rows [row0, m->n_rows) wait for an entry */
	size_t cap;
	uint32_t file;
};

static bool blank(uint8_t c)
{
	return c == ' ' || c == '\t';
}

/* Hex field at l[*i..n): optional 0x, 1..16 digits; then *i past it. */
static int hex_field(const uint8_t *l, size_t n, size_t *i, uint64_t *out)
{
	size_t j = *i, d0;
	uint64_t v = 0;
	int d;

	if (j + 1 < n && l[j] == '0' && (l[j + 1] == 'x' || l[j + 1] == 'X'))
		j += 2;
	d0 = j;
	while (j < n && (d = sp_hex_digit((char)l[j])) >= 0) {
		if (j - d0 == 16)
			return -EINVAL;
		v = v << 4 | (uint64_t)d;
		j++;
	}
	if (j == d0 || (j < n && !blank(l[j])))
		return -EINVAL;
	*i = j;
	*out = v;
	return 0;
}

static int arena_add(struct sp_perf_map *m, size_t *cap, const uint8_t *s, size_t n,
		     uint32_t *off)
{
	/* sanitizing never grows the text; +1 for the NUL */
	if (m->arena_len + n + 1 > *cap) {
		size_t nc = *cap ? *cap : 4096;
		char *a;

		while (nc < m->arena_len + n + 1)
			nc *= 2;
		if (nc > UINT32_MAX)
			return -E2BIG;
		a = realloc(m->arena, nc);
		if (!a)
			return -ENOMEM;
		m->arena = a;
		*cap = nc;
	}
	*off = (uint32_t)m->arena_len;
	m->arena_len += sp_utf8__sanitize(s, n, m->arena + m->arena_len) + 1;
	return 0;
}

static void skip_blanks(const uint8_t *l, size_t len, size_t *i)
{
	while (*i < len && blank(l[*i]))
		(*i)++;
}

/* "@F [FILE]" or "@L OFF LINE" (trailing blanks gone): 0 taken or refused
 * (counted), <0 fatal. */
static int parse_row(struct sp_perf_map *m, size_t *acap, struct pending *pd, const uint8_t *l,
		     size_t len, struct sp_perf_map_stats *st)
{
	uint64_t off, line;
	size_t i = 2;
	struct row *q;

	if (len >= 2 && l[1] == 'F' && (len == 2 || blank(l[2]))) {
		skip_blanks(l, len, &i);
		if (i == len) {
			pd->file = NO_FILE;
			return 0;
		}
		if (len - i > SP_PERF_MAP_MAX_NAME)
			len = i + SP_PERF_MAP_MAX_NAME;
		return arena_add(m, acap, l + i, len - i, &pd->file);
	}
	if (len < 2 || l[1] != 'L' || (len > 2 && !blank(l[2])))
		goto bad;
	skip_blanks(l, len, &i);
	if (hex_field(l, len, &i, &off))
		goto bad;
	skip_blanks(l, len, &i);
	if (hex_field(l, len, &i, &line) || i != len || line > UINT32_MAX)
		goto bad;
	if (m->n_rows == SP_PERF_MAP_MAX_ROWS)
		return -E2BIG;
	if (m->n_rows == pd->cap) {
		size_t nc = pd->cap ? 2 * pd->cap : 256;

		q = realloc(m->rows, nc * sizeof(*q));
		if (!q)
			return -ENOMEM;
		m->rows = q;
		pd->cap = nc;
	}
	m->rows[m->n_rows] = (struct row){ .off = off, .line = (uint32_t)line, .file = pd->file,
					   .seq = (uint32_t)m->n_rows };
	m->n_rows++;
	return 0;
bad:
	st->rows_refused++;
	return 0;
}

static int row_cmp(const void *a, const void *b)
{
	const struct row *x = a, *y = b;

	if (x->off != y->off)
		return x->off < y->off ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The pending rows go to entry x: those inside it, sorted by offset, the
 * last of rows at one offset kept; the others are refused (counted). */
static void take_rows(struct sp_perf_map *m, struct pending *pd, struct ent *x,
		      struct sp_perf_map_stats *st)
{
	size_t w = pd->row0;

	for (size_t r = pd->row0; r < m->n_rows; r++) {
		if (m->rows[r].off >= x->end - x->start) {
			st->rows_refused++;
			continue;
		}
		m->rows[w++] = m->rows[r];
	}
	if (w > pd->row0)	/* rows is NULL while there are none */
		qsort(m->rows + pd->row0, w - pd->row0, sizeof(*m->rows), row_cmp);
	m->n_rows = pd->row0;
	for (size_t r = pd->row0; r < w; r++) {
		if (m->n_rows > pd->row0 && m->rows[m->n_rows - 1].off == m->rows[r].off)
			m->n_rows--;	/* the later row at one offset wins */
		m->rows[m->n_rows++] = m->rows[r];
	}
	x->row0 = (uint32_t)pd->row0;
	x->n_rows = (uint32_t)(m->n_rows - pd->row0);
	st->rows += x->n_rows;
}

/* Rows no entry took: dropped, counted. */
static void drop_rows(struct sp_perf_map *m, struct pending *pd, struct sp_perf_map_stats *st)
{
	st->rows_refused += m->n_rows - pd->row0;
	m->n_rows = pd->row0;
	pd->file = NO_FILE;
}

/* One line without its '\n': 0 taken or skipped (counted), <0 fatal. */
static int parse_line(struct sp_perf_map *m, size_t *acap, struct pending *pd, struct ent **e,
		      size_t *n, size_t *cap, const uint8_t *l, size_t len,
		      struct sp_perf_map_stats *st)
{
	uint64_t start, size;
	size_t i = 0;
	struct ent x;
	int err;

	st->lines++;
	if (memchr(l, '\0', len)) {
		st->nul++;
		drop_rows(m, pd, st);
		return 0;
	}
	while (len && (blank(l[len - 1]) || l[len - 1] == '\r'))
		len--;
	if (len && l[0] == '@')
		return parse_row(m, acap, pd, l, len, st);
	while (i < len && blank(l[i]))
		i++;
	if (hex_field(l, len, &i, &start))
		goto bad;
	while (i < len && blank(l[i]))
		i++;
	if (hex_field(l, len, &i, &size))
		goto bad;
	while (i < len && blank(l[i]))
		i++;
	if (i == len)
		goto bad;
	if (!size || start + size < start) {
		st->bad_range++;
		drop_rows(m, pd, st);
		return 0;
	}
	if (*n == SP_PERF_MAP_MAX_ENTRIES)
		return -E2BIG;
	if (*n == *cap) {
		size_t nc = *cap ? 2 * *cap : 1024;
		struct ent *q = realloc(*e, nc * sizeof(*q));

		if (!q)
			return -ENOMEM;
		*e = q;
		*cap = nc;
	}
	if (len - i > SP_PERF_MAP_MAX_NAME) {
		st->long_names++;
		len = i + SP_PERF_MAP_MAX_NAME;
	}
	x.start = start;
	x.end = start + size;
	x.seq = (uint32_t)*n;
	err = arena_add(m, acap, l + i, len - i, &x.name);
	if (err)
		return err;
	take_rows(m, pd, &x, st);
	pd->row0 = m->n_rows;
	pd->file = NO_FILE;
	(*e)[(*n)++] = x;
	st->entries++;
	return 0;
bad:
	st->malformed++;
	drop_rows(m, pd, st);
	return 0;
}

static int ent_cmp(const void *a, const void *b)
{
	const struct ent *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* max-heap of entry indexes by line number */
static void heap_push(uint32_t *h, size_t *n, const struct ent *e, uint32_t v)
{
	size_t i = (*n)++;

	while (i) {
		size_t p = (i - 1) / 2;

		if (e[h[p]].seq >= e[v].seq)
			break;
		h[i] = h[p];
		i = p;
	}
	h[i] = v;
}

static void heap_pop(uint32_t *h, size_t *n, const struct ent *e)
{
	uint32_t v = h[--(*n)];
	size_t i = 0;

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= *n)
			break;
		if (c + 1 < *n && e[h[c + 1]].seq > e[h[c]].seq)
			c++;
		if (e[v].seq >= e[h[c]].seq)
			break;
		h[i] = h[c];
		i = c;
	}
	if (*n)
		h[i] = v;
}

static int flatten(struct sp_perf_map *m, struct ent *e, size_t n, struct sp_perf_map_stats *st)
{
	uint64_t *b = NULL, *covered = NULL;
	uint32_t *heap = NULL, *owner = NULL;
	size_t nb = 0, hn = 0, k = 0, ns = 0;
	int err = -ENOMEM;

	if (!n)
		return 0;
	qsort(e, n, sizeof(*e), ent_cmp);
	b = malloc(2 * n * sizeof(*b));
	heap = malloc(n * sizeof(*heap));
	covered = calloc(n, sizeof(*covered));
	owner = malloc(2 * n * sizeof(*owner));
	m->segs = malloc(2 * n * sizeof(*m->segs));
	if (!b || !heap || !covered || !owner || !m->segs)
		goto out;
	for (size_t i = 0; i < n; i++) {
		b[nb++] = e[i].start;
		b[nb++] = e[i].end;
	}
	qsort(b, nb, sizeof(*b), u64_cmp);
	{
		size_t w = 0;

		for (size_t i = 0; i < nb; i++)
			if (!w || b[w - 1] != b[i])
				b[w++] = b[i];
		nb = w;
	}
	for (size_t bi = 0; bi + 1 < nb; bi++) {
		uint64_t at = b[bi], next = b[bi + 1];
		uint32_t top;

		while (k < n && e[k].start <= at)
			heap_push(heap, &hn, e, (uint32_t)k++);
		while (hn && e[heap[0]].end <= at)
			heap_pop(heap, &hn, e);
		if (!hn)
			continue;
		top = heap[0];
		covered[top] += next - at;
		if (ns && m->segs[ns - 1].end == at && owner[ns - 1] == top) {
			m->segs[ns - 1].end = next;
			continue;
		}
		m->segs[ns] = (struct seg){ .start = at, .end = next, .ent_start = e[top].start,
					    .name = e[top].name, .row0 = e[top].row0,
					    .n_rows = e[top].n_rows };
		owner[ns] = top;
		ns++;
	}
	m->n_segs = ns;
	for (size_t i = 0; i < n; i++)
		st->overlaps += covered[i] < e[i].end - e[i].start;
	st->segments = ns;
	err = 0;
out:
	free(b);
	free(heap);
	free(covered);
	free(owner);
	return err;
}

int sp_perf_map__parse(const uint8_t *buf, size_t len, struct sp_perf_map **out,
		       struct sp_perf_map_stats *st_out)
{
	struct sp_perf_map_stats st = { 0 };
	struct sp_perf_map *m;
	struct ent *e = NULL;
	struct pending pd = { .file = NO_FILE };
	size_t n = 0, cap = 0, acap = 0, pos = 0;
	int err = 0;

	*out = NULL;
	if (len > SP_PERF_MAP_MAX_BYTES)
		return -EFBIG;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	while (pos < len) {
		const uint8_t *nl = memchr(buf + pos, '\n', len - pos);

		if (!nl) {
			st.partial_tail = len - pos;
			break;
		}
		err = parse_line(m, &acap, &pd, &e, &n, &cap, buf + pos,
				 (size_t)(nl - (buf + pos)), &st);
		if (err)
			goto out;
		pos = (size_t)(nl - buf) + 1;
	}
	drop_rows(m, &pd, &st);
	err = flatten(m, e, n, &st);
out:
	free(e);
	if (st_out)
		*st_out = st;
	if (err) {
		sp_perf_map__free(m);
		return err;
	}
	*out = m;
	return 0;
}

void sp_perf_map__free(struct sp_perf_map *m)
{
	if (!m)
		return;
	free(m->segs);
	free(m->arena);
	free(m->rows);
	free(m);
}

static const struct seg *find_seg(const struct sp_perf_map *m, uint64_t addr)
{
	size_t lo = 0, hi = m ? m->n_segs : 0;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->segs[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo && addr < m->segs[lo - 1].end ? &m->segs[lo - 1] : NULL;
}

int sp_perf_map__resolve(const struct sp_perf_map *m, uint64_t addr, const char **name,
			 uint64_t *start)
{
	const struct seg *g = find_seg(m, addr);

	if (!g)
		return -ERANGE;
	*name = m->arena + g->name;
	if (start)
		*start = g->ent_start;
	return 0;
}

static const char *row_file(const struct sp_perf_map *m, const struct row *r)
{
	return r->file == NO_FILE ? NULL : m->arena + r->file;
}

int sp_perf_map__line(const struct sp_perf_map *m, uint64_t addr, const char **file,
		      uint32_t *line, uint32_t *first_line)
{
	const struct seg *g = find_seg(m, addr);
	const struct row *r;
	const char *f0;
	size_t lo = 0, hi;

	if (!g)
		return -ERANGE;
	if (!g->n_rows)
		return -ENOENT;
	r = m->rows + g->row0;
	hi = g->n_rows;
	while (lo < hi) {	/* the last row at or below the address */
		size_t mid = lo + (hi - lo) / 2;

		if (r[mid].off <= addr - g->ent_start)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || !r[lo - 1].line)
		return -ENOENT;
	*file = row_file(m, &r[lo - 1]);
	*line = r[lo - 1].line;
	if (first_line) {
		f0 = row_file(m, &r[0]);
		*first_line = (!f0 && !*file) || (f0 && *file && !strcmp(f0, *file)) ? r[0].line
										       : 0;
	}
	return 0;
}

size_t sp_perf_map__bytes(const struct sp_perf_map *m)
{
	return m ? sizeof(*m) + m->n_segs * sizeof(*m->segs) + m->arena_len +
			   m->n_rows * sizeof(*m->rows)
		 : 0;
}
