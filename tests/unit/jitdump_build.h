/* SPDX-License-Identifier: MIT */
/*
 * jitdump_build.h - writes jitdump bytes for the tests (the layout of
 * src/collector/procs/jitdump.h, host byte order, as a runtime writes
 * them).  jd_* append to a growing buffer; the caller frees jb.b.
 */
#ifndef SPANPROF_TESTS_JITDUMP_BUILD_H
#define SPANPROF_TESTS_JITDUMP_BUILD_H

#include <elf.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "collector/procs/jitdump.h"

struct jd_buf {
	uint8_t *b;
	size_t len, cap;
};

static __attribute__((unused)) void jd_put(struct jd_buf *j, const void *p, size_t n)
{
	if (j->len + n > j->cap) {
		j->cap = (j->len + n) * 2 + 64;
		j->b = realloc(j->b, j->cap);
	}
	memcpy(j->b + j->len, p, n);
	j->len += n;
}

static __attribute__((unused)) void jd_u32(struct jd_buf *j, uint32_t v)
{
	jd_put(j, &v, 4);
}

static __attribute__((unused)) void jd_u64(struct jd_buf *j, uint64_t v)
{
	jd_put(j, &v, 8);
}

/* The file header: magic, version, size, machine as given. */
static __attribute__((unused)) void jd_header_raw(struct jd_buf *j, uint32_t magic,
						  uint32_t version, uint32_t size, uint32_t mach)
{
	jd_u32(j, magic);
	jd_u32(j, version);
	jd_u32(j, size);
	jd_u32(j, mach);
	jd_u32(j, 0xdeadbeef);
	jd_u32(j, 4242);
	jd_u64(j, 1);
	jd_u64(j, 0);
	for (uint32_t i = SP_JITDUMP_HDR; i < size && i < 1024; i++)
		jd_put(j, "", 1);
}

static __attribute__((unused)) void jd_header(struct jd_buf *j)
{
	jd_header_raw(j, SP_JITDUMP_MAGIC, 1, SP_JITDUMP_HDR, EM_X86_64);
}

/* A LOAD record of name (nlen bytes, then a NUL unless no_nul) and
 * code_size bytes of code 0xcc; extra bytes are added to total_size
 * without being written when lie > 0 (a size that does not add up). */
static __attribute__((unused)) void jd_load_raw(struct jd_buf *j, uint64_t addr, uint64_t size,
						uint64_t index, const char *name, size_t nlen,
						int no_nul, size_t code_bytes, int64_t lie)
{
	uint32_t total = (uint32_t)((int64_t)(SP_JITDUMP_LOAD_FIXED + nlen + !no_nul + code_bytes) + lie);

	jd_u32(j, SP_JIT_CODE_LOAD);
	jd_u32(j, total);
	jd_u64(j, 7);
	jd_u32(j, 4242);
	jd_u32(j, 4243);
	jd_u64(j, addr);
	jd_u64(j, addr);
	jd_u64(j, size);
	jd_u64(j, index);
	jd_put(j, name, nlen);
	if (!no_nul)
		jd_put(j, "", 1);
	for (size_t i = 0; i < code_bytes; i++)
		jd_put(j, "\xcc", 1);
}

static __attribute__((unused)) void jd_load(struct jd_buf *j, uint64_t addr, uint64_t size,
					    uint64_t index, const char *name)
{
	jd_load_raw(j, addr, size, index, name, strlen(name), 0, (size_t)size, 0);
}

static __attribute__((unused)) void jd_move(struct jd_buf *j, uint64_t from, uint64_t to,
					    uint64_t size, uint64_t index)
{
	jd_u32(j, SP_JIT_CODE_MOVE);
	jd_u32(j, SP_JITDUMP_MOVE_SIZE);
	jd_u64(j, 8);
	jd_u32(j, 4242);
	jd_u32(j, 4243);
	jd_u64(j, to);
	jd_u64(j, from);
	jd_u64(j, to);
	jd_u64(j, size);
	jd_u64(j, index);
}

/* A DEBUG_INFO row as the runtime writes it. */
struct jd_row {
	uint64_t addr;
	uint32_t line;
	const char *file;
};

/* A DEBUG_INFO record for the code at code_addr: its n rows, nr_entry
 * claimed as nr (the true n unless lying); no_nul: the last file name's
 * NUL is not written (the record ends without it). */
static __attribute__((unused)) void jd_debug_raw(struct jd_buf *j, uint64_t code_addr,
						 const struct jd_row *r, size_t n, uint64_t nr,
						 int no_nul)
{
	size_t total = SP_JITDUMP_DEBUG_FIXED - (n && no_nul);

	for (size_t i = 0; i < n; i++)
		total += SP_JITDUMP_DEBUG_ENTRY_FIXED + strlen(r[i].file) + 1;
	jd_u32(j, SP_JIT_CODE_DEBUG_INFO);
	jd_u32(j, (uint32_t)total);
	jd_u64(j, 6);
	jd_u64(j, code_addr);
	jd_u64(j, nr);
	for (size_t i = 0; i < n; i++) {
		jd_u64(j, r[i].addr);
		jd_u32(j, r[i].line);
		jd_u32(j, 0);
		jd_put(j, r[i].file, strlen(r[i].file) + !(no_nul && i == n - 1));
	}
}

static __attribute__((unused)) void jd_debug(struct jd_buf *j, uint64_t code_addr,
					     const struct jd_row *r, size_t n)
{
	jd_debug_raw(j, code_addr, r, n, n, 0);
}

/* Any other record: id, payload of n bytes (0x55). */
static __attribute__((unused)) void jd_other(struct jd_buf *j, uint32_t id, uint32_t n)
{
	jd_u32(j, id);
	jd_u32(j, SP_JITDUMP_REC_HDR + n);
	jd_u64(j, 9);
	for (uint32_t i = 0; i < n; i++)
		jd_put(j, "\x55", 1);
}

#endif /* SPANPROF_TESTS_JITDUMP_BUILD_H */
