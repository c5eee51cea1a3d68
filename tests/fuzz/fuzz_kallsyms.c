/* libFuzzer target: the kernel symbol snapshot parser of the symbolizer
 * (src/symbolizer/kallsyms.c), plain or gzip'd, and resolution of
 * addresses taken from the input.
 *
 * Checked: a parsed snapshot has a build id that is lower-case hex; every
 * resolved address lies at or after its symbol's start, offset = address -
 * start, names are non-empty and without spaces or controls. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "symbolizer/kallsyms.h"

static void check_sym(const struct sp_ksym *s, uint64_t addr)
{
	size_t n;

	if (!s->name || addr < s->start || s->offset != addr - s->start)
		abort();
	n = strlen(s->name);
	if (n == 0 || n > SP_KALLSYMS_MAX_NAME)
		abort();
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s->name[i] <= 0x20 || (unsigned char)s->name[i] == 0x7f)
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sp_ksyms *k = NULL;
	struct sp_ksyms_stats st;
	struct sp_ksym sym;
	uint8_t *buf = malloc(size ? size : 1);
	const char *bid;

	if (!buf)
		return 0;
	memcpy(buf, data, size);
	if (sp_ksyms__parse(buf, size, &k, &st) == 0) {
		bid = sp_ksyms__build_id(k);
		if (!bid || !bid[0])
			abort();
		for (const char *c = bid; *c; c++)
			if (!((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'f')))
				abort();
		/* addresses from the input's bytes, and around the edges */
		for (size_t i = 0; i + 8 <= size && i < 8 * 64; i += 8) {
			uint64_t a;

			memcpy(&a, data + i, 8);
			for (int d = -1; d <= 1; d++)
				if (sp_ksyms__resolve(k, a + (uint64_t)(int64_t)d, &sym) == 0)
					check_sym(&sym, a + (uint64_t)(int64_t)d);
		}
		if (sp_ksyms__resolve(k, 0, &sym) == 0)
			check_sym(&sym, 0);
		if (sp_ksyms__resolve(k, UINT64_MAX, &sym) == 0)
			check_sym(&sym, UINT64_MAX);
		(void)sp_ksyms__count(k);
		(void)sp_ksyms__kernel(k);
		(void)sp_ksyms__boot_id(k);
		sp_ksyms__free(k);
	}
	free(buf);
	return 0;
}
