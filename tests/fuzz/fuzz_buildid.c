/* libFuzzer target: GNU build-id notes (raw note areas) and whole ELF files
 * through libelf (src/base/buildid.c).  The ELF bytes go to a memfd
 * because the reader takes a file descriptor, as it does for /proc files. */
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/buildid.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sp_build_id id;
	static int fd = -1;

	if (sp_buildid__from_notes(data, size, &id) == 0 && (id.len == 0 || id.len > SP_BUILD_ID_MAX))
		abort();
	if (fd < 0)
		fd = memfd_create("fuzz-elf", MFD_CLOEXEC);
	if (fd < 0 || ftruncate(fd, 0) || pwrite(fd, data, size, 0) != (ssize_t)size)
		return 0;
	if (sp_buildid__from_fd(fd, &id) == 0 && (id.len == 0 || id.len > SP_BUILD_ID_MAX))
		abort();
	return 0;
}
