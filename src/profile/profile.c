/* SPDX-License-Identifier: MIT */
/*
 * profile.c - the neutral profile model: tables with deduplication.
 *
 * Contract (see profile.h): a struct sp_profile owns its tables, strings,
 * sample timestamp arrays and priv (the dedup indexes).  sp_profile__new()
 * creates every table's zero entry at index 0 (strings[0] = "", zero
 * mapping/location/function/link, empty stack); resources have none.  Adding
 * an entry equal to an existing one (zero entries included) returns the
 * existing index.  Samples are appended, never merged: merging is the
 * aggregator's policy, not the model's.
 *
 * Every add checks the indices it references (-EINVAL) before changing
 * anything, so a failed add leaves the profile as it was.  Tables are capped
 * at SP_TABLE_MAX entries (-E2BIG); allocation failures give -ENOMEM.
 *
 * Dedup keys are hashed with XXH3 over a canonical byte image of the entry
 * (fields written one after the other, never the struct with its padding),
 * and compared field by field.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "profile/internal.h"
#include "profile/profile.h"

struct sp_priv {
	struct sp_hidx strings, mappings, locations, functions, links, stacks,
		resources;
	uint32_t cap_strings, cap_mappings, cap_locations, cap_functions,
		cap_links, cap_stacks, cap_stack_locs, cap_resources,
		cap_samples;
};

static int grow_(void **arr, uint32_t *cap, uint64_t need, size_t elem)
{
	uint64_t ncap;
	void *n;

	if (need <= *cap)
		return 0;
	if (need > SP_TABLE_MAX)
		return -E2BIG;
	ncap = *cap ? *cap : 16;
	while (ncap < need)
		ncap *= 2;
	if (ncap > SP_TABLE_MAX)
		ncap = SP_TABLE_MAX;
	n = reallocarray(*arr, ncap, elem);
	if (!n)
		return -ENOMEM;
	*arr = n;
	*cap = (uint32_t)ncap;
	return 0;
}

/* Capacity exactly need (never shrinks). */
static int grow_exact(void **arr, uint32_t *cap, uint64_t need, size_t elem)
{
	void *n;

	if (need <= *cap)
		return 0;
	n = reallocarray(*arr, need, elem);
	if (!n)
		return -ENOMEM;
	*arr = n;
	*cap = (uint32_t)need;
	return 0;
}

#define GROW(arr, cap, need) grow_((void **)&(arr), &(cap), (need), sizeof(*(arr)))

/* Canonical byte image for hashing. */
struct hbuf {
	uint8_t b[8 + 8 + 1 + 1 + 4 + SP_MAX_INLINE * 20 + 64 + SP_RES_ATTRS_MAX * 8];
	size_t n;
};

static void hput(struct hbuf *h, const void *p, size_t len)
{
	memcpy(h->b + h->n, p, len);
	h->n += len;
}

#define HPUT(h, v) do { __typeof__(v) v_ = (v); hput((h), &v_, sizeof(v_)); } while (0)

static inline bool str_ok(const struct sp_profile *p, int32_t i)
{
	return i >= 0 && (uint32_t)i < p->n_strings;
}

/* ------------------------------------------------------------ strings */
struct str_key {
	const struct sp_profile *p;
	const char *s;
	size_t len;
};

static bool str_eq(const void *ctx, int32_t v)
{
	const struct str_key *k = ctx;
	const char *s = k->p->strings[v];

	return strncmp(s, k->s, k->len) == 0 && s[k->len] == '\0';
}

int32_t sp_profile__find_str(const struct sp_profile *p, const char *s, size_t len)
{
	struct sp_priv *pv = p ? p->priv : NULL;
	struct str_key k = { p, s, len };

	if (!pv)
		return -1;
	return sp_hidx__find(&pv->strings, sp_hash_bytes(s, len), str_eq, &k);
}

