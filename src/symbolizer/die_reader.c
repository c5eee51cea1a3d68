// SPDX-License-Identifier: MIT
/*
 * die_reader.c - see die_reader.h.
 *
 * Byte layouts read here (little-endian; DWARF 5 sections 7.5, 7.21, 2.17):
 *   unit header  unit_length 4 (or 0xffffffff + 8: 64-bit, offsets 8),
 *                version 2; v5: unit_type 1, address_size 1, abbrev offset;
 *                v2-4: abbrev offset, address_size 1.  Only compile and
 *                partial units (v5 unit types 1 and 3).
 *   abbrevs      code uleb (0 ends), tag uleb, children 1, then (attribute
 *                uleb, form uleb[, implicit value sleb]) pairs ending (0, 0)
 *   a DIE        abbreviation code uleb (0: a null entry), then the values
 *                of the abbreviation's attributes in order
 *   rnglists     entries of a kind byte: 0 end, 1 base_addressx (uleb),
 *                2 startx_endx (uleb, uleb), 3 startx_length (uleb, uleb),
 *                4 offset_pair (uleb, uleb), 5 base_address (addr),
 *                6 start_end (addr, addr), 7 start_length (addr, uleb)
 *   ranges (v2-4) pairs of addresses: (0, 0) ends, (max, x) sets the base
 *   .debug_addr  addresses of address_size from addr_base, by index
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <dwarf.h>

#include "byte_reader.h"
#include "die_reader.h"

struct sp_die_attr {
	uint16_t name, form;
	int8_t size;		/* bytes of the value, -1 when not fixed */
	bool wanted;		/* one the walker reads (sp_die__read) */
	int64_t implicit;
};

struct sp_die_abbrev {
	uint16_t tag;
	bool defined, children, walked;
	uint32_t first, n;	/* attrs[first .. first + n) */
	int32_t fixed;		/* bytes of all values when each form has a
				 * fixed size, else -1 */
	int32_t sibling;	/* index of DW_AT_sibling among them, -1 none */
};

/* ------------------------------------------------------------ reading */

/* ------------------------------------------------------------ forms */

/* Bytes of a value of form, -1 when it has no fixed size, -2 when the form
 * is not one this reader knows. */
static int form_size(uint16_t form, const struct sp_die_unit *u)
{
	switch (form) {
	case DW_FORM_flag_present:
	case DW_FORM_implicit_const:
		return 0;
	case DW_FORM_data1:
	case DW_FORM_ref1:
	case DW_FORM_flag:
	case DW_FORM_strx1:
	case DW_FORM_addrx1:
		return 1;
	case DW_FORM_data2:
	case DW_FORM_ref2:
	case DW_FORM_strx2:
	case DW_FORM_addrx2:
		return 2;
	case DW_FORM_strx3:
	case DW_FORM_addrx3:
		return 3;
	case DW_FORM_data4:
	case DW_FORM_ref4:
	case DW_FORM_ref_sup4:
	case DW_FORM_strx4:
	case DW_FORM_addrx4:
		return 4;
	case DW_FORM_data8:
	case DW_FORM_ref8:
	case DW_FORM_ref_sig8:
	case DW_FORM_ref_sup8:
		return 8;
	case DW_FORM_data16:
		return 16;
	case DW_FORM_addr:
		return u->addr_size;
	case DW_FORM_ref_addr:
		return u->version <= 2 ? u->addr_size : u->offset_size;
	case DW_FORM_strp:
	case DW_FORM_line_strp:
	case DW_FORM_sec_offset:
	case DW_FORM_strp_sup:
	case DW_FORM_GNU_ref_alt:
	case DW_FORM_GNU_strp_alt:
		return u->offset_size;
	case DW_FORM_string:
	case DW_FORM_block1:
	case DW_FORM_block2:
	case DW_FORM_block4:
	case DW_FORM_block:
	case DW_FORM_exprloc:
	case DW_FORM_udata:
	case DW_FORM_sdata:
	case DW_FORM_ref_udata:
	case DW_FORM_strx:
	case DW_FORM_addrx:
	case DW_FORM_loclistx:
	case DW_FORM_rnglistx:
	case DW_FORM_indirect:
		return -1;
	default:
		return -2;
	}
}

/* A value's class, as the walker uses it. */
enum cls { C_NONE, C_CONST, C_ADDR, C_REF, C_REF_ALT, C_SECOFF, C_INDEX };

