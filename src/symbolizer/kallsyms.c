// SPDX-License-Identifier: MIT
/*
 * kallsyms.c - parse kernel symbol snapshots and resolve kernel addresses.
 *
 * Contract: see kallsyms.h.  Parsing streams: bytes come from a reader
 * (memory, memory through inflate, or a file through gzread) in chunks and
 * are cut into lines in a fixed SP_KALLSYMS_MAX_LINE buffer, so no input can
 * make a line allocation grow.  Symbols go to a growing array and names to
 * one arena; both are bounded by SP_KSYMS_MAX_SYMS and SP_KALLSYMS_MAX_BYTES.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "base/hex.h"
#include "debuginfo.h"
#include "grow.h"
#include "kallsyms.h"

#define CHUNK (64u << 10)
#define MAX_DIRS 16
#define NEG_MAX 64

struct ent {
	uint64_t addr;
	uint32_t name;		/* arena offset */
	uint32_t module;	/* arena offset, 0 = vmlinux */
	uint8_t rank;		/* lower wins among equal addresses */
	uint8_t marker;		/* end-of-section marker (_etext, ...) */
	uint8_t tail;		/* no known end: next symbol is elsewhere */
};

struct kmod {
	char name[SP_KSYMS_MOD_NAME];
	char build_id[SP_BUILDID_MAX_HEX + 1];	/* "" none */
	uint64_t text, size;
	uint32_t n_sects;	/* "# module-section" lines taken for it */
};

/* A "# module-section" line: an executable section of mods[mod]. */
struct ksect {
	uint32_t mod;
	char name[SP_KALLSYMS_SECTION_NAME_MAX];
	uint64_t addr, size;
};

struct sp_ksyms {
	struct kmod *mods;
	size_t n_mods;
	struct ksect *sects;
	uint32_t n_sects, sects_cap;
	uint64_t text;		/* _text (else _stext) of the kernel image */
	uint64_t stext;
	struct ent *e;
	size_t n, cap;
	char *arena;		/* offset 0 holds "" */
	size_t arena_len, arena_cap;
	uint32_t last_module;	/* interning of consecutive equal modules */
	char build_id[SP_BUILDID_MAX_HEX + 1];
	char kernel[128];
	char boot_id[64];
	char boot_hex[33];	/* boot_id without dashes, "" unknown */
	uint64_t captured_at;
	bool subset;		/* header key scope: only one profile's symbols */
};

/* ------------------------------------------------------------ readers */

struct reader {
	int (*read)(struct reader *r, char *buf, size_t n);	/* bytes or -errno */
	const uint8_t *mem;
	size_t mem_len, mem_pos;
	z_stream zs;
	bool zs_init, zs_end;
	gzFile gz;
};

static int read_mem(struct reader *r, char *buf, size_t n)
{
	size_t left = r->mem_len - r->mem_pos;

	if (n > left)
		n = left;
	memcpy(buf, r->mem + r->mem_pos, n);
	r->mem_pos += n;
	return (int)n;
}

static int read_inflate(struct reader *r, char *buf, size_t n)
{
	int rc;

	if (r->zs_end)
		return 0;
	r->zs.next_out = (Bytef *)buf;
	r->zs.avail_out = (uInt)n;
	while (r->zs.avail_out == n) {
		rc = inflate(&r->zs, Z_NO_FLUSH);
		if (rc == Z_STREAM_END) {
			r->zs_end = true;
			break;
		}
		if (rc == Z_MEM_ERROR)
			return -ENOMEM;
		if (rc != Z_OK)
			return -EINVAL;	/* corrupt, or truncated (Z_BUF_ERROR) */
	}
	return (int)(n - r->zs.avail_out);
}

static int read_gz(struct reader *r, char *buf, size_t n)
{
	int got = gzread(r->gz, buf, (unsigned)n);
	int zerr = Z_OK;

	if (got > 0)
		return got;
	gzerror(r->gz, &zerr);
	if (got == 0)	/* end of input; Z_BUF_ERROR: truncated gzip */
		return zerr == Z_OK ? 0 : -EINVAL;
	return zerr == Z_ERRNO ? -EIO : zerr == Z_MEM_ERROR ? -ENOMEM : -EINVAL;
}

/* ------------------------------------------------------------ table */

