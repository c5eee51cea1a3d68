/* libFuzzer target: the DWARF line-program decoder (src/symbolizer/
 * dwarf_line.c) on an untrusted .debug_line.  The input's first byte picks
 * the unit's address size (4 or 8) and splits the rest between .debug_line
 * (the program at offset 0, and a second unit after it when the first
 * ends early) and a string section used for both .debug_line_str and
 * .debug_str; every decoded table is then searched and its paths built. */
#include <stdint.h>
#include <string.h>

#include "symbolizer/dwarf_line.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sp_dline_sections s = { 0 };
	struct sp_dline_table t;
	size_t split;
	char buf[256];

	if (size < 2)
		return 0;
	split = 1 + (size - 1) * 3 / 4;
	s.line = data + 1;
	s.line_len = split - 1;
	s.line_str = s.str = data + split;
	s.line_str_len = s.str_len = size - split;
	if (sp_dline__decode(&s, 0, data[0] & 1 ? 8 : 4, &t) == 0) {
		for (uint32_t i = 0; i < t.n_rows; i++) {
			const struct sp_dline_row *r = sp_dline__find(&t, t.addrs[i]);

			if (r)
				sp_dline__path(&t, r->file & ~SP_DLINE_END, i & 1 ? "/c" : NULL,
					       buf, sizeof(buf));
		}
		sp_dline__find(&t, UINT64_MAX);
		for (uint32_t i = 0; i < t.n_files + 1; i++)
			sp_dline__path(&t, i, "comp", buf, sizeof(buf));
		sp_dline__free(&t);
	}
	return 0;
}
