/* libFuzzer target: ELF symbol tables and DWARF (lines, inlined chains) as
 * the symbolizer reads them (src/symbolizer/resolve.c with libdw, module
 * found through src/symbolizer/debuginfo.c by build id).  The input is
 * written to a file whose own build id is then asked for, so the whole
 * path runs: build-id check of the hint file, ELF open, CU indexing, line
 * and inline lookups at addresses taken from the input's tail; an ET_REL
 * input (a kernel module) is laid out and relocated by libdwfl
 * (src/symbolizer/relobj.c) and asked at .text offsets too. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "symbolizer/debuginfo.h"
#include "symbolizer/resolve.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char path[64];
	struct sp_debuginfo_opts dopts = { .no_debuginfod = true };
	struct sp_debuginfo *di = NULL;
	struct sp_resolver *r = NULL;
	struct sp_resolver_opts ropts = { 0 };
	char bid[256];
	struct sp_frames fr;
	FILE *f;

	if (!path[0])
		snprintf(path, sizeof(path), "/tmp/fuzz-dwarf-%d.elf", (int)getpid());
	f = fopen(path, "wb");
	if (!f)
		return 0;
	fwrite(data, 1, size, f);
	fclose(f);
	if (sp_buildid__read_file(path, bid, sizeof(bid)) != 0)
		return 0;
	if (sp_debuginfo__new(&dopts, &di) != 0)
		return 0;
	ropts.di = di;
	ropts.cache_entries = 64;
	if (sp_resolver__new(&ropts, &r) == 0) {
		for (size_t i = 0; i < 4 && size >= 8 * (i + 1); i++) {
			uint64_t a;

			memcpy(&a, data + size - 8 * (i + 1), 8);
			sp_resolver__resolve_vaddr(r, bid, path, a % (1u << 24), &fr);
			sp_resolver__resolve(r, bid, path, a % (1u << 20), &fr);
			sp_resolver__resolve_text(r, bid, path, a % (1u << 16), &fr);
		}
		sp_resolver__free(r);
	}
	sp_debuginfo__free(di);
	return 0;
}