int32_t sp_profile__intern_n(struct sp_profile *p, const char *s, size_t len)
{
	struct sp_priv *pv;
	struct str_key k = { p, s, len };
	uint64_t h;
	int32_t i;
	char *dup;
	int err;

	if (!p || !p->priv || (!s && len))
		return -EINVAL;
	if (!s)
		s = "";
	k.s = s;
	if (memchr(s, '\0', len))
		return -EINVAL;
	pv = p->priv;
	h = sp_hash_bytes(s, len);
	i = sp_hidx__find(&pv->strings, h, str_eq, &k);
	if (i >= 0)
		return i;
	err = GROW(p->strings, pv->cap_strings, (uint64_t)p->n_strings + 1);
	if (err)
		return err;
	dup = strndup(s, len);
	if (!dup)
		return -ENOMEM;
	i = (int32_t)p->n_strings;
	err = sp_hidx__insert(&pv->strings, h, i);
	if (err) {
		free(dup);
		return err;
	}
	p->strings[p->n_strings++] = dup;
	return i;
}

int32_t sp_profile__intern(struct sp_profile *p, const char *s)
{
	if (!s)
		return -EINVAL;
	return sp_profile__intern_n(p, s, strlen(s));
}

/* ------------------------------------------------------------ mappings */
struct ent_key {
	const struct sp_profile *p;
	const void *e;
};

static bool mapping_eq(const void *ctx, int32_t v)
{
	const struct ent_key *k = ctx;
	const struct sp_mapping *a = &k->p->mappings[v], *b = k->e;

	return a->memory_start == b->memory_start &&
	       a->memory_limit == b->memory_limit &&
	       a->file_offset == b->file_offset && a->filename == b->filename &&
	       a->build_id == b->build_id &&
	       a->has_functions == b->has_functions &&
	       a->has_filenames == b->has_filenames &&
	       a->has_line_numbers == b->has_line_numbers &&
	       a->has_inline_frames == b->has_inline_frames;
}

int32_t sp_profile__add_mapping(struct sp_profile *p, const struct sp_mapping *m)
{
	struct sp_priv *pv;
	struct sp_mapping c;
	struct ent_key k = { p, &c };
	struct hbuf hb = { .n = 0 };
	uint64_t h;
	int32_t i;
	int err;

	if (!p || !p->priv || !m || !str_ok(p, m->filename) ||
	    !str_ok(p, m->build_id))
		return -EINVAL;
	pv = p->priv;
	memset(&c, 0, sizeof(c));
	c.memory_start = m->memory_start;
	c.memory_limit = m->memory_limit;
	c.file_offset = m->file_offset;
	c.filename = m->filename;
	c.build_id = m->build_id;
	c.has_functions = !!m->has_functions;
	c.has_filenames = !!m->has_filenames;
	c.has_line_numbers = !!m->has_line_numbers;
	c.has_inline_frames = !!m->has_inline_frames;
	HPUT(&hb, c.memory_start);
	HPUT(&hb, c.memory_limit);
	HPUT(&hb, c.file_offset);
	HPUT(&hb, c.filename);
	HPUT(&hb, c.build_id);
	HPUT(&hb, (uint8_t)(c.has_functions | c.has_filenames << 1 |
			    c.has_line_numbers << 2 | c.has_inline_frames << 3));
	h = sp_hash_bytes(hb.b, hb.n);
	i = sp_hidx__find(&pv->mappings, h, mapping_eq, &k);
	if (i >= 0)
		return i;
	err = GROW(p->mappings, pv->cap_mappings, (uint64_t)p->n_mappings + 1);
	if (err)
		return err;
	i = (int32_t)p->n_mappings;
	err = sp_hidx__insert(&pv->mappings, h, i);
	if (err)
		return err;
	p->mappings[p->n_mappings++] = c;
	return i;
}

/* ------------------------------------------------------------ locations */
static bool location_eq(const void *ctx, int32_t v)
{
	const struct ent_key *k = ctx;
	const struct sp_location *a = &k->p->locations[v], *b = k->e;
	unsigned int j;

	if (a->mapping != b->mapping || a->address != b->address ||
	    a->frame_kind != b->frame_kind || a->n_lines != b->n_lines)
		return false;
	for (j = 0; j < a->n_lines; j++)
		if (a->lines[j].function != b->lines[j].function ||
		    a->lines[j].line != b->lines[j].line ||
		    a->lines[j].column != b->lines[j].column)
			return false;
	return true;
}

