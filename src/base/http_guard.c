/* SPDX-License-Identifier: MIT */
/*
 * http_guard.c - see http_guard.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "base/http_guard.h"

struct slot {
	struct sp_http_guard *g;
	int fd;			/* the guard's own dup of the socket; -1: free */
	uint8_t phase;
	uint64_t deadline_ms;	/* CLOCK_MONOTONIC; 0: none */
	uint32_t next_free;
};

struct sp_http_guard {
	struct sp_http_guard_config cfg;
	pthread_mutex_t lock;
	pthread_cond_t cond;	/* the reaper's sleep, so __free wakes it */
	pthread_t th;
	bool quit;
	struct slot *slots;
	uint32_t free_head;	/* UINT32_MAX: none */
	uint32_t open;
	_Atomic uint64_t cut[SP_HTTP__PHASES];
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Cuts what is past its deadline and sleeps until the next one (lock
 * held); without a deadline, until __notify or set_phase sets one. */
static void *reaper(void *arg)
{
	struct sp_http_guard *g = arg;

	/* Named, so its wakeups can be read from outside (/proc/PID/task/TID;
	 * test_agent_slowloris.py). */
	pthread_setname_np(pthread_self(), "sp-http-reaper");
	pthread_mutex_lock(&g->lock);
	while (!g->quit) {
		uint64_t now = now_ms(), next = UINT64_MAX;
		struct timespec ts;

		for (uint32_t i = 0; i < g->cfg.max_conns; i++) {
			struct slot *s = &g->slots[i];

			if (s->fd < 0 || !s->deadline_ms)
				continue;
			if (now < s->deadline_ms) {
				if (s->deadline_ms < next)
					next = s->deadline_ms;
				continue;
			}
			shutdown(s->fd, SHUT_RDWR);	/* libmicrohttpd closes it */
			atomic_fetch_add(&g->cut[s->phase], 1);
			s->deadline_ms = 0;
		}
		if (next == UINT64_MAX) {
			pthread_cond_wait(&g->cond, &g->lock);
			continue;
		}
		ts.tv_sec = (time_t)(next / 1000);
		ts.tv_nsec = (long)(next % 1000) * 1000000L;
		pthread_cond_timedwait(&g->cond, &g->lock, &ts);
	}
	pthread_mutex_unlock(&g->lock);
	return NULL;
}

struct sp_http_guard *sp_http_guard__new(const struct sp_http_guard_config *cfg)
{
	struct sp_http_guard *g = calloc(1, sizeof(*g));
	pthread_condattr_t ca;

	if (!g)
		return NULL;
	g->cfg = *cfg;
	if (!g->cfg.header_ms)
		g->cfg.header_ms = 10000;
	if (!g->cfg.body_ms)
		g->cfg.body_ms = 30000;
	if (!g->cfg.idle_ms)
		g->cfg.idle_ms = 30000;
	if (!g->cfg.max_conns)
		g->cfg.max_conns = 64;
	g->slots = calloc(g->cfg.max_conns, sizeof(*g->slots));
	if (!g->slots) {
		free(g);
		errno = ENOMEM;
		return NULL;
	}
	for (uint32_t i = 0; i < g->cfg.max_conns; i++) {
		g->slots[i].g = g;
		g->slots[i].fd = -1;
		g->slots[i].next_free = i + 1 < g->cfg.max_conns ? i + 1 : UINT32_MAX;
	}
	pthread_mutex_init(&g->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&g->cond, &ca);
	pthread_condattr_destroy(&ca);
	if (pthread_create(&g->th, NULL, reaper, g)) {
		pthread_cond_destroy(&g->cond);
		pthread_mutex_destroy(&g->lock);
		free(g->slots);
		free(g);
		errno = EAGAIN;
		return NULL;
	}
	return g;
}

void sp_http_guard__free(struct sp_http_guard *g)
{
	if (!g)
		return;
	pthread_mutex_lock(&g->lock);
	g->quit = true;
	pthread_cond_signal(&g->cond);
	pthread_mutex_unlock(&g->lock);
	pthread_join(g->th, NULL);
	for (uint32_t i = 0; i < g->cfg.max_conns; i++)
		if (g->slots[i].fd >= 0)
			close(g->slots[i].fd);
	pthread_cond_destroy(&g->cond);
	pthread_mutex_destroy(&g->lock);
	free(g->slots);
	free(g);
}

static void set_phase(struct slot *s, enum sp_http_phase p, uint32_t ms)
{
	struct sp_http_guard *g = s->g;

	pthread_mutex_lock(&g->lock);
	if (s->fd >= 0) {
		s->phase = (uint8_t)p;
		s->deadline_ms = ms ? now_ms() + ms : 0;
		if (ms)
			pthread_cond_signal(&g->cond);	/* may be the earliest */
	}
	pthread_mutex_unlock(&g->lock);
}

void sp_http_guard__notify(void *cls, struct MHD_Connection *c, void **socket_context,
			   enum MHD_ConnectionNotificationCode code)
{
	struct sp_http_guard *g = cls;
	const union MHD_ConnectionInfo *ci;
	struct slot *s = NULL;
	int fd;

