// SPDX-License-Identifier: MIT
/*
 * symbolize.c - resolve every location of a profile in place.
 *
 * Contract: see symbolize.h.  The profile's location array is only
 * written (never grown), so no pointer into it goes stale; strings and
 * functions are appended through the profile's own dedup calls.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "host_frames.h"
#include "symbolize.h"

static int32_t intern_or_zero(struct sp_profile *p, const char *s)
{
	if (!s || !*s)
		return 0;
	return sp_profile__intern(p, s);
}

int sp_symbolize__fill_location(struct sp_profile *p, struct sp_location *loc,
				const struct sp_frames *fr)
{
	uint8_t n = fr->n < SP_MAX_INLINE ? fr->n : SP_MAX_INLINE;
	struct sp_line lines[SP_MAX_INLINE];

	for (uint8_t i = 0; i < n; i++) {
		const struct sp_frame *f = &fr->f[i];
		struct sp_function fn = { 0 };
		int32_t idx;

		idx = intern_or_zero(p, f->function ? f->function : "??");
		if (idx < 0)
			return idx;
		fn.name = idx;
		idx = intern_or_zero(p, f->linkage);
		if (idx < 0)
			return idx;
		fn.system_name = idx;
		idx = intern_or_zero(p, f->file);
		if (idx < 0)
			return idx;
		fn.filename = idx;
		fn.start_line = f->decl_line;
		idx = sp_profile__add_function(p, &fn);
		if (idx < 0)
			return idx;
		lines[i] = (struct sp_line){
			.function = idx, .line = f->line, .column = f->column,
		};
	}
	memcpy(loc->lines, lines, n * sizeof(lines[0]));
	loc->n_lines = n;
	return 0;
}

int sp_symbolize__profile(struct sp_resolver *r, struct sp_profile *p,
			  struct sp_symbolize_stats *st)
{
	return sp_symbolize__profile_ks(r, NULL, p, st);
}

int sp_symbolize__profile_ks(struct sp_resolver *r, struct sp_ksyms_set *ks,
			     struct sp_profile *p,
			     struct sp_symbolize_stats *st)
{
	struct sp_symbolize_sources src = { .resolver = r, .ksyms = ks };

	return sp_symbolize__run(&src, p, st);
}

int sp_symbolize__run(const struct sp_symbolize_sources *src, struct sp_profile *p,
		      struct sp_symbolize_stats *st)
{
	struct sp_host_frames_cache hc;
	struct sp_resolver *r = src->resolver;
	struct sp_frames fr;
	int err = 0;

	sp_host_frames__cache_init(&hc);
	memset(st, 0, sizeof(*st));
	for (uint32_t i = 1; i < p->n_locations; i++) {
		struct sp_location *loc = &p->locations[i];
		struct sp_mapping *m;
		const char *id, *hint;
		uint64_t off;
		int rc;

		st->locations++;
		if (loc->n_lines) {
			st->already++;
			continue;
		}
		st->unresolved++;	/* undone below on success */
		rc = sp_host_frames__location(src, p, loc, &hc, st);
		if (rc < 0) {
			err = rc;
			goto out;
		}
		if (rc == 0) {
			st->unresolved--;
			st->resolved++;
		}
		if (rc != SP_HOST_FRAMES_NOT_MINE)
			continue;
		if (!r) {
			st->unresolved_other++;
			continue;
		}
		if (loc->mapping <= 0 || (uint32_t)loc->mapping >= p->n_mappings) {
			st->unresolved_no_mapping++;
			continue;
		}
		m = &p->mappings[loc->mapping];
		id = sp_profile__str(p, m->build_id);
		if (!*id) {
			st->unresolved_no_build_id++;
			continue;
		}
		if (sp_buildid__validate(id) && sp_buildid__validate_go(id)) {
			st->unresolved_bad_build_id++;
			continue;
		}
		if (loc->address < m->memory_start ||
		    (m->memory_limit && loc->address >= m->memory_limit)) {
			st->unresolved_out_of_range++;
			continue;
		}
		off = loc->address - m->memory_start + m->file_offset;
		hint = sp_profile__str(p, m->filename);
		rc = sp_resolver__resolve(r, id, *hint ? hint : NULL, off, &fr);
		if (rc == -ENOMEM) {
			err = rc;
			goto out;
		}
		if (rc == -ENOENT) {
			st->unresolved_not_found++;
			continue;
		}
		if (rc) {
			st->unresolved_other++;
			continue;
		}
		err = sp_symbolize__fill_location(p, loc, &fr);
		if (err)
			goto out;
		/* p->mappings cannot move: nothing here adds mappings */
		m = &p->mappings[loc->mapping];
		st->unresolved--;
		st->resolved++;
		st->inline_frames += loc->n_lines ? loc->n_lines - 1u : 0;
		m->has_functions = true;
		if (fr.source == SP_RES_DWARF) {
			st->resolved_dwarf++;
			m->has_inline_frames = true;
		} else if (fr.source == SP_RES_GOPCLNTAB) {
			st->resolved_gopclntab++;
			m->has_inline_frames = true;
		} else {
			st->resolved_symtab++;
		}
		for (uint8_t k = 0; k < loc->n_lines; k++) {
			if (fr.f[k].file)
				m->has_filenames = true;
			if (fr.f[k].line > 0)
				m->has_line_numbers = true;
		}
	}
out:
	sp_host_frames__cache_release(&hc);
	return err;
}
