// SPDX-License-Identifier: MIT
/*
 * report.c - top, folded stacks and per-span tables from a profile.
 *
 * Contract: see report.h.  Layout:
 *   names   every distinct frame name once (string -> id hash), with a
 *           "file:line" hint for tooltips and tables.
 *   frames  per location, the name ids of its lines (computed once).
 *   trees   per sample kind, a call tree (root first) stored as nodes with
 *           first-child/next-sibling links and a (parent, name) -> node
 *           hash; node.total is the inclusive weight, node.self the
 *           weight of stacks ending there.  Children are sorted by name
 *           once everything is added.
 *   spans   per link index: samples, on-CPU ns, off-CPU ns by reason, and
 *           self time per (span, leaf name) for the top frames (for
 *           off-CPU time the innermost user frame: where the code waited).
 * The flame graph writer lives in flamegraph.c and reads the same tables
 * through report_internal.h.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "report_internal.h"

/* ------------------------------------------------------------ hash maps */

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	x ^= x >> 33;
	return x;
}

static uint64_t hash_s(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

static int u64map_grow(struct u64map *m)
{
	uint32_t nc = m->cap ? m->cap * 2 : 256;
	uint64_t *k = malloc((size_t)nc * sizeof(*k));
	uint64_t *v = malloc((size_t)nc * sizeof(*v));

	if (!k || !v) {
		free(k);
		free(v);
		return -ENOMEM;
	}
	memset(k, 0xff, (size_t)nc * sizeof(*k));
	for (uint32_t i = 0; i < m->cap; i++) {
		uint32_t j;

		if (m->keys[i] == UINT64_MAX)
			continue;
		j = (uint32_t)mix64(m->keys[i]) & (nc - 1);
		while (k[j] != UINT64_MAX)
			j = (j + 1) & (nc - 1);
		k[j] = m->keys[i];
		v[j] = m->vals[i];
	}
	free(m->keys);
	free(m->vals);
	m->keys = k;
	m->vals = v;
	m->cap = nc;
	return 0;
}

/* Returns a pointer to the value of key, inserting init when missing. */
static uint64_t *u64map_get(struct u64map *m, uint64_t key, uint64_t init,
			    bool *created)
{
	uint32_t j;

	if ((m->n + 1) * 2 > m->cap && u64map_grow(m))
		return NULL;
	j = (uint32_t)mix64(key) & (m->cap - 1);
	while (m->keys[j] != UINT64_MAX) {
		if (m->keys[j] == key) {
			if (created)
				*created = false;
			return &m->vals[j];
		}
		j = (j + 1) & (m->cap - 1);
	}
	m->keys[j] = key;
	m->vals[j] = init;
	m->n++;
	if (created)
		*created = true;
	return &m->vals[j];
}

static void u64map_free(struct u64map *m)
{
	free(m->keys);
	free(m->vals);
	memset(m, 0, sizeof(*m));
}

/* ------------------------------------------------------------ names */

static int32_t name_id(struct sp_report *r, const char *s, const char *where,
		       uint8_t flags, const char *dso)
{
	uint64_t h = hash_s(s) ^ (flags & RN_IDENTITY);
	uint32_t j;
	struct rname *nm;

	if ((r->n_names + 1) * 2 > r->name_hcap) {
		uint32_t nc = r->name_hcap ? r->name_hcap * 2 : 1024;
		int32_t *t = malloc((size_t)nc * sizeof(*t));

		if (!t)
			return -ENOMEM;
		memset(t, 0xff, (size_t)nc * sizeof(*t));
		for (uint32_t i = 0; i < r->n_names; i++) {
			j = (uint32_t)r->names[i].hash & (nc - 1);
			while (t[j] >= 0)
				j = (j + 1) & (nc - 1);
			t[j] = (int32_t)i;
		}
		free(r->name_hash);
		r->name_hash = t;
		r->name_hcap = nc;
	}
	j = (uint32_t)h & (r->name_hcap - 1);
	while (r->name_hash[j] >= 0) {
		nm = &r->names[r->name_hash[j]];
		if (nm->hash == h && !strcmp(nm->s, s) &&
		    (nm->flags & RN_IDENTITY) == (flags & RN_IDENTITY))
			return r->name_hash[j];
		j = (j + 1) & (r->name_hcap - 1);
	}
	if (r->n_names == r->cap_names) {
		uint32_t nc = r->cap_names ? r->cap_names * 2 : 256;
		void *p = realloc(r->names, (size_t)nc * sizeof(*r->names));

		if (!p)
			return -ENOMEM;
		r->names = p;
		r->cap_names = nc;
	}
	nm = &r->names[r->n_names];
	memset(nm, 0, sizeof(*nm));
	nm->s = strdup(s);
	nm->where = where && *where ? strdup(where) : NULL;
	nm->dso = dso && *dso ? strdup(dso) : NULL;
	if (!nm->s || (where && *where && !nm->where) || (dso && *dso && !nm->dso)) {
		free(nm->s);
		free(nm->where);
		free(nm->dso);
		return -ENOMEM;
	}
	nm->hash = h;
	nm->flags = flags;
	r->name_hash[j] = (int32_t)r->n_names;
	return (int32_t)r->n_names++;
}

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');

	return s ? s + 1 : p;
}

