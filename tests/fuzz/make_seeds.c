/*
 * make_seeds.c - writes seed inputs for the fuzz targets that want valid
 * structure to start from: a small profile encoded as pprof and as OTLP,
 * and its gzip; .eh_frame sections with every rule kind the unwinder
 * follows (fuzz_cfi).  Usage: make_seeds DIR (creates DIR/<target>/seed-*).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "profile/codec.h"
#include "base/jit_piece.h"
#include "base/symstore.h"
#include "profile/profile.h"
#include "../unit/cfi_elf.h"

/* An .eh_frame with a prologue, the PLT expression, an undefined return
 * address, a realigned frame (CFA in r10, then *(rbp - 8)), a return
 * address in a register, and a signal frame. */
static int cfi_seed(const char *dir, int (*put)(const char *, const char *, const char *,
						 const uint8_t *, size_t))
{
	static const uint8_t pro[] = { 0x41, 0x0e, 0x10, 0x86, 0x02, 0x43, 0x0d, 0x06 };
	static const uint8_t plt[] = {
		0x0e, 0x10, 0x46, 0x0f, 0x0b, 0x77, 0x08, 0x80, 0x00, 0x3f, 0x1a, 0x3b, 0x2a, 0x33,
		0x24, 0x22,
	};
	static const uint8_t stop[] = { 0x07, 0x10 };
	static const uint8_t realign[] = {
		0x0c, 0x0a, 0x00, 0x44, 0x0f, 0x03, 0x76, 0x78, 0x06, 0x10, 0x06, 0x02, 0x76, 0x00,
	};
	static const uint8_t ra_reg[] = { 0x09, 0x10, 0x05 };
	static struct cfi_buf eh;
	size_t cie, sig;

	cie = cfi_cie(&eh, "zR", CFI_CIE_INS, sizeof(CFI_CIE_INS));
	sig = cfi_cie(&eh, "zRS", CFI_CIE_INS, sizeof(CFI_CIE_INS));
	cfi_fde(&eh, cie, CFI_TEXT, 0x40, pro, sizeof(pro));
	cfi_fde(&eh, cie, CFI_TEXT + 0x40, 0x10, plt, sizeof(plt));
	cfi_fde(&eh, cie, CFI_TEXT + 0x50, 0x10, stop, sizeof(stop));
	cfi_fde(&eh, cie, CFI_TEXT + 0x60, 0x20, realign, sizeof(realign));
	cfi_fde(&eh, cie, CFI_TEXT + 0x80, 0x10, ra_reg, sizeof(ra_reg));
	cfi_fde(&eh, sig, CFI_TEXT + 0x91, 0x09, NULL, 0);
	cfi_end(&eh);
	return put(dir, "fuzz_cfi", "seed-eh-frame", eh.b, eh.n);
}

static int put(const char *dir, const char *target, const char *name,
	       const uint8_t *buf, size_t len)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, target);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%s/%s", dir, target, name);
	f = fopen(path, "wb");
	if (!f || fwrite(buf, 1, len, f) != len) {
		perror(path);
		return 1;
	}
	return fclose(f) != 0;
}

int main(int argc, char **argv)
{
	struct sp_profile *p = sp_profile__new();
	uint8_t tid[16] = { 1, 2, 3 }, sid[8] = { 4, 5, 6 };
	uint8_t *pb = NULL, *ot = NULL, *gz = NULL;
	size_t pb_len, ot_len, gz_len;
	struct sp_mapping m = { 0 };
	struct sp_location l = { 0 };
	struct sp_function fn = { 0 };
	struct sp_resource r = { .pid = 42 };
	struct sp_sample s = { 0 };
	uint64_t ts[2] = { 1000, 2000 };
	int32_t locs[2];
	int rc = 0;

	if (argc != 2 || !p)
		return 2;
	mkdir(argv[1], 0755);
	m.memory_start = 0x400000;
	m.memory_limit = 0x500000;
	m.filename = sp_profile__intern(p, "/usr/bin/app");
	m.build_id = sp_profile__intern(p, "0123456789abcdef0123456789abcdef01234567");
	l.mapping = sp_profile__add_mapping(p, &m);
	fn.name = sp_profile__intern(p, "main");
	fn.filename = sp_profile__intern(p, "app.c");
	l.address = 0x401000;
	l.n_lines = 1;
	l.lines[0].function = sp_profile__add_function(p, &fn);
	l.lines[0].line = 12;
	locs[0] = sp_profile__add_location(p, &l);
	l.address = 0x401100;
	l.n_lines = 0;
	locs[1] = sp_profile__add_location(p, &l);
	r.service_name = sp_profile__intern(p, "svc");
	s.resource = sp_profile__add_resource(p, &r);
	s.stack = sp_profile__add_stack(p, locs, 2);
	s.link = sp_profile__add_link(p, tid, sid);
	s.tid = 43;
	s.thread_name = sp_profile__intern(p, "worker");
	s.count = 2;
	s.value_ns = 20000000;
	s.n_timestamps = 2;
	s.timestamps = ts;
	sp_profile__add_sample(p, &s);
	p->period_ns[SP_KIND_ONCPU] = 10000000;
	if (sp_pprof__encode(p, &pb, &pb_len) || sp_otlp__encode(p, &ot, &ot_len) ||
	    sp_gzip(pb, pb_len, &gz, &gz_len)) {
		fprintf(stderr, "make_seeds: encoding failed\n");
		return 1;
	}
	rc |= put(argv[1], "fuzz_pprof_decode", "seed-1", pb, pb_len);
	rc |= put(argv[1], "fuzz_otlp_decode", "seed-1", ot, ot_len);
	rc |= put(argv[1], "fuzz_gunzip", "seed-1", gz, gz_len);
	rc |= cfi_seed(argv[1], put);
	free(pb);
	free(ot);
	free(gz);
	sp_profile__free(p);
	{
		/* a JIT piece with a parent, and the upload envelope around it */
		static const char map[] = "7f213afc66c0 180 JS:*fib /srv/app/load.js:1:13\n";
		struct sp_jit_id parent = { .b = { 7, 7, 7 } }, id;
		uint8_t *pc = NULL, *env = NULL;
		size_t pc_len, env_len;

		if (sp_jit_piece__encode(SP_JIT_PERF_MAP, 42, &parent, 4096,
					 (const uint8_t *)map, sizeof(map) - 1, &pc, &pc_len, &id) ||
		    sp_symstore__upload_encode(SP_SYMSTORE_JIT, id.b, SP_JIT_ID_LEN, pc, pc_len,
					       &env, &env_len)) {
			fprintf(stderr, "make_seeds: encoding the JIT piece failed\n");
			return 1;
		}
		rc |= put(argv[1], "fuzz_jit_piece", "piece-1", pc, pc_len);
		rc |= put(argv[1], "fuzz_jit_piece", "upload-1", env, env_len);
		free(pc);
		free(env);
	}
	return rc;
}
