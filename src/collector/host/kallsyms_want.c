// SPDX-License-Identifier: MIT
/*
 * kallsyms_want.c - the kernel addresses a profile is looked up at
 * (contract: kallsyms_want.h).  One pass over the mappings classifies
 * them, one pass over the locations collects addresses.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "collector/host/kallsyms_want.h"

enum { KW_NONE, KW_IMAGE, KW_RUNTIME, KW_MODULE };

/* The index in mods of the module with this build id (hex), or -1. */
static long module_of(const struct sp_kmod *mods, size_t n_mods, const char *id)
{
	char hex[2 * SP_BUILD_ID_MAX + 1];

	for (size_t i = 0; *id && i < n_mods; i++) {
		if (!mods[i].build_id.len)
			continue;
		sp_buildid__hex(&mods[i].build_id, hex);
		if (!strcmp(hex, id))
			return (long)i;
	}
	return -1;
}

int sp_kallsyms_want__of_profile(const struct sp_profile *p, const struct sp_kmod *mods,
				 size_t n_mods, struct sp_kallsyms_want *w)
{
	uint8_t *kind = NULL;
	long *mod = NULL;
	const struct sp_ksect **sect = NULL;
	bool *used = NULL;
	int rc = -ENOMEM;

	memset(w, 0, sizeof(*w));
	if (!p || !p->n_mappings || !p->n_locations)
		return 0;
	kind = calloc(p->n_mappings, sizeof(*kind));
	mod = calloc(p->n_mappings, sizeof(*mod));
	sect = calloc(p->n_mappings, sizeof(*sect));
	used = calloc(n_mods ? n_mods : 1, sizeof(*used));
	w->addrs = malloc(p->n_locations * sizeof(*w->addrs));
	w->text_offs = malloc(p->n_locations * sizeof(*w->text_offs));
	if (!kind || !mod || !sect || !used || !w->addrs || !w->text_offs)
		goto out;
	for (uint32_t i = 1; i < p->n_mappings; i++) {
		const struct sp_mapping *m = &p->mappings[i];
		const char *fn = sp_profile__str(p, m->filename), *mn, *sn;
		char sname[SP_KALLSYMS_SECTION_NAME_MAX];
		size_t ml, sl;

		if (!strcmp(fn, SP_KALLSYMS_FN_KERNEL)) {
			kind[i] = m->memory_start > SP_KALLSYMS_LEGACY_START ? KW_IMAGE
									     : KW_RUNTIME;
		} else if (!strcmp(fn, SP_KALLSYMS_FN_BOOT)) {
			kind[i] = KW_RUNTIME;
		} else if (sp_kallsyms_format__module_fn(fn, &mn, &ml, &sn, &sl)) {
			mod[i] = module_of(mods, n_mods, sp_profile__str(p, m->build_id));
			kind[i] = mod[i] >= 0 ? KW_MODULE : KW_NONE;
			if (mod[i] >= 0 && (sl != 5 || memcmp(sn, ".text", 5))) {
				memcpy(sname, sn, sl);
				sname[sl] = '\0';
				sect[i] = sp_kmod__section(&mods[mod[i]], sname);
				kind[i] = sect[i] ? KW_MODULE : KW_NONE;
			}
		}
	}
	for (uint32_t i = 1; i < p->n_locations; i++) {
		const struct sp_location *l = &p->locations[i];
		const struct sp_kmod *km;
		uint64_t base, size;

		if (l->frame_kind != SP_FRAME_KERNEL || l->mapping <= 0 ||
		    (uint32_t)l->mapping >= p->n_mappings)
			continue;
		switch (kind[l->mapping]) {
		case KW_IMAGE:
			if (l->address >= p->mappings[l->mapping].memory_start)
				w->text_offs[w->n_text_offs++] =
					l->address - p->mappings[l->mapping].memory_start;
			break;
		case KW_RUNTIME:
			w->addrs[w->n_addrs++] = l->address;
			break;
		case KW_MODULE:
			km = &mods[mod[l->mapping]];
			base = sect[l->mapping] ? sect[l->mapping]->addr : km->text;
			size = sect[l->mapping] ? sect[l->mapping]->size : km->size;
			if (l->address < size && base + l->address >= base) {
				w->addrs[w->n_addrs++] = base + l->address;
				used[mod[l->mapping]] = true;
			}
			break;
		}
	}
	for (size_t i = 0; i < n_mods; i++)
		w->n_mods += used[i];
	if (w->n_mods && !(w->mods = malloc(w->n_mods * sizeof(*w->mods))))
		goto out;
	w->n_mods = 0;
	for (size_t i = 0; i < n_mods; i++)
		if (used[i])
			w->mods[w->n_mods++] = mods[i];
	rc = 0;
out:
	if (rc)
		sp_kallsyms_want__release(w);
	free(used);
	free(sect);
	free(mod);
	free(kind);
	return rc;
}

bool sp_kallsyms_want__empty(const struct sp_kallsyms_want *w)
{
	return !w->n_addrs && !w->n_text_offs;
}

void sp_kallsyms_want__release(struct sp_kallsyms_want *w)
{
	if (!w)
		return;
	free(w->addrs);
	free(w->text_offs);
	free(w->mods);
	memset(w, 0, sizeof(*w));
}
