/* SPDX-License-Identifier: MIT */
/*
 * file_sink.c - rotating profile files (contract: file_sink.h).
 *
 * The directory is held open (O_DIRECTORY) and every file operation is
 * relative to it.  The names of the files kept are in a ring of max_files
 * fixed-size entries, oldest first, filled at start from the directory
 * listing (sorted by the timestamp in the name).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "export/file_sink.h"

#define SP_NAME_LEN 48	/* "profile-" + 20 digits + ".otlp.pb.gz" + NUL = 40 */

struct sp_file_sink {
	int dirfd;
	char *dir;
	uint32_t max_files;
	size_t max_file_bytes;
	bool gzip;
	uint64_t last_ns;
	char (*ring)[SP_NAME_LEN];
	uint32_t head;		/* oldest */
	uint32_t n;
};

struct found {
	uint64_t ns;
	char name[SP_NAME_LEN];
};

/* "profile-<1..20 digits>.otlp.pb[.gz]" -> ns */
static bool parse_name(const char *s, uint64_t *ns)
{
	uint64_t v = 0;
	int digits = 0;

	if (strncmp(s, "profile-", 8))
		return false;
	s += 8;
	for (; *s >= '0' && *s <= '9'; s++, digits++) {
		if (v > (UINT64_MAX - 9) / 10)
			return false;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	if (!digits || digits > 20)
		return false;
	if (strcmp(s, ".otlp.pb") && strcmp(s, ".otlp.pb.gz"))
		return false;
	*ns = v;
	return true;
}

static int cmp_found(const void *a, const void *b)
{
	const struct found *x = a, *y = b;

	if (x->ns != y->ns)
		return x->ns < y->ns ? -1 : 1;
	return strcmp(x->name, y->name);
}

static void ring_push(struct sp_file_sink *s, const char *name)
{
	snprintf(s->ring[(s->head + s->n) % s->max_files], SP_NAME_LEN, "%s", name);
	s->n++;
}

/* Removes the oldest kept file; 1 when a file was removed. */
static int ring_drop_oldest(struct sp_file_sink *s)
{
	int r;

	r = unlinkat(s->dirfd, s->ring[s->head], 0) == 0 || errno == ENOENT;
	s->head = (s->head + 1) % s->max_files;
	s->n--;
	return r;
}

static int scan(struct sp_file_sink *s, uint32_t *removed, char *err, size_t err_len)
{
	struct found *f = NULL, *nf;
	size_t n = 0, cap = 0, i;
	struct dirent *de;
	DIR *d;
	int fd, r = 0;

	fd = openat(s->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || !(d = fdopendir(fd))) {
		r = -errno;
		if (fd >= 0)
			close(fd);
		snprintf(err, err_len, "output directory %s: cannot list it: %s", s->dir,
			 strerror(-r));
		return r;
	}
	while ((de = readdir(d))) {
		uint64_t ns;

		if (!strncmp(de->d_name, ".profile-", 9) && strlen(de->d_name) > 13 &&
		    !strcmp(de->d_name + strlen(de->d_name) - 4, ".tmp")) {
			unlinkat(s->dirfd, de->d_name, 0);	/* left by a crash */
			continue;
		}
		if (!parse_name(de->d_name, &ns))
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			nf = realloc(f, cap * sizeof(*f));
			if (!nf) {
				r = -ENOMEM;
				snprintf(err, err_len, "out of memory listing %s", s->dir);
				goto out;
			}
			f = nf;
		}
		f[n].ns = ns;
		snprintf(f[n].name, SP_NAME_LEN, "%s", de->d_name);
		n++;
	}
	if (n)
		qsort(f, n, sizeof(*f), cmp_found);
	for (i = 0; i < n; i++) {
		if (n - i > s->max_files) {
			if (!unlinkat(s->dirfd, f[i].name, 0) || errno == ENOENT)
				(*removed)++;
			continue;
		}
		ring_push(s, f[i].name);
		if (f[i].ns > s->last_ns)
			s->last_ns = f[i].ns;
	}
out:
	free(f);
	closedir(d);
	return r;
}