int32_t sp_profile__add_location(struct sp_profile *p, const struct sp_location *l)
{
	struct sp_priv *pv;
	struct sp_location c;
	struct ent_key k = { p, &c };
	struct hbuf hb = { .n = 0 };
	unsigned int j;
	uint64_t h;
	int32_t i;
	int err;

	if (!p || !p->priv || !l || l->mapping < 0 ||
	    (uint32_t)l->mapping >= p->n_mappings || l->n_lines > SP_MAX_INLINE ||
	    l->frame_kind > SP_FRAME_KERNEL)
		return -EINVAL;
	for (j = 0; j < l->n_lines; j++)
		if (l->lines[j].function < 0 ||
		    (uint32_t)l->lines[j].function >= p->n_functions)
			return -EINVAL;
	pv = p->priv;
	memset(&c, 0, sizeof(c));
	c.mapping = l->mapping;
	c.address = l->address;
	c.frame_kind = l->frame_kind;
	c.n_lines = l->n_lines;
	HPUT(&hb, c.mapping);
	HPUT(&hb, c.address);
	HPUT(&hb, c.frame_kind);
	HPUT(&hb, c.n_lines);
	for (j = 0; j < l->n_lines; j++) {
		c.lines[j] = l->lines[j];
		HPUT(&hb, c.lines[j].function);
		HPUT(&hb, c.lines[j].line);
		HPUT(&hb, c.lines[j].column);
	}
	h = sp_hash_bytes(hb.b, hb.n);
	i = sp_hidx__find(&pv->locations, h, location_eq, &k);
	if (i >= 0)
		return i;
	err = GROW(p->locations, pv->cap_locations, (uint64_t)p->n_locations + 1);
	if (err)
		return err;
	i = (int32_t)p->n_locations;
	err = sp_hidx__insert(&pv->locations, h, i);
	if (err)
		return err;
	p->locations[p->n_locations++] = c;
	return i;
}

/* ------------------------------------------------------------ functions */
static bool function_eq(const void *ctx, int32_t v)
{
	const struct ent_key *k = ctx;
	const struct sp_function *a = &k->p->functions[v], *b = k->e;

	return a->name == b->name && a->system_name == b->system_name &&
	       a->filename == b->filename && a->start_line == b->start_line;
}

int32_t sp_profile__add_function(struct sp_profile *p, const struct sp_function *f)
{
	struct sp_priv *pv;
	struct sp_function c;
	struct ent_key k = { p, &c };
	struct hbuf hb = { .n = 0 };
	uint64_t h;
	int32_t i;
	int err;

	if (!p || !p->priv || !f || !str_ok(p, f->name) ||
	    !str_ok(p, f->system_name) || !str_ok(p, f->filename))
		return -EINVAL;
	pv = p->priv;
	memset(&c, 0, sizeof(c));
	c.name = f->name;
	c.system_name = f->system_name;
	c.filename = f->filename;
	c.start_line = f->start_line;
	HPUT(&hb, c.name);
	HPUT(&hb, c.system_name);
	HPUT(&hb, c.filename);
	HPUT(&hb, c.start_line);
	h = sp_hash_bytes(hb.b, hb.n);
	i = sp_hidx__find(&pv->functions, h, function_eq, &k);
	if (i >= 0)
		return i;
	err = GROW(p->functions, pv->cap_functions, (uint64_t)p->n_functions + 1);
	if (err)
		return err;
	i = (int32_t)p->n_functions;
	err = sp_hidx__insert(&pv->functions, h, i);
	if (err)
		return err;
	p->functions[p->n_functions++] = c;
	return i;
}

/* ------------------------------------------------------------ links */
static bool link_eq(const void *ctx, int32_t v)
{
	const struct ent_key *k = ctx;

	return memcmp(&k->p->links[v], k->e, sizeof(struct sp_link)) == 0;
}

bool sp_profile__resource_key_fixed(const char *key)
{
	static const char *const keys[] = {
		SP_K_SERVICE_NAME, SP_A_PROCESS_PID, SP_A_EXE_PATH, SP_A_EXE_NAME,
		SP_A_CONTAINER_ID, SP_A_HOST_NAME,
	};

	for (size_t i = 0; key && i < sizeof(keys) / sizeof(keys[0]); i++)
		if (!strcmp(key, keys[i]))
			return true;
	return false;
}

bool sp_profile__label_reserved(const char *name)
{
	static const char *const names[] = {
		SP_K_PID, SP_K_TID, SP_K_THREAD_NAME, SP_K_TRACE_ID, SP_K_SPAN_ID,
		SP_K_SERVICE_NAME, SP_A_THREAD_ID, SP_A_THREAD_NAME, SP_LABEL_OFFCPU_REASON,
	};

	for (size_t i = 0; name && i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(name, names[i]))
			return true;
	return false;
}