/* The file a location's mapping names (the DSO, for tooltips). */
static const char *loc_dso(const struct sp_profile *p, const struct sp_location *loc)
{
	if (loc->frame_kind == SP_FRAME_KERNEL)
		return "[kernel.kallsyms]";
	if (loc->mapping > 0 && (uint32_t)loc->mapping < p->n_mappings)
		return sp_profile__str(p, p->mappings[loc->mapping].filename);
	return NULL;
}

static int32_t line_name(struct sp_report *r, const struct sp_profile *p,
			 const struct sp_location *loc, const struct sp_line *ln)
{
	uint8_t kflag = loc->frame_kind == SP_FRAME_KERNEL ? RN_KERNEL : 0;
	const struct sp_function *f;
	char where[512];
	const char *file, *name;

	if (ln->function <= 0 || (uint32_t)ln->function >= p->n_functions)
		return name_id(r, "??", NULL, RN_UNKNOWN | kflag, loc_dso(p, loc));
	f = &p->functions[ln->function];
	name = sp_profile__str(p, f->name);
	if (!*name)
		name = sp_profile__str(p, f->system_name);
	if (!*name)
		name = "??";
	file = sp_profile__str(p, f->filename);
	where[0] = '\0';
	if (*file && f->start_line > 0)
		snprintf(where, sizeof(where), "%s:%" PRId64, file,
			 f->start_line);
	else if (*file)
		snprintf(where, sizeof(where), "%s", file);
	return name_id(r, name, where, kflag, loc_dso(p, loc));
}

static int32_t unresolved_name(struct sp_report *r, const struct sp_profile *p,
			       const struct sp_location *loc)
{
	char buf[512];

	if (loc->frame_kind == SP_FRAME_KERNEL) {
		snprintf(buf, sizeof(buf), "[kernel] 0x%" PRIx64, loc->address);
		return name_id(r, buf, NULL, RN_UNKNOWN | RN_KERNEL, loc_dso(p, loc));
	}
	if (loc->mapping > 0 && (uint32_t)loc->mapping < p->n_mappings) {
		const struct sp_mapping *m = &p->mappings[loc->mapping];
		const char *file = sp_profile__str(p, m->filename);

		if (loc->address >= m->memory_start) {
			snprintf(buf, sizeof(buf), "[unknown] %s+0x%" PRIx64,
				 *file ? base_name(file) : "?",
				 loc->address - m->memory_start + m->file_offset);
			return name_id(r, buf, NULL, RN_UNKNOWN, file);
		}
	}
	snprintf(buf, sizeof(buf), "[unknown] 0x%" PRIx64, loc->address);
	return name_id(r, buf, NULL, RN_UNKNOWN, NULL);
}

/* Name ids of location li, leaf (innermost inlined) first. */
static int loc_frames(struct sp_report *r, const struct sp_profile *p,
		      uint32_t li, const int32_t **ids, uint32_t *n)
{
	const struct sp_location *loc;
	int32_t buf[SP_MAX_INLINE];
	uint32_t k = 0;

	if (li >= p->n_locations) {
		*n = 0;
		return 0;
	}
	if (r->loc_n[li] == UINT8_MAX) {
		loc = &p->locations[li];
		if (!loc->n_lines) {
			int32_t id = unresolved_name(r, p, loc);

			if (id < 0)
				return id;
			buf[k++] = id;
		}
		for (uint32_t i = 0; i < loc->n_lines && i < SP_MAX_INLINE; i++) {
			int32_t id = line_name(r, p, loc, &loc->lines[i]);

			if (id < 0)
				return id;
			buf[k++] = id;
		}
		if (r->n_fr + k > r->cap_fr) {
			uint32_t nc = r->cap_fr ? r->cap_fr * 2 : 1024;
			void *q;

			while (nc < r->n_fr + k)
				nc *= 2;
			q = realloc(r->fr, (size_t)nc * sizeof(*r->fr));
			if (!q)
				return -ENOMEM;
			r->fr = q;
			r->cap_fr = nc;
		}
		memcpy(&r->fr[r->n_fr], buf, k * sizeof(buf[0]));
		r->loc_off[li] = r->n_fr;
		r->loc_n[li] = (uint8_t)k;
		r->n_fr += k;
	}
	*ids = &r->fr[r->loc_off[li]];
	*n = r->loc_n[li];
	return 0;
}

