// SPDX-License-Identifier: MIT
/*
 * privs.c - dropping root and a private debuginfod cache (contract:
 * privs.h).
 */
#include <errno.h>
#include <ftw.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cap_last.h"
#include "symbolizer/cli/privs.h"

static char *private_cache;
static bool dropped;		/* privileges were dropped by us */

static int rm_entry(const char *path, const struct stat *st, int flag,
		    struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

static void cleanup_cache(void)
{
	if (private_cache) {
		nftw(private_cache, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
		free(private_cache);
		private_cache = NULL;
	}
}

static int drop_user(const struct sp_common_opts *c)
{
	const char *name = c->user ? c->user : "nobody";
	struct passwd *pw;

	if (geteuid() != 0 || c->allow_root)
		return 0;
	pw = getpwnam(name);
	if (!pw) {
		fprintf(stderr, SP_CLI_PROG ": running as root and user "
			"'%s' does not exist (use --user or --allow-root)\n",
			name);
		return -ENOENT;
	}
	if (pw->pw_uid == 0) {
		fprintf(stderr, SP_CLI_PROG ": --user %s is root; use "
			"--allow-root to run as root\n", name);
		return -EINVAL;
	}
	/* The bounding set (needs CAP_SETPCAP, gone after setuid) is per
	 * thread, as no_new_privs is: serve calls this before it starts any
	 * thread (serve.c), so every thread inherits both; setgroups, setgid
	 * and setuid the C library applies to every thread anyway. */
	for (int c = 0, last = sp_cap_last(); c <= last; c++)
		if (prctl(PR_CAPBSET_READ, c, 0, 0, 0) == 1 &&
		    prctl(PR_CAPBSET_DROP, c, 0, 0, 0) && errno != EPERM) {
			fprintf(stderr, SP_CLI_PROG ": dropping the capability bounding set: "
				"%s\n", strerror(errno));
			return -EPERM;
		}
	prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	if (setgroups(0, NULL) || setgid(pw->pw_gid) || setuid(pw->pw_uid)) {
		fprintf(stderr, SP_CLI_PROG ": dropping to %s: %s\n",
			name, strerror(errno));
		return -EPERM;
	}
	if (setuid(0) == 0 || geteuid() == 0) {
		fprintf(stderr, SP_CLI_PROG ": could still regain root\n");
		return -EPERM;
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) {
		fprintf(stderr, SP_CLI_PROG ": setting no_new_privs: %s\n", strerror(errno));
		return -EPERM;
	}
	if (setenv("HOME", "/", 1))
		return -errno;
	dropped = true;
	return 0;
}

/* libdebuginfod's default cache: $XDG_CACHE_HOME/debuginfod_client or
 * $HOME/.cache/debuginfod_client; usable when it or its parent is
 * writable by us. */
static bool default_cache_usable(void)
{
	const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	char p[4096];

	if (xdg && *xdg)
		snprintf(p, sizeof(p), "%s", xdg);
	else if (home && *home)
		snprintf(p, sizeof(p), "%s/.cache", home);
	else
		return false;
	if (access(p, W_OK) == 0)
		return true;
	if (errno != ENOENT)
		return false;
	/* not there yet: the parent must be writable to create it */
	*strrchr(p, '/') = '\0';
	return *p && access(p, W_OK) == 0;
}

/* With privileges dropped (by us, or by a parent that left HOME pointing at
 * root's home), the default debuginfod cache is not ours: use a private one
 * unless the caller chose one. */
static void debuginfod_cache(const struct sp_common_opts *c)
{
	const char *tmp = getenv("TMPDIR");
	char *dir;

	if (c->no_debuginfod || getenv("DEBUGINFOD_CACHE_PATH") ||
	    !getenv("DEBUGINFOD_URLS") || !*getenv("DEBUGINFOD_URLS"))
		return;
	if (!dropped && default_cache_usable())
		return;
	if (asprintf(&dir, "%s/spanprof-symbolizer-XXXXXX",
		     tmp && *tmp ? tmp : "/tmp") < 0)
		return;
	if (!mkdtemp(dir)) {
		free(dir);
		return;
	}
	private_cache = dir;
	atexit(cleanup_cache);
	setenv("DEBUGINFOD_CACHE_PATH", dir, 1);
}

int sp_privs__drop(const struct sp_common_opts *c)
{
	int err = drop_user(c);

	if (!err)
		debuginfod_cache(c);
	return err;
}