/* Skips one value whose size is not fixed (or an indirect one). */
static void skip_value(struct sp_rd *r, uint16_t form, const struct sp_die_unit *u)
{
	int sz;

	switch (form) {
	case DW_FORM_string:
		sp_rd__str(r);
		return;
	case DW_FORM_block1:
		sp_rd__skip(r, sp_rd__n(r, 1));
		return;
	case DW_FORM_block2:
		sp_rd__skip(r, sp_rd__n(r, 2));
		return;
	case DW_FORM_block4:
		sp_rd__skip(r, sp_rd__n(r, 4));
		return;
	case DW_FORM_block:
	case DW_FORM_exprloc:
		sp_rd__skip(r, sp_rd__uleb(r));
		return;
	case DW_FORM_indirect:
		form = (uint16_t)sp_rd__uleb(r);
		if (form == DW_FORM_indirect || form == DW_FORM_implicit_const) {
			r->bad = true;
			return;
		}
		sz = form_size(form, u);
		if (sz >= 0)
			sp_rd__skip(r, (uint64_t)sz);
		else if (sz == -1)
			skip_value(r, form, u);
		else
			r->bad = true;
		return;
	default:		/* the leb128 forms */
		sp_rd__uleb(r);
		return;
	}
}

/* Reads (or skips) one value of form; *v and the class for the ones the
 * walker may ask for.  -EINVAL on an unknown form or a bad read. */
static int read_value(const struct sp_die_sections *s, const struct sp_die_unit *u,
		      struct sp_rd *r, uint16_t form, int64_t implicit, uint64_t *v, enum cls *c)
{
	int depth = 0;

	*v = 0;
	*c = C_NONE;
again:
	switch (form) {
	case DW_FORM_indirect:
		if (++depth > 4)
			return -EINVAL;
		form = (uint16_t)sp_rd__uleb(r);
		goto again;
	case DW_FORM_implicit_const:
		*v = (uint64_t)implicit;
		*c = C_CONST;
		break;
	case DW_FORM_data1:
	case DW_FORM_data2:
	case DW_FORM_data4:
	case DW_FORM_data8:
		*v = sp_rd__n(r, (unsigned)form_size(form, u));
		*c = C_CONST;
		break;
	case DW_FORM_udata:
		*v = sp_rd__uleb(r);
		*c = C_CONST;
		break;
	case DW_FORM_sdata:
		*v = (uint64_t)sp_rd__sleb(r);
		*c = C_CONST;
		break;
	case DW_FORM_addr:
		*v = sp_rd__n(r, u->addr_size);
		*c = C_ADDR;
		break;
	case DW_FORM_addrx:
	case DW_FORM_addrx1:
	case DW_FORM_addrx2:
	case DW_FORM_addrx3:
	case DW_FORM_addrx4: {
		uint64_t idx = form == DW_FORM_addrx ? sp_rd__uleb(r) :
			       sp_rd__n(r, (unsigned)form_size(form, u));
		uint64_t at = u->addr_base + idx * u->addr_size;

		if (!s->addr || idx > s->addr_len || at + u->addr_size > s->addr_len ||
		    at < u->addr_base)
			return -EINVAL;
		*v = 0;
		for (unsigned i = 0; i < u->addr_size; i++)
			*v |= (uint64_t)s->addr[at + i] << (8 * i);
		*c = C_ADDR;
		break;
	}
	case DW_FORM_ref1:
	case DW_FORM_ref2:
	case DW_FORM_ref4:
	case DW_FORM_ref8:
		*v = u->off + sp_rd__n(r, (unsigned)form_size(form, u));
		*c = C_REF;
		break;
	case DW_FORM_ref_udata:
		*v = u->off + sp_rd__uleb(r);
		*c = C_REF;
		break;
	case DW_FORM_ref_addr:
		*v = sp_rd__n(r, (unsigned)form_size(form, u));
		*c = C_REF;
		break;
	case DW_FORM_GNU_ref_alt:
		*v = sp_rd__n(r, u->offset_size);
		*c = C_REF_ALT;
		break;
	case DW_FORM_sec_offset:
		*v = sp_rd__n(r, u->offset_size);
		*c = C_SECOFF;
		break;
	case DW_FORM_rnglistx:
	case DW_FORM_loclistx:
		*v = sp_rd__uleb(r);
		*c = C_INDEX;
		break;
	case DW_FORM_string:
	case DW_FORM_block1:
	case DW_FORM_block2:
	case DW_FORM_block4:
	case DW_FORM_block:
	case DW_FORM_exprloc:
	case DW_FORM_strx:
		skip_value(r, form, u);
		break;
	default: {
		int sz = form_size(form, u);

		if (sz < 0)
			return -EINVAL;
		sp_rd__skip(r, (uint64_t)sz);
		break;
	}
	}
	return r->bad ? -EINVAL : 0;
}

