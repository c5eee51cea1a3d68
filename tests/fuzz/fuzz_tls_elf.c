/* libFuzzer target: the ELF reading done to locate otel_thread_ctx_v1
 * (dynsym, symtab, relocations, PT_TLS) in src/collector/tracectx/tls_elf.c. */
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "collector/tracectx/tls_elf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sp_tls_elf_info info;
	enum sp_tls_fail why;
	static int fd = -1;

	if (fd < 0)
		fd = memfd_create("fuzz-tls", MFD_CLOEXEC);
	if (fd < 0 || ftruncate(fd, 0) || pwrite(fd, data, size, 0) != (ssize_t)size)
		return 0;
	sp_tls_elf__inspect(fd, SP_TLS_ELF_DYNSYM | SP_TLS_ELF_SYMTAB, &info, &why);
	return 0;
}
