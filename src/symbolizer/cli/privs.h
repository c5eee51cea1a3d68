/* SPDX-License-Identifier: MIT */
/*
 * privs.h - the symbolizer runs unprivileged: the drop from root, and a
 * debuginfod cache of its own after it (one call, so no command forgets
 * the cache).
 *
 * sp_privs__drop: when the effective uid is 0 and !c->allow_root, drops to
 *   c->user (default "nobody"): empties the capability bounding set (with
 *   CAP_SETPCAP; else it is left) and the ambient set, setgroups(0),
 *   setgid, setuid (so no capability is left), then checks that root
 *   cannot be regained, sets PR_SET_NO_NEW_PRIVS and HOME=/.
 *   Refuses a user that is root or does not exist.  0, or a negative errno
 *   after one line on stderr naming the cause and the fix.
 *   Then (dropped or not, on success only) the debuginfod cache: when
 *   DEBUGINFOD_URLS is set, DEBUGINFOD_CACHE_PATH is not, debuginfod is not
 *   disabled, and either privileges were dropped or libdebuginfod's
 *   default cache ($XDG_CACHE_HOME or $HOME/.cache) is not writable, makes
 *   a private cache directory under $TMPDIR (or /tmp), points
 *   DEBUGINFOD_CACHE_PATH at it and removes it at exit.  Best effort: on
 *   failure libdebuginfod's default applies.
 * It changes process-wide state, and the bounding set and no_new_privs
 * are per thread (the C library broadcasts only the set*id calls to every
 * thread): call it before any thread starts, so that every thread
 * inherits them (serve binds its sockets, calls it, then starts its
 * threads: test_security_symbolizer.py checks each thread).
 */
#ifndef SPANPROF_SYMBOLIZER_PRIVS_H
#define SPANPROF_SYMBOLIZER_PRIVS_H

#include "symbolizer/cli/cli.h"

int sp_privs__drop(const struct sp_common_opts *c);

#endif /* SPANPROF_SYMBOLIZER_PRIVS_H */
