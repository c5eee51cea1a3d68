/* libFuzzer target: the jitdump converter (src/collector/procs/jitdump.c),
 * the binary file any process can write and map as jit-PID.dump, fed the
 * input as the file, whole and then as if it grew in steps (a runtime
 * writing it), into a small output buffer (the bound is exercised).
 *
 * Checked: the converter never writes past its output bound, never moves
 * backwards or past the file, every line it writes is "HEX HEX NAME\n"
 * with a name of 1..SP_JITDUMP_NAME_MAX bytes without control bytes, or a
 * line-table line ("@F" or "@F FILE" of 1..SP_JITDUMP_FILE_MAX bytes
 * without control bytes, "@L HEX HEX") that a load's line follows in the
 * same call (a table is never written without its load), at most
 * SP_JITDUMP_DEBUG_TEXT_MAX of them in a row, and the lines of the growing
 * runs are exactly those of the whole run. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "collector/procs/jitdump.h"

#define OUT_CAP (2 * SP_JITDUMP_LINE_MAX + 64)
#define ALL_CAP (1u << 20)

struct src {
	const uint8_t *b;
	size_t len;
};

static int rd(void *ctx, uint8_t *buf, size_t n, uint64_t off)
{
	const struct src *s = ctx;

	if (off > s->len || n > s->len - off)
		return -ENODATA;
	memcpy(buf, s->b + off, n);
	return 0;
}

static int hex_run(const char *a, const char *b)
{
	if (a == b)
		return 0;
	for (; a < b; a++)
		if (!((*a >= '0' && *a <= '9') || (*a >= 'a' && *a <= 'f')))
			return 0;
	return 1;
}

/* "@F", "@F FILE" or "@L HEX HEX" (l..e, without the '\n') */
static void check_row(const char *l, const char *e)
{
	const char *sp;

	if (e - l >= 2 && l[1] == 'F') {
		if (e - l == 2)
			return;
		if (l[2] != ' ' || e - l - 3 < 1 || e - l - 3 > SP_JITDUMP_FILE_MAX)
			abort();
		for (const char *c = l + 3; c < e; c++)
			if ((unsigned char)*c < 0x20 || *c == 0x7f)
				abort();
		return;
	}
	if (e - l < 3 || memcmp(l, "@L ", 3))
		abort();
	sp = memchr(l + 3, ' ', (size_t)(e - l - 3));
	if (!sp || !hex_run(l + 3, sp) || !hex_run(sp + 1, e))
		abort();
}

static void check_lines(const char *p, size_t n)
{
	size_t i = 0, table = 0;

	while (i < n) {
		const char *l = p + i, *e = memchr(l, '\n', n - i), *sp1, *sp2;

		if (!e)
			abort();
		if (*l == '@') {
			check_row(l, e);
			table += (size_t)(e - l) + 1;
			if (table > SP_JITDUMP_DEBUG_TEXT_MAX)
				abort();
			i = (size_t)(e - p) + 1;
			if (i == n)
				abort();	/* a table without its load */
			continue;
		}
		table = 0;
		sp1 = memchr(l, ' ', (size_t)(e - l));
		if (!sp1 || sp1 == l)
			abort();
		sp2 = memchr(sp1 + 1, ' ', (size_t)(e - sp1 - 1));
		if (!sp2 || sp2 == sp1 + 1 || e - sp2 - 1 < 1 || e - sp2 - 1 > SP_JITDUMP_NAME_MAX)
			abort();
		for (const char *c = l; c < sp2; c++)
			if (c != sp1 && !((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'f')))
				abort();
		for (const char *c = sp2 + 1; c < e; c++)
			if ((unsigned char)*c < 0x20 || *c == 0x7f)
				abort();
		i = (size_t)(e - p) + 1;
	}
}

/* Converts s in rounds of at most `step` more bytes of file each, into
 * all (ALL_CAP); returns its length, or SIZE_MAX when all or the round
 * guard ran out first (nothing to compare then). */
static size_t run(const struct src *whole, size_t step, char *all)
{
	static struct sp_jitdump_slot slots[SP_JITDUMP_SLOTS];
	static char out[OUT_CAP + 16];
	struct sp_jitdump d = { .slots = slots };
	struct sp_jitdump_stats st = { 0 };
	size_t total = 0, size = 0;
	int guard = 0;

	sp_jitdump__reset(&d);
	memset(out + OUT_CAP, 0x5a, 16);
	while (guard++ < 100000) {
		struct src s = { whole->b, size };
		uint64_t before = d.off;
		size_t n = 0;
		int err = sp_jitdump__convert(&d, rd, &s, size, out, OUT_CAP, &n, &st);

		for (int i = 0; i < 16; i++)
			if ((uint8_t)out[OUT_CAP + i] != 0x5a)
				abort();	/* written past cap */
		if (n > OUT_CAP || d.off < before || d.off > size)
			abort();
		check_lines(out, n);
		if (total + n > ALL_CAP)
			return SIZE_MAX;
		memcpy(all + total, out, n);
		total += n;
		if (err || d.state)
			return total;
		if (d.off == before && n == 0) {
			if (size == whole->len)
				return total;
			size = size + step > whole->len ? whole->len : size + step;
		}
	}
	return SIZE_MAX;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char a[ALL_CAP], b[ALL_CAP];
	struct src s = { data, size };
	size_t na, nb;

	na = run(&s, size ? size : 1, a);
	nb = run(&s, 1 + (size ? data[0] % 97 : 0), b);
	if (na != SIZE_MAX && nb != SIZE_MAX && (na != nb || memcmp(a, b, na)))
		abort();	/* growth in steps changed what was read */
	return 0;
}
