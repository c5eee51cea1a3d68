// SPDX-License-Identifier: MIT
/*
 * gopcln_src.c - .gopclntab answers for the resolver.  Contract: see
 * gopcln_src.h.
 */
#include <errno.h>
#include <string.h>

#include "base/gopclntab.h"
#include "gopcln_src.h"

/* The chain in the shape every source gives (linesrc.h): inlined callees
 * first, the real function last (sp_gopcln__resolve keeps it when the
 * chain is cut to SP_RES_MAX_FRAMES). */
static int gopcln_lookup(void *src, uint64_t a, struct sp_frames *out)
{
	struct sp_gopcln_frame gf[SP_RES_MAX_FRAMES];
	uint32_t n = 0;

	memset(out, 0, offsetof(struct sp_frames, f));
	if (sp_gopcln__resolve(src, a, gf, SP_RES_MAX_FRAMES, &n, NULL) || !n)
		return -ENOENT;
	for (uint32_t i = 0; i < n; i++)
		out->f[i] = (struct sp_frame){
			.function = gf[i].function, .linkage = gf[i].function,
			.file = gf[i].file, .line = gf[i].line,
		};
	out->n = (uint8_t)n;
	out->source = SP_RES_GOPCLNTAB;
	return 0;
}

static size_t gopcln_bytes(const void *src)
{
	(void)src;
	return 0;	/* read in place: nothing decoded to give back */
}

static void gopcln_free(void *src)
{
	sp_gopcln__free(src);
}

const struct sp_linesrc_ops sp_gopcln_linesrc = {
	.name = "gopclntab",
	.source = SP_RES_GOPCLNTAB,
	.symtab_names = false,
	.lookup = gopcln_lookup,
	.bytes = gopcln_bytes,
	.free = gopcln_free,
};

int sp_gopcln_src__open(Elf *elf, void **out)
{
	struct sp_gopcln *t = NULL;
	int err;

	*out = NULL;
	err = sp_gopcln__open(elf, &t);
	if (!err)
		*out = t;
	return err;
}
