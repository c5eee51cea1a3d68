// SPDX-License-Identifier: MIT
/*
 * test_store.c - the receiving end of host-symbol uploads
 * (src/symbolizer/store.h), with real envelopes (base/symstore.h) and real
 * pieces (base/jit_piece.h): a JIT piece, a kernel snapshot and this
 * process's vDSO image stored under their keys; a duplicate not written twice; every refusal counted
 * by reason (malformed envelope, unknown kind, a payload that is not what
 * its key says, too large, no room); the disk budget kept by evicting the
 * oldest JIT pieces (counted) and never a kernel snapshot; a store
 * reopened counts what is on disk.
 */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "testutil.h"

#include "base/jit_piece.h"
#include "base/hex.h"
#include "base/symstore.h"
#include "collector/host/vdso.h"
#include "symbolizer/store.h"

#define KID "0123456789abcdef0123456789abcdef01234567"
static const uint8_t kid_bin[20] = { 0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0x01, 0x23,
				     0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0x01, 0x23, 0x45, 0x67 };

static char store_dir[PATH_MAX];

static struct sp_store *open_store(uint64_t max_bytes)
{
	struct sp_store_opts o = { .dir = store_dir, .max_bytes = max_bytes };
	struct sp_store *s = NULL;
	char err[256] = "";

	assert_int_equal(sp_store__open(&o, &s, err, sizeof(err)), 0);
	return s;
}

/* The upload of one JIT piece holding text; its id in *id. */
static uint8_t *piece_upload(const char *text, struct sp_jit_id *id, size_t *len)
{
	struct sp_jit_id zero = { { 0 } };
	uint8_t *piece = NULL, *body = NULL;
	size_t plen = 0;

	assert_int_equal(sp_jit_piece__encode(SP_JIT_PERF_MAP, 42, &zero, 0, (const uint8_t *)text,
					      strlen(text), &piece, &plen, id), 0);
	assert_int_equal(sp_symstore__upload_encode(SP_SYMSTORE_JIT, id->b, SP_JIT_ID_LEN, piece,
						    plen, &body, len), 0);
	free(piece);
	return body;
}

static int put(struct sp_store *s, uint8_t *body, size_t len)
{
	char why[160] = "";
	int r = sp_store__put(s, body, len, why, sizeof(why));

	if (r < 0)
		assert_true(why[0] != '\0');	/* every refusal says why */
	free(body);
	return r;
}

static bool piece_on_disk(const struct sp_jit_id *id)
{
	char hex[SP_JIT_ID_HEX + 1], path[PATH_MAX];

	sp_jit_id__hex(id, hex);
	assert_int_equal(sp_symstore__path(store_dir, SP_SYMSTORE_JIT, hex, path, sizeof(path)), 0);
	return access(path, F_OK) == 0;
}