/* ------------------------------------------------------------ trees */

static int32_t tree_child(struct ktree *t, int32_t parent, int32_t name)
{
	uint64_t key = (uint64_t)(uint32_t)parent << 32 | (uint32_t)name;
	bool created;
	uint64_t *v = u64map_get(&t->child, key, 0, &created);
	struct rnode *nd;

	if (!v)
		return -ENOMEM;
	if (!created)
		return (int32_t)*v;
	if (t->n == t->cap) {
		uint32_t nc = t->cap ? t->cap * 2 : 1024;
		void *q = realloc(t->nodes, (size_t)nc * sizeof(*t->nodes));

		if (!q)
			return -ENOMEM;
		t->nodes = q;
		t->cap = nc;
	}
	nd = &t->nodes[t->n];
	memset(nd, 0, sizeof(*nd));
	nd->name = name;
	nd->parent = parent;
	nd->first_child = -1;
	nd->next_sibling = t->nodes[parent].first_child;
	t->nodes[parent].first_child = (int32_t)t->n;
	*v = t->n;
	return (int32_t)t->n++;
}

static int tree_init(struct ktree *t)
{
	t->nodes = calloc(1024, sizeof(*t->nodes));
	if (!t->nodes)
		return -ENOMEM;
	t->cap = 1024;
	t->n = 1;
	t->nodes[0] = (struct rnode){ .name = -1, .parent = -1,
				      .first_child = -1, .next_sibling = -1 };
	return 0;
}

static int grow_u64(uint64_t **a, uint32_t *cap, uint32_t need)
{
	uint32_t nc = *cap ? *cap : 256;
	void *q;

	if (need <= *cap)
		return 0;
	while (nc < need)
		nc *= 2;
	q = realloc(*a, (size_t)nc * sizeof(**a));
	if (!q)
		return -ENOMEM;
	memset((uint64_t *)q + *cap, 0, (size_t)(nc - *cap) * sizeof(**a));
	*a = q;
	*cap = nc;
	return 0;
}

/* Adds one sample's frames (leaf first) with weight w. */
static int tree_add(struct sp_report *r, struct ktree *t, const int32_t *fr,
		    uint32_t n, uint64_t w)
{
	int32_t node = 0;
	int err;

	t->total += w;
	t->nodes[0].total += w;
	err = grow_u64(&t->self_by, &t->cap_by, r->n_names);
	if (!err)
		err = grow_u64(&t->cum_by, &t->cap_cum, r->n_names);
	if (!err)
		err = grow_u64(&t->stamp, &t->cap_stamp, r->n_names);
	if (err)
		return err;
	t->epoch++;
	for (uint32_t i = n; i-- > 0;) {
		node = tree_child(t, node, fr[i]);
		if (node < 0)
			return node;
		t->nodes[node].total += w;
		if (t->stamp[fr[i]] != t->epoch && !(r->names[fr[i]].flags & RN_GROUP)) {
			t->stamp[fr[i]] = t->epoch;
			t->cum_by[fr[i]] += w;
		}
	}
	t->nodes[node].self += w;
	if (n && !(r->names[fr[0]].flags & RN_GROUP))
		t->self_by[fr[0]] += w;
	return 0;
}

static const struct sp_report *sort_ctx;

static int child_cmp(const void *a, const void *b)
{
	const struct sp_report *r = sort_ctx;
	const struct ktree *t = r->cur_tree;
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;

	return strcmp(r->names[t->nodes[x].name].s,
		      r->names[t->nodes[y].name].s);
}

/* Relinks every sibling list in name order (flame graphs and folded
 * output then come out sorted and reproducible). */
static int tree_sort(struct sp_report *r, struct ktree *t)
{
	int32_t *tmp = malloc((size_t)t->n * sizeof(*tmp));

	if (!tmp)
		return -ENOMEM;
	sort_ctx = r;
	r->cur_tree = t;
	for (uint32_t i = 0; i < t->n; i++) {
		uint32_t k = 0;

		for (int32_t c = t->nodes[i].first_child; c >= 0;
		     c = t->nodes[c].next_sibling)
			tmp[k++] = c;
		if (k < 2)
			continue;
		qsort(tmp, k, sizeof(*tmp), child_cmp);
		t->nodes[i].first_child = tmp[0];
		for (uint32_t j = 0; j + 1 < k; j++)
			t->nodes[tmp[j]].next_sibling = tmp[j + 1];
		t->nodes[tmp[k - 1]].next_sibling = -1;
	}
	free(tmp);
	return 0;
}

