// SPDX-License-Identifier: MIT
/*
 * ktree.c - kernel debug files by name under a debug directory.  Contract:
 * ktree.h.  The index is an array of (name, path) sorted by name; a
 * lookup is a binary search to the first entry of that name.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/kallsyms_format.h"
#include "grow.h"
#include "ktree.h"


struct kfile {
	char *name;		/* "vmlinux" or a module name, '-' as '_' */
	char *path;
};

struct sp_ktree {
	struct kfile *f;
	uint32_t n, cap;
	uint64_t skipped;
};

/* name, its '-' as '_', into buf; false when it does not fit. */
static bool normalize(const char *name, size_t n, char *buf, size_t len)
{
	if (!n || n >= len || n >= SP_KTREE_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		buf[i] = name[i] == '-' ? '_' : name[i];
	buf[n] = '\0';
	return true;
}

bool sp_ktree__hint_name(const char *hint, char *buf, size_t len)
{
	const char *name, *sect;
	size_t nlen, slen;

	if (!hint)
		return false;
	if (!strcmp(hint, SP_KALLSYMS_FN_KERNEL))
		return normalize("vmlinux", 7, buf, len);
	return sp_kallsyms_format__module_fn(hint, &name, &nlen, &sect, &slen) &&
	       normalize(name, nlen, buf, len);
}

/* The index name of a file name: "vmlinux" (or "vmlinux-RELEASE" when
 * boot is set), NAME.ko, NAME.ko.debug. */
static bool file_name(const char *fn, bool boot, char *buf, size_t len)
{
	size_t n = strlen(fn);

	if (boot)
		return !strncmp(fn, "vmlinux-", 8) && normalize("vmlinux", 7, buf, len);
	if (!strcmp(fn, "vmlinux"))
		return normalize(fn, n, buf, len);
	if (n > 9 && !strcmp(fn + n - 9, ".ko.debug"))
		return normalize(fn, n - 9, buf, len);
	if (n > 3 && !strcmp(fn + n - 3, ".ko"))
		return normalize(fn, n - 3, buf, len);
	return false;
}

static int add(struct sp_ktree *t, const char *name, const char *path)
{
	struct kfile k = { strdup(name), strdup(path) };

	if (!k.name || !k.path || sp_grow((void **)&t->f, &t->cap, t->n + 1, sizeof(*t->f))) {
		free(k.name);
		free(k.path);
		return -ENOMEM;
	}
	t->f[t->n++] = k;
	return 0;
}

/* The regular files of dir that file_name() takes, and (depth left) its
 * subdirectories; symbolic links are neither.  0 or -ENOMEM. */
static int walk(struct sp_ktree *t, const char *dir, int depth, bool boot)
{
	char path[4096], name[SP_KTREE_NAME_MAX];
	struct dirent *de;
	DIR *d = opendir(dir);
	int err = 0;

	if (!d)
		return 0;
	while (!err && (de = readdir(d))) {
		struct stat st;

		if (de->d_name[0] == '.' ||
		    snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >= (int)sizeof(path) ||
		    lstat(path, &st))
			continue;
		if (S_ISDIR(st.st_mode) && depth > 0 && !boot)
			err = walk(t, path, depth - 1, false);
		else if (S_ISREG(st.st_mode) && file_name(de->d_name, boot, name, sizeof(name))) {
			if (t->n >= SP_KTREE_MAX_FILES)
				t->skipped++;
			else
				err = add(t, name, path);
		}
	}
	closedir(d);
	return err;
}

static int kfile_cmp(const void *a, const void *b)
{
	const struct kfile *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	return c ? c : strcmp(x->path, y->path);
}

int sp_ktree__build(const char *dir, struct sp_ktree **out)
{
	struct sp_ktree *t = calloc(1, sizeof(*t));
	char path[4096];
	int err;

	*out = NULL;
	if (!t)
		return -ENOMEM;
	snprintf(path, sizeof(path), "%s/lib/modules", dir);
	err = walk(t, path, SP_KTREE_DEPTH, false);
	snprintf(path, sizeof(path), "%s/boot", dir);
	if (!err)
		err = walk(t, path, 0, true);
	if (err) {
		sp_ktree__free(t);
		return err;
	}
	if (t->n > 1)
		qsort(t->f, t->n, sizeof(*t->f), kfile_cmp);
	*out = t;
	return 0;
}

void sp_ktree__free(struct sp_ktree *t)
{
	if (!t)
		return;
	for (uint32_t i = 0; i < t->n; i++) {
		free(t->f[i].name);
		free(t->f[i].path);
	}
	free(t->f);
	free(t);
}

const char *sp_ktree__next(const struct sp_ktree *t, const char *name, size_t *it)
{
	size_t lo = 0, hi = t->n;

	if (!*it) {
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (strcmp(t->f[mid].name, name) < 0)
				lo = mid + 1;
			else
				hi = mid;
		}
		*it = lo + 1;	/* it - 1 is the next entry to look at */
	}
	if (*it - 1 >= t->n || strcmp(t->f[*it - 1].name, name))
		return NULL;
	return t->f[(*it)++ - 1].path;
}

uint64_t sp_ktree__skipped(const struct sp_ktree *t)
{
	return t ? t->skipped : 0;
}
