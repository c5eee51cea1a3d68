/* SPDX-License-Identifier: MIT */
/*
 * memguard.c - see memguard.h.  Text parsing is split from file reading so
 * the unit tests feed it strings and fake cgroup trees.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collector/agent/memguard.h"
#include "collector/pipeline/clock.h"

const char *sp_memguard__version_name(enum sp_memguard_version v)
{
	switch (v) {
	case SP_MEMGUARD_V1:
		return "v1";
	case SP_MEMGUARD_V2:
		return "v2";
	default:
		return "none";
	}
}

/* Reads a small file into buf (NUL-terminated); -errno on failure. */
static int read_small(const char *path, char *buf, size_t len)
{
	ssize_t n;
	size_t got = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	while (got + 1 < len) {
		n = read(fd, buf + got, len - 1 - got);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			n = -errno;
			close(fd);
			return n;
		}
		if (n == 0)
			break;
		got += n;
	}
	buf[got] = '\0';
	close(fd);
	return 0;
}

int sp_memguard__parse_limit(const char *text, uint64_t *out)
{
	unsigned long long v;
	char *end;

	if (!text || !out)
		return -EINVAL;
	while (*text == ' ' || *text == '\t')
		text++;
	if (!strncmp(text, "max", 3) && (text[3] == '\0' || text[3] == '\n')) {
		*out = 0;
		return 0;
	}
	if (*text < '0' || *text > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(text, &end, 10);
	if (errno == ERANGE) {
		*out = 0;	/* beyond 64 bits: certainly no limit */
		return 0;
	}
	if (*end != '\0' && *end != '\n')
		return -EINVAL;
	*out = v >= SP_MEMGUARD_NO_LIMIT ? 0 : v;
	return 0;
}

int sp_memguard__parse_stat(const char *text, const char *key, uint64_t *out)
{
	size_t klen;
	const char *p = text;

	if (!text || !key || !out)
		return -EINVAL;
	klen = strlen(key);
	while (p && *p) {
		if (!strncmp(p, key, klen) && p[klen] == ' ') {
			char *end;

			errno = 0;
			*out = strtoull(p + klen + 1, &end, 10);
			if (errno || end == p + klen + 1)
				return -EINVAL;
			return 0;
		}
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return -ENOENT;
}

/* Copies a mountinfo field, undoing the kernel's octal escapes (\040). */
static void unescape(const char *s, size_t n, char *out, size_t out_len)
{
	size_t o = 0;

	for (size_t i = 0; i < n && o + 1 < out_len; i++) {
		if (s[i] == '\\' && i + 3 < n &&
		    s[i + 1] >= '0' && s[i + 1] <= '3' && s[i + 2] >= '0' && s[i + 2] <= '7' &&
		    s[i + 3] >= '0' && s[i + 3] <= '7') {
			out[o++] = (char)((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 +
					  (s[i + 3] - '0'));
			i += 3;
		} else {
			out[o++] = s[i];
		}
	}
	out[o] = '\0';
}

/* Does the comma-separated list [s, s+n) contain the word w? */
static bool has_word(const char *s, size_t n, const char *w)
{
	size_t wl = strlen(w);
	const char *end = s + n;

	while (s < end) {
		const char *c = memchr(s, ',', end - s);
		size_t l = (c ? c : end) - s;

		if (l == wl && !memcmp(s, w, wl))
			return true;
		s += l + 1;
	}
	return false;
}

/* Finds the mount of a hierarchy in mountinfo: v1 = cgroup with the memory
 * super option, v2 = cgroup2.  Fills root and mount point. */
static bool find_mount(const char *mi, int version, char *root, size_t root_len,
		       char *mnt, size_t mnt_len)
{
	const char *line = mi;

	while (line && *line) {
		const char *eol = strchr(line, '\n');
		const char *end = eol ? eol : line + strlen(line);
		const char *f[5], *dash, *p = line;
		size_t fl[5];
		int i;

		/* ID PARENT MAJ:MIN ROOT MOUNTPOINT ... - FSTYPE SOURCE SUPEROPTS */
		for (i = 0; i < 5 && p < end; i++) {
			const char *sp = memchr(p, ' ', end - p);

			f[i] = p;
			fl[i] = (sp ? sp : end) - p;
			p = sp ? sp + 1 : end;
		}
		dash = NULL;
		for (const char *q = p; q + 2 < end; q++) {
			if (q[0] == '-' && q[1] == ' ' && q[-1] == ' ') {
				dash = q + 2;
				break;
			}
		}
		if (i == 5 && dash) {
			const char *fs = dash, *fse = memchr(fs, ' ', end - fs);
			const char *src, *opts = NULL;
			size_t fsl = (fse ? fse : end) - fs;

			if (fse) {
				src = fse + 1;
				opts = memchr(src, ' ', end - src);
				if (opts)
					opts++;
			}
			if ((version == SP_MEMGUARD_V2 && fsl == 7 && !memcmp(fs, "cgroup2", 7)) ||
			    (version == SP_MEMGUARD_V1 && fsl == 6 && !memcmp(fs, "cgroup", 6) &&
			     opts && has_word(opts, end - opts, "memory"))) {
				unescape(f[3], fl[3], root, root_len);
				unescape(f[4], fl[4], mnt, mnt_len);
				return true;
			}
		}
		line = eol ? eol + 1 : NULL;
	}
	return false;
}

/* The path of the hierarchy in /proc/self/cgroup: v1 the line whose
 * controller list has "memory", v2 the "0::" line. */
static bool find_cgroup_path(const char *pc, int version, char *out, size_t len)
{
	const char *line = pc;

	while (line && *line) {
		const char *eol = strchr(line, '\n');
		const char *end = eol ? eol : line + strlen(line);
		const char *c1 = memchr(line, ':', end - line);
		const char *c2 = c1 ? memchr(c1 + 1, ':', end - c1 - 1) : NULL;

		if (c2) {
			bool match = version == SP_MEMGUARD_V2
				? (c1 - line == 1 && line[0] == '0' && c2 == c1 + 1)
				: has_word(c1 + 1, c2 - c1 - 1, "memory");

			if (match) {
				size_t n = end - c2 - 1;

				if (n >= len)
					return false;
				memcpy(out, c2 + 1, n);
				out[n] = '\0';
				return true;
			}
		}
		line = eol ? eol + 1 : NULL;
	}
	return false;
}

static int join(const char *mnt, const char *root, const char *cg, char *dir, size_t len)
{
	size_t rl = strlen(root);
	const char *rest = cg;
	int n;

	if (!strcmp(root, "/"))
		rest = cg;
	else if (!strncmp(cg, root, rl) && (cg[rl] == '/' || cg[rl] == '\0'))
		rest = cg + rl;		/* mounted from inside the hierarchy */
	else if (!strcmp(cg, "/"))
		rest = "";		/* cgroup namespace: our root is the mount */
	if (!strcmp(rest, "/"))
		rest = "";
	n = snprintf(dir, len, "%s%s", mnt, rest);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int sp_memguard__locate(const char *proc_cgroup, const char *mountinfo, char *dir,
			size_t dir_len, char *mount, size_t mount_len)
{
	static const int order[2] = { SP_MEMGUARD_V1, SP_MEMGUARD_V2 };
	char cg[512], root[512];

	if (!proc_cgroup || !mountinfo || !dir || !mount)
		return SP_MEMGUARD_NONE;
	for (int i = 0; i < 2; i++) {
		if (!find_cgroup_path(proc_cgroup, order[i], cg, sizeof(cg)))
			continue;
		if (!find_mount(mountinfo, order[i], root, sizeof(root), mount, mount_len))
			continue;
		if (join(mount, root, cg, dir, dir_len))
			continue;
		return order[i];
	}
	dir[0] = mount[0] = '\0';
	return SP_MEMGUARD_NONE;
}

static int read_in(const char *dir, const char *name, char *buf, size_t len)
{
	char path[640];

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path))
		return -ENAMETOOLONG;
	return read_small(path, buf, len);
}

static int open_in(const char *dir, const char *name)
{
	char path[640];

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path))
		return -1;
	return open(path, O_RDONLY | O_CLOEXEC);
}