static void test_store_and_refuse(void **state)
{
	static const char snap[] = "# spanprof-kallsyms v1 build-id=" KID "\n"
				   "ffffffff81000000 T _text\nffffffff81000100 T fn\n";
	struct sp_store_stats st;
	struct sp_store *s;
	struct sp_jit_id a, b;
	uint8_t *body, junk[64] = { 0 };
	size_t len;

	(void)state;
	tu_path(store_dir, sizeof(store_dir), "store1");
	assert_int_equal(mkdir(store_dir, 0755), 0);
	s = open_store(0);

	body = piece_upload("1000 10 a\n", &a, &len);
	assert_int_equal(put(s, body, len), 0);
	assert_true(piece_on_disk(&a));
	body = piece_upload("1000 10 a\n", &a, &len);
	assert_int_equal(put(s, body, len), 1);		/* content-addressed */

	/* a piece uploaded under another piece's id */
	body = piece_upload("2000 10 b\n", &b, &len);
	body[SP_SYMSTORE_UPLOAD_HDR] ^= 1;			/* the key's first byte */
	assert_int_equal(put(s, body, len), -EINVAL);

	/* not an envelope; an unknown kind */
	memcpy(junk, "SPSYMUP0", 8);
	assert_int_equal(sp_store__put(s, junk, sizeof(junk), NULL, 0), -EINVAL);
	assert_int_equal(sp_symstore__upload_encode(3, kid_bin, 20, snap, strlen(snap), &body,
						    &len), 0);
	body[8] = 9;
	assert_int_equal(put(s, body, len), -EINVAL);

	/* a kernel snapshot under its build id, and under another */
	assert_int_equal(sp_symstore__upload_encode(SP_SYMSTORE_KALLSYMS, kid_bin, 20, snap,
						    strlen(snap), &body, &len), 0);
	assert_int_equal(put(s, body, len), 0);
	{
		uint8_t other[20];

		memcpy(other, kid_bin, 20);
		other[19] ^= 0xff;
		assert_int_equal(sp_symstore__upload_encode(SP_SYMSTORE_KALLSYMS, other, 20, snap,
							    strlen(snap), &body, &len), 0);
		assert_int_equal(put(s, body, len), -EINVAL);
		/* a profile's subset (what record writes) under its own build id:
		 * it would stand for the whole kernel, refused */
		{
			char hex[41], sub[256], why[160] = "";

			sp_hex__encode(other, 20, hex);
			snprintf(sub, sizeof(sub), "# spanprof-kallsyms v1 build-id=%s scope=profile\n"
				 "ffffffff81000000 T _text\n", hex);
			assert_int_equal(sp_symstore__upload_encode(SP_SYMSTORE_KALLSYMS, other, 20,
								    sub, strlen(sub), &body, &len), 0);
			assert_int_equal(sp_store__put(s, body, len, why, sizeof(why)), -EINVAL);
			assert_non_null(strstr(why, "subset"));
			free(body);
		}
	}
	/* the vDSO this process maps, under its build id (what the agent
	 * ships), then under another */
	{
		struct sp_vdso v = { 0 };
		char path[PATH_MAX], hex[2 * SP_BUILD_ID_MAX + 1];

		assert_int_equal(sp_vdso__read(&v), 0);
		assert_int_equal(sp_symstore__upload_encode(SP_SYMSTORE_ELF, v.build_id.id,
							    v.build_id.len, v.image, v.len, &body,
							    &len), 0);
		assert_int_equal(put(s, body, len), 0);
		sp_buildid__hex(&v.build_id, hex);
		assert_int_equal(sp_symstore__path(store_dir, SP_SYMSTORE_ELF, hex, path,
						   sizeof(path)), 0);
		assert_int_equal(access(path, R_OK), 0);
		assert_int_equal(sp_symstore__upload_encode(SP_SYMSTORE_ELF, kid_bin, 20, v.image,
							    v.len, &body, &len), 0);
		assert_int_equal(put(s, body, len), -EINVAL);
		sp_vdso__release(&v);
	}
	/* an ELF image that is not one */
	assert_int_equal(sp_symstore__upload_encode(SP_SYMSTORE_ELF, kid_bin, 20, "not elf", 7,
						    &body, &len), 0);
	assert_int_equal(put(s, body, len), -EINVAL);

	/* too large */
	{
		size_t big = SP_STORE_MAX_PAYLOAD + 1;
		uint8_t *p = calloc(1, big);

		assert_non_null(p);
		assert_int_equal(sp_symstore__upload_encode(SP_SYMSTORE_KALLSYMS, kid_bin, 20, p, big,
							    &body, &len), 0);
		free(p);
		assert_int_equal(put(s, body, len), -E2BIG);
	}

	sp_store__stats(s, &st);
	assert_int_equal(st.uploads, 12);
	assert_int_equal(st.stored[SP_SYMSTORE_JIT], 1);
	assert_int_equal(st.stored[SP_SYMSTORE_KALLSYMS], 1);
	assert_int_equal(st.stored[SP_SYMSTORE_ELF], 1);
	assert_int_equal(st.duplicates, 1);
	assert_int_equal(st.refused_mismatch, 3);	/* the piece, snapshot, vDSO */
	assert_int_equal(st.refused_malformed, 4);	/* envelope, kind, not ELF, subset */
	assert_int_equal(st.refused_too_big, 1);
	assert_int_equal(st.files, 3);
	sp_store__free(s);
	sp_store__free(NULL);
}