	if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
		s = *socket_context;
		if (!s)
			return;
		pthread_mutex_lock(&g->lock);
		close(s->fd);
		s->fd = -1;
		s->deadline_ms = 0;
		s->next_free = g->free_head;
		g->free_head = (uint32_t)(s - g->slots);
		g->open--;
		pthread_mutex_unlock(&g->lock);
		*socket_context = NULL;
		return;
	}
	*socket_context = NULL;
	ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	if (!ci)
		return;
	fd = fcntl(ci->connect_fd, F_DUPFD_CLOEXEC, 0);
	if (fd < 0)
		return;
	pthread_mutex_lock(&g->lock);
	if (g->free_head != UINT32_MAX) {
		s = &g->slots[g->free_head];
		g->free_head = s->next_free;
		s->fd = fd;
		s->phase = SP_HTTP_HEADERS;
		s->deadline_ms = now_ms() + g->cfg.header_ms;
		g->open++;
		fd = -1;
		pthread_cond_signal(&g->cond);	/* the reaper may sleep untimed */
	}
	pthread_mutex_unlock(&g->lock);
	if (fd >= 0)
		close(fd);
	*socket_context = s;
}

static struct slot *slot_of(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return ci ? ci->socket_context : NULL;
}

void sp_http_guard__body(struct MHD_Connection *c)
{
	struct slot *s = slot_of(c);

	if (s)
		set_phase(s, SP_HTTP_BODY, s->g->cfg.body_ms);
}

void sp_http_guard__working(struct MHD_Connection *c)
{
	struct slot *s = slot_of(c);

	if (s)
		set_phase(s, SP_HTTP_WORKING, 0);
}

void sp_http_guard__answered(struct MHD_Connection *c)
{
	struct slot *s = slot_of(c);

	/* the answer must be taken and the next request's headers sent
	 * within idle + header */
	if (s)
		set_phase(s, SP_HTTP_IDLE, s->g->cfg.idle_ms + s->g->cfg.header_ms);
}

uint64_t sp_http_guard__cut(const struct sp_http_guard *g, enum sp_http_phase p)
{
	return g && p < SP_HTTP__PHASES ? atomic_load(&((struct sp_http_guard *)g)->cut[p]) : 0;
}

uint32_t sp_http_guard__open(const struct sp_http_guard *g)
{
	uint32_t n;

	if (!g)
		return 0;
	pthread_mutex_lock(&((struct sp_http_guard *)g)->lock);
	n = g->open;
	pthread_mutex_unlock(&((struct sp_http_guard *)g)->lock);
	return n;
}

const char *sp_http_guard__phase_name(enum sp_http_phase p)
{
	static const char *const names[SP_HTTP__PHASES] = { "headers", "body", "working",
							    "idle" };

	return p < SP_HTTP__PHASES ? names[p] : "?";
}
