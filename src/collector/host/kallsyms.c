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
#include <zlib.h>

#include "base/hex.h"
#include "collector/host/kallsyms.h"
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

/* "ADDR TYPE NAME" with an optional tab and [MODULE]: 0 and *addr, *type, or -EINVAL. */
static int parse_line(const char *l, size_t len, uint64_t *addr, char *type)
{
	size_t i = 0;
	uint64_t a = 0;
	int d;

	while (i < len && i < 17 && (d = sp_hex_digit(l[i])) >= 0) {
		a = a << 4 | (uint64_t)d;
		i++;
	}
	if (i == 0 || i > 16 || i + 3 >= len || l[i] != ' ' || l[i + 2] != ' ')
		return -EINVAL;
	*type = l[i + 1];
	for (size_t j = i + 3; j < len; j++)
		if ((unsigned char)l[j] < ' ' && l[j] != '\t')
			return -EINVAL;
	if (l[i + 3] == '\t' || l[i + 3] == ' ')
		return -EINVAL;	/* empty name */
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

/* The cause of a failed gz call, read at once: zlib reports Z_ERRNO when its
 * own write(2) failed and leaves that call's errno in place (ENOSPC on a full
 * disk); any other zlib error is -EIO. */
static int gz_cause(gzFile gz)
{
	int e = errno, zerr = Z_OK;

	gzerror(gz, &zerr);
	return zerr == Z_ERRNO && e > 0 ? -e : -EIO;
}

static int write_snapshot(int fd, const char *header, const char *raw,
			  const struct kline *k, size_t n)
{
	int dfd = dup(fd), rc = 0, zrc;
	gzFile gz;

	if (dfd < 0)
		return -errno;
	gz = gzdopen(dfd, "wb6");
	if (!gz) {
		close(dfd);
		return -ENOMEM;
	}
	gzbuffer(gz, 1 << 16);
	if (gzputs(gz, header) < 0)
		rc = gz_cause(gz);
	for (size_t i = 0; i < n && !rc; i++) {
		if (gzwrite(gz, raw + k[i].off, k[i].len) != (int)k[i].len ||
		    gzputc(gz, '\n') < 0)
			rc = gz_cause(gz);
	}
	errno = 0;
	zrc = gzclose(gz);	/* flushes: the usual place a full disk shows */
	if (zrc != Z_OK && !rc)
		rc = zrc == Z_ERRNO && errno > 0 ? -errno : -EIO;
	if (!rc && fsync(fd))
		rc = -errno;
	return rc;
}

int sp_kallsyms__capture(const char *out_path, const struct sp_build_id *kernel_id,
			 char *err, size_t err_len)
{
	const char *src = getenv(SP_KALLSYMS_PATH_ENV);
	char hex[2 * SP_BUILD_ID_MAX + 1], boot[64], header[512];
	char *raw = NULL, *tmp = NULL;
	struct sp_build_id kid;
	struct kline *k = NULL;
	size_t raw_len = 0, n = 0, cap = 0, skipped = 0, zeros = 0, start;
	bool nonzero = false;
	struct utsname u;
	struct timespec now;
	int fd = -1, rc;

	if (!src || !*src)
		src = "/proc/kallsyms";
	if (!out_path || !*out_path) {
		say(err, err_len, "kallsyms: no output path");
		return -EINVAL;
	}
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
	rc = sp_read_path(src, SP_KALLSYMS_MAX_BYTES, (uint8_t **)&raw, &raw_len);
	if (rc) {
		say(err, err_len, "kallsyms: %s: %s%s", src, strerror(-rc),
		    rc == -E2BIG ? " (over 64 MiB)" : "");
		goto out;
	}
	for (size_t i = 0; i < raw_len; i = start) {
		const char *nl = memchr(raw + i, '\n', raw_len - i);
		size_t len = nl ? (size_t)(nl - raw) - i : raw_len - i;
		uint64_t addr;
		char type;

		start = i + len + 1;
		if (len > SP_KALLSYMS_MAX_LINE || parse_line(raw + i, len, &addr, &type)) {
			skipped++;
			continue;
		}
		if (!sp_kallsyms_format__is_text(type))
			continue;
		if (!addr) {
			zeros++;
			continue;
		}
		nonzero = true;
		if (n == cap) {
			size_t nc = cap ? cap * 2 : 1 << 16;
			struct kline *q = realloc(k, nc * sizeof(*q));

			if (!q) {
				rc = -ENOMEM;
				say(err, err_len, "kallsyms: out of memory");
				goto out;
			}
			k = q;
			cap = nc;
		}
		k[n] = (struct kline){ .addr = addr, .off = (uint32_t)i,
				       .len = (uint32_t)len, .seq = (uint32_t)n };
		n++;
	}
	if (!nonzero) {
		rc = zeros ? -EPERM : -ENOENT;
		if (rc == -EPERM)
			say(err, err_len, "kallsyms: every address in %s reads as 0: not "
			    "allowed to see kernel addresses (kernel.kptr_restrict, or not "
			    "root / no CAP_SYSLOG)", src);
		else
			say(err, err_len, "kallsyms: no text symbol in %s (%zu lines skipped)",
			    src, skipped);
		goto out;
	}
	qsort(k, n, sizeof(*k), cmp_kline);

	clock_gettime(CLOCK_REALTIME, &now);
	if (uname(&u))
		snprintf(u.release, sizeof(u.release), "unknown");
	token(u.release);
	read_boot_id(boot, sizeof(boot));
	snprintf(header, sizeof(header),
		 SP_KALLSYMS_MAGIC SP_KALLSYMS_KEY_BUILD_ID "=%s " SP_KALLSYMS_KEY_CAPTURED_AT
		 "=%llu " SP_KALLSYMS_KEY_KERNEL "=%s%s%s\n", hex,
		 (unsigned long long)now.tv_sec * 1000000000ull + (unsigned long long)now.tv_nsec,
		 u.release, boot[0] ? " " SP_KALLSYMS_KEY_BOOT_ID "=" : "", boot);

	if (asprintf(&tmp, "%s.tmp.XXXXXX", out_path) < 0) {
		tmp = NULL;
		rc = -ENOMEM;
		goto out;
	}
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		say(err, err_len, "kallsyms: cannot create %s: %s", tmp, strerror(errno));
		free(tmp);
		tmp = NULL;
		goto out;
	}
	if (fchmod(fd, 0644)) {
		rc = -errno;
		say(err, err_len, "kallsyms: chmod %s: %s", tmp, strerror(errno));
		goto out;
	}
	rc = write_snapshot(fd, header, raw, k, n);
	if (rc) {
		say(err, err_len, "kallsyms: writing %s: %s", tmp, strerror(-rc));
		goto out;
	}
	if (close(fd)) {
		fd = -1;
		rc = -errno;
		say(err, err_len, "kallsyms: closing %s: %s", tmp, strerror(errno));
		goto out;
	}
	fd = -1;
	if (rename(tmp, out_path)) {
		rc = -errno;
		say(err, err_len, "kallsyms: rename to %s: %s", out_path, strerror(errno));
		goto out;
	}
	free(tmp);
	tmp = NULL;
out:
	if (fd >= 0)
		close(fd);
	if (tmp) {
		unlink(tmp);
		free(tmp);
	}
	free(k);
	free(raw);
	return rc;
}
