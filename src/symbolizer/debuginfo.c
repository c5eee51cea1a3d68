// SPDX-License-Identifier: MIT
/*
 * debuginfo.c - build-id directories, the mapped file, then debuginfod.
 *
 * Contract: see debuginfo.h.  Paths are only ever formed from a build id
 * that passed sp_buildid__validate() (lower-case hex), and every candidate
 * file is opened and its GNU build id compared before it is returned.
 * The negative cache is a fixed array used as a FIFO ring; lookups scan it
 * linearly, which is cheap because the resolver asks once per build id.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include <elfutils/debuginfod.h>
#include <gelf.h>
#include <libelf.h>

#include "base/buildid.h"
#include "base/pin.h"
#include "debuginfo.h"
#include "ktree.h"

#define NEG_DEFAULT 4096

struct neg_entry {
	char id[SP_BUILDID_MAX_HEX + 1];
	bool exec;		/* an executable lookup, not debuginfo */
	time_t when;
};

struct sp_debuginfo {
	pthread_mutex_t lock;
	char **dirs;
	size_t n_dirs;
	struct sp_ktree **ktrees;	/* per dir, built on first need */
	bool no_debuginfod;
	/* libdebuginfod clients are not safe for concurrent use: a query
	 * takes an idle one (or makes one) and gives it back, so there are
	 * as many as there were concurrent queries */
	debuginfod_client **idle;
	uint32_t n_idle, cap_idle;
	bool client_failed;
	struct neg_entry *neg;
	uint32_t neg_cap;
	uint32_t neg_len;
	uint32_t neg_next;		/* FIFO ring position */
	uint32_t neg_ttl_s;
	struct sp_debuginfo_stats st;
};

static void elf_init_once(void)
{
	elf_version(EV_CURRENT);
}

static pthread_once_t elf_once = PTHREAD_ONCE_INIT;

static bool file_has_buildid(const char *path, const char *want)
{
	char got[SP_BUILDID_MAX_HEX + 1];

	if (sp_buildid__read_file(path, got, sizeof(got)))
		return false;
	return strcmp(got, want) == 0;
}

/* True when the ELF file at path carries DWARF (.debug_info with bits). */
static bool file_has_dwarf(const char *path)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	bool found = false;
	Elf *elf;
	int fd;

	fd = sp_pin__open(path, NULL);
	if (fd < 0)
		return false;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_getshdrstrndx(elf, &shstrndx))
		goto out;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh))
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (name && sh.sh_type != SHT_NOBITS &&
		    (!strcmp(name, ".debug_info") ||
		     !strcmp(name, ".zdebug_info"))) {
			found = true;
			break;
		}
	}
out:
	elf_end(elf);
	close(fd);
	return found;
}

int sp_debuginfo__new(const struct sp_debuginfo_opts *opts,
		      struct sp_debuginfo **out)
{
	struct sp_debuginfo *d;
	size_t n_dirs = opts ? opts->n_dirs : 0;

	pthread_once(&elf_once, elf_init_once);
	*out = NULL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	pthread_mutex_init(&d->lock, NULL);
	d->neg_cap = opts && opts->neg_cache_entries ? opts->neg_cache_entries
						     : NEG_DEFAULT;
	d->neg_ttl_s = opts ? opts->neg_ttl_s : 0;
	d->no_debuginfod = opts ? opts->no_debuginfod : false;
	d->neg = calloc(d->neg_cap, sizeof(*d->neg));
	if (!d->neg)
		goto fail;
	if (n_dirs) {
		d->dirs = calloc(n_dirs, sizeof(*d->dirs));
		d->ktrees = calloc(n_dirs, sizeof(*d->ktrees));
		if (!d->dirs || !d->ktrees)
			goto fail;
		for (size_t i = 0; i < n_dirs; i++) {
			d->dirs[i] = strdup(opts->dirs[i]);
			if (!d->dirs[i])
				goto fail;
			d->n_dirs++;
		}
	}
	*out = d;
	return 0;
fail:
	sp_debuginfo__free(d);
	return -ENOMEM;
}

void sp_debuginfo__free(struct sp_debuginfo *d)
{
	if (!d)
		return;
	for (uint32_t i = 0; i < d->n_idle; i++)
		debuginfod_end(d->idle[i]);
	free(d->idle);
	for (size_t i = 0; i < d->n_dirs; i++) {
		free(d->dirs[i]);
		sp_ktree__free(d->ktrees[i]);
	}
	free(d->dirs);
	free(d->ktrees);
	free(d->neg);
	pthread_mutex_destroy(&d->lock);
	free(d);
}

/* DIR/.build-id/ab/cdef...[.debug]; DIR may itself end in ".build-id".
 * exec_only: only the suffix-less name (the executable itself).  A file
 * there of another build id is skipped, counted (under d->lock) and
 * noted in *wrong. */