int32_t sp_profile__add_link(struct sp_profile *p, const uint8_t trace_id[16],
			     const uint8_t span_id[8])
{
	struct sp_priv *pv;
	struct sp_link c;
	struct ent_key k = { p, &c };
	uint64_t h;
	int32_t i;
	int err;

	if (!p || !p->priv || !trace_id || !span_id)
		return -EINVAL;
	pv = p->priv;
	memcpy(c.trace_id, trace_id, 16);
	memcpy(c.span_id, span_id, 8);
	_Static_assert(sizeof(struct sp_link) == 24, "sp_link has no padding");
	h = sp_hash_bytes(&c, sizeof(c));
	i = sp_hidx__find(&pv->links, h, link_eq, &k);
	if (i >= 0)
		return i;
	err = GROW(p->links, pv->cap_links, (uint64_t)p->n_links + 1);
	if (err)
		return err;
	i = (int32_t)p->n_links;
	err = sp_hidx__insert(&pv->links, h, i);
	if (err)
		return err;
	p->links[p->n_links++] = c;
	return i;
}

/* ------------------------------------------------------------ stacks */
struct stack_key {
	const struct sp_profile *p;
	const int32_t *locs;
	uint32_t n;
};

static bool stack_eq(const void *ctx, int32_t v)
{
	const struct stack_key *k = ctx;

	return k->p->stack_len[v] == k->n &&
	       (k->n == 0 || memcmp(&k->p->stack_locs[k->p->stack_off[v]], k->locs,
				    k->n * sizeof(int32_t)) == 0);
}

int32_t sp_profile__add_stack(struct sp_profile *p, const int32_t *locs, uint32_t n)
{
	struct sp_priv *pv;
	struct stack_key k = { p, locs, n };
	uint64_t h;
	uint32_t j;
	int32_t i;
	int err;

	if (!p || !p->priv || (n && !locs) || n > SP_TABLE_MAX)
		return -EINVAL;
	for (j = 0; j < n; j++)
		if (locs[j] < 0 || (uint32_t)locs[j] >= p->n_locations)
			return -EINVAL;
	pv = p->priv;
	h = n ? sp_hash_bytes(locs, n * sizeof(int32_t)) : sp_hash_bytes("", 0);
	i = sp_hidx__find(&pv->stacks, h, stack_eq, &k);
	if (i >= 0)
		return i;
	if ((err = GROW(p->stack_locs, pv->cap_stack_locs,
			(uint64_t)p->n_stack_locs + n)))
		return err;
	{
		/* stack_off and stack_len grow together under one capacity */
		uint32_t cap_off = pv->cap_stacks, cap_len = pv->cap_stacks;

		if ((err = GROW(p->stack_off, cap_off, (uint64_t)p->n_stacks + 1)))
			return err;
		if ((err = GROW(p->stack_len, cap_len, (uint64_t)p->n_stacks + 1)))
			return err;	/* stack_off grew: harmless, cap unchanged */
		pv->cap_stacks = cap_len;
	}
	i = (int32_t)p->n_stacks;
	err = sp_hidx__insert(&pv->stacks, h, i);
	if (err)
		return err;
	if (n)
		memcpy(&p->stack_locs[p->n_stack_locs], locs, n * sizeof(int32_t));
	p->stack_off[p->n_stacks] = p->n_stack_locs;
	p->stack_len[p->n_stacks] = n;
	p->n_stack_locs += n;
	p->n_stacks++;
	return i;
}

/* ------------------------------------------------------------ resources */
static bool resource_eq(const void *ctx, int32_t v)
{
	const struct ent_key *k = ctx;
	const struct sp_resource *a = &k->p->resources[v], *b = k->e;

	return a->pid == b->pid && a->service_name == b->service_name &&
	       a->exe_path == b->exe_path && a->exe_name == b->exe_name &&
	       a->container_id == b->container_id && a->host_name == b->host_name &&
	       a->n_attrs == b->n_attrs &&
	       !memcmp(a->attrs, b->attrs, a->n_attrs * sizeof(a->attrs[0]));
}

