/* libFuzzer target: the kernel symbol snapshot parser of the symbolizer
 * (src/symbolizer/kallsyms.c), plain or gzip'd, and resolution of
 * addresses taken from the input.
 *
 * Checked: a parsed snapshot has a build id that is lower-case hex; every
 * resolved address lies at or after its symbol's start, offset = address -
 * start, names are non-empty and without spaces or controls; a module (the
 * seed's ext4 build id) and its sections ("# module-section" lines) come
 * back with a name and a range that does not wrap.  Each line of the input
 * is also read as a module mapping's file name
 * (sp_kallsyms_format__module_fn): a name without '/', a section name the
 * format accepts, both inside the line. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/kallsyms_format.h"
#include "symbolizer/kallsyms.h"

#define SEED_MOD "aabbccddeeff00112233445566778899aabbccdd"

static void check_module(const struct sp_ksyms *k, const char *section)
{
	const char *name;
	uint64_t a, n;

	if (sp_ksyms__module(k, SEED_MOD, section, &name, &a, &n) == 0 &&
	    (!name || !name[0] || a + n < a))
		abort();
}

/* Every line of data as a mapping file name. */
static void check_file_names(const uint8_t *data, size_t size)
{
	char line[256];

	for (size_t i = 0; i < size;) {
		const uint8_t *nl = memchr(data + i, '\n', size - i);
		size_t l = nl ? (size_t)(nl - (data + i)) : size - i;
		const char *name, *sect;
		size_t nlen, slen;

		if (l < sizeof(line)) {
			memcpy(line, data + i, l);
			line[l] = '\0';
			if (sp_kallsyms_format__module_fn(line, &name, &nlen, &sect, &slen) &&
			    (!nlen || memchr(name, '/', nlen) || name + nlen > line + l ||
			     !sp_kallsyms_format__section_ok(sect, slen)))
				abort();
		}
		i += l + 1;
	}
}

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
	check_file_names(data, size);
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
		check_module(k, NULL);
		check_module(k, ".text.unlikely");
		check_module(k, ".init.text");
		(void)sp_ksyms__count(k);
		(void)sp_ksyms__kernel(k);
		(void)sp_ksyms__boot_id(k);
		sp_ksyms__free(k);
	}
	free(buf);
	return 0;
}
