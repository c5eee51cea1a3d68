// SPDX-License-Identifier: MIT
/*
 * bench_unwind_image - the table builder's read and parse of one file, the
 * in-memory image (unwind_prefetch.h: the ranges read on a deadline-bound
 * helper into an image, libelf on the image with elf_memory) against the
 * earlier way (the same ranges read on the helper to warm the page cache,
 * then libelf reading the file again, ELF_C_READ), in the same run, for
 * docs/benchmarks.md ("Unwind tables").
 *
 *   build/bench/bench_unwind_image [-n REPS] FILE...
 *
 * Per file and way, REPS rounds alternating the two (the page cache warm:
 * the first of each is dropped): wall time of the read, of libelf + the
 * CFI extraction (sp_cfi__extract, rows counted), and the total; the
 * median of each, and new / old.  Both extract the same rows (checked:
 * exit 1 if not).
 */
#include <errno.h>
#include <fcntl.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "collector/unwind/cfi_extract.h"
#include "collector/unwind/unwind_prefetch.h"

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int count_row(const struct sp_cfi_row *row, void *ctx)
{
	(void)row;
	(*(uint64_t *)ctx)++;
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static uint64_t median(uint64_t *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_u64);
	return v[n / 2];
}

/* One round: new (image) or old (warm, then ELF_C_READ).  Times in ns. */
static int round_once(struct sp_unw_prefetch *p, const char *path, int image, uint64_t *t_read,
		      uint64_t *t_parse, uint64_t *rows)
{
	struct sp_unw_image img;
	struct stat st;
	uint64_t t0, t1;
	Elf *elf;
	int fd = open(path, O_RDONLY | O_CLOEXEC), rc;

	if (fd < 0 || fstat(fd, &st))
		return -errno;
	t0 = now_ns();
	rc = sp_unw_prefetch__file(p, fd, &st, &img);
	if (!image)
		sp_unw_image__release(&img);	/* the old way kept nothing */
	t1 = now_ns();
	*t_read = t1 - t0;
	if (rc) {
		close(fd);
		return rc;
	}
	elf = image ? elf_memory((char *)img.base, img.size) : elf_begin(fd, ELF_C_READ, NULL);
	*rows = 0;
	rc = elf ? sp_cfi__extract(elf, NULL, count_row, rows, NULL) : -EINVAL;
	if (elf)
		elf_end(elf);
	*t_parse = now_ns() - t1;
	sp_unw_image__release(&img);
	close(fd);
	return rc;
}

int main(int argc, char **argv)
{
	struct sp_unw_prefetch *p;
	int reps = 21, i0 = 1;

	if (argc > 2 && !strcmp(argv[1], "-n")) {
		reps = atoi(argv[2]);
		i0 = 3;
	}
	if (reps < 3 || reps > 1000 || i0 >= argc) {
		fprintf(stderr, "usage: bench_unwind_image [-n REPS(3..1000)] FILE...\n");
		return 2;
	}
	elf_version(EV_CURRENT);
	p = sp_unw_prefetch__new(0, 0);
	if (!p)
		return 1;
	printf("%-40s %8s %10s %10s %10s %10s %10s %10s %8s\n", "file", "rows", "old read",
	       "old parse", "old total", "new read", "new parse", "new total", "new/old");
	for (int f = i0; f < argc; f++) {
		uint64_t r[2][1000], q[2][1000], t[2][1000], rows[2] = { 0, 0 };
		int n = 0;

		for (int i = 0; i <= reps; i++) {
			for (int way = 0; way < 2; way++) {
				uint64_t a = 0, b = 0, k = 0;
				int rc = round_once(p, argv[f], way, &a, &b, &k);

				if (rc) {
					fprintf(stderr, "%s: %s\n", argv[f], strerror(-rc));
					return 1;
				}
				if (rows[way] && rows[way] != k)
					return 1;
				rows[way] = k;
				if (i) {
					r[way][n] = a;
					q[way][n] = b;
					t[way][n] = a + b;
				}
			}
			n += i > 0;
		}
		if (rows[0] != rows[1]) {
			fprintf(stderr, "%s: rows differ: old %lu new %lu\n", argv[f],
				(unsigned long)rows[0], (unsigned long)rows[1]);
			return 1;
		}
		{
			uint64_t ot = median(t[0], n), nt = median(t[1], n);

			printf("%-40s %8lu %8.2fms %8.2fms %8.2fms %8.2fms %8.2fms %8.2fms %7.2fx\n",
			       argv[f], (unsigned long)rows[0], median(r[0], n) / 1e6,
			       median(q[0], n) / 1e6, ot / 1e6, median(r[1], n) / 1e6,
			       median(q[1], n) / 1e6, nt / 1e6, (double)nt / (double)ot);
		}
	}
	sp_unw_prefetch__free(p);
	return 0;
}