static const char *usage_name(const struct sp_memguard *g)
{
	return g->version == SP_MEMGUARD_V1 ? "memory.usage_in_bytes" : "memory.current";
}

/* The usage file's value: one pread at offset 0 of the file kept open (a
 * cgroup file is generated again for each read from its start). */
static int read_usage(const struct sp_memguard *g, uint64_t *out)
{
	char buf[64];
	ssize_t n;
	int err;

	if (g->usage_fd < 0) {
		err = read_in(g->dir, usage_name(g), buf, sizeof(buf));
		return err ? err : sp_memguard__parse_limit(buf, out);
	}
	do {
		n = pread(g->usage_fd, buf, sizeof(buf) - 1, 0);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return sp_memguard__parse_limit(buf, out);
}

int sp_memguard__init(struct sp_memguard *g, const struct sp_memguard_config *cfg)
{
	char pc[4096], mi[16384], probe[64];
	double high = cfg && cfg->high > 0 ? cfg->high : 0.75;
	double low = cfg && cfg->low > 0 ? cfg->low : 0.60;

	if (!g)
		return -EINVAL;
	memset(g, 0, sizeof(*g));
	g->usage_fd = -1;
	if (!(high > 0 && high <= 1 && low > 0 && low < high))
		return -EINVAL;
	g->high = high;
	g->low = low;
	g->refresh_ns = (uint64_t)(cfg && cfg->refresh_ms ? cfg->refresh_ms : 2000) * 1000000;
	if (read_small(cfg && cfg->proc_cgroup ? cfg->proc_cgroup : "/proc/self/cgroup",
		       pc, sizeof(pc)) ||
	    read_small(cfg && cfg->mountinfo ? cfg->mountinfo : "/proc/self/mountinfo",
		       mi, sizeof(mi)))
		return 0;
	g->version = sp_memguard__locate(pc, mi, g->dir, sizeof(g->dir), g->mount,
					 sizeof(g->mount));
	/* A hybrid host mounts cgroup2 without the memory controller. */
	if (g->version == SP_MEMGUARD_V1 &&
	    read_in(g->dir, "memory.usage_in_bytes", probe, sizeof(probe)))
		g->version = SP_MEMGUARD_NONE;
	if (g->version == SP_MEMGUARD_V2 &&
	    read_in(g->dir, "memory.current", probe, sizeof(probe)))
		g->version = SP_MEMGUARD_NONE;
	if (g->version == SP_MEMGUARD_NONE)
		g->dir[0] = g->mount[0] = '\0';
	else
		g->usage_fd = open_in(g->dir, usage_name(g));	/* -1: read by name */
	return 0;
}

uint32_t sp_memguard__poll_ms(const struct sp_memguard *g)
{
	if (!g || g->version == SP_MEMGUARD_NONE)
		return SP_MEMGUARD_POLL_FAR_MS;	/* nothing to read: the caller's own pace */
	if (!g->limit)
		return (uint32_t)(g->refresh_ns / 1000000);
	if (g->engaged || (double)g->usage >= (g->high - SP_MEMGUARD_POLL_NEAR) * (double)g->limit)
		return SP_MEMGUARD_POLL_NEAR_MS;
	return SP_MEMGUARD_POLL_FAR_MS;
}

void sp_memguard__refresh(struct sp_memguard *g)
{
	if (g)
		g->full_ns = 0;
}

void sp_memguard__close(struct sp_memguard *g)
{
	/* version NONE: no file (and a zeroed struct's usage_fd 0 is not ours) */
	if (!g || g->version == SP_MEMGUARD_NONE || g->usage_fd < 0)
		return;
	close(g->usage_fd);
	g->usage_fd = -1;
}

/* v2: the smallest memory.max from dir up to the mount point. */
static int limit_v2(const struct sp_memguard *g, uint64_t *out)
{
	char d[sizeof(g->dir)], buf[64];
	size_t ml = strlen(g->mount);
	uint64_t best = 0, v;
	bool read_any = false;

	snprintf(d, sizeof(d), "%s", g->dir);
	for (;;) {
		char *slash;

		if (!read_in(d, "memory.max", buf, sizeof(buf)) &&
		    !sp_memguard__parse_limit(buf, &v)) {
			read_any = true;
			if (v && (!best || v < best))
				best = v;
		}
		if (strlen(d) <= ml)
			break;
		slash = strrchr(d, '/');
		if (!slash || (size_t)(slash - d) < ml)
			break;
		*slash = '\0';
	}
	*out = best;
	return read_any ? 0 : -ENOENT;
}

/* The limit and inactive file cache (the full read): v1 min(limit_in_bytes,
 * memory.stat hierarchical_memory_limit) and total_inactive_file; v2 the
 * ancestors' smallest memory.max and inactive_file (memory.stat optional). */
static int read_full(const struct sp_memguard *g, uint64_t *limit, uint64_t *inactive)
{
	char buf[64], stat[8192];
	uint64_t v;
	int err;

	*limit = *inactive = 0;
	if (g->version == SP_MEMGUARD_V1) {
		err = read_in(g->dir, "memory.limit_in_bytes", buf, sizeof(buf));
		if (!err)
			err = sp_memguard__parse_limit(buf, limit);
		if (!err)
			err = read_in(g->dir, "memory.stat", stat, sizeof(stat));
		if (err)
			return err;
		if (!sp_memguard__parse_stat(stat, "hierarchical_memory_limit", &v) &&
		    v < SP_MEMGUARD_NO_LIMIT && v && (!*limit || v < *limit))
			*limit = v;
		sp_memguard__parse_stat(stat, "total_inactive_file", inactive);
		return 0;
	}
	err = limit_v2(g, limit);
	if (!err && !read_in(g->dir, "memory.stat", stat, sizeof(stat)))
		sp_memguard__parse_stat(stat, "inactive_file", inactive);
	return err;
}

/* Would sp_memguard__update change the state at this working set? */
static bool would_change(const struct sp_memguard *g, uint64_t usage)
{
	if (!g->limit)
		return false;
	return g->engaged ? (double)usage < g->low * (double)g->limit
			  : (double)usage >= g->high * (double)g->limit;
}

static uint64_t working_set(uint64_t usage, uint64_t inactive)
{
	return usage > inactive ? usage - inactive : 0;
}

int sp_memguard__poll(struct sp_memguard *g)
{
	uint64_t limit, usage = 0, inactive, now;
	int err;

	if (!g)
		return -EINVAL;
	if (g->version == SP_MEMGUARD_NONE)
		return 0;
	now = sp_clock__mono_ns();
	limit = g->limit;
	err = read_usage(g, &usage);
	if (!err && (!g->full_ns || now - g->full_ns >= g->refresh_ns ||
		     would_change(g, working_set(usage, g->inactive)))) {
		err = read_full(g, &limit, &inactive);
		if (!err) {
			g->inactive = inactive;
			g->full_ns = now ? now : 1;
			g->full_reads++;
		}
	}
	if (err) {
		g->read_errors++;
		return err;
	}
	return sp_memguard__update(g, working_set(usage, g->inactive), limit);
}

int sp_memguard__update(struct sp_memguard *g, uint64_t usage, uint64_t limit)
{
	bool was = g->engaged;

	g->usage = usage;
	g->limit = limit;
	if (!limit)
		g->engaged = false;	/* no limit: the guard is off */
	else if (!g->engaged && (double)usage >= g->high * (double)limit)
		g->engaged = true;
	else if (g->engaged && (double)usage < g->low * (double)limit)
		g->engaged = false;
	if (g->engaged == was)
		return 0;
	if (g->engaged)
		g->engagements++;
	else
		g->releases++;
	return 1;
}

int64_t sp_memguard__reclaim_delta(const struct sp_memguard *g)
{
	double limit, usage, target, mid;

	if (!g || !g->limit)
		return SP_MEMGUARD_NO_CAP;
	limit = (double)g->limit;
	usage = (double)g->usage;
	if (!g->engaged) {
		mid = (g->low + g->high) / 2 * limit;
		return usage < mid ? (int64_t)(mid - usage) : 0;
	}
	target = g->low * limit - SP_MEMGUARD_RECLAIM_MARGIN * limit;
	if (target < g->low * limit / 2)
		target = g->low * limit / 2;
	return usage > target ? -(int64_t)(usage - target) : 0;
}