static bool walked_tag(uint16_t tag)
{
	return tag == DW_TAG_inlined_subroutine || tag == DW_TAG_lexical_block ||
	       tag == DW_TAG_try_block || tag == DW_TAG_catch_block ||
	       tag == DW_TAG_subprogram || tag == DW_TAG_compile_unit ||
	       tag == DW_TAG_partial_unit;
}

static bool wanted_attr(uint16_t name)
{
	return name == DW_AT_sibling || name == DW_AT_low_pc || name == DW_AT_high_pc ||
	       name == DW_AT_ranges || name == DW_AT_abstract_origin ||
	       name == DW_AT_call_file || name == DW_AT_call_line || name == DW_AT_call_column;
}

/* ------------------------------------------------------------ units */

static int parse_abbrevs(const struct sp_die_sections *s, uint64_t off, struct sp_die_unit *u)
{
	struct sp_rd r;
	uint32_t cap_a = 0, cap_attr = 0, max_code = 0;

	if (!s->abbrev || off >= s->abbrev_len)
		return -EINVAL;
	r = (struct sp_rd){ s->abbrev + off, s->abbrev + s->abbrev_len, false };
	for (;;) {
		uint64_t code = sp_rd__uleb(&r), tag;
		struct sp_die_abbrev *a;
		int32_t fixed = 0;

		if (r.bad)
			return -EINVAL;
		if (!code)
			return 0;
		/* codes are small and dense in practice; a sparse table is
		 * left to libdw */
		if (code > 65536)
			return -EINVAL;
		if (code >= cap_a) {
			uint32_t nc = cap_a ? cap_a : 64;
			struct sp_die_abbrev *na;

			while (nc <= code)
				nc *= 2;
			na = realloc(u->abbrevs, (size_t)nc * sizeof(*na));
			if (!na)
				return -ENOMEM;
			memset(na + cap_a, 0, (size_t)(nc - cap_a) * sizeof(*na));
			u->abbrevs = na;
			cap_a = nc;
		}
		a = &u->abbrevs[code];
		if (a->defined)
			return -EINVAL;
		tag = sp_rd__uleb(&r);
		a->tag = tag > 0xffff ? 0xffff : (uint16_t)tag;
		a->children = sp_rd__n(&r, 1) != 0;
		a->walked = walked_tag(a->tag);
		a->sibling = -1;
		a->first = u->n_attrs;
		for (;;) {
			uint64_t name = sp_rd__uleb(&r), form = sp_rd__uleb(&r);
			int64_t imp = 0;
			int sz;

			if (r.bad)
				return -EINVAL;
			if (!name && !form)
				break;
			if (form == DW_FORM_implicit_const)
				imp = sp_rd__sleb(&r);
			if (u->n_attrs >= cap_attr) {
				uint32_t nc = cap_attr ? cap_attr * 2 : 256;
				struct sp_die_attr *na;

				if (nc > (1u << 24))
					return -EINVAL;
				na = realloc(u->attrs, (size_t)nc * sizeof(*na));
				if (!na)
					return -ENOMEM;
				u->attrs = na;
				cap_attr = nc;
			}
			sz = form_size(form > 0xffff ? 0xffff : (uint16_t)form, u);
			if (sz == -2)
				return -EINVAL;
			if (name == DW_AT_sibling)
				a->sibling = (int32_t)(u->n_attrs - a->first);
			u->attrs[u->n_attrs++] = (struct sp_die_attr){
				.name = name > 0xffff ? 0xffff : (uint16_t)name,
				.form = (uint16_t)form, .size = (int8_t)sz,
				.wanted = wanted_attr((uint16_t)name), .implicit = imp };
			fixed = sz < 0 || fixed < 0 ? -1 : fixed + sz;
		}
		a->n = u->n_attrs - a->first;
		a->fixed = fixed;
		a->defined = true;
		if (code > max_code)
			max_code = (uint32_t)code;
		u->n_abbrevs = max_code;
	}
}

int sp_die_unit__open(const struct sp_die_sections *s, uint64_t unit_off,
		      struct sp_die_unit *u)
{
	struct sp_rd r;
	uint64_t len, abbrev_off;
	struct sp_die cu;
	int err;