static int arena_add(struct sp_ksyms *k, const char *s, size_t len,
		     uint32_t *off)
{
	if (k->arena_len + len + 1 > k->arena_cap) {
		size_t cap = k->arena_cap ? k->arena_cap : 1 << 16;
		char *a;

		while (cap < k->arena_len + len + 1)
			cap *= 2;
		if (cap > UINT32_MAX)
			return -E2BIG;
		a = realloc(k->arena, cap);
		if (!a)
			return -ENOMEM;
		k->arena = a;
		k->arena_cap = cap;
	}
	memcpy(k->arena + k->arena_len, s, len);
	k->arena[k->arena_len + len] = '\0';
	*off = (uint32_t)k->arena_len;
	k->arena_len += len + 1;
	return 0;
}

static bool is_marker(const char *name, size_t len)
{
	static const char suffix[] = "_text_end";
	size_t sl = sizeof(suffix) - 1;

	if ((len == 6 && !memcmp(name, "_etext", 6)) ||
	    (len == 10 && !memcmp(name, "_einittext", 10)) ||
	    (len == 4 && !memcmp(name, "_end", 4)))
		return true;
	return len > sl + 2 && name[0] == '_' && name[1] == '_' &&
	       !memcmp(name + len - sl, suffix, sl);
}

static uint8_t rank_of(char type, const char *name, size_t len)
{
	uint8_t r = type == 'T' ? 0 : type == 'W' ? 1 : 2;
	size_t u = 0;

	while (u < len && name[u] == '_')
		u++;
	return (uint8_t)(r * 64 + (u > 63 ? 63 : u));
}

static bool printable(char c)
{
	return c > ' ' && c < 0x7f;
}

/* One symbol line (no newline).  0 kept, 1 skipped (counted), <0 fatal. */
static int parse_sym(struct sp_ksyms *k, const char *l, size_t len,
		     struct sp_ksyms_stats *st)
{
	const char *name, *mod = NULL;
	size_t i = 0, nd = 0, name_len, mod_len = 0;
	uint64_t addr = 0;
	struct ent e = { 0 };
	char type;
	int err;

	while (i < len && nd < 17) {
		int v = sp_hex_digit(l[i]);

		if (v < 0)
			break;
		addr = addr << 4 | (uint64_t)v;
		i++;
		nd++;
	}
	if (nd == 0 || nd > 16 || i + 3 > len || l[i] != ' ' ||
	    l[i + 2] != ' ')
		goto bad;
	type = l[i + 1];
	i += 3;
	name = l + i;
	while (i < len && printable(l[i]))
		i++;
	name_len = (size_t)(l + i - name);
	if (name_len == 0 || name_len > SP_KALLSYMS_MAX_NAME)
		goto bad;
	if (i < len) {
		if (l[i] != '\t' && l[i] != ' ')
			goto bad;
		while (i < len && (l[i] == '\t' || l[i] == ' '))
			i++;
		if (i == len || l[i] != '[')
			goto bad;
		mod = l + ++i;
		while (i < len && printable(l[i]) && l[i] != ']')
			i++;
		mod_len = (size_t)(l + i - mod);
		if (i + 1 != len || l[i] != ']' || mod_len == 0 ||
		    mod_len > SP_KALLSYMS_MAX_NAME)
			goto bad;
	}
	if (!sp_kallsyms_format__is_text(type)) {
		st->skipped_type++;
		return 1;
	}
	if (!addr) {
		st->skipped_zero++;
		return 1;
	}
	if (k->n == SP_KSYMS_MAX_SYMS)
		return -E2BIG;
	if (k->n == k->cap) {
		size_t cap = k->cap ? k->cap * 2 : 4096;
		struct ent *ne = realloc(k->e, cap * sizeof(*ne));

		if (!ne)
			return -ENOMEM;
		k->e = ne;
		k->cap = cap;
	}
	if (k->n && addr < k->e[k->n - 1].addr)
		st->unsorted = true;
	if (!mod && name_len == 5 && !memcmp(name, "_text", 5) && !k->text)
		k->text = addr;
	if (!mod && name_len == 6 && !memcmp(name, "_stext", 6) && !k->stext)
		k->stext = addr;
	e.addr = addr;
	e.rank = rank_of(type, name, name_len);
	e.marker = is_marker(name, name_len);
	err = arena_add(k, name, name_len, &e.name);
	if (err)
		return err;
	if (mod) {
		const char *last = k->arena + k->last_module;

		if (k->last_module && strlen(last) == mod_len &&
		    !memcmp(last, mod, mod_len)) {
			e.module = k->last_module;
		} else {
			err = arena_add(k, mod, mod_len, &e.module);
			if (err)
				return err;
			k->last_module = e.module;
		}
	}
	k->e[k->n++] = e;
	return 0;
bad:
	st->malformed++;
	return 1;
}

