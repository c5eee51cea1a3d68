// SPDX-License-Identifier: MIT
/*
 * bench_unwind_tables - unwind table size and build time per file, with
 * the format's lookup cost, for docs/benchmarks.md ("Unwind tables").
 *
 *   build/bench/bench_unwind_tables FILE...
 *
 * Per file: executable bytes (sum of SHF_EXECINSTR sections), .eh_frame
 * bytes, CFI rows from libdw, rows after merging, table bytes (what goes
 * into BPF), bytes per MiB of text, extraction + compilation time (CPU, of
 * this thread) per MiB of .eh_frame, and the lookup cost: word reads per
 * lookup and ns per lookup in the user-space mirror of the BPF lookup, for
 * 1e6 pcs spread over the text (the BPF unwinder does the same reads as
 * inlined array lookups).  It also checks every row: the table gives back
 * the rule libdw gave for the row's first and last byte (exit 1 if not).
 * With SP_BENCH_SHIFT=N the page size is forced to 2^N (format study).
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "collector/unwind/cfi_extract.h"
#include "collector/unwind/unwind_table.h"

struct check_ctx {
	struct sp_unw_compiler *c;
	struct sp_cfi_row *rows;
	size_t n, cap;
};

static int keep_row(const struct sp_cfi_row *row, void *arg)
{
	struct check_ctx *k = arg;

	if (k->n == k->cap) {
		size_t cap = k->cap ? 2 * k->cap : 4096;
		struct sp_cfi_row *r = realloc(k->rows, cap * sizeof(*r));

		if (!r)
			return -ENOMEM;
		k->rows = r;
		k->cap = cap;
	}
	k->rows[k->n++] = *row;
	return sp_unw_compiler__add_row(row, k->c);
}

static double cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint64_t exec_bytes(Elf *e)
{
	Elf_Scn *scn = NULL;
	uint64_t n = 0;

	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && (sh.sh_flags & SHF_EXECINSTR) && sh.sh_type == SHT_PROGBITS)
			n += sh.sh_size;
	}
	return n;
}

/* vaddr -> file offset through the executable PT_LOADs (for the check). */
static int to_fo(Elf *e, uint64_t va, uint64_t *fo)
{
	size_t n = 0;

	elf_getphdrnum(e, &n);
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD && (ph.p_flags & PF_X) &&
		    va >= ph.p_vaddr && va < ph.p_vaddr + ph.p_filesz) {
			*fo = va - ph.p_vaddr + ph.p_offset;
			return 0;
		}
	}
	return -1;
}

static int one(const char *path)
{
	struct check_ctx k = { 0 };
	struct sp_cfi_stats st;
	struct sp_unw_table t;
	uint64_t text, probes = 0, bad = 0, checked = 0;
	double t0, t1, t2;
	int fd, err, rc = 1;
	Elf *e;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		return 1;
	}
	e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!e) {
		fprintf(stderr, "%s: not ELF\n", path);
		close(fd);
		return 1;
	}
	text = exec_bytes(e);
	t0 = cpu_s();
	{
		struct sp_unw_compiler_limits lim = { 0 };
		const char *sh = getenv("SP_BENCH_SHIFT");

		lim.page_shift = sh ? (uint8_t)atoi(sh) : 0;
		err = sp_unw_compiler__new(e, &lim, &k.c);
	}
	if (!err)
		err = sp_cfi__extract(e, NULL, keep_row, &k, &st);
	t1 = cpu_s();
	if (!err)
		err = sp_unw_compiler__finish(k.c, &t);
	t2 = cpu_s();
	if (err) {
		fprintf(stderr, "%s: %s\n", path, strerror(-err));
		goto out;
	}
	/* Every row's first and last byte. */
	for (size_t i = 0; i < k.n; i++) {
		uint64_t ends[2] = { k.rows[i].start, k.rows[i].end - 1 };

		for (int j = 0; j < 2; j++) {
			struct sp_unw_rule r;
			uint64_t fo;
			int lr;

			if (to_fo(e, ends[j], &fo))
				continue;
			lr = sp_unw_table__lookup(t.words, t.n_words, &t.desc, fo, &r, NULL);
			checked++;
			if ((k.rows[i].rule.op & 15) == SP_UNW_OP_NONE ? lr != -ENOENT
			    : (lr || memcmp(&r, &k.rows[i].rule, sizeof(r)))) {
				if (bad++ < 5)
					fprintf(stderr, "%s: row %#llx: table disagrees\n", path,
						(unsigned long long)ends[j]);
			}
		}
	}
	/* Lookup cost on pcs spread over the covered offsets. */
	{
		const int n = 1000000;
		struct timespec a, b;
		uint64_t span = t.fo_hi - t.fo_lo, x = 88172645463325252ull, found = 0;
		struct sp_unw_rule r;
		uint32_t pr = 0;

		clock_gettime(CLOCK_MONOTONIC, &a);
		for (int i = 0; i < n; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			found += !sp_unw_table__lookup(t.words, t.n_words, &t.desc,
						       t.fo_lo + x % span, &r, &pr);
		}
		clock_gettime(CLOCK_MONOTONIC, &b);
		probes = pr;
		printf("%s\n  text %.2f MiB, .eh_frame %.2f MiB (+ .debug_frame %.2f MiB), FDEs %llu\n"
		       "  CFI rows %llu -> table rows %u, rules %u, pages %u of %u KiB\n"
		       "  table %.1f KiB = %.1f KiB per MiB of text, %.2f B per CFI row\n"
		       "  extract %.1f ms + compile %.1f ms = %.1f ms per MiB of .eh_frame\n"
		       "  lookup: %.2f word reads, %.0f ns each (user space), %.0f%% hit\n"
		       "  rows unsupported %llu, leaf-only %llu; check %llu bytes, %llu wrong\n",
		       path, text / 1048576.0, st.eh_frame_bytes / 1048576.0,
		       st.debug_frame_bytes / 1048576.0, (unsigned long long)st.fdes,
		       (unsigned long long)st.rows, t.n_rows, t.desc.n_rules, t.desc.n_pages,
		       (1u << t.desc.page_shift) / 1024, t.n_words * 8 / 1024.0,
		       text ? t.n_words * 8 / 1024.0 / (text / 1048576.0) : 0,
		       st.rows ? t.n_words * 8.0 / st.rows : 0, (t1 - t0) * 1e3, (t2 - t1) * 1e3,
		       st.eh_frame_bytes ? (t2 - t0) * 1e3 / (st.eh_frame_bytes / 1048576.0) : 0,
		       (double)probes / n,
		       ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / n,
		       100.0 * found / n, (unsigned long long)st.rows_unsupported,
		       (unsigned long long)st.rows_leaf_only, (unsigned long long)checked,
		       (unsigned long long)bad);
	}
	rc = bad ? 1 : 0;
	sp_unw_table__release(&t);
out:
	sp_unw_compiler__free(k.c);
	free(k.rows);
	elf_end(e);
	close(fd);
	return rc;
}

int main(int argc, char **argv)
{
	int rc = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: %s ELF-FILE...\n", argv[0]);
		return 2;
	}
	elf_version(EV_CURRENT);
	for (int i = 1; i < argc; i++)
		rc |= one(argv[i]);
	return rc;
}
