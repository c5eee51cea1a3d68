// SPDX-License-Identifier: MIT
/*
 * store.c - checked writes of uploaded host symbols, with a disk budget
 * (contract: store.h).
 *
 * The JIT pieces on disk are indexed in memory (id, size, mtime; oldest
 * first) so that making room is a pop, not a directory scan.  Snapshots
 * and images are only counted.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/buildid.h"
#include "base/hex.h"
#include "base/jit_piece.h"
#include "base/symstore.h"
#include "store.h"

#define MAX_SCAN 1000000	/* files looked at when opening */

struct piece_ent {
	struct sp_jit_id id;
	uint64_t size;
	int64_t mtime;
};

struct sp_store {
	struct sp_store_opts o;
	char *dir;
	pthread_mutex_t lock;
	struct piece_ent *pieces;	/* oldest first, from head */
	size_t n_pieces, head, cap;
	struct sp_store_stats st;
};

static void say(char *why, size_t len, const char *msg)
{
	if (why && len)
		snprintf(why, len, "%s", msg);
}

/* ------------------------------------------------------------ index */

static int piece_push(struct sp_store *s, const struct sp_jit_id *id, uint64_t size,
		      int64_t mtime)
{
	if (s->head && s->head == s->n_pieces) {
		s->n_pieces = s->head = 0;
	} else if (s->head > s->cap / 2) {
		memmove(s->pieces, s->pieces + s->head, (s->n_pieces - s->head) * sizeof(*s->pieces));
		s->n_pieces -= s->head;
		s->head = 0;
	}
	if (s->n_pieces == s->cap) {
		size_t nc = s->cap ? 2 * s->cap : 1024;
		struct piece_ent *q = realloc(s->pieces, nc * sizeof(*q));

		if (!q)
			return -ENOMEM;
		s->pieces = q;
		s->cap = nc;
	}
	s->pieces[s->n_pieces++] = (struct piece_ent){ .id = *id, .size = size, .mtime = mtime };
	return 0;
}

static int piece_cmp(const void *a, const void *b)
{
	const struct piece_ent *x = a, *y = b;

	return x->mtime < y->mtime ? -1 : x->mtime > y->mtime;
}

/* Removes the oldest piece (lock held); false when there is none. */
static bool evict_one(struct sp_store *s)
{
	char hex[SP_JIT_ID_HEX + 1], path[4096];
	struct piece_ent *p;

	if (s->head == s->n_pieces)
		return false;
	p = &s->pieces[s->head++];
	sp_jit_id__hex(&p->id, hex);
	if (!sp_symstore__path(s->dir, SP_SYMSTORE_JIT, hex, path, sizeof(path)) &&
	    !unlink(path)) {
		s->st.bytes -= p->size < s->st.bytes ? p->size : s->st.bytes;
		s->st.files--;
		s->st.evicted++;
	}
	return true;
}

/* Bytes and files of dir, recursively one level (.build-id/xx/); pieces
 * of jit/ go to the index. */
static void scan(struct sp_store *s, const char *dir, int depth, bool jit, size_t *seen)
{
	struct dirent *de;
	DIR *d = opendir(dir);

	if (!d)
		return;
	while ((de = readdir(d)) && (*seen)++ < MAX_SCAN) {
		char path[4096];
		struct stat st;
		size_t l = strlen(de->d_name);

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >= sizeof(path) ||
		    lstat(path, &st))
			continue;
		if (S_ISDIR(st.st_mode) && depth < 2) {
			scan(s, path, depth + 1, depth == 0 && !strcmp(de->d_name, SP_SYMSTORE_JIT_DIR),
			     seen);
			continue;
		}
		if (!S_ISREG(st.st_mode))
			continue;
		s->st.bytes += (uint64_t)st.st_size;
		s->st.files++;
		if (jit && l == SP_JIT_ID_HEX + sizeof(SP_SYMSTORE_PIECE_SUFFIX) - 1 &&
		    !strcmp(de->d_name + SP_JIT_ID_HEX, SP_SYMSTORE_PIECE_SUFFIX)) {
			char hex[SP_JIT_ID_HEX + 1];
			struct sp_jit_id id;

			memcpy(hex, de->d_name, SP_JIT_ID_HEX);
			hex[SP_JIT_ID_HEX] = '\0';
			if (!sp_jit_id__parse(hex, &id))
				piece_push(s, &id, (uint64_t)st.st_size, st.st_mtim.tv_sec);
		}
	}
	closedir(d);
}

