/* libFuzzer target: call frame information parsing and compilation for the
 * unwinder (src/collector/unwind/cfi_extract.c, unwind_table.c).
 *
 * An input that starts with the ELF magic is a whole ELF file; any other is
 * the contents of an .eh_frame section, wrapped in a minimal x86-64 ELF
 * (tests/unit/cfi_elf.h) whose .text it describes, so the fuzzer works on
 * CIEs and FDEs directly.  Each accepted table is looked up at every 7th
 * byte of the text: the lookup must stay inside the table. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <libelf.h>

#include "collector/unwind/cfi_extract.h"
#include "collector/unwind/unwind_table.h"
#include "../unit/cfi_elf.h"

static uint8_t image[CFI_IMAGE_MAX];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sp_cfi_limits lim = { .max_rows = 1u << 20, .max_cpu_ns = 2000000000ull };
	struct sp_unw_compiler_limits cl = { .max_rows = 1u << 20, .max_words = 1u << 22 };
	struct sp_unw_compiler *c = NULL;
	struct sp_unw_table t = { 0 };
	static uint8_t *copy;
	static int init;
	Elf *e;
	size_t n;

	if (!init) {
		elf_version(EV_CURRENT);
		init = 1;
	}
	if (size >= 4 && !memcmp(data, "\177ELF", 4)) {
		if (size > (64u << 20))
			return 0;
		/* libelf may keep pointers into the image: a private copy. */
		copy = realloc(copy, size);
		if (!copy)
			return 0;
		memcpy(copy, data, size);
		e = elf_memory((char *)copy, size);
	} else {
		if (size > CFI_EH_MAX)
			return 0;
		n = cfi_elf(data, size, image);
		e = elf_memory((char *)image, n);
	}
	if (!e)
		return 0;
	if (sp_unw_compiler__new(e, &cl, &c) == 0 &&
	    sp_cfi__extract(e, &lim, sp_unw_compiler__add_row, c, NULL) == 0 &&
	    sp_unw_compiler__finish(c, &t) == 0) {
		for (uint64_t fo = t.fo_lo; fo < t.fo_hi && fo < t.fo_lo + (1u << 16); fo += 7) {
			struct sp_unw_rule r;

			sp_unw_table__lookup(t.words, t.n_words, &t.desc, fo, &r, NULL);
		}
	}
	sp_unw_table__release(&t);
	sp_unw_compiler__free(c);
	elf_end(e);
	return 0;
}
