/* libFuzzer target: what spanprof reads of a Go executable, untrusted -
 * discovery as a whole (src/collector/tracectx/go_binary.c: .go.buildinfo,
 * Go build id note, DWARF offsets, the TLS and park-point decoders) and
 * .gopclntab (src/base/gopclntab.c: open, then lookups by pc and name). */
#include <gelf.h>
#include <libelf.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/gopclntab.h"
#include "collector/tracectx/go_binary.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sp_go_binary b;
	struct sp_gopcln_frame f[8];
	struct sp_gopcln *t = NULL;
	enum sp_go_fail why;
	static int fd = -1;
	char v[SP_GO_VERSION_MAX + 1];
	uint64_t park, resume, e, end;
	int32_t off;
	uint32_t n;
	char *copy;
	Elf *elf;

	/* the raw decoders on the bytes as they are */
	sp_go_binary__buildinfo_version(data, size, NULL, NULL, v);
	sp_go_binary__decode_tls(data, size, &off);
	sp_go_binary__park_points(data, size < 4096 ? size : 4096, 0x401000, 0x402000, &park,
				  &resume);
	if (fd < 0)
		fd = memfd_create("fuzz-go", MFD_CLOEXEC);
	if (fd < 0 || ftruncate(fd, 0) || pwrite(fd, data, size, 0) != (ssize_t)size)
		return 0;
	sp_go_binary__read_fd(fd, &b, &why);
	if (elf_version(EV_CURRENT) == EV_NONE)
		return 0;
	/* elf_memory may convert the image in place: a private copy */
	copy = malloc(size ? size : 1);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	elf = elf_memory(copy, size);
	if (elf && !sp_gopcln__open(elf, &t)) {
		sp_gopcln__find_func(t, "runtime.gopark", &e, &end);
		for (uint64_t pc = 0x400000; pc < 0x480000; pc += 0x1357)
			sp_gopcln__resolve(t, pc, f, 8, &n, NULL);
		sp_gopcln__free(t);
	}
	elf_end(elf);
	free(copy);
	return 0;
}
