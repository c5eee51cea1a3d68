/* libFuzzer target: the perf-map parser (src/symbolizer/perf_map.c), the
 * text any process can write to /tmp/perf-PID.map, and lookups of
 * addresses taken from the input.
 *
 * Checked: every name found is 1..SP_PERF_MAP_MAX_NAME bytes of valid
 * UTF-8 without control characters (it goes into protobuf strings), and
 * the entry found starts at or below the address; a line row found
 * (jitdump "@" lines) has a line other than 0 and, when it has a file, a
 * name as valid as an entry's. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "symbolizer/perf_map.h"

static void check_name(const char *n)
{
	size_t len = strlen(n);

	if (!len || len > SP_PERF_MAP_MAX_NAME)
		abort();
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)n[i];

		if (c < 0x20 || c == 0x7f)
			abort();
		if (c >= 0x80) {	/* a valid sequence: lead + continuation bytes */
			unsigned k = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 ? 2 : 0;

			if (!k || i + k > len)
				abort();
			for (unsigned j = 1; j < k; j++)
				if (((unsigned char)n[i + j] & 0xc0) != 0x80)
					abort();
			i += k - 1;
		}
	}
}

static void check_line(const struct sp_perf_map *m, uint64_t a)
{
	const char *file = NULL;
	uint32_t line = 0, first = 0;

	if (sp_perf_map__line(m, a, &file, &line, &first) == 0) {
		if (!line)
			abort();
		if (file)
			check_name(file);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sp_perf_map *m = NULL;
	struct sp_perf_map_stats st;
	const char *name;
	uint64_t start;

	if (sp_perf_map__parse(data, size, &m, &st))
		return 0;
	if (st.entries > st.lines || st.overlaps > st.entries)
		abort();
	for (size_t i = 0; i + 8 <= size && i < 8 * 64; i += 8) {
		uint64_t a;

		memcpy(&a, data + i, 8);
		if (sp_perf_map__resolve(m, a, &name, &start) == 0) {
			check_name(name);
			if (start > a)
				abort();
		}
		check_line(m, a);
	}
	for (uint64_t a = 0; a < 0x10000; a += 0x101) {
		if (sp_perf_map__resolve(m, a, &name, &start) == 0)
			check_name(name);
		check_line(m, a);
	}
	sp_perf_map__free(m);
	return 0;
}