int32_t sp_profile__add_resource(struct sp_profile *p, const struct sp_resource *r)
{
	struct sp_priv *pv;
	struct sp_resource c;
	struct ent_key k = { p, &c };
	struct hbuf hb = { .n = 0 };
	uint64_t h;
	int32_t i;
	int err;

	if (!p || !p->priv || !r || !str_ok(p, r->service_name) ||
	    !str_ok(p, r->exe_path) || !str_ok(p, r->exe_name) ||
	    !str_ok(p, r->container_id) || !str_ok(p, r->host_name))
		return -EINVAL;
	if (r->n_attrs > SP_RES_ATTRS_MAX)
		return -EINVAL;
	for (uint32_t j = 0; j < r->n_attrs; j++)
		if (!str_ok(p, r->attrs[j].key) || !str_ok(p, r->attrs[j].value) ||
		    !r->attrs[j].key || !r->attrs[j].value)
			return -EINVAL;
	pv = p->priv;
	memset(&c, 0, sizeof(c));
	c = (struct sp_resource){ .pid = r->pid, .service_name = r->service_name,
		.exe_path = r->exe_path, .exe_name = r->exe_name,
		.container_id = r->container_id, .host_name = r->host_name,
		.n_attrs = r->n_attrs };
	memcpy(c.attrs, r->attrs, r->n_attrs * sizeof(r->attrs[0]));
	HPUT(&hb, c.pid);
	HPUT(&hb, c.service_name);
	HPUT(&hb, c.exe_path);
	HPUT(&hb, c.exe_name);
	HPUT(&hb, c.container_id);
	HPUT(&hb, c.host_name);
	for (uint32_t j = 0; j < c.n_attrs; j++) {
		HPUT(&hb, c.attrs[j].key);
		HPUT(&hb, c.attrs[j].value);
	}
	h = sp_hash_bytes(hb.b, hb.n);
	i = sp_hidx__find(&pv->resources, h, resource_eq, &k);
	if (i >= 0)
		return i;
	err = GROW(p->resources, pv->cap_resources, (uint64_t)p->n_resources + 1);
	if (err)
		return err;
	i = (int32_t)p->n_resources;
	err = sp_hidx__insert(&pv->resources, h, i);
	if (err)
		return err;
	p->resources[p->n_resources++] = c;
	return i;
}

/* ------------------------------------------------------------ samples */
static bool sample_ok(const struct sp_profile *p, const struct sp_sample *s)
{
	uint32_t j;

	if (s->resource < 0 || (uint32_t)s->resource >= p->n_resources ||
	    s->stack < 0 || (uint32_t)s->stack >= p->n_stacks ||
	    s->link < 0 || (uint32_t)s->link >= p->n_links ||
	    s->kind >= SP_KIND__MAX || !str_ok(p, s->thread_name) ||
	    s->n_labels > SP_MAX_LABELS)
		return false;
	for (j = 0; j < s->n_labels; j++)
		if (!str_ok(p, s->labels[j].key) || !str_ok(p, s->labels[j].str))
			return false;
	if (s->n_timestamps &&
	    (!s->timestamps || s->count < 0 || (uint64_t)s->count != s->n_timestamps))
		return false;
	return true;
}

int32_t sp_profile__add_sample(struct sp_profile *p, const struct sp_sample *s)
{
	struct sp_priv *pv;
	struct sp_sample *d;
	uint64_t *ts = NULL;
	int err;

	if (!p || !p->priv || !s || !sample_ok(p, s))
		return -EINVAL;
	pv = p->priv;
	err = GROW(p->samples, pv->cap_samples, (uint64_t)p->n_samples + 1);
	if (err)
		return err;
	if (s->n_timestamps) {
		ts = malloc((size_t)s->n_timestamps * sizeof(*ts));
		if (!ts)
			return -ENOMEM;
		memcpy(ts, s->timestamps, (size_t)s->n_timestamps * sizeof(*ts));
	}
	d = &p->samples[p->n_samples];
	*d = *s;
	memset(&d->labels[s->n_labels], 0,
	       (SP_MAX_LABELS - s->n_labels) * sizeof(d->labels[0]));
	d->timestamps = ts;
	return (int32_t)p->n_samples++;
}

void sp_profile__drop_timestamps(struct sp_profile *p)
{
	for (uint32_t i = 0; p && i < p->n_samples; i++) {
		free(p->samples[i].timestamps);
		p->samples[i].timestamps = NULL;
		p->samples[i].n_timestamps = 0;
	}
}

