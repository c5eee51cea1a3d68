/* libFuzzer target: GNU build-id notes (raw note areas) and whole ELF files
 * through libelf (src/base/buildid.c), GNU and Go ids.  The ELF bytes go to a memfd
 * because the reader takes a file descriptor, as it does for /proc files. */
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/buildid.h"

/* What a reader may return: a GNU id of 1..SP_BUILD_ID_MAX bytes, or a Go
 * id of 1..SP_GO_BUILD_ID_MAX characters as go build writes one. */
static int bad_id(const struct sp_build_id *id)
{
	if (id->kind == SP_BUILD_ID_GO)
		return id->len == 0 || id->len > SP_GO_BUILD_ID_MAX ||
		       sp_buildid__validate_go_n(id->id, id->len);
	return id->kind != SP_BUILD_ID_GNU || id->len == 0 || id->len > SP_BUILD_ID_MAX;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sp_build_id id;
	static int fd = -1;

	if (sp_buildid__from_notes(data, size, &id) == 0 && bad_id(&id))
		abort();
	if (fd < 0)
		fd = memfd_create("fuzz-elf", MFD_CLOEXEC);
	if (fd < 0 || ftruncate(fd, 0) || pwrite(fd, data, size, 0) != (ssize_t)size)
		return 0;
	if (sp_buildid__from_fd(fd, &id) == 0 && bad_id(&id))
		abort();
	return 0;
}
