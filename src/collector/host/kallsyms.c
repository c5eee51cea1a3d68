// SPDX-License-Identifier: MIT
/*
 * kallsyms.c - copy /proc/kallsyms' text symbols into a snapshot file.
 *
 * Contract: see kallsyms.h.  One buffer holds the raw file (bounded); kept
 * lines are referenced in place by an index that is sorted by address and
 * then written through zlib to a temporary file that is renamed over the
 * destination.  Nothing here resolves an address.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "base/hex.h"
#include "base/line_reader.h"
#include "base/write_all.h"
#include "collector/host/kallsyms.h"
#include "profile/codec.h"
#include "profile/fileio.h"

#define BOOT_ID_PATH "/proc/sys/kernel/random/boot_id"

struct kline {
	uint64_t addr;
	uint32_t off;	/* into the raw buffer */
	uint32_t len;	/* without the newline */
	uint32_t seq;	/* input order, for a stable sort */
};

static void say(char *err, size_t err_len, const char *fmt, ...)
{
	va_list ap;

	if (!err || !err_len)
		return;
	va_start(ap, fmt);
	vsnprintf(err, err_len, fmt, ap);
	va_end(ap);
}

static bool printable(char c)
{
	return c > ' ' && c < 0x7f;
}

/* "ADDR TYPE NAME" with an optional tab and [MODULE], by the reader's
 * rules (src/symbolizer/kallsyms.h): a line the reader would skip is not
 * written, so a subset's neighbours are the reader's neighbours.  0 and
 * *addr, *type, or -EINVAL. */
static int parse_line(const char *l, size_t len, uint64_t *addr, char *type)
{
	size_t i = 0, name, mod;
	uint64_t a = 0;
	int d;

	while (i < len && i < 17 && (d = sp_hex_digit(l[i])) >= 0) {
		a = a << 4 | (uint64_t)d;
		i++;
	}
	if (i == 0 || i > 16 || i + 3 >= len || l[i] != ' ' || l[i + 2] != ' ')
		return -EINVAL;
	*type = l[i + 1];
	name = i += 3;
	while (i < len && printable(l[i]))
		i++;
	if (i == name || i - name > SP_KALLSYMS_MAX_NAME)
		return -EINVAL;
	if (i < len) {
		while (i < len && (l[i] == '\t' || l[i] == ' '))
			i++;
		if (i == len || l[i] != '[')
			return -EINVAL;
		mod = ++i;
		while (i < len && printable(l[i]) && l[i] != ']')
			i++;
		if (i + 1 != len || l[i] != ']' || i == mod || i - mod > SP_KALLSYMS_MAX_NAME)
			return -EINVAL;
	}
	*addr = a;
	return 0;
}

