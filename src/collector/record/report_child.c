/* SPDX-License-Identifier: MIT */
/*
 * report_child.c - see report_child.h.
 *
 * When the recording has a kernel symbol snapshot next to it
 * (PROFILE.kallsyms.gz, the subset sp_kallsyms__capture_want writes, mode 0644 so
 * the unprivileged child can read it), it is passed as --kallsyms so kernel
 * frames are named; without one they stay "[kernel] 0xADDR" and counted.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/kallsyms_format.h"
#include "collector/record/report_child.h"

#define NOBODY 65534

static unsigned long env_id(const char *name, unsigned long dflt)
{
	const char *v = getenv(name);
	char *end;
	unsigned long x;

	if (!v || !*v)
		return dflt;
	x = strtoul(v, &end, 10);
	return *end || x == 0 ? dflt : x;
}

int sp_report_child__run(const char *profile_path)
{
	char self[PATH_MAX], sym[PATH_MAX + 32], html[PATH_MAX + 8];
	char ksyms[PATH_MAX + 16];
	bool have_ksyms;
	uid_t uid = geteuid() == 0 ? env_id("SUDO_UID", NOBODY) : geteuid();
	gid_t gid = getegid() == 0 ? env_id("SUDO_GID", NOBODY) : getegid();
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	int status, fd;
	char *slash;
	pid_t pid;

	if (n <= 0)
		return -1;
	self[n] = 0;
	slash = strrchr(self, '/');
	if (!slash)
		return -1;
	*slash = 0;
	snprintf(sym, sizeof(sym), "%s/spanprof-symbolizer", self);
	if (access(sym, X_OK) != 0) {
		fprintf(stderr, "spanprof: no report: %s not found (build it with make)\n", sym);
		return -1;
	}
	snprintf(html, sizeof(html), "%s.html", profile_path);
	have_ksyms = (size_t)snprintf(ksyms, sizeof(ksyms), "%s" SP_KALLSYMS_SUFFIX, profile_path) <
			     sizeof(ksyms) &&
		     access(ksyms, R_OK) == 0;
	fd = open(html, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || (geteuid() == 0 && fchown(fd, uid, gid) != 0)) {
		fprintf(stderr, "spanprof: no flame graph: cannot prepare %s: %s\n", html,
			strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		if (geteuid() == 0 &&
		    (setgroups(0, NULL) || setgid(gid) || setuid(uid) || setuid(0) != -1)) {
			fprintf(stderr, "spanprof: cannot drop privileges for the report\n");
			_exit(126);
		}
		if (have_ksyms)
			execl(sym, sym, "report", profile_path, "--top", "15", "--flamegraph",
			      html, "--kallsyms", ksyms, (char *)NULL);
		else
			execl(sym, sym, "report", profile_path, "--top", "15", "--flamegraph",
			      html, "--no-kallsyms", (char *)NULL);
		fprintf(stderr, "spanprof: cannot run %s: %s\n", sym, strerror(errno));
		_exit(127);
	}
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		fprintf(stderr, "flame graph: %s\n", html);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}