/* A header key [key, key+kl) equal to the literal k. */
#define KEY_IS(key, kl, k) ((kl) == sizeof(k) - 1 && !memcmp((key), (k), sizeof(k) - 1))

/* "# spanprof-kallsyms v1 build-id=HEX key=value ..." */
static int parse_header(struct sp_ksyms *k, const char *l, size_t len)
{
	size_t ml = sizeof(SP_KALLSYMS_MAGIC) - 1, i;

	if (len < ml || memcmp(l, SP_KALLSYMS_MAGIC, ml))
		return -EINVAL;
	for (i = ml; i < len;) {
		const char *key = l + i, *val;
		size_t kl, vl;

		while (i < len && l[i] != ' ' && l[i] != '=')
			i++;
		kl = (size_t)(l + i - key);
		if (i == len || l[i] != '=')
			return -EINVAL;
		val = l + ++i;
		while (i < len && l[i] != ' ')
			i++;
		vl = (size_t)(l + i - val);
		while (i < len && l[i] == ' ')
			i++;
		for (size_t j = 0; j < vl; j++)
			if (!printable(val[j]))
				return -EINVAL;
		if (KEY_IS(key, kl, SP_KALLSYMS_KEY_BUILD_ID)) {
			if (vl > SP_BUILDID_MAX_HEX)
				return -EINVAL;
			memcpy(k->build_id, val, vl);
			k->build_id[vl] = '\0';
		} else if (KEY_IS(key, kl, SP_KALLSYMS_KEY_KERNEL) &&
			   vl < sizeof(k->kernel)) {
			memcpy(k->kernel, val, vl);
			k->kernel[vl] = '\0';
		} else if (KEY_IS(key, kl, SP_KALLSYMS_KEY_BOOT_ID) &&
			   vl < sizeof(k->boot_id)) {
			memcpy(k->boot_id, val, vl);
			k->boot_id[vl] = '\0';
		} else if (KEY_IS(key, kl, SP_KALLSYMS_KEY_SCOPE)) {
			k->subset = true;	/* any scope is less than the whole */
		} else if (KEY_IS(key, kl, SP_KALLSYMS_KEY_CAPTURED_AT)) {
			uint64_t v = 0;
			size_t j;

			for (j = 0; j < vl && j < 20; j++) {
				if (val[j] < '0' || val[j] > '9')
					break;
				v = v * 10 + (uint64_t)(val[j] - '0');
			}
			k->captured_at = j == vl && vl < 20 ? v : 0;
		}
	}
	{
		size_t o = 0;

		for (size_t j = 0; k->boot_id[j] && o < 32; j++)
			if (sp_hex_digit(k->boot_id[j]) >= 0)
				k->boot_hex[o++] = (char)(k->boot_id[j] | 0x20);
			else if (k->boot_id[j] != '-')
				break;
		k->boot_hex[o == 32 ? 32 : 0] = '\0';
	}
	return sp_buildid__validate(k->build_id);
}

static int hex_u64(const char *s, size_t n, uint64_t *out)
{
	uint64_t v = 0;

	if (!n || n > 16)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		int d = sp_hex_digit(s[i]);

		if (d < 0)
			return -EINVAL;
		v = v << 4 | (uint64_t)d;
	}
	*out = v;
	return 0;
}

/* The next " key=value" of l from *i: true and the pair; false at the
 * end, with *bad set when what is left is not a pair. */