static int cmp_kline(const void *a, const void *b)
{
	const struct kline *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* A printable token for the header: anything else becomes '_'. */
static void token(char *s)
{
	for (; *s; s++)
		if (*s <= ' ' || *s >= 0x7f)
			*s = '_';
}

static void read_boot_id(char *out, size_t len)
{
	int fd = open(BOOT_ID_PATH, O_RDONLY | O_CLOEXEC);
	ssize_t n = -1;

	out[0] = '\0';
	if (fd >= 0) {
		n = read(fd, out, len - 1);
		close(fd);
	}
	if (n <= 0) {
		out[0] = '\0';
		return;
	}
	out[n] = '\0';
	out[strcspn(out, "\n")] = '\0';
	token(out);
}

/* The snapshot text (header, module comments, kept lines: all, or those
 * with keep[i]) gzip'd into a new buffer. */
static int gzip_snapshot(const char *header, const struct sp_kmod *mods, size_t n_mods,
			 const char *raw, const struct kline *k, size_t n, const bool *keep,
			 uint8_t **out, size_t *out_len)
{
	size_t len = strlen(header), cap = len + 1, o;
	char *text, line[256];
	int rc;

	for (size_t i = 0; i < n; i++)
		cap += k[i].len + 1;
	cap += n_mods * sizeof(line);
	text = malloc(cap);
	if (!text)
		return -ENOMEM;
	memcpy(text, header, len);
	o = len;
	for (size_t i = 0; i < n_mods; i++) {
		char hex[2 * SP_BUILD_ID_MAX + 1];
		int w;

		sp_buildid__hex(&mods[i].build_id, hex);
		w = snprintf(line, sizeof(line), SP_KALLSYMS_MODULE_PREFIX "%s "
			     SP_KALLSYMS_KEY_BUILD_ID "=%s " SP_KALLSYMS_KEY_TEXT "=%llx "
			     SP_KALLSYMS_KEY_SIZE "=%llx\n", mods[i].name, hex[0] ? hex : "-",
			     (unsigned long long)mods[i].text, (unsigned long long)mods[i].size);
		if (w > 0 && (size_t)w < sizeof(line)) {
			memcpy(text + o, line, (size_t)w);
			o += (size_t)w;
		}
	}
	for (size_t i = 0; i < n; i++) {
		if (keep && !keep[i])
			continue;
		memcpy(text + o, raw + k[i].off, k[i].len);
		o += k[i].len;
		text[o++] = '\n';
	}
	rc = sp_gzip((const uint8_t *)text, o, out, out_len);
	free(text);
	return rc;
}

/* A line "ADDR TYPE NAME" of the kernel image (no module) named name. */
static bool is_image_sym(const char *raw, const struct kline *k, const char *name)
{
	size_t nl = strlen(name);
	const char *l = raw + k->off;

	return k->len > nl + 1 && l[k->len - nl - 1] == ' ' &&
	       !memcmp(l + k->len - nl, name, nl) && !memchr(l, '[', k->len);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Marks in keep[] what resolving want's addresses needs (kallsyms_format.h
 * "A subset"): k is sorted by address.  -ENOMEM. */
static int mark_wanted(const char *raw, const struct kline *k, size_t n,
		       const struct sp_kallsyms_want *want, bool *keep)
{
	size_t m = 0, j = 0;
	uint64_t text = 0, stext = 0, *t;

	for (size_t i = 0; i < n; i++) {
		if (!text && is_image_sym(raw, &k[i], "_text")) {
			text = k[i].addr;
			keep[i] = true;
		} else if (!stext && is_image_sym(raw, &k[i], "_stext")) {
			stext = k[i].addr;
			keep[i] = true;
		}
	}
	text = text ? text : stext;	/* the reader's base (sp_ksyms__text) */
	t = malloc((want->n_addrs + want->n_text_offs + 1) * sizeof(*t));
	if (!t)
		return -ENOMEM;
	for (size_t i = 0; i < want->n_addrs; i++)
		t[m++] = want->addrs[i];
	for (size_t i = 0; text && i < want->n_text_offs; i++)
		if (want->text_offs[i] <= UINT64_MAX - text)
			t[m++] = text + want->text_offs[i];
	qsort(t, m, sizeof(*t), cmp_u64);
	/* t and k both ascend: j is the first line above t[i] */
	for (size_t i = 0; i < m; i++) {
		size_t c, s;

		while (j < n && k[j].addr <= t[i])
			j++;
		if (!j)
			continue;	/* below every symbol: nothing names it */
		for (c = j; c > 0 && k[c - 1].addr == k[j - 1].addr; c--)
			keep[c - 1] = true;	/* the covering address, every line */
		for (s = j; s < n && k[s].addr == k[j].addr; s++)
			keep[s] = true;		/* and where it ends */
	}
	free(t);
	return 0;
}

/* The text symbols of src, sorted: *raw holds the file, *k the kept lines.
 * Also _text and the end of the image's text (the last symbol without a
 * module, plus the tail a symbolizer grants it). */
/* What a pass over kallsyms' lines learns of the kernel image's text. */
struct text_scan {
	uint64_t last_vm;	/* the last text symbol without a module */
	uint64_t text;		/* _text, 0 until seen */
	size_t skipped;		/* malformed or over-long lines */
	size_t zeros;		/* text symbols reading as address 0 */
	bool nonzero;
};

/* One line (without its newline): true, with *addr, for a text symbol of
 * a visible address. */
static bool scan_line(struct text_scan *sc, const char *l, size_t len, uint64_t *addr)
{
	char type;

	if (len > SP_KALLSYMS_MAX_LINE || parse_line(l, len, addr, &type)) {
		sc->skipped++;
		return false;
	}
	if (!sp_kallsyms_format__is_text(type))
		return false;
	if (!*addr) {
		sc->zeros++;
		return false;
	}
	sc->nonzero = true;
	if (!memchr(l, '[', len)) {
		if (*addr > sc->last_vm)
			sc->last_vm = *addr;
		if (len >= 8 && !memcmp(l + len - 6, " _text", 6) && !sc->text)
			sc->text = *addr;
	}
	return true;
}

/* 0 when the pass saw a text symbol at a visible address, else the error
 * that says why not. */
static int scan_verdict(const struct text_scan *sc, const char *src, char *err, size_t err_len)
{
	if (sc->nonzero)
		return 0;
	if (sc->zeros) {
		say(err, err_len, "kallsyms: every address in %s reads as 0: not allowed to see "
		    "kernel addresses (kernel.kptr_restrict, or not root / no CAP_SYSLOG)", src);
		return -EPERM;
	}
	say(err, err_len, "kallsyms: no text symbol in %s (%zu lines skipped)", src, sc->skipped);
	return -ENOENT;
}

/* read_text's pass: the kept lines indexed, in place in raw. */
struct text_index {
	struct text_scan sc;
	const char *raw;
	struct kline *k;
	size_t n, cap;
};

static int index_line(void *ctx, const char *l, size_t len)
{
	struct text_index *x = ctx;
	uint64_t addr;

	if (!scan_line(&x->sc, l, len, &addr))
		return 0;
	if (x->n == x->cap) {
		size_t nc = x->cap ? x->cap * 2 : 1 << 16;
		struct kline *q = realloc(x->k, nc * sizeof(*q));

		if (!q)
			return -ENOMEM;
		x->k = q;
		x->cap = nc;
	}
	x->k[x->n] = (struct kline){ .addr = addr, .off = (uint32_t)(l - x->raw),
				     .len = (uint32_t)len, .seq = (uint32_t)x->n };
	x->n++;
	return 0;
}

static int read_text(const char *src, char **raw_out, struct kline **k_out, size_t *n_out,
		     char *err, size_t err_len)
{
	struct text_index x = { 0 };
	const struct sp_line_sink sink = { .line = index_line, .ctx = &x };
	char *raw = NULL;
	size_t raw_len = 0;
	int rc;

	rc = sp_read_path(src, SP_KALLSYMS_MAX_BYTES, (uint8_t **)&raw, &raw_len);
	if (rc) {
		say(err, err_len, "kallsyms: %s: %s%s", src, strerror(-rc),
		    rc == -E2BIG ? " (over 64 MiB)" : "");
		goto out;
	}
	/* No line bound here: scan_line skips one over SP_KALLSYMS_MAX_LINE. */
	x.raw = raw;
	rc = sp_line_reader__buf(raw, raw_len, SIZE_MAX, &sink, NULL);
	if (rc) {
		say(err, err_len, "kallsyms: out of memory");
		goto out;
	}
	rc = scan_verdict(&x.sc, src, err, err_len);
	if (!rc)
		qsort(x.k, x.n, sizeof(*x.k), cmp_kline);
out:
	if (rc) {
		free(raw);
		free(x.k);
		raw = NULL;
		x.k = NULL;
		x.n = 0;
	}
	*raw_out = raw;
	*k_out = x.k;
	*n_out = x.n;
	return rc;
}

static const char *kallsyms_src(void)
{
	const char *src = getenv(SP_KALLSYMS_PATH_ENV);

	return src && *src ? src : "/proc/kallsyms";
}

/* text_range's pass: only what scan_line learns; empty lines are not
 * lines (as the capture's reader would skip them, uncounted). */
static int range_line(void *ctx, const char *l, size_t len)
{
	uint64_t addr;

	if (len)
		scan_line(ctx, l, len, &addr);
	return 0;
}

/*
 * Streamed through 16 KiB (/proc/kallsyms answers a page per read, and a
 * line is at most SP_KALLSYMS_MAX_LINE): the whole file is 5+ MB and
 * only two addresses are wanted, and this runs at every start beside the
 * BPF programs' load (with the whole file and its line index held while
 * the sampler loaded, the agent crossed test_agent_memguard's 48 MiB limit
 * at start and was OOM-killed).  Same bounds as a capture: a line over
 * SP_KALLSYMS_MAX_LINE is skipped, more than SP_KALLSYMS_MAX_BYTES is -E2BIG.
 */
int sp_kallsyms__text_range(uint64_t *text, uint64_t *image_end, char *err, size_t err_len)
{
	const char *src = kallsyms_src();
	struct text_scan sc = { 0 };
	const struct sp_line_sink sink = { .line = range_line, .ctx = &sc };
	struct sp_line_stats st;
	char buf[16 << 10];
	int fd, rc;

	_Static_assert(sizeof(buf) > 2 * SP_KALLSYMS_MAX_LINE, "a line and a half fit");
	fd = open(src, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		say(err, err_len, "kallsyms: %s: %s", src, strerror(-rc));
		return rc;
	}
	rc = sp_line_reader__fd(fd, buf, sizeof(buf), SP_KALLSYMS_MAX_BYTES, &sink, &st);
	close(fd);
	if (rc) {
		say(err, err_len, "kallsyms: %s: %s%s", src, strerror(-rc),
		    rc == -E2BIG ? " (over 64 MiB)" : "");
		return rc;
	}
	sc.skipped += st.overlong;	/* lines that did not fit the buffer */
	rc = scan_verdict(&sc, src, err, err_len);
	if (!rc && !sc.text) {
		say(err, err_len, "kallsyms: no _text symbol in %s", src);
		rc = -ENOENT;
	}
	if (!rc) {
		*text = sc.text;
		*image_end = sc.last_vm + SP_KALLSYMS_TAIL_MAX;
	}
	return rc;
}

/* The snapshot gzip'd: the whole one (want NULL) or want's subset. */
static int snapshot(const struct sp_build_id *kernel_id, const struct sp_kmod *mods,
		    size_t n_mods, const struct sp_kallsyms_want *want, uint8_t **gz,
		    size_t *gz_len, char *err, size_t err_len)
{
	const char *src = kallsyms_src();
	char hex[2 * SP_BUILD_ID_MAX + 1], boot[64], header[512];
	char *raw = NULL;
	struct sp_build_id kid;
	struct kline *k = NULL;
	bool *keep = NULL;
	size_t n = 0;
	struct utsname u;
	struct timespec now;
	int rc;

	*gz = NULL;
	if (kernel_id && kernel_id->len) {
		kid = *kernel_id;
	} else {
		rc = sp_buildid__kernel(&kid);
		if (rc) {
			say(err, err_len, "kallsyms: no kernel build id in /sys/kernel/notes: %s",
			    strerror(-rc));
			return rc;
		}
	}
	sp_buildid__hex(&kid, hex);
	rc = read_text(src, &raw, &k, &n, err, err_len);
	if (rc)
		return rc;
	if (want) {
		keep = calloc(n ? n : 1, sizeof(*keep));
		rc = keep ? mark_wanted(raw, k, n, want, keep) : -ENOMEM;
		if (rc) {
			say(err, err_len, "kallsyms: out of memory");
			goto out;
		}
	}
	clock_gettime(CLOCK_REALTIME, &now);
	if (uname(&u))
		snprintf(u.release, sizeof(u.release), "unknown");
	token(u.release);
	read_boot_id(boot, sizeof(boot));
	snprintf(header, sizeof(header),
		 SP_KALLSYMS_MAGIC SP_KALLSYMS_KEY_BUILD_ID "=%s " SP_KALLSYMS_KEY_CAPTURED_AT
		 "=%llu " SP_KALLSYMS_KEY_KERNEL "=%s%s%s%s\n", hex,
		 (unsigned long long)now.tv_sec * 1000000000ull + (unsigned long long)now.tv_nsec,
		 u.release, boot[0] ? " " SP_KALLSYMS_KEY_BOOT_ID "=" : "", boot,
		 want ? " " SP_KALLSYMS_KEY_SCOPE "=" SP_KALLSYMS_SCOPE_PROFILE : "");
	rc = gzip_snapshot(header, mods, n_mods, raw, k, n, keep, gz, gz_len);
	if (rc)
		say(err, err_len, "kallsyms: compressing the snapshot: %s", strerror(-rc));
out:
	free(keep);
	free(k);
	free(raw);
	return rc;
}

int sp_kallsyms__snapshot(const struct sp_build_id *kernel_id, const struct sp_kmod *mods,
			  size_t n_mods, uint8_t **gz, size_t *gz_len, char *err,
			  size_t err_len)
{
	return snapshot(kernel_id, mods, n_mods, NULL, gz, gz_len, err, err_len);
}

int sp_kallsyms__capture(const char *out_path, const struct sp_build_id *kernel_id,
			 char *err, size_t err_len)
{
	return sp_kallsyms__capture_mods(out_path, kernel_id, NULL, 0, err, err_len);
}

/* gz to out_path through a temporary file in its directory (kallsyms.h). */
static int write_atomic(const char *out_path, const uint8_t *gz, size_t gz_len, char *err,
			size_t err_len)
{
	char *tmp = NULL;
	int fd = -1, rc;

	if (asprintf(&tmp, "%s.tmp.XXXXXX", out_path) < 0)
		return -ENOMEM;
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		say(err, err_len, "kallsyms: cannot create %s: %s", tmp, strerror(errno));
		free(tmp);
		return rc;
	}
	if (fchmod(fd, 0644)) {
		rc = -errno;
		say(err, err_len, "kallsyms: chmod %s: %s", tmp, strerror(errno));
		goto out;
	}
	rc = sp_write_all(fd, gz, gz_len);
	if (!rc && fsync(fd))
		rc = -errno;
	if (rc) {
		say(err, err_len, "kallsyms: writing %s: %s", tmp, strerror(-rc));
		goto out;
	}
	rc = close(fd) ? -errno : 0;
	fd = -1;
	if (rc) {
		say(err, err_len, "kallsyms: closing %s: %s", tmp, strerror(-rc));
		goto out;
	}
	if (rename(tmp, out_path)) {
		rc = -errno;
		say(err, err_len, "kallsyms: rename to %s: %s", out_path, strerror(errno));
		goto out;
	}
	free(tmp);
	return 0;
out:
	if (fd >= 0)
		close(fd);
	unlink(tmp);
	free(tmp);
	return rc;
}

