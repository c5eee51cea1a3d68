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
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/kallsyms_format.h"
#include "collector/record/report_child.h"

#define NOBODY 65534
#define REAP_GRACE_MS 2000

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

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Waits up to ms for pid to end: its wait status, or -ETIMEDOUT (not
 * reaped).  A pidfd when the kernel has one (poll sleeps until the exit),
 * else WNOHANG every 20 ms.  Signals to record (EINTR) do not end the
 * wait early: the limit does. */
static int wait_child(pid_t pid, int pidfd, uint64_t ms)
{
	uint64_t until = mono_ms() + ms;
	int status;

	for (;;) {
		pid_t r = waitpid(pid, &status, WNOHANG);
		uint64_t now = mono_ms();

		if (r == pid)
			return status;
		if (r < 0 && errno != EINTR)
			return -ECHILD;
		if (now >= until)
			return -ETIMEDOUT;
		if (pidfd >= 0) {
			struct pollfd p = { .fd = pidfd, .events = POLLIN };
			uint64_t left = until - now;

			poll(&p, 1, left > INT32_MAX ? INT32_MAX : (int)left);
		} else {
			usleep(20000);
		}
	}
}

void sp_report_child__explain(FILE *f, int rc, const char *profile_path,
			      const struct sp_report_limits *lim)
{
	uint32_t secs = lim && lim->timeout_s ? lim->timeout_s : SP_REPORT_TIMEOUT_S;
	uint32_t mib = lim && lim->mem_mib ? lim->mem_mib : SP_REPORT_MEM_MIB;

	if (rc == -ETIMEDOUT)
		fprintf(f, "spanprof record: the report did not finish within %u s and was "
			"stopped (spanprof-symbolizer too slow for this profile, or stuck "
			"reading a binary or debug file on a file system that does not answer); "
			"the profile is kept: %s (symbolize it with `spanprof-symbolizer report "
			"%s`, or raise --report-timeout)\n", secs, profile_path, profile_path);
	else if (rc > 128)
		fprintf(f, "spanprof record: the report was killed by signal %d (%s); the "
			"profile is kept: %s (symbolize it with `spanprof-symbolizer report %s`; "
			"raise --report-mem, now %u MiB, if it ran out of memory)\n", rc - 128,
			strsignal(rc - 128), profile_path, profile_path, mib);
	else if (rc > 0)
		fprintf(f, "spanprof record: the report failed (spanprof-symbolizer exit %d, "
			"its error above); the profile is kept: %s (raise --report-mem, now %u "
			"MiB, if it ran out of memory)\n", rc, profile_path, mib);
}

int sp_report_child__run(const char *profile_path, const struct sp_report_limits *lim)
{
	uint32_t secs = lim && lim->timeout_s ? lim->timeout_s : SP_REPORT_TIMEOUT_S;
	uint32_t mib = lim && lim->mem_mib ? lim->mem_mib : SP_REPORT_MEM_MIB;
	struct rlimit data = { .rlim_cur = (rlim_t)mib << 20, .rlim_max = (rlim_t)mib << 20 };
	char self[PATH_MAX], sym[PATH_MAX + 32], html[PATH_MAX + 8];
	char ksyms[PATH_MAX + 16];
	bool have_ksyms;
	uid_t uid = geteuid() == 0 ? env_id("SUDO_UID", NOBODY) : geteuid();
	gid_t gid = getegid() == 0 ? env_id("SUDO_GID", NOBODY) : getegid();
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	int status, fd, pidfd;
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
		if (setrlimit(RLIMIT_DATA, &data)) {
			fprintf(stderr, "spanprof: cannot limit the report's memory: %s\n",
				strerror(errno));
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
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	status = wait_child(pid, pidfd, (uint64_t)secs * 1000);
	if (status == -ETIMEDOUT) {
		kill(pid, SIGKILL);
		if (wait_child(pid, pidfd, REAP_GRACE_MS) == -ETIMEDOUT)
			fprintf(stderr, "spanprof record: the stopped report (pid %d) waits on a "
				"file system that does not answer; it ends when that answers\n",
				(int)pid);
	}
	if (pidfd >= 0)
		close(pidfd);
	if (status == -ETIMEDOUT)
		return -ETIMEDOUT;
	if (status < 0)
		return -1;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		fprintf(stderr, "flame graph: %s\n", html);
	return WIFEXITED(status) ? WEXITSTATUS(status) :
	       WIFSIGNALED(status) ? 128 + WTERMSIG(status) : -1;
}