/* ------------------------------------------------------------ spans */

/*
 * The sample's attribute labels (the span's thread-record attributes; the
 * collector's off_cpu_reason is not one) as "k=v k=v", at most
 * SPAN_ATTRS_MAX bytes, into a new string; *out stays NULL when there are
 * none.
 */
#define SPAN_ATTRS_MAX 160

static int span_attrs(const struct sp_profile *p, const struct sp_sample *s, char **out)
{
	char buf[SPAN_ATTRS_MAX + 1];
	size_t n = 0;

	for (uint32_t i = 0; i < s->n_labels && n < SPAN_ATTRS_MAX; i++) {
		const char *k = sp_profile__str(p, s->labels[i].key);
		int w;

		if (s->labels[i].str <= 0 || !strcmp(k, SP_LABEL_OFFCPU_REASON))
			continue;
		w = snprintf(buf + n, sizeof(buf) - n, "%s%s=%s", n ? " " : "", k,
			     sp_profile__str(p, s->labels[i].str));
		n = w < 0 ? n : (size_t)w >= sizeof(buf) - n ? SPAN_ATTRS_MAX : n + (size_t)w;
	}
	if (!n)
		return 0;
	*out = strdup(buf);
	return *out ? 0 : -ENOMEM;
}

static int reason_of(const struct sp_profile *p, const struct sp_sample *s)
{
	static const char *const names[] = { "none", "sleep", "io", "runq",
					     "other" };

	for (uint32_t i = 0; i < s->n_labels && i < SP_MAX_LABELS; i++) {
		const char *k = sp_profile__str(p, s->labels[i].key);
		const char *v;

		if (strcmp(k, SP_LABEL_OFFCPU_REASON) && strcmp(k, "off_cpu.reason") &&
		    strcmp(k, "reason"))
			continue;
		if (!s->labels[i].str)
			return s->labels[i].num > 0 && s->labels[i].num < 5 ?
				       (int)s->labels[i].num : 4;
		v = sp_profile__str(p, s->labels[i].str);
		for (int j = 1; j < 5; j++)
			if (!strcasecmp(v, names[j]))
				return j;
		if (!strcasecmp(v, "interruptible"))
			return 1;
		if (!strcasecmp(v, "uninterruptible") || !strcasecmp(v, "disk"))
			return 2;
		if (!strcasecmp(v, "preempted") || !strcasecmp(v, "runqueue"))
			return 3;
		return 4;
	}
	return 0;
}

static struct rspan *span_get(struct sp_report *r, int32_t link)
{
	bool created;
	uint64_t *v = u64map_get(&r->span_idx, (uint32_t)link, 0, &created);

	if (!v)
		return NULL;
	if (created) {
		if (r->n_spans == r->cap_spans) {
			uint32_t nc = r->cap_spans ? r->cap_spans * 2 : 64;
			void *q = realloc(r->spans, (size_t)nc * sizeof(*r->spans));

			if (!q)
				return NULL;
			r->spans = q;
			r->cap_spans = nc;
		}
		memset(&r->spans[r->n_spans], 0, sizeof(r->spans[0]));
		r->spans[r->n_spans].link = link;
		*v = r->n_spans++;
	}
	return &r->spans[*v];
}

/* ------------------------------------------------------------ build */

int sp_report__parse_hex(const char *s, uint8_t *out, size_t n)
{
	if (!s || strlen(s) != 2 * n)
		return -EINVAL;
	for (size_t i = 0; i < 2 * n; i++) {
		char c = s[i];
		int v;

		if (c >= '0' && c <= '9')
			v = c - '0';
		else if (c >= 'a' && c <= 'f')
			v = c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			v = c - 'A' + 10;
		else
			return -EINVAL;
		if (i & 1)
			out[i / 2] |= (uint8_t)v;
		else
			out[i / 2] = (uint8_t)(v << 4);
	}
	return 0;
}

static bool keep_sample(const struct sp_profile *p, const struct sp_sample *s,
			const struct sp_report_opts *o)
{
	const struct sp_link *l;

	if (!o || (!o->filter_trace && !o->filter_span))
		return true;
	if (s->link <= 0 || (uint32_t)s->link >= p->n_links)
		return false;
	l = &p->links[s->link];
	if (o->filter_trace && memcmp(l->trace_id, o->trace_id, 16))
		return false;
	if (o->filter_span && memcmp(l->span_id, o->span_id, 8))
		return false;
	return true;
}

static uint64_t sample_ns(const struct sp_profile *p, const struct sp_sample *s)
{
	if (s->value_ns > 0)
		return (uint64_t)s->value_ns;
	if (s->kind == SP_KIND_ONCPU && s->count > 0)
		return (uint64_t)s->count * p->period_ns[SP_KIND_ONCPU];
	return 0;
}