static int capture(const char *out_path, const struct sp_build_id *kernel_id,
		   const struct sp_kmod *mods, size_t n_mods, const struct sp_kallsyms_want *want,
		   char *err, size_t err_len)
{
	uint8_t *gz = NULL;
	size_t gz_len = 0;
	int rc;

	if (!out_path || !*out_path) {
		say(err, err_len, "kallsyms: no output path");
		return -EINVAL;
	}
	rc = snapshot(kernel_id, mods, n_mods, want, &gz, &gz_len, err, err_len);
	if (!rc)
		rc = write_atomic(out_path, gz, gz_len, err, err_len);
	free(gz);
	return rc;
}

int sp_kallsyms__capture_mods(const char *out_path, const struct sp_build_id *kernel_id,
			      const struct sp_kmod *mods, size_t n_mods, char *err,
			      size_t err_len)
{
	return capture(out_path, kernel_id, mods, n_mods, NULL, err, err_len);
}

int sp_kallsyms__capture_want(const char *out_path, const struct sp_build_id *kernel_id,
			      const struct sp_kallsyms_want *want, char *err, size_t err_len)
{
	static const struct sp_kallsyms_want none;

	return capture(out_path, kernel_id, want ? want->mods : NULL, want ? want->n_mods : 0,
		       want ? want : &none, err, err_len);
}
