/* SPDX-License-Identifier: MIT */
/*
 * util.c - private helpers of src/profile: hash index, encoder string table,
 * budgeted protobuf-c allocator, hex.  See internal.h for the contracts.
 *
 * Hashing uses xxHash's XXH3 64-bit, compiled inline (XXH_INLINE_ALL) so the
 * profile layer needs no extra library at link time.
 */
#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "base/hex.h"
#include "profile/internal.h"

uint64_t sp_hash_bytes(const void *p, size_t len)
{
	return XXH3_64bits(p, len);
}

/* ------------------------------------------------------------ hash index */
/* Linear probing, load factor <= 1/2, values -1 mark empty slots.  The
 * table never shrinks and holds no keys, only hashes (for cheap probing and
 * for rehashing on growth). */

int32_t sp_hidx__find(const struct sp_hidx *h, uint64_t hash, sp_hidx_eq_fn eq,
		      const void *ctx)
{
	uint32_t mask, i;

	if (!h->cap)
		return -1;
	mask = h->cap - 1;
	for (i = (uint32_t)hash & mask;; i = (i + 1) & mask) {
		if (h->val[i] < 0)
			return -1;
		if (h->hash[i] == hash && eq(ctx, h->val[i]))
			return h->val[i];
	}
}

static void hidx_put(uint64_t *hashes, int32_t *vals, uint32_t cap,
		     uint64_t hash, int32_t val)
{
	uint32_t mask = cap - 1, i;

	for (i = (uint32_t)hash & mask; vals[i] >= 0; i = (i + 1) & mask)
		;
	hashes[i] = hash;
	vals[i] = val;
}

int sp_hidx__insert(struct sp_hidx *h, uint64_t hash, int32_t val)
{
	if ((uint64_t)(h->n + 1) * 2 > h->cap) {
		uint32_t ncap = h->cap ? h->cap * 2 : 64, i;
		uint64_t *nh;
		int32_t *nv;

		if (h->cap >= (1u << 30))
			return -E2BIG;
		nh = calloc(ncap, sizeof(*nh));
		nv = malloc((size_t)ncap * sizeof(*nv));
		if (!nh || !nv) {
			free(nh);
			free(nv);
			return -ENOMEM;
		}
		memset(nv, 0xff, (size_t)ncap * sizeof(*nv));	/* all -1 */
		for (i = 0; i < h->cap; i++)
			if (h->val[i] >= 0)
				hidx_put(nh, nv, ncap, h->hash[i], h->val[i]);
		free(h->hash);
		free(h->val);
		h->hash = nh;
		h->val = nv;
		h->cap = ncap;
	}
	hidx_put(h->hash, h->val, h->cap, hash, val);
	h->n++;
	return 0;
}

void sp_hidx__free(struct sp_hidx *h)
{
	if (!h)
		return;
	free(h->hash);
	free(h->val);
	memset(h, 0, sizeof(*h));
}

/* ------------------------------------------------------------ strtab */
void sp_strtab__init(struct sp_strtab *t, const struct sp_profile *base)
{
	memset(t, 0, sizeof(*t));
	t->base = base;
	t->n_base = base->n_strings;
}

/* Appends s as the next wire entry ("" first, on the first call). */
static int32_t wire_push(struct sp_strtab *t, const char *s)
{
	if (t->n_wire + 2 > t->cap_wire) {
		uint32_t ncap = t->cap_wire ? t->cap_wire * 2 : 64;
		const char **n;

		if (t->n_wire + 2 >= SP_TABLE_MAX)
			return -E2BIG;
		n = reallocarray(t->wire, ncap, sizeof(*n));
		if (!n)
			return -ENOMEM;
		t->wire = n;
		t->cap_wire = ncap;
	}
	if (!t->n_wire)
		t->wire[t->n_wire++] = "";
	t->wire[t->n_wire] = s;
	return (int32_t)t->n_wire++;
}

int32_t sp_strtab__ref(struct sp_strtab *t, int32_t i)
{
	int32_t w;

	if (i < 0 || (uint32_t)i >= (t->n_base ? t->n_base : 1))
		return -EINVAL;
	if (i == 0)
		return 0;
	if (!t->wire_of) {
		t->wire_of = calloc(t->n_base, sizeof(*t->wire_of));
		if (!t->wire_of)
			return -ENOMEM;
	}
	if (t->wire_of[i])
		return t->wire_of[i];
	w = wire_push(t, t->base->strings[i]);
	if (w > 0)
		t->wire_of[i] = w;
	return w;
}

struct extra_key {
	const struct sp_strtab *t;
	const char *s;
};

static bool extra_eq(const void *ctx, int32_t v)
{
	const struct extra_key *k = ctx;

	return strcmp(k->t->extra[v], k->s) == 0;
}

