/* libFuzzer target: the DIE reader (src/symbolizer/die_reader.c) on an
 * untrusted unit.  The input's first 4 bytes (little-endian, clamped to
 * what follows) are the length of .debug_info, which comes next (the unit
 * at offset 0, more units after it), then .debug_abbrev to the end; the
 * whole input serves as .debug_addr,
 * .debug_rnglists and .debug_ranges.  Every DIE of the unit is read in
 * order, its ranges listed and its end found, as the inline walk does. */
#include <stdint.h>
#include <string.h>

#include "symbolizer/die_reader.h"

static int count_range(void *ctx, uint64_t lo, uint64_t hi)
{
	(void)lo;
	(void)hi;
	return ++*(unsigned *)ctx > 1000;	/* stop a long list */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sp_die_sections s = { 0 };
	size_t split;

	if (size < 5)
		return 0;
	split = (size_t)data[0] | (size_t)data[1] << 8 | (size_t)data[2] << 16 |
		(size_t)data[3] << 24;
	if (split > size - 4)
		split = size - 4;
	split += 4;
	s.info = data + 4;
	s.info_len = split - 4;
	s.abbrev = data + split;
	s.abbrev_len = size - split;
	s.addr = s.rnglists = s.ranges = data;
	s.addr_len = s.rnglists_len = s.ranges_len = size;
	for (uint64_t unit = 0; unit < s.info_len;) {
		struct sp_die_unit u;
		uint64_t off;
		unsigned dies = 0;

		if (sp_die_unit__open(&s, unit, &u))
			break;
		sp_die_unit__bytes(&u);
		for (off = u.first_die; off < u.end && dies < 4096; dies++) {
			struct sp_die d;
			uint64_t after;
			unsigned n = 0;
			int rc = sp_die__read(&s, &u, off, &d);

			if (rc < 0)
				break;
			if (rc == 0) {
				sp_die__ranges(&s, &u, &d, count_range, &n);
				if (sp_die__after(&s, &u, &d, 16, &after) == 0 && after <= off)
					__builtin_trap();	/* the walk must move on */
				if (!d.next)	/* a skipped DIE with children: past them */
					d.next = sp_die__after(&s, &u, &d, 16, &after) ? 0 : after;
				if (!d.next)
					break;
			}
			if (d.next <= off)
				__builtin_trap();
			off = d.next;	/* into the children: every DIE is read */
		}
		if (u.end <= unit)
			__builtin_trap();
		unit = u.end;
		sp_die_unit__free(&u);
	}
	return 0;
}