static void test_budget(void **state)
{
	static const char snap[] = "# spanprof-kallsyms v1 build-id=" KID "\n"
				   "ffffffff81000000 T _text\n";
	struct sp_jit_id ids[4];
	struct sp_store_stats st;
	struct sp_store *s;
	uint8_t *body;
	size_t len, one;
	char text[64];

	(void)state;
	tu_path(store_dir, sizeof(store_dir), "store2");
	assert_int_equal(mkdir(store_dir, 0755), 0);
	/* room for the snapshot and three pieces of this size */
	body = piece_upload("1000 10 p0\n", &ids[0], &one);
	free(body);
	one -= SP_SYMSTORE_UPLOAD_HDR + SP_JIT_ID_LEN;	/* the stored piece */
	s = open_store(strlen(snap) + 3 * one);
	assert_int_equal(sp_symstore__upload_encode(SP_SYMSTORE_KALLSYMS, kid_bin, 20, snap,
						    strlen(snap), &body, &len), 0);
	assert_int_equal(put(s, body, len), 0);
	for (int i = 0; i < 4; i++) {
		snprintf(text, sizeof(text), "1000 10 p%d\n", i);
		body = piece_upload(text, &ids[i], &len);
		assert_int_equal(put(s, body, len), 0);
	}
	/* the fourth evicted the oldest piece, never the snapshot */
	assert_false(piece_on_disk(&ids[0]));
	for (int i = 1; i < 4; i++)
		assert_true(piece_on_disk(&ids[i]));
	sp_store__stats(s, &st);
	assert_int_equal(st.evicted, 1);
	assert_int_equal(st.files, 4);
	assert_true(st.bytes <= st.max_bytes);
	/* a blob larger than the whole budget: every piece goes, still no room */
	{
		char big[512];

		memset(big, 'x', sizeof(big));
		assert_int_equal(sp_symstore__upload_encode(SP_SYMSTORE_JIT, ids[0].b, SP_JIT_ID_LEN,
							    big, sizeof(big), &body, &len), 0);
		/* a malformed piece is refused before any eviction */
		assert_int_equal(put(s, body, len), -EINVAL);
	}
	{
		struct sp_jit_id zero = { { 0 } }, id;
		uint8_t data[400], *piece = NULL;
		size_t plen = 0;

		memset(data, 'y', sizeof(data));
		data[sizeof(data) - 1] = '\n';
		assert_int_equal(sp_jit_piece__encode(SP_JIT_PERF_MAP, 1, &zero, 0, data,
						      sizeof(data), &piece, &plen, &id), 0);
		assert_int_equal(sp_symstore__upload_encode(SP_SYMSTORE_JIT, id.b, SP_JIT_ID_LEN,
							    piece, plen, &body, &len), 0);
		free(piece);
		assert_int_equal(put(s, body, len), -ENOSPC);
	}
	sp_store__stats(s, &st);
	assert_int_equal(st.refused_full, 1);
	assert_int_equal(st.evicted, 4);
	assert_int_equal(st.files, 1);			/* the snapshot */
	sp_store__free(s);

	/* reopened: what is on disk is counted */
	s = open_store(0);
	sp_store__stats(s, &st);
	assert_int_equal(st.files, 1);
	assert_int_equal(st.bytes, strlen(snap));
	sp_store__free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_store_and_refuse),
		cmocka_unit_test(test_budget),
	};

	return cmocka_run_group_tests_name("store", tests, tu_setup_dir, tu_teardown_dir);
}