	memset(u, 0, sizeof(*u));
	if (!s->info || unit_off >= s->info_len)
		return -EINVAL;
	r = (struct sp_rd){ s->info + unit_off, s->info + s->info_len, false };
	len = sp_rd__n(&r, 4);
	u->offset_size = 4;
	if (len == 0xffffffffu) {
		len = sp_rd__n(&r, 8);
		u->offset_size = 8;
	} else if (len >= 0xfffffff0u) {
		return -EINVAL;
	}
	if (r.bad || len > (uint64_t)(r.end - r.p))
		return -EINVAL;
	u->off = unit_off;
	u->end = (uint64_t)(r.p - s->info) + len;
	r.end = s->info + u->end;
	u->version = (uint16_t)sp_rd__n(&r, 2);
	if (u->version < 2 || u->version > 5)
		return -EINVAL;
	if (u->version >= 5) {
		uint8_t type = (uint8_t)sp_rd__n(&r, 1);

		if (type != DW_UT_compile && type != DW_UT_partial)
			return -EINVAL;
		u->addr_size = (uint8_t)sp_rd__n(&r, 1);
		abbrev_off = sp_rd__n(&r, u->offset_size);
	} else {
		abbrev_off = sp_rd__n(&r, u->offset_size);
		u->addr_size = (uint8_t)sp_rd__n(&r, 1);
	}
	if (r.bad || (u->addr_size != 4 && u->addr_size != 8))
		return -EINVAL;
	u->first_die = (uint64_t)(r.p - s->info);
	err = parse_abbrevs(s, abbrev_off, u);
	if (err)
		goto fail;
	/* the bases first (an addrx low_pc needs addr_base), then low_pc */
	{
		const struct sp_die_abbrev *a;
		uint64_t code;

		r = (struct sp_rd){ s->info + u->first_die, s->info + u->end, false };
		code = sp_rd__uleb(&r);
		err = -EINVAL;
		if (r.bad || !code || code > u->n_abbrevs || !u->abbrevs[code].defined)
			goto fail;
		a = &u->abbrevs[code];
		for (uint32_t i = 0; i < a->n; i++) {
			const struct sp_die_attr *at = &u->attrs[a->first + i];
			uint64_t v;
			enum cls c;

			if (at->form == DW_FORM_addrx || (at->form >= DW_FORM_addrx1 &&
							  at->form <= DW_FORM_addrx4)) {
				/* skip it now, read it below */
				err = at->form == DW_FORM_addrx ? (sp_rd__uleb(&r), 0) :
				      (sp_rd__skip(&r, (uint64_t)form_size(at->form, u)), 0);
				if (r.bad)
					goto fail;
				continue;
			}
			err = read_value(s, u, &r, at->form, at->implicit, &v, &c);
			if (err)
				goto fail;
			if (at->name == DW_AT_addr_base && c == C_SECOFF)
				u->addr_base = v;
			else if (at->name == DW_AT_rnglists_base && c == C_SECOFF)
				u->rnglists_base = v;
		}
	}
	err = sp_die__read(s, u, u->first_die, &cu);
	if (err)
		goto fail;
	if (cu.pc)
		u->base_addr = cu.low_pc;
	return 0;
fail:
	sp_die_unit__free(u);
	return err < 0 ? err : -EINVAL;
}

size_t sp_die_unit__bytes(const struct sp_die_unit *u)
{
	return ((size_t)u->n_abbrevs + 1) * sizeof(*u->abbrevs) +
	       (size_t)u->n_attrs * sizeof(*u->attrs);
}

void sp_die_unit__free(struct sp_die_unit *u)
{
	if (!u)
		return;
	free(u->abbrevs);
	free(u->attrs);
	memset(u, 0, sizeof(*u));
}

/* ------------------------------------------------------------ DIEs */

int sp_die__read(const struct sp_die_sections *s, const struct sp_die_unit *u, uint64_t off,
		 struct sp_die *d)
{
	const struct sp_die_abbrev *a;
	struct sp_rd r;
	uint64_t code, high = 0;
	enum cls high_cls = C_NONE;