int32_t sp_strtab__get(struct sp_strtab *t, const char *s)
{
	size_t len = strlen(s);
	uint64_t h;
	struct extra_key k = { t, s };
	int32_t i, w;
	char *dup;
	int err;

	if (!len)
		return 0;
	i = sp_profile__find_str(t->base, s, len);
	if (i >= 0)
		return sp_strtab__ref(t, i);
	h = sp_hash_bytes(s, len);
	i = sp_hidx__find(&t->idx, h, extra_eq, &k);
	if (i >= 0)
		return t->extra_wire[i];
	if (t->n_extra == t->cap_extra) {
		uint32_t ncap = t->cap_extra ? t->cap_extra * 2 : 32;
		char **n = reallocarray(t->extra, ncap, sizeof(*n));
		int32_t *nw;

		if (!n)
			return -ENOMEM;
		t->extra = n;
		nw = reallocarray(t->extra_wire, ncap, sizeof(*nw));
		if (!nw)
			return -ENOMEM;
		t->extra_wire = nw;
		t->cap_extra = ncap;
	}
	dup = strdup(s);
	if (!dup)
		return -ENOMEM;
	w = wire_push(t, dup);
	err = w < 0 ? w : sp_hidx__insert(&t->idx, h, (int32_t)t->n_extra);
	if (err) {
		if (w > 0)
			t->n_wire--;
		free(dup);
		return err;
	}
	t->extra[t->n_extra] = dup;
	t->extra_wire[t->n_extra++] = w;
	return w;
}

uint32_t sp_strtab__count(const struct sp_strtab *t)
{
	return t->n_wire ? t->n_wire : 1;
}

char **sp_strtab__array(const struct sp_strtab *t, struct sp_arena *a)
{
	uint32_t i, n = sp_strtab__count(t);
	char **v = sp_arena__array(a, n, sizeof(*v));

	if (v)
		v[0] = "";
	for (i = 1; v && i < n; i++)
		v[i] = (char *)t->wire[i];
	return v;
}

void sp_strtab__free(struct sp_strtab *t)
{
	uint32_t i;

	if (!t)
		return;
	for (i = 0; i < t->n_extra; i++)
		free(t->extra[i]);
	free(t->extra);
	free(t->extra_wire);
	free(t->wire);
	free(t->wire_of);
	sp_hidx__free(&t->idx);
	memset(t, 0, sizeof(*t));
}

/* ------------------------------------------------------------ allocator */
/* Live bytes, counted at malloc's usable size (what free gives back). */
static void *pb_alloc(void *data, size_t size)
{
	struct sp_pballoc *b = data;
	void *p;
	size_t n;

	if (size > b->budget - b->used) {
		b->exhausted = true;
		return NULL;
	}
	p = malloc(size);
	if (!p)
		return NULL;
	n = malloc_usable_size(p);
	if (n > b->budget - b->used) {
		free(p);
		b->exhausted = true;
		return NULL;
	}
	b->used += n;
	if (b->used > b->peak)
		b->peak = b->used;
	return p;
}

static void pb_free(void *data, void *ptr)
{
	struct sp_pballoc *b = data;

	if (ptr)
		b->used -= malloc_usable_size(ptr);
	free(ptr);
}

void sp_pballoc__init(struct sp_pballoc *b, size_t input_len)
{
	const size_t cap = (size_t)1 << 30;

	b->a.alloc = pb_alloc;
	b->a.free = pb_free;
	b->a.allocator_data = b;
	b->used = 0;
	b->peak = 0;
	b->exhausted = false;
	b->budget = input_len > (cap - (1u << 20)) / 48 ? cap :
		    48 * input_len + (1u << 20);
}

int sp_dec__begin(const uint8_t *buf, size_t len, struct sp_profile **out,
		  struct sp_pballoc *alloc)
{
	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!buf && len)
		return -EINVAL;
	if (len > SP_DECODE_MAX_BYTES)
		return -E2BIG;
	sp_pballoc__init(alloc, len);
	return 0;
}

/* ------------------------------------------------------------ hex */
int sp_enc__begin(struct sp_enc *b, const struct sp_profile *p, uint8_t **out,
		  size_t *out_len)
{
	int err;

	if (!out || !out_len)
		return -EINVAL;
	*out = NULL;
	*out_len = 0;
	err = sp_profile__validate(p);
	if (err)
		return err;
	b->p = p;
	sp_strtab__init(&b->st, p);
	return 0;
}

int sp_enc__string_table(struct sp_enc *b, char ***table, size_t *n)
{
	*table = sp_strtab__array(&b->st, &b->arena);
	*n = sp_strtab__count(&b->st);
	return *table ? 0 : -ENOMEM;
}

int sp_enc__end(struct sp_enc *b, int err, const ProtobufCMessage *m, uint8_t **out,
		size_t *out_len)
{
	if (!err)
		err = sp_pb__pack(m, out, out_len);
	sp_arena__free(&b->arena);
	sp_strtab__free(&b->st);
	return err;
}

int sp_pb__pack(const ProtobufCMessage *m, uint8_t **out, size_t *out_len)
{
	size_t len = protobuf_c_message_get_packed_size(m);
	uint8_t *buf = malloc(len ? len : 1);

	if (!buf)
		return -ENOMEM;
	if (protobuf_c_message_pack(m, buf) != len) {
		free(buf);
		return -EIO;
	}
	*out = buf;
	*out_len = len;
	return 0;
}

void sp_hex_encode(const uint8_t *in, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < n; i++) {
		out[2 * i] = digits[in[i] >> 4];
		out[2 * i + 1] = digits[in[i] & 15];
	}
	out[2 * n] = '\0';
}

int sp_hex_decode(const char *s, uint8_t *out, size_t n)
{
	size_t i;

	if (strlen(s) != 2 * n)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		int hi = sp_hex_digit(s[2 * i]), lo = sp_hex_digit(s[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return -EINVAL;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	return 0;
}

bool sp_all_zero(const void *p, size_t n)
{
	const uint8_t *b = p;
	size_t i;

	for (i = 0; i < n; i++)
		if (b[i])
			return false;
	return true;
}
