/* libFuzzer target: /proc/PID/maps lines (src/base/maps.c) and whole maps
 * files through the bounded reader (src/base/maps_reader.c, fed a memfd),
 * and the in-memory reader, which must see the same lines. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/maps_reader.h"

static int check_entry(const struct sp_map_entry *e, void *ctx)
{
	(void)ctx;
	if (e->start >= e->end)
		abort();	/* the parser promised start < end */
	if (e->path_len > SP_MAPS_LINE_MAX)
		abort();	/* the reader's line bound */
	return 0;
}

static void whole_file(const uint8_t *data, size_t size)
{
	static int fd = -1;
	struct sp_maps_read_stats st, bst;
	int rc, brc;

	if (fd < 0)
		fd = memfd_create("fuzz-maps", MFD_CLOEXEC);
	if (fd < 0 || ftruncate(fd, 0) || pwrite(fd, data, size, 0) != (ssize_t)size ||
	    lseek(fd, 0, SEEK_SET) != 0)
		return;
	rc = sp_maps_reader__scan_fd(fd, check_entry, NULL, &st);
	if (rc == 0 && (st.malformed > st.lines || st.lines > SP_MAPS_MAX_LINES))
		abort();
	/* The in-memory reader (base/proc_read.h's path) sees the same lines. */
	brc = sp_maps_reader__scan_buf((const char *)data, size, check_entry, NULL, &bst);
	if (brc != rc || bst.lines != st.lines || bst.malformed != st.malformed ||
	    bst.truncated != st.truncated)
		abort();
}

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
	whole_file(data, size);
	return 0;
}