static int push_tmp(struct sp_report *r, int32_t id)
{
	if (id < 0)
		return id;
	if (r->n_tmp == r->cap_tmp) {
		uint32_t nc = r->cap_tmp ? r->cap_tmp * 2 : 256;
		void *q = realloc(r->tmp, (size_t)nc * sizeof(*r->tmp));

		if (!q)
			return -ENOMEM;
		r->tmp = q;
		r->cap_tmp = nc;
	}
	r->tmp[r->n_tmp++] = id;
	return 0;
}

/* --group-by: the thread's and the process's frames above the stack's
 * root (r->tmp is leaf first, so they go at its end). */
static int add_group_frames(struct sp_report *r, const struct sp_profile *p,
			    const struct sp_sample *s)
{
	const struct sp_resource *res = NULL;
	const char *exe = "";
	char buf[320];
	int err = 0;

	if (r->group != SP_GROUP_PROCESS && r->group != SP_GROUP_THREAD)
		return 0;
	if (s->resource >= 0 && (uint32_t)s->resource < p->n_resources)
		res = &p->resources[s->resource];
	/* The executable's name; pprof carries none, only service.name,
	 * whose fallback form names the executable too. */
	if (res) {
		exe = sp_profile__str(p, res->exe_name);
		if (!*exe)
			exe = sp_profile__str(p, res->service_name);
		if (!strncmp(exe, "unknown_service:", 16))
			exe += 16;
	}
	if (r->group == SP_GROUP_THREAD) {
		const char *tn = sp_profile__str(p, s->thread_name);

		snprintf(buf, sizeof(buf), "%s-%" PRId64, *tn ? tn : "?", s->tid);
		err = push_tmp(r, name_id(r, buf, NULL, RN_THREAD, NULL));
	}
	if (!err) {
		snprintf(buf, sizeof(buf), "%s-%" PRId64, *exe ? exe : "?", res ? res->pid : 0);
		err = push_tmp(r, name_id(r, buf, NULL, RN_PROCESS,
					  res ? sp_profile__str(p, res->exe_path) : NULL));
	}
	return err;
}

static int add_sample(struct sp_report *r, const struct sp_profile *p,
		      const struct sp_sample *s)
{
	uint32_t nloc, off;
	struct ktree *t;
	struct rspan *sp;
	uint64_t w, ns = sample_ns(p, s);
	int32_t user_leaf = -1;	/* index in tmp of the innermost user frame */
	int err;

	if (s->kind >= SP_KIND__MAX)
		return 0;
	if (s->stack < 0 || (uint32_t)s->stack >= p->n_stacks)
		return 0;
	off = p->stack_off[s->stack];
	nloc = p->stack_len[s->stack];
	r->n_tmp = 0;
	for (uint32_t i = 0; i < nloc; i++) {
		const int32_t *ids;
		uint32_t n;
		int32_t li = p->stack_locs[off + i];

		if (li <= 0)
			continue;
		if (user_leaf < 0 && (uint32_t)li < p->n_locations &&
		    p->locations[li].frame_kind != SP_FRAME_KERNEL)
			user_leaf = (int32_t)r->n_tmp;
		err = loc_frames(r, p, (uint32_t)li, &ids, &n);
		if (err)
			return err;
		if (r->n_tmp + n > r->cap_tmp) {
			uint32_t nc = r->cap_tmp ? r->cap_tmp * 2 : 256;
			void *q;

			while (nc < r->n_tmp + n)
				nc *= 2;
			q = realloc(r->tmp, (size_t)nc * sizeof(*r->tmp));
			if (!q)
				return -ENOMEM;
			r->tmp = q;
			r->cap_tmp = nc;
		}
		memcpy(&r->tmp[r->n_tmp], ids, n * sizeof(*ids));
		r->n_tmp += n;
	}
	err = add_group_frames(r, p, s);
	if (err)
		return err;
	t = &r->trees[s->kind];
	w = s->kind == SP_KIND_ONCPU ? (uint64_t)(s->count > 0 ? s->count : 0)
				     : ns;
	err = tree_add(r, t, r->tmp, r->n_tmp, w);
	if (err)
		return err;
	t->samples += s->count > 0 ? (uint64_t)s->count : 0;
	t->ns += ns;
	r->n_samples += s->count > 0 ? (uint64_t)s->count : 0;

	sp = span_get(r, s->link > 0 && (uint32_t)s->link < p->n_links ?
				 s->link : 0);
	if (!sp)
		return -ENOMEM;
	if (sp->link && !sp->attrs) {
		err = span_attrs(p, s, &sp->attrs);
		if (err)
			return err;
	}
	if (s->kind == SP_KIND_ONCPU) {
		sp->samples += s->count > 0 ? (uint64_t)s->count : 0;
		sp->oncpu_ns += ns;
	} else {
		sp->waits += s->count > 0 ? (uint64_t)s->count : 0;
		sp->off_ns[reason_of(p, s)] += ns;
	}
	if (r->n_tmp) {
		/* A wait's kernel leaf is always the scheduler; where the code
		 * waited is its innermost user frame. */
		uint32_t top = s->kind != SP_KIND_ONCPU && user_leaf >= 0 &&
			       (uint32_t)user_leaf < r->n_tmp ? (uint32_t)user_leaf : 0;
		uint64_t key = (uint64_t)(sp - r->spans) << 32 |
			       (uint32_t)r->tmp[top];
		uint64_t *v = u64map_get(&r->span_leaf, key, 0, NULL);

		if (!v)
			return -ENOMEM;
		*v += ns;
	}
	return 0;
}

