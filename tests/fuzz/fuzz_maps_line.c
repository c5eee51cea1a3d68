/* libFuzzer target: one /proc/PID/maps line (src/base/maps.c). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/maps.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sp_map_entry e;
	/* An exactly sized heap copy so ASan sees any read past the end. */
	char *line = malloc(size ? size : 1);

	if (!line)
		return 0;
	memcpy(line, data, size);
	if (sp_maps__parse_line(line, size, &e) == 0) {
		if (e.start >= e.end)
			abort();	/* the parser promised start < end */
		if (e.path_len && (e.path < line || e.path + e.path_len > line + size))
			abort();	/* path must point into the line */
	}
	free(line);
	return 0;
}