static bool next_kv(const char *l, size_t len, size_t *i, const char **key, size_t *kl,
		    const char **val, size_t *vl, bool *bad)
{
	while (*i < len && l[*i] == ' ')
		(*i)++;
	if (*i == len)
		return false;
	*key = l + *i;
	while (*i < len && l[*i] != '=' && l[*i] != ' ')
		(*i)++;
	*kl = (size_t)(l + *i - *key);
	if (*i == len || l[*i] != '=') {
		*bad = true;
		return false;
	}
	*val = l + ++*i;
	while (*i < len && l[*i] != ' ')
		(*i)++;
	*vl = (size_t)(l + *i - *val);
	return true;
}

/* The printable word of l at *i (moved past it) into buf; false when it
 * is empty or does not fit. */
static bool word(const char *l, size_t len, size_t *i, char *buf, size_t cap)
{
	size_t s = *i;

	while (*i < len && printable(l[*i]))
		(*i)++;
	if (*i == s || *i - s >= cap)
		return false;
	memcpy(buf, l + s, *i - s);
	buf[*i - s] = '\0';
	return true;
}

/* "# module NAME build-id=HEX text=ADDR size=SIZE": 0 kept, 1 skipped
 * (malformed: counted as a comment), <0 fatal. */
static int parse_module(struct sp_ksyms *k, const char *l, size_t len)
{
	size_t i = sizeof(SP_KALLSYMS_MODULE_PREFIX) - 1, kl, vl;
	struct kmod m = { 0 };
	bool have_text = false, have_size = false, bad = false;
	const char *key, *val;

	if (!word(l, len, &i, m.name, sizeof(m.name)))
		return 1;
	while (next_kv(l, len, &i, &key, &kl, &val, &vl, &bad)) {
		if (KEY_IS(key, kl, SP_KALLSYMS_KEY_BUILD_ID)) {
			if (vl == 1 && val[0] == '-')
				continue;
			if (vl > SP_BUILDID_MAX_HEX)
				return 1;
			memcpy(m.build_id, val, vl);
			m.build_id[vl] = '\0';
			if (sp_buildid__validate(m.build_id))
				return 1;
		} else if (KEY_IS(key, kl, SP_KALLSYMS_KEY_TEXT)) {
			have_text = !hex_u64(val, vl, &m.text);
		} else if (KEY_IS(key, kl, SP_KALLSYMS_KEY_SIZE)) {
			have_size = !hex_u64(val, vl, &m.size);
		}
	}
	if (bad || !have_text || !have_size || !m.text || m.text + m.size < m.text)
		return 1;
	if (k->n_mods == SP_KSYMS_MAX_MODULES)
		return 1;
	if (!(k->n_mods & (k->n_mods + 1)) || !k->mods) {
		struct kmod *q = realloc(k->mods, (2 * k->n_mods + 2) * sizeof(*q));

		if (!q)
			return -ENOMEM;
		k->mods = q;
	}
	k->mods[k->n_mods++] = m;
	return 0;
}

/* "# module-section NAME SECTION addr=ADDR size=SIZE" of a module listed
 * before it (the last of that name), at most SP_KALLSYMS_SECTIONS_MAX per
 * module: 0 kept, 1 skipped (counted as a comment), <0 fatal. */
static int parse_section(struct sp_ksyms *k, const char *l, size_t len)
{
	size_t i = sizeof(SP_KALLSYMS_SECTION_PREFIX) - 1, kl, vl, mi = k->n_mods;
	char name[SP_KSYMS_MOD_NAME];
	struct ksect sc = { 0 };
	bool have_addr = false, have_size = false, bad = false;
	const char *key, *val;

	if (!word(l, len, &i, name, sizeof(name)) || i == len || l[i++] != ' ' ||
	    !word(l, len, &i, sc.name, sizeof(sc.name)) ||
	    !sp_kallsyms_format__section_ok(sc.name, strlen(sc.name)) || !strcmp(sc.name, ".text"))
		return 1;
	while (next_kv(l, len, &i, &key, &kl, &val, &vl, &bad)) {
		if (KEY_IS(key, kl, SP_KALLSYMS_KEY_ADDR))
			have_addr = !hex_u64(val, vl, &sc.addr);
		else if (KEY_IS(key, kl, SP_KALLSYMS_KEY_SIZE))
			have_size = !hex_u64(val, vl, &sc.size);
	}
	if (bad || !have_addr || !have_size || !sc.addr || sc.addr + sc.size < sc.addr)
		return 1;
	while (mi && strcmp(k->mods[mi - 1].name, name))
		mi--;
	if (!mi || k->mods[mi - 1].n_sects == SP_KALLSYMS_SECTIONS_MAX)
		return 1;
	sc.mod = (uint32_t)(mi - 1);
	if (sp_grow((void **)&k->sects, &k->sects_cap, k->n_sects + 1, sizeof(*k->sects)))
		return -ENOMEM;
	k->sects[k->n_sects++] = sc;
	k->mods[mi - 1].n_sects++;
	return 0;
}