int sp_report__new(const struct sp_profile *p, const struct sp_report_opts *o,
		   struct sp_report **out)
{
	struct sp_report *r;
	int err = -ENOMEM;

	*out = NULL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->n_locs = p->n_locations;
	r->loc_off = calloc(p->n_locations + 1, sizeof(*r->loc_off));
	r->loc_n = malloc(p->n_locations + 1);
	if (!r->loc_off || !r->loc_n)
		goto fail;
	memset(r->loc_n, 0xff, p->n_locations + 1);
	r->group = o ? o->group : SP_GROUP_AUTO;
	if (r->group == SP_GROUP_AUTO)
		r->group = p->n_resources > 1 ? SP_GROUP_PROCESS : SP_GROUP_NONE;
	for (int k = 0; k < SP_KIND__MAX; k++) {
		err = tree_init(&r->trees[k]);
		if (err)
			goto fail;
	}
	for (uint32_t i = 0; i < p->n_samples; i++) {
		const struct sp_sample *s = &p->samples[i];

		if (!keep_sample(p, s, o))
			continue;
		err = add_sample(r, p, s);
		if (err)
			goto fail;
	}
	for (int k = 0; k < SP_KIND__MAX; k++) {
		err = tree_sort(r, &r->trees[k]);
		if (err)
			goto fail;
	}
	r->links = p->n_links ? malloc(p->n_links * sizeof(*r->links)) : NULL;
	if (p->n_links && !r->links)
		goto fail;
	if (p->n_links)
		memcpy(r->links, p->links, p->n_links * sizeof(*r->links));
	r->n_links = p->n_links;
	r->period_ns = p->period_ns[SP_KIND_ONCPU];
	*out = r;
	return 0;
fail:
	sp_report__free(r);
	return err;
}

void sp_report__free(struct sp_report *r)
{
	if (!r)
		return;
	for (uint32_t i = 0; i < r->n_names; i++) {
		free(r->names[i].s);
		free(r->names[i].where);
		free(r->names[i].dso);
	}
	free(r->names);
	free(r->name_hash);
	free(r->fr);
	free(r->loc_off);
	free(r->loc_n);
	free(r->tmp);
	for (int k = 0; k < SP_KIND__MAX; k++) {
		free(r->trees[k].nodes);
		u64map_free(&r->trees[k].child);
		free(r->trees[k].self_by);
		free(r->trees[k].cum_by);
		free(r->trees[k].stamp);
	}
	for (uint32_t i = 0; i < r->n_spans; i++)
		free(r->spans[i].attrs);
	free(r->spans);
	u64map_free(&r->span_idx);
	u64map_free(&r->span_leaf);
	free(r->links);
	free(r);
}

bool sp_report__has_kind(const struct sp_report *r, enum sp_sample_kind k)
{
	return k < SP_KIND__MAX && r->trees[k].n > 1 && r->trees[k].total > 0;
}

uint64_t sp_report__samples(const struct sp_report *r)
{
	return r->n_samples;
}

/* ------------------------------------------------------------ top */

static const uint64_t *by_vals;

static int by_cmp(const void *a, const void *b)
{
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;

	if (by_vals[x] != by_vals[y])
		return by_vals[x] > by_vals[y] ? -1 : 1;
	return x - y;
}

static void fmt_weight(char *buf, size_t n, enum sp_sample_kind k,
		       uint64_t w)
{
	if (k == SP_KIND_ONCPU)
		snprintf(buf, n, "%" PRIu64, w);
	else
		snprintf(buf, n, "%.1fms", (double)w / 1e6);
}

