// SPDX-License-Identifier: MIT
/*
 * maps.c - parser for one line of /proc/PID/maps.
 *
 * Contract: the input is untrusted bytes [line, line + len); nothing is read
 * outside that range and no NUL terminator is assumed.  The parser owns
 * nothing and allocates nothing; on success out->path points into the
 * caller's line (valid as long as the line is).  On any malformation it
 * returns -EINVAL and leaves *out zeroed.
 *
 * Accepted grammar (what the kernel prints, nothing looser):
 *
 *   HEX '-' HEX ' ' PERMS ' ' HEX ' ' HEX ':' HEX ' ' DEC [WS+ [PATH]] ['\n']
 *
 *   HEX    1..16 hex digits, no sign or 0x, value must fit in 64 bits
 *          (dev major/minor must fit in 32 bits)
 *   PERMS  exactly [r-][w-][x-][ps]
 *   DEC    1..20 decimal digits, value must fit in 64 bits
 *   WS     ' ' or '\t' (the kernel pads before the path)
 *   PATH   the rest of the line, may contain spaces; must not contain NUL
 *          or '\n'; a trailing " (deleted)" is stripped and sets deleted
 *
 * start < end is required.  A single trailing '\n' is allowed.
 */
#include <errno.h>
#include <string.h>

#include "base/hex.h"
#include "base/maps.h"

#define DELETED_SUFFIX " (deleted)"

struct cursor {
	const char *p;
	const char *end;
};

/* One or more hex digits into *v; fails on overflow of 64 bits. */
static int parse_hex(struct cursor *c, uint64_t *v)
{
	uint64_t x = 0;
	size_t n = 0;
	int d;

	while (c->p < c->end && (d = sp_hex_digit(*c->p)) >= 0) {
		if (x > (UINT64_MAX >> 4))
			return -EINVAL;
		x = (x << 4) | (uint64_t)d;
		c->p++;
		n++;
	}
	if (n == 0)
		return -EINVAL;
	*v = x;
	return 0;
}

static int parse_dec(struct cursor *c, uint64_t *v)
{
	uint64_t x = 0;
	size_t n = 0;

	while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
		uint64_t d = (uint64_t)(*c->p - '0');

		if (x > (UINT64_MAX - d) / 10)
			return -EINVAL;
		x = x * 10 + d;
		c->p++;
		n++;
	}
	if (n == 0)
		return -EINVAL;
	*v = x;
	return 0;
}

static int expect(struct cursor *c, char ch)
{
	if (c->p >= c->end || *c->p != ch)
		return -EINVAL;
	c->p++;
	return 0;
}

static int parse_perms(struct cursor *c, uint8_t *perms)
{
	uint8_t p = 0;

	if (c->end - c->p < 4)
		return -EINVAL;
	switch (c->p[0]) {
	case 'r': p |= SP_MAP_R; break;
	case '-': break;
	default: return -EINVAL;
	}
	switch (c->p[1]) {
	case 'w': p |= SP_MAP_W; break;
	case '-': break;
	default: return -EINVAL;
	}
	switch (c->p[2]) {
	case 'x': p |= SP_MAP_X; break;
	case '-': break;
	default: return -EINVAL;
	}
	switch (c->p[3]) {
	case 'p': p |= SP_MAP_P; break;
	case 's': break;
	default: return -EINVAL;
	}
	c->p += 4;
	*perms = p;
	return 0;
}

int sp_maps__parse_line(const char *line, size_t len, struct sp_map_entry *out)
{
	struct sp_map_entry e;
	struct cursor c;
	uint64_t major, minor;
	int err = -EINVAL;

	if (!out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	if (!line)
		return -EINVAL;

	memset(&e, 0, sizeof(e));
	c.p = line;
	c.end = line + len;
	/* One trailing newline is the line terminator, not content. */
	if (c.end > c.p && c.end[-1] == '\n')
		c.end--;

	if (parse_hex(&c, &e.start) || expect(&c, '-') ||
	    parse_hex(&c, &e.end) || expect(&c, ' ') ||
	    parse_perms(&c, &e.perms) || expect(&c, ' ') ||
	    parse_hex(&c, &e.offset) || expect(&c, ' ') ||
	    parse_hex(&c, &major) || expect(&c, ':') ||
	    parse_hex(&c, &minor) || expect(&c, ' ') ||
	    parse_dec(&c, &e.inode))
		goto out;
	if (e.start >= e.end || major > UINT32_MAX || minor > UINT32_MAX)
		goto out;
	e.dev_major = (uint32_t)major;
	e.dev_minor = (uint32_t)minor;

	if (c.p < c.end) {
		const char *path;
		size_t plen;

		/* The inode must be followed by padding, not glued text. */
		if (*c.p != ' ' && *c.p != '\t')
			goto out;
		while (c.p < c.end && (*c.p == ' ' || *c.p == '\t'))
			c.p++;
		path = c.p;
		plen = (size_t)(c.end - c.p);
		if (plen && (memchr(path, '\0', plen) || memchr(path, '\n', plen)))
			goto out;
		if (plen >= sizeof(DELETED_SUFFIX) - 1 &&
		    !memcmp(path + plen - (sizeof(DELETED_SUFFIX) - 1),
			    DELETED_SUFFIX, sizeof(DELETED_SUFFIX) - 1)) {
			plen -= sizeof(DELETED_SUFFIX) - 1;
			e.deleted = 1;
		}
		e.path = plen ? path : NULL;
		e.path_len = plen;
		if (!plen)
			e.deleted = 0;
	}
	*out = e;
	err = 0;
out:
	return err;
}

bool sp_maps__is_otel_ctx(const struct sp_map_entry *e)
{
	static const char *const names[] = {
		"[anon_shmem:OTEL_CTX]", "[anon:OTEL_CTX]", "/memfd:OTEL_CTX",
	};

	if (!e || !e->path)
		return false;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (e->path_len == strlen(names[i]) && !memcmp(e->path, names[i], e->path_len))
			return true;
	return false;
}