static int line(struct sp_ksyms *k, const char *l, size_t len,
		struct sp_ksyms_stats *st)
{
	uint64_t *kept = NULL;
	int rc;

	st->lines++;
	if (st->lines == 1)
		return parse_header(k, l, len);
	if (len > sizeof(SP_KALLSYMS_MODULE_PREFIX) - 1 &&
	    !memcmp(l, SP_KALLSYMS_MODULE_PREFIX, sizeof(SP_KALLSYMS_MODULE_PREFIX) - 1)) {
		rc = parse_module(k, l, len);
		kept = &st->modules;
	} else if (len > sizeof(SP_KALLSYMS_SECTION_PREFIX) - 1 &&
		   !memcmp(l, SP_KALLSYMS_SECTION_PREFIX, sizeof(SP_KALLSYMS_SECTION_PREFIX) - 1)) {
		rc = parse_section(k, l, len);
		kept = &st->module_sections;
	}
	if (kept) {
		if (rc < 0)
			return rc;
		*kept += rc == 0;
		st->comments += rc == 1;
		return 0;
	}
	if (len && l[0] == '#') {
		st->comments++;
		return 0;
	}
	rc = parse_sym(k, l, len, st);
	return rc < 0 ? rc : 0;
}

static int cmp_ent(const void *a, const void *b, void *arg)
{
	const struct ent *x = a, *y = b;
	const char *arena = arg;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if (x->marker != y->marker)
		return x->marker - y->marker;
	if (x->rank != y->rank)
		return x->rank - y->rank;
	return strcmp(arena + x->name, arena + y->name);
}

/* Module names are interned per run of equal names only. */
static bool same_module(const struct sp_ksyms *k, const struct ent *a,
			const struct ent *b)
{
	if (a->module == b->module)
		return true;
	return a->module && b->module &&
	       !strcmp(k->arena + a->module, k->arena + b->module);
}

static void finish(struct sp_ksyms *k, struct sp_ksyms_stats *st)
{
	size_t w = 0;

	if (k->n > 1)
		qsort_r(k->e, k->n, sizeof(k->e[0]), cmp_ent, k->arena);
	for (size_t i = 0; i < k->n; i++) {
		if (w && k->e[w - 1].addr == k->e[i].addr) {
			st->duplicates++;
			continue;
		}
		k->e[w++] = k->e[i];
	}
	k->n = w;
	for (size_t i = 0; i < k->n; i++)
		k->e[i].tail = i + 1 == k->n ||
			       !same_module(k, &k->e[i], &k->e[i + 1]);
	st->symbols = k->n;
}

static int parse_stream(struct reader *r, struct sp_ksyms **out,
			struct sp_ksyms_stats *st_out)
{
	struct sp_ksyms_stats st = { 0 };
	struct sp_ksyms *k = calloc(1, sizeof(*k));
	char *chunk = malloc(CHUNK), *lb = malloc(SP_KALLSYMS_MAX_LINE);
	size_t total = 0, ll = 0;
	bool over = false;
	uint32_t zero;
	int err = 0;

