// SPDX-License-Identifier: MIT
/*
 * jit_syms.c - load perf-map chains from store directories, cache the
 * parsed maps (contract: jit_syms.h).
 *
 * The cache is a small array searched linearly (a profile names a few
 * heads; a serve holds as many as cache_bytes allows, typically tens),
 * with a use clock for LRU.  Missing chains are remembered in a ring of
 * NEG_MAX ids with the time they were found missing.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/jit_piece.h"
#include "base/pin.h"
#include "base/symstore.h"
#include "jit_syms.h"
#include "perf_map.h"
#include "profile/fileio.h"

#define CACHE_MAX 4096
#define NEG_MAX 256

struct centry {
	struct sp_jit_id head;
	struct sp_perf_map *map;
	size_t bytes;
	uint64_t used;
};

struct neg {
	struct sp_jit_id head;
	time_t when;
	uint64_t gen;			/* changed() generation when found missing */
	bool set;
};

struct sp_jit_syms {
	struct sp_jit_syms_opts o;
	char *dirs[SP_JIT_SYMS_MAX_DIRS];
	uint32_t n_dirs;
	pthread_mutex_t lock;
	struct centry *cache;
	uint32_t n_cache;
	uint64_t clock, gen;
	struct neg neg[NEG_MAX];
	uint32_t neg_next;
	struct sp_jit_syms_stats st;
};

int sp_jit_syms__new(const struct sp_jit_syms_opts *o, struct sp_jit_syms **out)
{
	struct sp_jit_syms *js = calloc(1, sizeof(*js));

	*out = NULL;
	if (!js)
		return -ENOMEM;
	if (o)
		js->o = *o;
	if (!js->o.cache_bytes)
		js->o.cache_bytes = 256u << 20;
	if (!js->o.max_chain_bytes)
		js->o.max_chain_bytes = 256ull << 20;
	if (!js->o.max_chain_pieces)
		js->o.max_chain_pieces = 4096;
	js->cache = calloc(CACHE_MAX, sizeof(*js->cache));
	if (!js->cache) {
		free(js);
		return -ENOMEM;
	}
	pthread_mutex_init(&js->lock, NULL);
	*out = js;
	return 0;
}

void sp_jit_syms__free(struct sp_jit_syms *js)
{
	if (!js)
		return;
	for (uint32_t i = 0; i < js->n_cache; i++)
		sp_perf_map__free(js->cache[i].map);
	for (uint32_t i = 0; i < js->n_dirs; i++)
		free(js->dirs[i]);
	free(js->cache);
	pthread_mutex_destroy(&js->lock);
	free(js);
}

int sp_jit_syms__add_dir(struct sp_jit_syms *js, const char *dir)
{
	char *d;

	if (js->n_dirs == SP_JIT_SYMS_MAX_DIRS)
		return -E2BIG;
	d = strdup(dir);
	if (!d)
		return -ENOMEM;
	pthread_mutex_lock(&js->lock);
	js->dirs[js->n_dirs++] = d;
	pthread_mutex_unlock(&js->lock);
	return 0;
}

int sp_jit_syms__has_dirs(struct sp_jit_syms *js)
{
	return js && js->n_dirs;
}

/* ------------------------------------------------------------ loading */

/* One piece by id from the first directory holding it: 0 and a buffer the
 * caller frees, -ENOENT, -EINVAL (refused). */
static int read_piece(struct sp_jit_syms *js, const struct sp_jit_id *id, uint8_t **buf,
		      size_t *len, struct sp_jit_piece *pc)
{
	char hex[SP_JIT_ID_HEX + 1], path[4096];
	int fd, err = -ENOENT;

	sp_jit_id__hex(id, hex);
	for (uint32_t i = 0; i < js->n_dirs && err == -ENOENT; i++) {
		if (sp_symstore__path(js->dirs[i], SP_SYMSTORE_JIT, hex, path, sizeof(path)))
			continue;
		fd = sp_pin__open(path, NULL);
		if (fd < 0) {
			err = fd == -ENOENT ? -ENOENT : -EINVAL;
			continue;
		}
		err = sp_read_fd(fd, SP_JIT_PIECE_HDR + SP_JIT_PIECE_MAX_DATA, buf, len);
		close(fd);
		if (err) {
			err = err == -ENOMEM ? -ENOMEM : -EINVAL;
			break;
		}
		err = sp_jit_piece__decode(*buf, *len, id, pc) ? -EINVAL : 0;
		if (err) {
			free(*buf);
			*buf = NULL;
		}
	}
	return err;
}