static int top_table(const struct sp_report *r, const struct ktree *t,
		     enum sp_sample_kind k, uint32_t n, bool by_self,
		     FILE *out)
{
	int32_t *ids = malloc(((size_t)r->n_names + 1) * sizeof(*ids));
	uint32_t m = 0;
	double tot = t->total ? (double)t->total : 1.0;

	if (!ids)
		return -ENOMEM;
	for (uint32_t i = 0; i < r->n_names && i < t->cap_by; i++)
		if (by_self ? t->self_by[i] : t->cum_by[i])
			ids[m++] = (int32_t)i;
	by_vals = by_self ? t->self_by : t->cum_by;
	qsort(ids, m, sizeof(*ids), by_cmp);
	fprintf(out, "%10s %7s %10s %7s  %s\n", "flat", "flat%", "cum", "cum%",
		"function");
	for (uint32_t i = 0; i < m && i < n; i++) {
		const struct rname *nm = &r->names[ids[i]];
		char a[32], b[32];

		fmt_weight(a, sizeof(a), k, t->self_by[ids[i]]);
		fmt_weight(b, sizeof(b), k, t->cum_by[ids[i]]);
		fprintf(out, "%10s %6.2f%% %10s %6.2f%%  %s%s%s%s\n", a,
			100.0 * (double)t->self_by[ids[i]] / tot, b,
			100.0 * (double)t->cum_by[ids[i]] / tot, nm->s,
			nm->where ? " (" : "",
			nm->where ? base_name(nm->where) : "",
			nm->where ? ")" : "");
	}
	free(ids);
	return 0;
}

int sp_report__top(const struct sp_report *r, enum sp_sample_kind k,
		   uint32_t n, FILE *out)
{
	const struct ktree *t;
	const char *what = k == SP_KIND_ONCPU ? "on-CPU" : "off-CPU";
	int err;

	if (k >= SP_KIND__MAX)
		return -EINVAL;
	t = &r->trees[k];
	if (k == SP_KIND_ONCPU)
		fprintf(out, "%s: %" PRIu64 " samples, %.1f ms\n", what,
			t->samples, (double)t->ns / 1e6);
	else
		fprintf(out, "%s: %" PRIu64 " waits, %.1f ms blocked\n", what,
			t->samples, (double)t->ns / 1e6);
	if (!t->total) {
		fprintf(out, "(no samples)\n");
		return 0;
	}
	fprintf(out, "\nTop %u by flat (self):\n", n);
	err = top_table(r, t, k, n, true, out);
	if (err)
		return err;
	fprintf(out, "\nTop %u by cumulative:\n", n);
	return top_table(r, t, k, n, false, out);
}

/* ------------------------------------------------------------ collapsed */

static void put_folded_name(const char *s, FILE *out)
{
	for (; *s; s++)
		fputc(*s == ';' ? ':' : (*s == '\n' ? ' ' : *s), out);
}

int sp_report__collapsed(const struct sp_report *r, enum sp_sample_kind k,
			 FILE *out)
{
	const struct ktree *t;
	int32_t *path;
	uint32_t depth = 0;
	int32_t node;

	if (k >= SP_KIND__MAX)
		return -EINVAL;
	t = &r->trees[k];
	path = malloc(((size_t)t->n + 1) * sizeof(*path));
	if (!path)
		return -ENOMEM;
	/* iterative preorder; path[0..depth) are the node's ancestors */
	node = t->nodes[0].first_child;
	while (node >= 0) {
		const struct rnode *nd = &t->nodes[node];

		path[depth] = node;
		if (nd->self) {
			uint64_t v = k == SP_KIND_ONCPU ? nd->self
							: (nd->self + 500) / 1000;

			for (uint32_t i = 0; i <= depth; i++) {
				if (i)
					fputc(';', out);
				put_folded_name(
					r->names[t->nodes[path[i]].name].s, out);
				if (r->names[t->nodes[path[i]].name].flags & RN_KERNEL)
					fputs("_[k]", out);
			}
			fprintf(out, " %" PRIu64 "\n", v ? v : 1);
		}
		node = ktree__preorder_next(t, node, &depth);
	}
	free(path);
	return ferror(out) ? -EIO : 0;
}

/* ------------------------------------------------------------ by span */

static const struct rspan *span_sort_base;

static int span_cmp(const void *a, const void *b)
{
	const struct rspan *x = &span_sort_base[*(const uint32_t *)a];
	const struct rspan *y = &span_sort_base[*(const uint32_t *)b];
	uint64_t tx = x->oncpu_ns, ty = y->oncpu_ns;

	if (!x->link != !y->link)
		return x->link ? -1 : 1;	/* the no-span row last */
	for (int i = 0; i < 5; i++) {
		tx += x->off_ns[i];
		ty += y->off_ns[i];
	}
	if (tx != ty)
		return tx > ty ? -1 : 1;
	return x->link - y->link;
}