	*out = NULL;
	if (!k || !chunk || !lb) {
		err = -ENOMEM;
		goto out;
	}
	err = arena_add(k, "", 0, &zero);	/* offset 0 = no module */
	if (err)
		goto out;
	for (;;) {
		int got = r->read(r, chunk, CHUNK);

		if (got < 0) {
			err = got;
			goto out;
		}
		if (got == 0)
			break;
		total += (size_t)got;
		if (total > SP_KALLSYMS_MAX_BYTES) {
			err = -EFBIG;
			goto out;
		}
		for (int i = 0; i < got; i++) {
			char c = chunk[i];

			if (c != '\n') {
				if (ll < SP_KALLSYMS_MAX_LINE)
					lb[ll++] = c;
				else
					over = true;
				continue;
			}
			if (over) {
				st.lines++;
				st.too_long++;
				if (st.lines == 1) {
					err = -EINVAL;
					goto out;
				}
			} else {
				err = line(k, lb, ll, &st);
				if (err)
					goto out;
			}
			ll = 0;
			over = false;
		}
	}
	if (over) {
		st.lines++;
		st.too_long++;
	} else if (ll) {
		err = line(k, lb, ll, &st);
		if (err)
			goto out;
	}
	if (st.lines == 0 || !k->build_id[0]) {
		err = -EINVAL;
		goto out;
	}
	finish(k, &st);
	*out = k;
	k = NULL;
out:
	if (st_out)
		*st_out = st;
	free(lb);
	free(chunk);
	sp_ksyms__free(k);
	return err;
}

int sp_ksyms__parse(const void *buf, size_t len, struct sp_ksyms **out,
		    struct sp_ksyms_stats *st)
{
	struct reader r = { .mem = buf, .mem_len = len };
	int err;

	if (len >= 2 && r.mem[0] == 0x1f && r.mem[1] == 0x8b) {
		if (inflateInit2(&r.zs, 16 + MAX_WBITS) != Z_OK)
			return -ENOMEM;
		r.zs.next_in = (Bytef *)buf;
		r.zs.avail_in = len > UINT32_MAX ? UINT32_MAX : (uInt)len;
		r.zs_init = true;
		r.read = read_inflate;
	} else {
		r.read = read_mem;
	}
	err = parse_stream(&r, out, st);
	if (r.zs_init)
		inflateEnd(&r.zs);
	return err;
}

int sp_ksyms__load(const char *path, struct sp_ksyms **out,
		   struct sp_ksyms_stats *st)
{
	struct reader r = { .read = read_gz };
	int fd = open(path, O_RDONLY | O_CLOEXEC), err;

	*out = NULL;
	if (fd < 0)
		return -errno;
	r.gz = gzdopen(fd, "rb");	/* plain files pass through */
	if (!r.gz) {
		close(fd);
		return -ENOMEM;
	}
	gzbuffer(r.gz, CHUNK);
	err = parse_stream(&r, out, st);
	gzclose(r.gz);
	return err;
}

void sp_ksyms__free(struct sp_ksyms *k)
{
	if (!k)
		return;
	free(k->e);
	free(k->arena);
	free(k->mods);
	free(k->sects);
	free(k);
}

const char *sp_ksyms__build_id(const struct sp_ksyms *k)
{
	return k->build_id;
}

const char *sp_ksyms__kernel(const struct sp_ksyms *k)
{
	return k->kernel;
}

const char *sp_ksyms__boot_id(const struct sp_ksyms *k)
{
	return k->boot_id;
}

uint64_t sp_ksyms__captured_at(const struct sp_ksyms *k)
{
	return k->captured_at;
}

bool sp_ksyms__is_subset(const struct sp_ksyms *k)
{
	return k->subset;
}

size_t sp_ksyms__count(const struct sp_ksyms *k)
{
	return k->n;
}

uint64_t sp_ksyms__text(const struct sp_ksyms *k)
{
	return k->text ? k->text : k->stext;
}

const char *sp_ksyms__boot_hex(const struct sp_ksyms *k)
{
	return k->boot_hex;
}

int sp_ksyms__module(const struct sp_ksyms *k, const char *build_id, const char *section,
		     const char **name, uint64_t *text, uint64_t *size)
{
	for (size_t i = 0; i < k->n_mods; i++) {
		if (!k->mods[i].build_id[0] || strcmp(k->mods[i].build_id, build_id))
			continue;
		if (section && strcmp(section, ".text")) {
			uint32_t j = 0;

			while (j < k->n_sects &&
			       (k->sects[j].mod != i || strcmp(k->sects[j].name, section)))
				j++;
			if (j == k->n_sects)
				return -ENOENT;
			*text = k->sects[j].addr;
			*size = k->sects[j].size;
		} else {
			*text = k->mods[i].text;
			*size = k->mods[i].size;
		}
		*name = k->mods[i].name;
		return 0;
	}
	return -ENOENT;
}