/* The chain's bytes parsed.  Runs without the lock (dirs are only
 * appended to before lookups start). */
static int load_chain(struct sp_jit_syms *js, const struct sp_jit_id *head,
		      struct sp_perf_map **out, uint64_t *refused, uint64_t *rows_refused)
{
	struct part {
		uint8_t *buf;
		struct sp_jit_piece pc;
	} *parts = NULL;
	uint32_t n = 0, cap = 0;
	struct sp_jit_id id = *head;
	uint64_t total = 0, off;
	uint8_t *all = NULL;
	struct sp_perf_map_stats st;
	int err = 0;

	for (;;) {
		uint8_t *buf = NULL;
		size_t len = 0;
		struct sp_jit_piece pc;

		if (n == js->o.max_chain_pieces) {
			err = -E2BIG;
			break;
		}
		err = read_piece(js, &id, &buf, &len, &pc);
		if (err)
			break;
		/* perf-map text either way: copied from a perf map, or converted
		 * from a jitdump by the collector; one source per chain */
		if ((n && (pc.source != parts[0].pc.source ||
			   pc.offset + pc.len != parts[n - 1].pc.offset))) {
			free(buf);
			err = -EINVAL;	/* not its parent */
			break;
		}
		total += pc.len;
		if (total > js->o.max_chain_bytes) {
			free(buf);
			err = -E2BIG;
			break;
		}
		if (n == cap) {
			uint32_t nc = cap ? 2 * cap : 16;
			struct part *q = realloc(parts, nc * sizeof(*q));

			if (!q) {
				free(buf);
				err = -ENOMEM;
				break;
			}
			parts = q;
			cap = nc;
		}
		parts[n].buf = buf;
		parts[n].pc = pc;
		n++;
		if (sp_jit_id__is_zero(&pc.parent))
			break;
		id = pc.parent;
	}
	if (!err) {
		all = malloc(total ? total : 1);
		if (!all)
			err = -ENOMEM;
	}
	if (!err) {
		/* head first in parts: the file's start is the last one */
		off = 0;
		for (uint32_t i = n; i-- > 0;) {
			memcpy(all + off, parts[i].pc.data, parts[i].pc.len);
			off += parts[i].pc.len;
		}
		err = sp_perf_map__parse(all, total, out, &st);
		*refused = st.malformed + st.nul + st.bad_range;
		*rows_refused = st.rows_refused;
	}
	free(all);
	for (uint32_t i = 0; i < n; i++)
		free(parts[i].buf);
	free(parts);
	return err;
}

/* ------------------------------------------------------------ cache */

static struct centry *cache_find(struct sp_jit_syms *js, const struct sp_jit_id *h)
{
	for (uint32_t i = 0; i < js->n_cache; i++)
		if (!memcmp(js->cache[i].head.b, h->b, SP_JIT_ID_LEN))
			return &js->cache[i];
	return NULL;
}

static void cache_evict_one(struct sp_jit_syms *js)
{
	uint32_t v = 0;

	for (uint32_t i = 1; i < js->n_cache; i++)
		if (js->cache[i].used < js->cache[v].used)
			v = i;
	js->st.cache_bytes -= js->cache[v].bytes;
	sp_perf_map__free(js->cache[v].map);
	js->cache[v] = js->cache[--js->n_cache];
	js->st.evictions++;
}

/* Takes m (frees it when another thread cached the same head first). */
static struct centry *cache_put(struct sp_jit_syms *js, const struct sp_jit_id *h,
				struct sp_perf_map *m)
{
	struct centry *c = cache_find(js, h);
	size_t bytes = sp_perf_map__bytes(m);

	if (c) {
		sp_perf_map__free(m);
		return c;
	}
	while (js->n_cache && (js->n_cache == CACHE_MAX ||
			       js->st.cache_bytes + bytes > js->o.cache_bytes))
		cache_evict_one(js);
	c = &js->cache[js->n_cache++];
	c->head = *h;
	c->map = m;
	c->bytes = bytes;
	js->st.cache_bytes += bytes;
	return c;
}