/* ------------------------------------------------------------ lifecycle */
struct sp_profile *sp_profile__new(void)
{
	static const uint8_t zero[16];
	struct sp_profile *p = calloc(1, sizeof(*p));
	struct sp_mapping m = { 0 };
	struct sp_location l = { 0 };
	struct sp_function f = { 0 };

	if (!p)
		return NULL;
	p->priv = calloc(1, sizeof(struct sp_priv));
	if (!p->priv)
		goto fail;
	/* Zero entries, in dependency order; each must land at index 0. */
	if (sp_profile__intern(p, "") != 0 ||
	    sp_profile__add_mapping(p, &m) != 0 ||
	    sp_profile__add_function(p, &f) != 0 ||
	    sp_profile__add_location(p, &l) != 0 ||
	    sp_profile__add_link(p, zero, zero) != 0 ||
	    sp_profile__add_stack(p, NULL, 0) != 0)
		goto fail;
	return p;
fail:
	sp_profile__free(p);
	return NULL;
}

void sp_profile__free(struct sp_profile *p)
{
	struct sp_priv *pv;
	uint32_t i;

	if (!p)
		return;
	for (i = 0; i < p->n_strings; i++)
		free(p->strings[i]);
	for (i = 0; i < p->n_samples; i++)
		free(p->samples[i].timestamps);
	free(p->strings);
	free(p->mappings);
	free(p->locations);
	free(p->functions);
	free(p->links);
	free(p->stack_off);
	free(p->stack_len);
	free(p->stack_locs);
	free(p->resources);
	free(p->samples);
	pv = p->priv;
	if (pv) {
		sp_hidx__free(&pv->strings);
		sp_hidx__free(&pv->mappings);
		sp_hidx__free(&pv->locations);
		sp_hidx__free(&pv->functions);
		sp_hidx__free(&pv->links);
		sp_hidx__free(&pv->stacks);
		sp_hidx__free(&pv->resources);
		free(pv);
	}
	free(p);
}

/* ------------------------------------------------------------ validate */
int sp_profile__validate(const struct sp_profile *p)
{
	uint32_t i, j;

	if (!p)
		return -EINVAL;
	/* zero entries */
	if (!p->n_strings || !p->strings || !p->strings[0] || p->strings[0][0] ||
	    !p->n_mappings || !p->mappings || !p->n_locations || !p->locations ||
	    !p->n_functions || !p->functions || !p->n_links || !p->links ||
	    !p->n_stacks || !p->stack_off || !p->stack_len)
		return -EINVAL;
	if (p->mappings[0].memory_start || p->mappings[0].memory_limit ||
	    p->mappings[0].file_offset || p->mappings[0].filename ||
	    p->mappings[0].build_id || p->mappings[0].has_functions ||
	    p->mappings[0].has_filenames || p->mappings[0].has_line_numbers ||
	    p->mappings[0].has_inline_frames)
		return -EINVAL;
	if (p->locations[0].mapping || p->locations[0].address ||
	    p->locations[0].n_lines || p->locations[0].frame_kind)
		return -EINVAL;
	if (p->functions[0].name || p->functions[0].system_name ||
	    p->functions[0].filename || p->functions[0].start_line)
		return -EINVAL;
	if (!sp_all_zero(&p->links[0], sizeof(p->links[0])) || p->stack_len[0])
		return -EINVAL;
	if ((p->n_stack_locs && !p->stack_locs) ||
	    (p->n_resources && !p->resources) || (p->n_samples && !p->samples))
		return -EINVAL;

	for (i = 0; i < p->n_strings; i++)
		if (!p->strings[i])
			return -EINVAL;
	for (i = 0; i < p->n_mappings; i++)
		if (!str_ok(p, p->mappings[i].filename) ||
		    !str_ok(p, p->mappings[i].build_id))
			return -EINVAL;
	for (i = 0; i < p->n_functions; i++)
		if (!str_ok(p, p->functions[i].name) ||
		    !str_ok(p, p->functions[i].system_name) ||
		    !str_ok(p, p->functions[i].filename))
			return -EINVAL;
	for (i = 0; i < p->n_locations; i++) {
		const struct sp_location *l = &p->locations[i];

		if (l->mapping < 0 || (uint32_t)l->mapping >= p->n_mappings ||
		    l->n_lines > SP_MAX_INLINE || l->frame_kind > SP_FRAME_KERNEL)
			return -EINVAL;
		for (j = 0; j < l->n_lines; j++)
			if (l->lines[j].function < 0 ||
			    (uint32_t)l->lines[j].function >= p->n_functions)
				return -EINVAL;
	}
	for (i = 0; i < p->n_stacks; i++) {
		if ((uint64_t)p->stack_off[i] + p->stack_len[i] > p->n_stack_locs)
			return -EINVAL;
		for (j = 0; j < p->stack_len[i]; j++) {
			int32_t l = p->stack_locs[p->stack_off[i] + j];

			if (l < 0 || (uint32_t)l >= p->n_locations)
				return -EINVAL;
		}
	}
	for (i = 0; i < p->n_resources; i++) {
		const struct sp_resource *r = &p->resources[i];

		if (!str_ok(p, r->service_name) || !str_ok(p, r->exe_path) ||
		    !str_ok(p, r->exe_name) || !str_ok(p, r->container_id) ||
		    !str_ok(p, r->host_name))
			return -EINVAL;
	}
	for (i = 0; i < p->n_samples; i++)
		if (!sample_ok(p, &p->samples[i]))
			return -EINVAL;
	return 0;
}