int sp_ksyms__resolve(const struct sp_ksyms *k, uint64_t addr,
		      struct sp_ksym *out)
{
	size_t lo = 0, hi = k->n;
	const struct ent *e;

	/* last entry with e->addr <= addr */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (k->e[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return -ERANGE;
	e = &k->e[lo - 1];
	if (e->marker)
		return -ERANGE;
	if (e->tail && addr - e->addr >= SP_KSYMS_TAIL_MAX)
		return -ERANGE;
	out->name = k->arena + e->name;
	out->module = e->module ? k->arena + e->module : NULL;
	out->start = e->addr;
	out->offset = addr - e->addr;
	return 0;
}

/* ------------------------------------------------------------ sets */

struct neg {
	char id[SP_BUILDID_MAX_HEX + 1];
	time_t when;
};

struct sp_ksyms_set {
	pthread_mutex_t mu;
	struct sp_ksyms *held[SP_KSYMS_SET_MAX];
	uint32_t n_held;
	char *dirs[MAX_DIRS];
	uint32_t n_dirs;
	struct neg neg[NEG_MAX];
	uint32_t neg_next;
	struct sp_ksyms_set_stats st;
};

int sp_ksyms_set__new(struct sp_ksyms_set **out)
{
	struct sp_ksyms_set *s = calloc(1, sizeof(*s));

	*out = NULL;
	if (!s)
		return -ENOMEM;
	pthread_mutex_init(&s->mu, NULL);
	*out = s;
	return 0;
}

void sp_ksyms_set__free(struct sp_ksyms_set *s)
{
	if (!s)
		return;
	for (uint32_t i = 0; i < s->n_held; i++)
		sp_ksyms__free(s->held[i]);
	for (uint32_t i = 0; i < s->n_dirs; i++)
		free(s->dirs[i]);
	pthread_mutex_destroy(&s->mu);
	free(s);
}

/* The held snapshot of id: a whole one when held, else a subset. */
static struct sp_ksyms *find_held(struct sp_ksyms_set *s, const char *id)
{
	struct sp_ksyms *sub = NULL;

	for (uint32_t i = 0; i < s->n_held; i++)
		if (!strcmp(s->held[i]->build_id, id)) {
			if (!s->held[i]->subset)
				return s->held[i];
			sub = sub ? sub : s->held[i];
		}
	return sub;
}

/* Called with the lock held; takes k.  A whole snapshot is held beside a
 * subset of its build id (and preferred); anything else of a held build id
 * is a duplicate. */
static int hold(struct sp_ksyms_set *s, struct sp_ksyms *k)
{
	struct sp_ksyms *h = find_held(s, k->build_id);

	if (h && (!h->subset || k->subset)) {
		s->st.duplicate_build_id++;
		sp_ksyms__free(k);
		return 0;
	}
	if (s->n_held == SP_KSYMS_SET_MAX) {
		s->st.refused++;
		sp_ksyms__free(k);
		return -ENOSPC;
	}
	s->held[s->n_held++] = k;
	s->st.loaded = s->n_held;
	return 0;
}

int sp_ksyms_set__add_file(struct sp_ksyms_set *s, const char *path)
{
	struct sp_ksyms *k;
	int err = sp_ksyms__load(path, &k, NULL);

	pthread_mutex_lock(&s->mu);
	if (err)
		s->st.load_failed++;
	else
		err = hold(s, k);
	pthread_mutex_unlock(&s->mu);
	return err;
}

int sp_ksyms_set__add(struct sp_ksyms_set *s, struct sp_ksyms *k)
{
	int err;

	pthread_mutex_lock(&s->mu);
	err = hold(s, k);
	pthread_mutex_unlock(&s->mu);
	return err;
}

int sp_ksyms_set__add_dir(struct sp_ksyms_set *s, const char *dir)
{
	char *d;

	if (s->n_dirs == MAX_DIRS)
		return -E2BIG;
	d = strdup(dir);
	if (!d)
		return -ENOMEM;
	pthread_mutex_lock(&s->mu);
	s->dirs[s->n_dirs++] = d;
	pthread_mutex_unlock(&s->mu);
	return 0;
}

static bool negative(struct sp_ksyms_set *s, const char *id, time_t now)
{
	for (uint32_t i = 0; i < NEG_MAX; i++)
		if (s->neg[i].id[0] && !strcmp(s->neg[i].id, id))
			return now - s->neg[i].when < SP_KSYMS_RETRY_S;
	return false;
}

static void remember_negative(struct sp_ksyms_set *s, const char *id,
			      time_t now)
{
	for (uint32_t i = 0; i < NEG_MAX; i++)
		if (s->neg[i].id[0] && !strcmp(s->neg[i].id, id)) {
			s->neg[i].when = now;
			return;
		}
	snprintf(s->neg[s->neg_next].id, sizeof(s->neg[0].id), "%s", id);
	s->neg[s->neg_next].when = now;
	s->neg_next = (s->neg_next + 1) % NEG_MAX;
}

const struct sp_ksyms *sp_ksyms_set__get(struct sp_ksyms_set *s,
					 const char *build_id)
{
	struct sp_ksyms *k = NULL, *held;
	struct timespec ts;

	if (!s || !build_id || sp_buildid__validate(build_id))
		return NULL;
	pthread_mutex_lock(&s->mu);
	k = find_held(s, build_id);
	if ((k && !k->subset) || !s->n_dirs)
		goto out;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	if (negative(s, build_id, ts.tv_sec))
		goto out;
	s->st.dir_lookups++;
	held = k;	/* a subset: a whole snapshot in a directory is better */
	k = NULL;
	for (uint32_t i = 0; i < s->n_dirs && !k; i++) {
		char path[4096];
		struct sp_ksyms *c;

		if ((size_t)snprintf(path, sizeof(path), "%s/%s" SP_KALLSYMS_SUFFIX,
				     s->dirs[i], build_id) >= sizeof(path))
			continue;
		if (access(path, R_OK))
			continue;
		if (sp_ksyms__load(path, &c, NULL)) {
			s->st.load_failed++;
			continue;
		}
		if (strcmp(c->build_id, build_id)) {	/* misnamed file */
			s->st.load_failed++;
			sp_ksyms__free(c);
			continue;
		}
		if (c->subset) {	/* stands for nothing but its own profile */
			s->st.load_failed++;
			sp_ksyms__free(c);
			continue;
		}
		if (hold(s, c) == 0)
			k = find_held(s, build_id);
	}
	if (!k) {
		s->st.dir_misses++;
		remember_negative(s, build_id, ts.tv_sec);
		k = held;
	}
out:
	pthread_mutex_unlock(&s->mu);
	return k;
}

const struct sp_ksyms *sp_ksyms_set__get_boot(struct sp_ksyms_set *s, const char *boot_hex)
{
	struct sp_ksyms *k = NULL;

	if (!s || !boot_hex || strlen(boot_hex) != 32)
		return NULL;
	pthread_mutex_lock(&s->mu);
	for (uint32_t i = 0; i < s->n_held; i++)
		if (!strcmp(s->held[i]->boot_hex, boot_hex) && (!k || k->subset))
			k = s->held[i];
	pthread_mutex_unlock(&s->mu);
	return k;
}

const struct sp_ksyms *sp_ksyms_set__get_module(struct sp_ksyms_set *s, const char *build_id,
						const char *section, const char **name,
						uint64_t *text, uint64_t *size)
{
	struct sp_ksyms *k = NULL;

	if (!s || !build_id || sp_buildid__validate(build_id))
		return NULL;
	pthread_mutex_lock(&s->mu);
	for (uint32_t i = 0; i < s->n_held && (!k || k->subset); i++)
		if ((!k || !s->held[i]->subset) &&
		    !sp_ksyms__module(s->held[i], build_id, section, name, text, size))
			k = s->held[i];
	pthread_mutex_unlock(&s->mu);
	return k;
}

bool sp_ksyms_set__empty(struct sp_ksyms_set *s)
{
	bool e;

	if (!s)
		return true;
	pthread_mutex_lock(&s->mu);
	e = !s->n_held && !s->n_dirs;
	pthread_mutex_unlock(&s->mu);
	return e;
}

void sp_ksyms_set__stats(struct sp_ksyms_set *s, struct sp_ksyms_set_stats *st)
{
	if (!s) {
		memset(st, 0, sizeof(*st));
		return;
	}
	pthread_mutex_lock(&s->mu);
	*st = s->st;
	pthread_mutex_unlock(&s->mu);
}