	memset(d, 0, sizeof(*d));
	if (off < u->first_die || off >= u->end)
		return -EINVAL;
	r = (struct sp_rd){ s->info + off, s->info + u->end, false };
	d->off = off;
	code = sp_rd__uleb(&r);
	if (r.bad)
		return -EINVAL;
	if (!code) {
		d->next = (uint64_t)(r.p - s->info);
		return 1;
	}
	if (code > u->n_abbrevs || !u->abbrevs[code].defined)
		return -EINVAL;
	a = &u->abbrevs[code];
	d->tag = a->tag;
	d->children = a->children;
	/* a DIE the walker does not look at: only where it ends */
	if (!a->walked) {
		if (a->fixed >= 0 && !a->children) {
			sp_rd__skip(&r, (uint64_t)a->fixed);
			if (r.bad)
				return -EINVAL;
			d->next = (uint64_t)(r.p - s->info);
			return 0;
		}
		for (uint32_t i = 0; i < a->n; i++) {
			const struct sp_die_attr *at = &u->attrs[a->first + i];

			if ((int32_t)i == a->sibling) {
				uint64_t v;
				enum cls c;

				if (read_value(s, u, &r, at->form, at->implicit, &v, &c) ||
				    c != C_REF)
					return -EINVAL;
				d->sibling = v;
				if (a->children)
					return 0;	/* sp_die__after jumps there */
			} else if (at->size >= 0) {
				sp_rd__skip(&r, (uint64_t)at->size);
			} else {
				skip_value(&r, at->form, u);
			}
		}
		if (r.bad)
			return -EINVAL;
		d->next = (uint64_t)(r.p - s->info);
		return 0;
	}
	for (uint32_t i = 0; i < a->n; i++) {
		const struct sp_die_attr *at = &u->attrs[a->first + i];
		uint64_t v;
		enum cls c;
		int err;

		if (!at->wanted) {
			if (at->size >= 0)
				sp_rd__skip(&r, (uint64_t)at->size);
			else
				skip_value(&r, at->form, u);
			if (r.bad)
				return -EINVAL;
			continue;
		}
		err = read_value(s, u, &r, at->form, at->implicit, &v, &c);
		if (err)
			return err;
		switch (at->name) {
		case DW_AT_sibling:
			if (c != C_REF)
				return -EINVAL;
			d->sibling = v;
			break;
		case DW_AT_low_pc:
			if (c != C_ADDR)
				return -EINVAL;
			d->low_pc = v;
			if (!d->pc)
				d->pc = 1;
			break;
		case DW_AT_high_pc:
			high = v;
			high_cls = c;
			break;
		case DW_AT_ranges:
			if (c != C_SECOFF && c != C_INDEX && c != C_CONST)
				return -EINVAL;
			d->has_ranges = true;
			d->ranges = v;
			d->ranges_form = c == C_INDEX ? DW_FORM_rnglistx : DW_FORM_sec_offset;
			break;
		case DW_AT_abstract_origin:
			if (c != C_REF && c != C_REF_ALT)
				return -EINVAL;
			d->origin = c == C_REF ? 1 : 2;
			d->origin_off = v;
			break;
		case DW_AT_call_file:
			d->call_file = v;
			break;
		case DW_AT_call_line:
			d->call_line = v;
			break;
		case DW_AT_call_column:
			d->call_col = v;
			break;
		default:
			break;
		}
	}
	if (high_cls == C_ADDR || high_cls == C_CONST) {
		if (!d->pc)
			return -EINVAL;	/* a high pc without a low one */
		d->high_pc = high_cls == C_ADDR ? high : d->low_pc + high;
		d->pc = 2;
	} else if (high_cls != C_NONE) {
		return -EINVAL;
	}
	d->next = (uint64_t)(r.p - s->info);
	return 0;
}

int sp_die__after(const struct sp_die_sections *s, const struct sp_die_unit *u,
		  const struct sp_die *d, int depth, uint64_t *after)
{
	uint64_t p;

	if (d->sibling) {
		if (d->sibling <= d->off || d->sibling > u->end)
			return -EINVAL;
		*after = d->sibling;
		return 0;
	}
	if (!d->children) {
		*after = d->next;
		return 0;
	}
	if (depth <= 0)
		return -ELOOP;
	for (p = d->next;;) {
		struct sp_die c;
		int rc = sp_die__read(s, u, p, &c);

		if (rc < 0)
			return rc;
		if (rc == 1) {
			*after = c.next;
			return 0;
		}
		rc = sp_die__after(s, u, &c, depth - 1, &p);
		if (rc)
			return rc;
		if (p <= c.off)
			return -EINVAL;
	}
}