int sp_profile__reserve(struct sp_profile *p, uint32_t samples, uint32_t locations)
{
	struct sp_priv *pv = p->priv;
	int err;

	if ((uint64_t)p->n_samples + samples > SP_TABLE_MAX ||
	    (uint64_t)p->n_locations + locations > SP_TABLE_MAX)
		return -E2BIG;
	err = grow_exact((void **)&p->samples, &pv->cap_samples,
			 (uint64_t)p->n_samples + samples, sizeof(*p->samples));
	if (!err)
		err = grow_exact((void **)&p->locations, &pv->cap_locations,
				 (uint64_t)p->n_locations + locations, sizeof(*p->locations));
	return err;
}

/* glibc's footprint of one malloc of n bytes (see profile/pbcost.h). */
static uint64_t footprint_alloc(uint64_t n)
{
	uint64_t c = (n + 8 + 15) & ~(uint64_t)15;

	return n ? (c < 32 ? 32 : c) : 0;
}

static uint64_t footprint_hidx(const struct sp_hidx *h)
{
	return h->cap ? footprint_alloc((uint64_t)h->cap * sizeof(*h->hash)) +
				footprint_alloc((uint64_t)h->cap * sizeof(*h->val))
		      : 0;
}

uint64_t sp_profile__footprint(const struct sp_profile *p)
{
	const struct sp_priv *pv;
	uint64_t b;

	if (!p)
		return 0;
	pv = p->priv;
	b = footprint_alloc(sizeof(*p)) + footprint_alloc(sizeof(*pv));
	for (uint32_t i = 0; i < p->n_strings; i++)
		b += footprint_alloc(strlen(p->strings[i]) + 1);
	for (uint32_t i = 0; i < p->n_samples; i++)
		b += footprint_alloc((uint64_t)p->samples[i].n_timestamps * 8);
	if (!pv)
		return b;
	b += footprint_alloc((uint64_t)pv->cap_strings * sizeof(*p->strings));
	b += footprint_alloc((uint64_t)pv->cap_mappings * sizeof(*p->mappings));
	b += footprint_alloc((uint64_t)pv->cap_locations * sizeof(*p->locations));
	b += footprint_alloc((uint64_t)pv->cap_functions * sizeof(*p->functions));
	b += footprint_alloc((uint64_t)pv->cap_links * sizeof(*p->links));
	b += 2 * footprint_alloc((uint64_t)pv->cap_stacks * sizeof(*p->stack_off));
	b += footprint_alloc((uint64_t)pv->cap_stack_locs * sizeof(*p->stack_locs));
	b += footprint_alloc((uint64_t)pv->cap_resources * sizeof(*p->resources));
	b += footprint_alloc((uint64_t)pv->cap_samples * sizeof(*p->samples));
	b += footprint_hidx(&pv->strings) + footprint_hidx(&pv->mappings) +
	     footprint_hidx(&pv->locations) + footprint_hidx(&pv->functions) +
	     footprint_hidx(&pv->links) + footprint_hidx(&pv->stacks) +
	     footprint_hidx(&pv->resources);
	return b;
}
