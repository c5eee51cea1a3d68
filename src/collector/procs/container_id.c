/* SPDX-License-Identifier: MIT */
/*
 * container_id.c - see container_id.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collector/procs/container_id.h"
#include "collector/procs/pid_slots.h"

static bool is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static bool is_sep(char c)
{
	return c == '/' || c == '-' || c == '.' || c == ':' || c == '\n' || c == '\0';
}

int sp_container_id__parse(const char *t, char out[SP_CONTAINER_ID_LEN + 1])
{
	const char *best = NULL;
	size_t i = 0;

	if (!t)
		return -ENOENT;
	while (t[i]) {
		size_t j = i;

		while (is_hex(t[j]))
			j++;
		if (j - i == SP_CONTAINER_ID_LEN && (i == 0 || is_sep(t[i - 1])) && is_sep(t[j]))
			best = t + i;	/* keep the last (deepest) one */
		i = j > i ? j : i + 1;
	}
	if (!best)
		return -ENOENT;
	for (int k = 0; k < SP_CONTAINER_ID_LEN; k++)
		out[k] = best[k] >= 'A' && best[k] <= 'F' ? best[k] - 'A' + 'a' : best[k];
	out[SP_CONTAINER_ID_LEN] = '\0';
	return 0;
}

struct slot {
	uint32_t pid;		/* 0 = empty */
	char id[SP_CONTAINER_ID_LEN + 1];	/* "" = none */
};

struct sp_container_ids {
	struct slot *slots;
	uint32_t mask;
	char proc_root[64];
	struct sp_container_ids_stats stats;
	char scratch[SP_CONTAINER_ID_LEN + 1];
};

struct sp_container_ids *sp_container_ids__new(uint32_t slots, const char *proc_root)
{
	struct sp_container_ids *c = calloc(1, sizeof(*c));
	uint32_t n = sp_pid_slots__count(slots);

	if (!c)
		return NULL;
	c->slots = calloc(n, sizeof(*c->slots));
	if (!c->slots) {
		free(c);
		return NULL;
	}
	c->mask = n - 1;
	snprintf(c->proc_root, sizeof(c->proc_root), "%s", proc_root ? proc_root : "/proc");
	return c;
}

void sp_container_ids__free(struct sp_container_ids *c)
{
	if (!c)
		return;
	free(c->slots);
	free(c);
}

/* Reads /proc/PID/cgroup; 0 with id ("" when none) or -errno (gone). */
static int read_id(struct sp_container_ids *c, uint32_t pid, char *id)
{
	char path[96], buf[4096];
	ssize_t n;
	size_t got = 0;
	int fd;

	snprintf(path, sizeof(path), "%s/%u/cgroup", c->proc_root, pid);
	c->stats.reads++;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while (got + 1 < sizeof(buf) && (n = read(fd, buf + got, sizeof(buf) - 1 - got)) > 0)
		got += n;
	close(fd);
	buf[got] = '\0';
	if (sp_container_id__parse(buf, id))
		id[0] = '\0';
	else
		c->stats.found++;
	return 0;
}

static struct slot *slot_of(struct sp_container_ids *c, uint32_t pid)
{
	return &c->slots[sp_pid_slots__index(pid, c->mask)];
}

void sp_container_ids__note(struct sp_container_ids *c, uint32_t pid)
{
	struct slot *s;
	char id[SP_CONTAINER_ID_LEN + 1];

	if (!c || !pid || read_id(c, pid, id))
		return;
	s = slot_of(c, pid);
	if (s->pid && s->pid != pid)
		c->stats.evictions++;
	s->pid = pid;
	memcpy(s->id, id, sizeof(id));
}

const char *sp_container_ids__get(struct sp_container_ids *c, uint32_t pid)
{
	struct slot *s;

	if (!c || !pid)
		return NULL;
	s = slot_of(c, pid);
	if (s->pid == pid)
		return s->id[0] ? s->id : NULL;
	if (read_id(c, pid, c->scratch))
		return NULL;
	return c->scratch[0] ? c->scratch : NULL;
}

const struct sp_container_ids_stats *sp_container_ids__stats(const struct sp_container_ids *c)
{
	return &c->stats;
}