static bool negative(struct sp_jit_syms *js, const struct sp_jit_id *h, time_t now)
{
	for (uint32_t i = 0; i < NEG_MAX; i++) {
		struct neg *g = &js->neg[i];

		if (g->set && !memcmp(g->head.b, h->b, SP_JIT_ID_LEN))
			return g->gen == js->gen && now - g->when < SP_JIT_RETRY_S;
	}
	return false;
}

static void remember_missing(struct sp_jit_syms *js, const struct sp_jit_id *h, time_t now)
{
	struct neg *g = &js->neg[js->neg_next];

	for (uint32_t i = 0; i < NEG_MAX; i++)
		if (js->neg[i].set && !memcmp(js->neg[i].head.b, h->b, SP_JIT_ID_LEN)) {
			g = &js->neg[i];
			goto fill;
		}
	js->neg_next = (js->neg_next + 1) % NEG_MAX;
fill:
	g->head = *h;
	g->when = now;
	g->gen = js->gen;
	g->set = true;
}

static time_t mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec;
}

int sp_jit_syms__resolve(struct sp_jit_syms *js, const char *head_hex, uint64_t addr,
			 char *name, size_t name_len)
{
	return sp_jit_syms__resolve_line(js, head_hex, addr, name, name_len, NULL, 0, NULL, NULL);
}

int sp_jit_syms__resolve_line(struct sp_jit_syms *js, const char *head_hex, uint64_t addr,
			      char *name, size_t name_len, char *file, size_t file_len,
			      uint32_t *line, uint32_t *first_line)
{
	struct sp_perf_map *m = NULL;
	struct sp_jit_id head;
	struct centry *c;
	const char *nm, *fl;
	uint64_t refused = 0, rows_refused = 0;
	uint32_t ln;
	time_t now;
	int err;

	if (line)
		*line = 0;
	if (first_line)
		*first_line = 0;
	if (file && file_len)
		*file = 0;

	if (!js || sp_jit_id__parse(head_hex, &head))
		return -EINVAL;
	now = mono_s();
	pthread_mutex_lock(&js->lock);
	js->st.lookups++;
	c = cache_find(js, &head);
	if (c) {
		js->st.cache_hits++;
		goto found;
	}
	if (negative(js, &head, now)) {
		js->st.missing++;
		pthread_mutex_unlock(&js->lock);
		return -ENOENT;
	}
	pthread_mutex_unlock(&js->lock);
	err = load_chain(js, &head, &m, &refused, &rows_refused);
	pthread_mutex_lock(&js->lock);
	if (err) {
		if (err == -ENOENT) {
			js->st.missing++;
			remember_missing(js, &head, now);
		} else if (err == -E2BIG || err == -EFBIG) {
			js->st.too_big++;
			remember_missing(js, &head, now);
		} else if (err != -ENOMEM) {
			js->st.bad_piece++;
			remember_missing(js, &head, now);
		}
		pthread_mutex_unlock(&js->lock);
		return err == -ENOMEM ? -ENOMEM : -ENOENT;
	}
	js->st.chains_loaded++;
	js->st.lines_refused += refused;
	js->st.rows_refused += rows_refused;
	c = cache_put(js, &head, m);
found:
	c->used = ++js->clock;
	err = sp_perf_map__resolve(c->map, addr, &nm, NULL);
	if (!err) {
		snprintf(name, name_len, "%s", nm);
		js->st.resolved++;
		if (line && !sp_perf_map__line(c->map, addr, &fl, &ln, first_line)) {
			*line = ln;
			if (file && file_len)
				snprintf(file, file_len, "%s", fl ? fl : "");
			js->st.with_line++;
		}
	} else {
		js->st.not_covered++;
	}
	pthread_mutex_unlock(&js->lock);
	return err;
}

void sp_jit_syms__changed(struct sp_jit_syms *js)
{
	if (!js)
		return;
	pthread_mutex_lock(&js->lock);
	js->gen++;
	pthread_mutex_unlock(&js->lock);
}

void sp_jit_syms__stats(struct sp_jit_syms *js, struct sp_jit_syms_stats *st)
{
	if (!js) {
		memset(st, 0, sizeof(*st));
		return;
	}
	pthread_mutex_lock(&js->lock);
	*st = js->st;
	st->cached = js->n_cache;
	pthread_mutex_unlock(&js->lock);
}