/* ------------------------------------------------------------ API */

int sp_store__open(const struct sp_store_opts *o, struct sp_store **out, char *err,
		   size_t err_len)
{
	struct sp_store *s;
	char jit[4096];
	struct stat st;
	size_t seen = 0;

	*out = NULL;
	if (!o || !o->dir || stat(o->dir, &st) || !S_ISDIR(st.st_mode) ||
	    access(o->dir, W_OK | X_OK)) {
		if (err && err_len)
			snprintf(err, err_len, "store directory %s: %s (create it, writable by the "
				 "user serve runs as)", o && o->dir ? o->dir : "(none)",
				 errno ? strerror(errno) : "not a directory");
		return -EACCES;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->o = *o;
	if (!s->o.max_bytes)
		s->o.max_bytes = 1ull << 30;
	s->st.max_bytes = s->o.max_bytes;
	s->dir = strdup(o->dir);
	if (!s->dir) {
		free(s);
		return -ENOMEM;
	}
	pthread_mutex_init(&s->lock, NULL);
	snprintf(jit, sizeof(jit), "%s/" SP_SYMSTORE_JIT_DIR, s->dir);
	mkdir(jit, 0755);
	scan(s, s->dir, 0, false, &seen);
	if (s->n_pieces > 1)
		qsort(s->pieces, s->n_pieces, sizeof(*s->pieces), piece_cmp);
	*out = s;
	return 0;
}

void sp_store__free(struct sp_store *s)
{
	if (!s)
		return;
	pthread_mutex_destroy(&s->lock);
	free(s->pieces);
	free(s->dir);
	free(s);
}

static int elf_build_id(const uint8_t *p, size_t len, struct sp_build_id *b)
{
	int fd = memfd_create("spanprof-upload", MFD_CLOEXEC), err;

	if (fd < 0)
		return -errno;
	err = write(fd, p, len) == (ssize_t)len ? sp_buildid__from_fd(fd, b) : -EIO;
	close(fd);
	return err;
}

/* The payload is what the key says it is.  *k: a parsed snapshot to hand
 * to the set.  0, or -EINVAL with why. */
static int verify(int kind, const uint8_t *key, size_t key_len, const uint8_t *p, size_t len,
		  struct sp_ksyms **k, char *why, size_t why_len, bool *mismatch)
{
	char hex[2 * SP_SYMSTORE_KEY_MAX + 1];
	struct sp_build_id b;
	struct sp_jit_piece pc;
	struct sp_jit_id id;
	int err;

	*mismatch = false;
	sp_hex__encode(key, key_len, hex);
	switch (kind) {
	case SP_SYMSTORE_KALLSYMS:
		err = sp_ksyms__parse(p, len, k, NULL);
		if (err) {
			say(why, why_len, err == -EFBIG ? "kernel snapshot too large"
							: "not a kernel symbol snapshot");
			return err == -EFBIG || err == -E2BIG ? -E2BIG : -EINVAL;
		}
		if (strcmp(sp_ksyms__build_id(*k), hex)) {
			sp_ksyms__free(*k);
			*k = NULL;
			*mismatch = true;
			say(why, why_len, "kernel snapshot of another build id than its key");
			return -EINVAL;
		}
		if (sp_ksyms__is_subset(*k)) {	/* would stand for the kernel here */
			sp_ksyms__free(*k);
			*k = NULL;
			say(why, why_len, "a profile's kernel symbol subset (scope=profile), not "
			    "the kernel's whole snapshot");
			return -EINVAL;
		}
		return 0;
	case SP_SYMSTORE_ELF:
		if (elf_build_id(p, len, &b) || !b.len) {
			say(why, why_len, "not an ELF image with a GNU build id");
			return -EINVAL;
		}
		if (b.len != key_len || memcmp(b.id, key, key_len)) {
			*mismatch = true;
			say(why, why_len, "ELF image of another build id than its key");
			return -EINVAL;
		}
		return 0;
	case SP_SYMSTORE_JIT:
		if (key_len != SP_JIT_ID_LEN) {
			say(why, why_len, "a JIT piece id is 16 bytes");
			return -EINVAL;
		}
		memcpy(id.b, key, SP_JIT_ID_LEN);
		err = sp_jit_piece__decode(p, len, &id, &pc);
		if (err) {
			*mismatch = err == -EBADMSG;
			say(why, why_len, err == -EBADMSG ? "JIT piece whose content is not its id"
							  : "not a JIT piece");
			return -EINVAL;
		}
		return 0;
	default:
		say(why, why_len, "unknown kind");
		return -EINVAL;
	}
}

int sp_store__put(struct sp_store *s, const uint8_t *body, size_t len, char *why,
		  size_t why_len)
{
	char hex[2 * SP_SYMSTORE_KEY_MAX + 1], path[4096];
	const uint8_t *key, *payload;
	size_t key_len, plen;
	struct sp_ksyms *k = NULL;
	struct sp_jit_id id;
	bool mismatch = false;
	int kind, err;

	pthread_mutex_lock(&s->lock);
	s->st.uploads++;
	pthread_mutex_unlock(&s->lock);
	if (sp_symstore__upload_decode(body, len, &kind, &key, &key_len, &payload, &plen)) {
		say(why, why_len, "not a spanprof host-symbol upload");
		err = -EINVAL;
		goto count;
	}
	if (plen > SP_STORE_MAX_PAYLOAD) {
		say(why, why_len, "payload too large");
		err = -E2BIG;
		goto count;
	}
	sp_hex__encode(key, key_len, hex);
	if (sp_symstore__path(s->dir, kind, hex, path, sizeof(path))) {
		say(why, why_len, "bad key");
		err = -EINVAL;
		goto count;
	}
	if (!access(path, F_OK)) {
		err = 1;
		goto count;
	}
	err = verify(kind, key, key_len, payload, plen, &k, why, why_len, &mismatch);
	if (err)
		goto count;
	pthread_mutex_lock(&s->lock);
	while (s->st.bytes + plen > s->o.max_bytes && evict_one(s))
		;
	if (s->st.bytes + plen > s->o.max_bytes) {
		pthread_mutex_unlock(&s->lock);
		say(why, why_len, "store full (--store-max-bytes)");
		err = -ENOSPC;
		goto count;
	}
	err = sp_symstore__write(s->dir, kind, hex, payload, plen);
	if (err == -EEXIST) {
		err = 1;
	} else if (!err) {
		s->st.bytes += plen;
		s->st.files++;
		s->st.stored[kind]++;
		if (kind == SP_SYMSTORE_JIT) {
			memcpy(id.b, key, SP_JIT_ID_LEN);
			piece_push(s, &id, plen, 0);
		}
	} else {
		say(why, why_len, "cannot write the store");
	}
	pthread_mutex_unlock(&s->lock);
	if (!err) {
		if (kind == SP_SYMSTORE_KALLSYMS && s->o.ksyms) {
			sp_ksyms_set__add(s->o.ksyms, k);
			k = NULL;
		} else if (kind == SP_SYMSTORE_ELF && s->o.resolver) {
			sp_resolver__forget_missing(s->o.resolver, hex);
		} else if (kind == SP_SYMSTORE_JIT) {
			sp_jit_syms__changed(s->o.jit);
		}
	}
count:
	sp_ksyms__free(k);
	pthread_mutex_lock(&s->lock);
	if (err == 1)
		s->st.duplicates++;
	else if (err == -E2BIG)
		s->st.refused_too_big++;
	else if (err == -ENOSPC)
		s->st.refused_full++;
	else if (err == -EINVAL && mismatch)
		s->st.refused_mismatch++;
	else if (err == -EINVAL)
		s->st.refused_malformed++;
	else if (err < 0)
		s->st.write_errors++;
	pthread_mutex_unlock(&s->lock);
	return err;
}

void sp_store__stats(struct sp_store *s, struct sp_store_stats *st)
{
	if (!s) {
		memset(st, 0, sizeof(*st));
		return;
	}
	pthread_mutex_lock(&s->lock);
	*st = s->st;
	pthread_mutex_unlock(&s->lock);
}