/* An address of .debug_addr by index. */
static int addr_at(const struct sp_die_sections *s, const struct sp_die_unit *u, uint64_t idx,
		   uint64_t *v)
{
	uint64_t at = u->addr_base + idx * u->addr_size;

	if (!s->addr || idx > s->addr_len || at < u->addr_base || at + u->addr_size > s->addr_len)
		return -EINVAL;
	*v = 0;
	for (unsigned i = 0; i < u->addr_size; i++)
		*v |= (uint64_t)s->addr[at + i] << (8 * i);
	return 0;
}

static int rnglists(const struct sp_die_sections *s, const struct sp_die_unit *u,
		    const struct sp_die *d, int (*fn)(void *, uint64_t, uint64_t), void *ctx)
{
	uint64_t off = d->ranges, base = u->base_addr;
	struct sp_rd r;

	if (!s->rnglists)
		return -EINVAL;
	if (d->ranges_form == DW_FORM_rnglistx) {
		uint64_t at = u->rnglists_base + off * u->offset_size;

		if (!u->rnglists_base || off > s->rnglists_len || at < u->rnglists_base ||
		    at + u->offset_size > s->rnglists_len)
			return -EINVAL;
		r = (struct sp_rd){ s->rnglists + at, s->rnglists + s->rnglists_len, false };
		off = u->rnglists_base + sp_rd__n(&r, u->offset_size);
	}
	if (off >= s->rnglists_len)
		return -EINVAL;
	r = (struct sp_rd){ s->rnglists + off, s->rnglists + s->rnglists_len, false };
	for (;;) {
		uint8_t kind = (uint8_t)sp_rd__n(&r, 1);
		uint64_t a = 0, b = 0;
		int err = 0;

		switch (kind) {
		case DW_RLE_end_of_list:
			return r.bad ? -EINVAL : 0;
		case DW_RLE_base_addressx:
			err = addr_at(s, u, sp_rd__uleb(&r), &base);
			break;
		case DW_RLE_startx_endx:
			err = addr_at(s, u, sp_rd__uleb(&r), &a);
			if (!err)
				err = addr_at(s, u, sp_rd__uleb(&r), &b);
			break;
		case DW_RLE_startx_length:
			err = addr_at(s, u, sp_rd__uleb(&r), &a);
			b = a + sp_rd__uleb(&r);
			break;
		case DW_RLE_offset_pair:
			a = base + sp_rd__uleb(&r);
			b = base + sp_rd__uleb(&r);
			break;
		case DW_RLE_base_address:
			base = sp_rd__n(&r, u->addr_size);
			break;
		case DW_RLE_start_end:
			a = sp_rd__n(&r, u->addr_size);
			b = sp_rd__n(&r, u->addr_size);
			break;
		case DW_RLE_start_length:
			a = sp_rd__n(&r, u->addr_size);
			b = a + sp_rd__uleb(&r);
			break;
		default:
			return -EINVAL;
		}
		if (err || r.bad)
			return -EINVAL;
		if (b > a && (err = fn(ctx, a, b)))
			return err;
	}
}

static int ranges_v4(const struct sp_die_sections *s, const struct sp_die_unit *u,
		     const struct sp_die *d, int (*fn)(void *, uint64_t, uint64_t), void *ctx)
{
	uint64_t base = u->base_addr, max = u->addr_size == 4 ? 0xffffffffull : ~0ull;
	struct sp_rd r;

	if (!s->ranges || d->ranges >= s->ranges_len || d->ranges_form != DW_FORM_sec_offset)
		return -EINVAL;
	r = (struct sp_rd){ s->ranges + d->ranges, s->ranges + s->ranges_len, false };
	for (;;) {
		uint64_t a = sp_rd__n(&r, u->addr_size), b = sp_rd__n(&r, u->addr_size);
		int err;

		if (r.bad)
			return -EINVAL;
		if (!a && !b)
			return 0;
		if (a == max) {
			base = b;
			continue;
		}
		if (b > a && (err = fn(ctx, base + a, base + b)))
			return err;
	}
}

int sp_die__ranges(const struct sp_die_sections *s, const struct sp_die_unit *u,
		   const struct sp_die *d, int (*fn)(void *ctx, uint64_t lo, uint64_t hi),
		   void *ctx)
{
	if (d->has_ranges)
		return u->version >= 5 ? rnglists(s, u, d, fn, ctx) : ranges_v4(s, u, d, fn, ctx);
	if (d->pc == 2 && d->high_pc > d->low_pc)
		return fn(ctx, d->low_pc, d->high_pc);
	return 0;
}