static int try_dir(struct sp_debuginfo *d, const char *dir, const char *id, bool exec_only,
		   char **path_out, bool *wrong)
{
	static const char *const suffixes[] = { ".debug", "" };
	size_t dl = strlen(dir);
	const char *sub = "/.build-id";
	char *p;

	while (dl > 1 && dir[dl - 1] == '/')
		dl--;
	if (dl >= 9 && !memcmp(dir + dl - 9, ".build-id", 9))
		sub = "";
	for (size_t i = exec_only ? 1 : 0; i < 2; i++) {
		if (asprintf(&p, "%.*s%s/%.2s/%s%s", (int)dl, dir, sub, id,
			     id + 2, suffixes[i]) < 0)
			return -ENOMEM;
		if (access(p, R_OK) == 0) {
			if (file_has_buildid(p, id)) {
				*path_out = p;
				return 0;
			}
			d->st.rejected_build_id++;
			*wrong = true;
		}
		free(p);
	}
	return -ENOENT;
}

/* Dir i's kernel tree (ktree.h): the files indexed under name whose own
 * build id is id; the others are counted and noted in *wrong.  Under
 * d->lock (the index is built there, once). */
static int try_ktree(struct sp_debuginfo *d, size_t i, const char *id, const char *name,
		     char **path_out, bool *wrong)
{
	const char *p;
	size_t it = 0;
	int err;

	if (!d->ktrees[i]) {
		err = sp_ktree__build(d->dirs[i], &d->ktrees[i]);
		if (err)
			return err;
		d->st.ktree_skipped += sp_ktree__skipped(d->ktrees[i]);
	}
	while ((p = sp_ktree__next(d->ktrees[i], name, &it))) {
		if (file_has_buildid(p, id)) {
			*path_out = strdup(p);
			return *path_out ? 0 : -ENOMEM;
		}
		d->st.rejected_build_id++;
		*wrong = true;
	}
	return -ENOENT;
}

static bool neg_lookup(struct sp_debuginfo *d, const char *id, bool exec)
{
	time_t now = d->neg_ttl_s ? time(NULL) : 0;

	for (uint32_t i = 0; i < d->neg_len; i++) {
		struct neg_entry *e = &d->neg[i];

		if (e->exec != exec || strcmp(e->id, id))
			continue;
		if (d->neg_ttl_s && now - e->when >= (time_t)d->neg_ttl_s) {
			e->id[0] = '\0';	/* expired: forget it */
			return false;
		}
		return true;
	}
	return false;
}

static void neg_insert(struct sp_debuginfo *d, const char *id, bool exec)
{
	struct neg_entry *e = &d->neg[d->neg_next];

	snprintf(e->id, sizeof(e->id), "%s", id);
	e->exec = exec;
	e->when = d->neg_ttl_s ? time(NULL) : 0;
	d->neg_next = (d->neg_next + 1) % d->neg_cap;
	if (d->neg_len < d->neg_cap)
		d->neg_len++;
}

static int grow_idle(struct sp_debuginfo *d)
{
	debuginfod_client **p;
	uint32_t nc;

	if (d->n_idle < d->cap_idle)
		return 0;
	nc = d->cap_idle ? d->cap_idle * 2 : 4;
	p = realloc(d->idle, nc * sizeof(*p));
	if (!p)
		return -ENOMEM;
	d->idle = p;
	d->cap_idle = nc;
	return 0;
}

/* Under d->lock.  NULL when no client can be made. */
static debuginfod_client *take_client(struct sp_debuginfo *d)
{
	debuginfod_client *c;

	if (d->n_idle)
		return d->idle[--d->n_idle];
	if (d->client_failed)
		return NULL;
	c = debuginfod_begin();
	if (!c)
		d->client_failed = true;
	return c;
}

/* Under d->lock. */
static void give_client(struct sp_debuginfo *d, debuginfod_client *c)
{
	if (grow_idle(d)) {
		debuginfod_end(c);	/* no room to keep it: make one next time */
		return;
	}
	d->idle[d->n_idle++] = c;
}

/* Called and returns with d->lock held; the query itself runs without it,
 * so a slow download delays only the request that needs that file.  A
 * delivered file of another build id is refused and noted in *wrong. */
static int try_debuginfod(struct sp_debuginfo *d, const char *id, bool exec,
			  char **path_out, bool *wrong)
{
	const char *urls = getenv("DEBUGINFOD_URLS");
	debuginfod_client *client;
	char *path = NULL;
	int fd;

	if (d->no_debuginfod || !urls || !*urls)
		return -ENOENT;
	if (neg_lookup(d, id, exec)) {
		d->st.negative_hits++;
		return -ENOENT;
	}
	client = take_client(d);
	if (!client)
		return -ENOENT;
	d->st.debuginfod_queries++;
	pthread_mutex_unlock(&d->lock);
	/* build_id_len 0: the id is given as a hex string */
	if (exec)
		fd = debuginfod_find_executable(client, (const unsigned char *)id, 0,
						&path);
	else
		fd = debuginfod_find_debuginfo(client, (const unsigned char *)id, 0,
					       &path);
	pthread_mutex_lock(&d->lock);
	give_client(d, client);
	if (fd < 0) {
		neg_insert(d, id, exec);
		return -ENOENT;
	}
	close(fd);
	if (path && !file_has_buildid(path, id)) {
		d->st.rejected_build_id++;
		*wrong = true;
		free(path);
		path = NULL;
	}
	if (!path) {
		neg_insert(d, id, exec);
		return -ENOENT;
	}
	*path_out = path;
	return 0;
}

