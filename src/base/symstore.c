// SPDX-License-Identifier: MIT
/*
 * symstore.c - the host-symbol directory layout, atomic writes, the
 * upload envelope (contract and byte layout: symstore.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/buildid.h"
#include "base/jit_piece.h"
#include "base/symstore.h"
#include "base/write_all.h"

int sp_symstore__path(const char *dir, int kind, const char *key_hex, char *buf, size_t size)
{
	struct sp_jit_id id;
	int n;

	if (!dir || !key_hex || sp_buildid__validate(key_hex))
		return -EINVAL;
	switch (kind) {
	case SP_SYMSTORE_KALLSYMS:
		n = snprintf(buf, size, "%s/%s.kallsyms.gz", dir, key_hex);
		break;
	case SP_SYMSTORE_ELF:
		if (strlen(key_hex) < 4)
			return -EINVAL;
		n = snprintf(buf, size, "%s/.build-id/%.2s/%s", dir, key_hex, key_hex + 2);
		break;
	case SP_SYMSTORE_JIT:
		if (sp_jit_id__parse(key_hex, &id))
			return -EINVAL;
		n = snprintf(buf, size, "%s/" SP_SYMSTORE_JIT_DIR "/%s" SP_SYMSTORE_PIECE_SUFFIX,
			     dir, key_hex);
		break;
	default:
		return -EINVAL;
	}
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

/* After a failed write (a full disk): path's parent directories below dir
 * removed where empty, deepest first, so a failed store leaves no empty
 * tree behind (dir itself stays: it is the caller's).  rmdir of a
 * directory that holds anything (another blob, a concurrent writer's
 * file) fails, harmlessly. */
static void remove_empty_parents(const char *dir, char *path)
{
	size_t dl = strlen(dir);
	char *s;

	while ((s = strrchr(path, '/')) && (size_t)(s - path) > dl) {
		*s = '\0';
		if (rmdir(path))
			return;
	}
}

/* mkdir -p of path's parent directories below dir (dir itself exists). */
static int make_parents(const char *dir, char *path)
{
	size_t dl = strlen(dir);

	for (char *s = path + dl + 1; (s = strchr(s, '/')); s++) {
		*s = '\0';
		if (mkdir(path, 0755) && errno != EEXIST) {
			int e = -errno;

			*s = '/';
			return e;
		}
		*s = '/';
	}
	return 0;
}

int sp_symstore__write(const char *dir, int kind, const char *key_hex, const void *data,
		       size_t len)
{
	char path[4096], tmp[4160];
	int fd, err;

	err = sp_symstore__path(dir, kind, key_hex, path, sizeof(path));
	if (err)
		return err;
	if (!access(path, F_OK))
		return -EEXIST;
	err = make_parents(dir, path);
	if (err)
		return err;
	snprintf(tmp, sizeof(tmp), "%s.tmp.XXXXXX", path);
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return -errno;
	err = fchmod(fd, 0644) ? -errno : sp_write_all(fd, data, len);
	if (close(fd) && !err)
		err = -errno;
	/* link, not rename: a concurrent writer of the same key loses
	 * cleanly (-EEXIST) instead of replacing a file being read */
	if (!err && link(tmp, path))
		err = errno == EEXIST ? -EEXIST : -errno;
	unlink(tmp);
	if (err && err != -EEXIST)
		remove_empty_parents(dir, path);
	return err;
}

int sp_symstore__upload_encode(int kind, const uint8_t *key, size_t key_len, const void *payload,
			       size_t len, uint8_t **out, size_t *out_len)
{
	uint8_t *b;

	*out = NULL;
	if (kind < 1 || kind > SP_SYMSTORE_KIND_MAX || !key_len || key_len > SP_SYMSTORE_KEY_MAX)
		return -EINVAL;
	b = malloc(SP_SYMSTORE_UPLOAD_HDR + key_len + len);
	if (!b)
		return -ENOMEM;
	memset(b, 0, SP_SYMSTORE_UPLOAD_HDR);
	memcpy(b, SP_SYMSTORE_UPLOAD_MAGIC, 8);
	b[8] = (uint8_t)kind;
	b[9] = (uint8_t)key_len;
	memcpy(b + SP_SYMSTORE_UPLOAD_HDR, key, key_len);
	if (len)
		memcpy(b + SP_SYMSTORE_UPLOAD_HDR + key_len, payload, len);
	*out = b;
	*out_len = SP_SYMSTORE_UPLOAD_HDR + key_len + len;
	return 0;
}

int sp_symstore__upload_decode(const uint8_t *buf, size_t len, int *kind, const uint8_t **key,
			       size_t *key_len, const uint8_t **payload, size_t *payload_len)
{
	size_t k;

	if (len < SP_SYMSTORE_UPLOAD_HDR || memcmp(buf, SP_SYMSTORE_UPLOAD_MAGIC, 8))
		return -EINVAL;
	for (int i = 10; i < SP_SYMSTORE_UPLOAD_HDR; i++)
		if (buf[i])
			return -EINVAL;
	k = buf[9];
	if (buf[8] < 1 || buf[8] > SP_SYMSTORE_KIND_MAX || !k || k > SP_SYMSTORE_KEY_MAX ||
	    len - SP_SYMSTORE_UPLOAD_HDR < k)
		return -EINVAL;
	*kind = buf[8];
	*key = buf + SP_SYMSTORE_UPLOAD_HDR;
	*key_len = k;
	*payload = buf + SP_SYMSTORE_UPLOAD_HDR + k;
	*payload_len = len - SP_SYMSTORE_UPLOAD_HDR - k;
	return 0;
}

