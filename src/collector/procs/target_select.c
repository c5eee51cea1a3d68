/* SPDX-License-Identifier: MIT */
/*
 * target_select.c - see target_select.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collector/procs/target_select.h"

#define SLOTS 4096

struct slot {
	uint32_t pid;		/* 0 = empty */
	bool wants;
	uint8_t retries;	/* deferred: decided again this many times */
	uint64_t retry_ms;	/* deferred: 0 = decided for good */
};

enum verdict { NO, YES, NOT_YET };

struct sp_target_select {
	char cgroups[SP_SELECT_MAX][SP_SELECT_LEN];
	uint32_t n_cgroups;
	char exes[SP_SELECT_MAX][SP_SELECT_LEN];
	uint32_t n_exes;
	char services[SP_SELECT_MAX][SP_SELECT_LEN];
	uint32_t n_services;
	sp_target_service_fn service;
	void *service_ctx;
	char proc_root[64];
	struct slot slots[SLOTS];
	struct sp_target_select_stats stats;
};

struct sp_target_select *sp_target_select__new(const char *proc_root)
{
	struct sp_target_select *t = calloc(1, sizeof(*t));

	if (t)
		snprintf(t->proc_root, sizeof(t->proc_root), "%s", proc_root ? proc_root : "/proc");
	return t;
}

void sp_target_select__free(struct sp_target_select *t)
{
	free(t);
}

void sp_target_select__set_service(struct sp_target_select *t, sp_target_service_fn fn,
				  void *ctx)
{
	t->service = fn;
	t->service_ctx = ctx;
}

static int add(char (*list)[SP_SELECT_LEN], uint32_t *n, const char *s)
{
	if (*n == SP_SELECT_MAX || strlen(s) >= SP_SELECT_LEN)
		return -E2BIG;
	snprintf(list[(*n)++], SP_SELECT_LEN, "%s", s);
	return 0;
}

int sp_target_select__add_cgroup(struct sp_target_select *t, const char *prefix)
{
	if (prefix[0] != '/')
		return -EINVAL;
	return add(t->cgroups, &t->n_cgroups, prefix);
}

int sp_target_select__add_exe(struct sp_target_select *t, const char *exe)
{
	if (!exe[0])
		return -EINVAL;
	return add(t->exes, &t->n_exes, exe);
}

int sp_target_select__add_service(struct sp_target_select *t, const char *name)
{
	if (!name[0])
		return -EINVAL;
	return add(t->services, &t->n_services, name);
}

bool sp_target_select__active(const struct sp_target_select *t)
{
	return t && (t->n_cgroups || t->n_exes || t->n_services);
}

bool sp_target_select__cgroup_match(const char *text, const char *prefix)
{
	size_t plen = strlen(prefix);

	/* "/a/b/" and "/a/b" both select "/a/b/c" but not "/a/bc". */
	while (plen > 1 && prefix[plen - 1] == '/')
		plen--;
	for (const char *line = text; line && *line;) {
		const char *nl = strchr(line, '\n'), *end = nl ? nl : line + strlen(line);
		const char *c1 = memchr(line, ':', end - line);
		const char *c2 = c1 ? memchr(c1 + 1, ':', end - c1 - 1) : NULL;

		if (c2) {
			const char *path = c2 + 1;
			size_t len = end - path;

			if (len >= plen && !memcmp(path, prefix, plen) &&
			    (len == plen || path[plen] == '/' || plen == 1))
				return true;
		}
		line = nl ? nl + 1 : NULL;
	}
	return false;
}

static int read_text(const char *path, char *buf, size_t len)
{
	size_t got = 0;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	while (got + 1 < len && (n = read(fd, buf + got, len - 1 - got)) > 0)
		got += n;
	close(fd);
	buf[got] = 0;
	return 0;
}

/* The verdict, read from /proc now.  A process that cannot be read is
 * not selected (counted); one that matches nothing and has no service
 * name while names are selected may get one later (NOT_YET). */
static enum verdict decide(struct sp_target_select *t, uint32_t pid, bool again)
{
	const char *svc = NULL;
	char path[96], buf[8192], exe[PATH_MAX];
	ssize_t n;

	snprintf(path, sizeof(path), "%s/%u/exe", t->proc_root, pid);
	n = t->n_exes ? readlink(path, exe, sizeof(exe) - 1) : -1;
	if (n >= 0) {
		const char *base;

		exe[n] = 0;
		base = strrchr(exe, '/');
		base = base ? base + 1 : exe;
		for (uint32_t i = 0; i < t->n_exes; i++)
			if (!strcmp(exe, t->exes[i]) || !strcmp(base, t->exes[i]))
				return YES;
	}
	if (t->n_cgroups) {
		snprintf(path, sizeof(path), "%s/%u/cgroup", t->proc_root, pid);
		if (read_text(path, buf, sizeof(buf))) {
			t->stats.unreadable++;
			return NO;
		}
		for (uint32_t i = 0; i < t->n_cgroups; i++)
			if (sp_target_select__cgroup_match(buf, t->cgroups[i]))
				return YES;
	}
	if (!t->n_services)
		return NO;
	if (t->service)
		svc = t->service(pid, again, t->service_ctx);
	for (uint32_t i = 0; svc && i < t->n_services; i++)
		if (!strcmp(svc, t->services[i]))
			return YES;
	return svc ? NO : NOT_YET;
}

bool sp_target_select__wants(struct sp_target_select *t, uint32_t pid, uint64_t now_ms,
			     bool *fresh)
{
	struct slot *s = &t->slots[(pid * 2654435761u) % SLOTS];
	enum verdict v;
	bool again;

	if (fresh)
		*fresh = false;
	if (!sp_target_select__active(t) || !pid)
		return true;
	if (s->pid == pid && (!s->retry_ms || now_ms < s->retry_ms))
		return s->wants;
	again = s->pid == pid;	/* a deferred process, due */
	if (!again)
		*s = (struct slot){ .pid = pid };
	v = decide(t, pid, again);
	s->retries += again;
	if (v == NOT_YET && s->retries < SP_SELECT_RETRIES) {
		t->stats.deferred += !again;
		s->retry_ms = now_ms + SP_SELECT_RETRY_MS;
		s->wants = false;
		return false;
	}
	s->retry_ms = 0;
	s->wants = v == YES;
	s->wants ? t->stats.included++ : t->stats.excluded++;
	if (fresh)
		*fresh = true;
	return s->wants;
}

void sp_target_select__forget(struct sp_target_select *t, uint32_t pid)
{
	struct slot *s;

	if (!t)
		return;
	s = &t->slots[(pid * 2654435761u) % SLOTS];
	if (s->pid == pid)
		s->pid = 0;
}

const struct sp_target_select_stats *sp_target_select__stats(const struct sp_target_select *t)
{
	return &t->stats;
}