struct leaf_w {
	uint32_t span;
	int32_t name;
	uint64_t ns;
};

static int leaf_cmp(const void *a, const void *b)
{
	const struct leaf_w *x = a, *y = b;

	if (x->span != y->span)
		return x->span < y->span ? -1 : 1;
	if (x->ns != y->ns)
		return x->ns > y->ns ? -1 : 1;
	return x->name - y->name;
}

static void hex(FILE *out, const uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		fprintf(out, "%02x", b[i]);
}

uint32_t sp_report__top_spans(const struct sp_report *r, struct sp_link *out, uint32_t n)
{
	uint32_t *order = malloc(((size_t)r->n_spans + 1) * sizeof(*order)), k = 0;

	if (!order)
		return 0;
	for (uint32_t i = 0; i < r->n_spans; i++)
		order[i] = i;
	span_sort_base = r->spans;
	qsort(order, r->n_spans, sizeof(*order), span_cmp);
	for (uint32_t i = 0; i < r->n_spans && k < n; i++) {
		int32_t l = r->spans[order[i]].link;

		if (l > 0 && (uint32_t)l < r->n_links)
			out[k++] = r->links[l];
	}
	free(order);
	return k;
}

int sp_report__by_span(const struct sp_report *r, uint32_t top_frames,
		       FILE *out)
{
	uint32_t *order = malloc(((size_t)r->n_spans + 1) * sizeof(*order));
	struct leaf_w *lw = malloc(((size_t)r->span_leaf.n + 1) * sizeof(*lw));
	uint32_t *first = calloc((size_t)r->n_spans + 1, sizeof(*first));
	uint32_t n_lw = 0;
	int err = -ENOMEM;

	if (!order || !lw || !first)
		goto out;
	for (uint32_t i = 0; i < r->span_leaf.cap; i++) {
		uint64_t key = r->span_leaf.keys[i];

		if (key == UINT64_MAX)
			continue;
		lw[n_lw++] = (struct leaf_w){ .span = (uint32_t)(key >> 32),
					      .name = (int32_t)(uint32_t)key,
					      .ns = r->span_leaf.vals[i] };
	}
	qsort(lw, n_lw, sizeof(*lw), leaf_cmp);
	for (uint32_t i = n_lw; i-- > 0;)
		first[lw[i].span] = i + 1;	/* 1-based, 0 = none */
	for (uint32_t i = 0; i < r->n_spans; i++)
		order[i] = i;
	span_sort_base = r->spans;
	qsort(order, r->n_spans, sizeof(*order), span_cmp);
	fprintf(out, "%-32s %-16s %8s %10s %6s %10s %9s %9s %9s %9s  %s\n",
		"trace_id", "span_id", "samples", "on-CPU ms", "waits",
		"off-CPU ms", "sleep ms", "io ms", "runq ms", "other ms",
		"top frames (self time)  [span attributes]");
	for (uint32_t i = 0; i < r->n_spans; i++) {
		const struct rspan *s = &r->spans[order[i]];
		uint64_t off = 0;
		uint32_t shown = 0;

		for (int j = 0; j < 5; j++)
			off += s->off_ns[j];
		if (s->link > 0 && (uint32_t)s->link < r->n_links) {
			hex(out, r->links[s->link].trace_id, 16);
			fputc(' ', out);
			hex(out, r->links[s->link].span_id, 8);
		} else {
			fprintf(out, "%-32s %-16s", "(no span)", "-");
		}
		fprintf(out, " %8" PRIu64 " %10.1f %6" PRIu64 " %10.1f %9.1f "
			"%9.1f %9.1f %9.1f  ",
			s->samples, (double)s->oncpu_ns / 1e6, s->waits,
			(double)off / 1e6,
			(double)s->off_ns[1] / 1e6, (double)s->off_ns[2] / 1e6,
			(double)s->off_ns[3] / 1e6,
			(double)(s->off_ns[0] + s->off_ns[4]) / 1e6);
		for (uint32_t j = first[order[i]]; j && j - 1 < n_lw &&
		     lw[j - 1].span == order[i] && shown < top_frames;
		     j++, shown++)
			fprintf(out, "%s%s %.1fms", shown ? ", " : "",
				r->names[lw[j - 1].name].s,
				(double)lw[j - 1].ns / 1e6);
		if (s->attrs)
			fprintf(out, "  [%s]", s->attrs);
		fputc('\n', out);
	}
	err = ferror(out) ? -EIO : 0;
out:
	free(order);
	free(lw);
	free(first);
	return err;
}