int sp_debuginfo__find(struct sp_debuginfo *d, const char *build_id,
		       const char *hint_path, char **path_out,
		       enum sp_debuginfo_source *src)
{
	enum sp_debuginfo_source where = SP_DI_NONE;
	bool hint_ok = false, wrong = false, kernel;
	char *path = NULL, kname[SP_KTREE_NAME_MAX];
	int err;

	*path_out = NULL;
	if (src)
		*src = SP_DI_NONE;
	pthread_mutex_lock(&d->lock);
	d->st.lookups++;
	if (!sp_buildid__validate_go(build_id)) {
		/* A Go build id: no build-id directory or debuginfod server
		 * indexes one (they are GNU-keyed, and it is not a path), so the
		 * mapped file is the one, when its own Go id matches. */
		if (hint_path && *hint_path && file_has_buildid(hint_path, build_id))
			goto use_hint;
		d->st.not_found++;
		err = -ENOENT;
		goto out;
	}
	if (sp_buildid__validate(build_id)) {
		d->st.invalid_build_id++;
		d->st.not_found++;
		err = -EINVAL;
		goto out;
	}
	/* a kernel mapping's name is no path: its files are looked up by
	 * name in the directories' kernel trees, after their .build-id */
	kernel = sp_ktree__hint_name(hint_path, kname, sizeof(kname));
	for (size_t i = 0; i < 2 * d->n_dirs; i++) {
		if (i < d->n_dirs)
			err = try_dir(d, d->dirs[i], build_id, false, &path, &wrong);
		else
			err = kernel ? try_ktree(d, i - d->n_dirs, build_id, kname, &path, &wrong)
				     : -ENOENT;
		if (err == -ENOMEM)
			goto out;
		if (!err) {
			where = SP_DI_DIR;
			d->st.found_dir++;
			goto found;
		}
	}
	/* The mapped file wins when it carries DWARF; a stripped one is kept
	 * as the fallback (its symbol tables) while debuginfod is asked. */
	if (!kernel && hint_path && *hint_path && file_has_buildid(hint_path, build_id)) {
		hint_ok = true;
		if (file_has_dwarf(hint_path))
			goto use_hint;
	}
	if (!try_debuginfod(d, build_id, false, &path, &wrong)) {
		where = SP_DI_DEBUGINFOD;
		d->st.found_debuginfod++;
		goto found;
	}
	if (hint_ok)
		goto use_hint;
	d->st.not_found++;
	if (src && wrong)
		*src = SP_DI_MISMATCH;
	err = -ENOENT;
	goto out;
use_hint:
	path = strdup(hint_path);
	if (!path) {
		err = -ENOMEM;
		goto out;
	}
	where = SP_DI_PATH;
	d->st.found_path++;
found:
	*path_out = path;
	if (src)
		*src = where;
	err = 0;
out:
	pthread_mutex_unlock(&d->lock);
	return err;
}

int sp_debuginfo__find_exec(struct sp_debuginfo *d, const char *build_id,
			    const char *hint_path, char **path_out)
{
	char *path = NULL, kname[SP_KTREE_NAME_MAX];
	bool wrong = false;	/* counted; the caller is not told */
	int err = -ENOENT;

	*path_out = NULL;
	if (sp_buildid__validate(build_id) && sp_buildid__validate_go(build_id))
		return -EINVAL;
	pthread_mutex_lock(&d->lock);
	for (size_t i = 0; i < d->n_dirs && err && sp_buildid__validate_go(build_id); i++) {
		err = try_dir(d, d->dirs[i], build_id, true, &path, &wrong);
		if (err == -ENOMEM)
			goto out;
	}
	if (err && hint_path && *hint_path && !sp_ktree__hint_name(hint_path, kname, sizeof(kname)) &&
	    file_has_buildid(hint_path, build_id)) {
		path = strdup(hint_path);
		err = path ? 0 : -ENOMEM;
		if (err)
			goto out;
	}
	if (err && sp_buildid__validate_go(build_id))
		err = try_debuginfod(d, build_id, true, &path, &wrong);
out:
	if (err)
		d->st.exec_not_found++;
	else
		d->st.exec_found++;
	*path_out = path;
	pthread_mutex_unlock(&d->lock);
	return err;
}

void sp_debuginfo__stats(struct sp_debuginfo *d, struct sp_debuginfo_stats *st)
{
	pthread_mutex_lock(&d->lock);
	*st = d->st;
	pthread_mutex_unlock(&d->lock);
}

const char *sp_debuginfo__source_name(enum sp_debuginfo_source src)
{
	switch (src) {
	case SP_DI_DIR:
		return "dir";
	case SP_DI_PATH:
		return "path";
	case SP_DI_DEBUGINFOD:
		return "debuginfod";
	case SP_DI_MISMATCH:
		return "mismatch";
	default:
		return "none";
	}
}