int sp_file_sink__new(const char *dir, uint32_t max_files, size_t max_file_bytes, bool gzip,
		      struct sp_file_sink **out, uint32_t *removed, char *err, size_t err_len)
{
	struct sp_file_sink *s;
	int r;

	*out = NULL;
	*removed = 0;
	if (!dir || !*dir) {
		snprintf(err, err_len, "output directory: empty path");
		return -EINVAL;
	}
	if (!max_files || max_files > SP_FILE_SINK_MAX_FILES) {
		snprintf(err, err_len, "output directory: max_files %u out of range 1..%u",
			 max_files, SP_FILE_SINK_MAX_FILES);
		return -EINVAL;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		goto nomem;
	s->dirfd = -1;
	s->max_files = max_files;
	s->max_file_bytes = max_file_bytes;
	s->gzip = gzip;
	s->dir = strdup(dir);
	s->ring = calloc(max_files, sizeof(*s->ring));
	if (!s->dir || !s->ring)
		goto nomem;
	s->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (s->dirfd < 0 && errno == ENOENT && !mkdir(dir, 0755))
		s->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (s->dirfd < 0) {
		r = -errno;
		snprintf(err, err_len,
			 "output directory %s: %s (create it, or point --output-dir elsewhere)",
			 dir, strerror(-r));
		goto fail;
	}
	if (faccessat(s->dirfd, ".", W_OK, AT_EACCESS)) {
		r = -errno;
		snprintf(err, err_len, "output directory %s is not writable: %s", dir,
			 strerror(-r));
		goto fail;
	}
	r = scan(s, removed, err, err_len);
	if (r)
		goto fail;
	*out = s;
	return 0;
nomem:
	r = -ENOMEM;
	snprintf(err, err_len, "out of memory setting up the output directory");
fail:
	sp_file_sink__free(s);
	return r;
}

void sp_file_sink__free(struct sp_file_sink *s)
{
	if (!s)
		return;
	if (s->dirfd >= 0)
		close(s->dirfd);
	free(s->ring);
	free(s->dir);
	free(s);
}

int sp_file_sink__write(struct sp_file_sink *s, const uint8_t *buf, size_t len,
			uint32_t *removed, char *err, size_t err_len)
{
	char name[SP_NAME_LEN], tmp[SP_NAME_LEN];
	struct timespec ts;
	uint64_t ns;
	size_t off = 0;
	int fd = -1, r = 0;

	if (len > s->max_file_bytes) {
		snprintf(err, err_len, "batch of %zu bytes is over max_file_bytes (%zu): not written",
			 len, s->max_file_bytes);
		return -EFBIG;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	if (ns <= s->last_ns)
		ns = s->last_ns + 1;
	snprintf(name, sizeof(name), "profile-%020" PRIu64 ".otlp.pb%s", ns, s->gzip ? ".gz" : "");
	snprintf(tmp, sizeof(tmp), ".profile-%020" PRIu64 ".tmp", ns);

	fd = openat(s->dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0) {
		r = -errno;
		goto out;
	}
	while (off < len) {
		ssize_t w = write(fd, buf + off, len - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			r = w < 0 ? -errno : -EIO;
			goto out;
		}
		off += (size_t)w;
	}
	if (fdatasync(fd)) {
		r = -errno;
		goto out;
	}
	r = close(fd) ? -errno : 0;
	fd = -1;
	if (r)
		goto out;
	if (renameat(s->dirfd, tmp, s->dirfd, name)) {
		r = -errno;
		goto out;
	}
	s->last_ns = ns;
	if (s->n == s->max_files)
		*removed += (uint32_t)ring_drop_oldest(s);
	ring_push(s, name);
out:
	if (fd >= 0)
		close(fd);
	if (r) {
		unlinkat(s->dirfd, tmp, 0);
		snprintf(err, err_len, "writing %s/%s: %s", s->dir, name, strerror(-r));
	}
	return r;
}
