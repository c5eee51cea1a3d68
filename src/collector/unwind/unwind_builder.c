// SPDX-License-Identifier: MIT
/*
 * unwind_builder.c - see unwind_builder.h.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "collector/unwind/unwind_builder.h"

#define DEF_QUEUE 1024
#define DEF_SHARE 0.25
#define TICK_NS 1000000000ull
/* With the queue empty, a tick (which scans every file slot for
 * rebuilds) runs at most this often: not after every batch. */
#define IDLE_TICK_NS 100000000ull
#define BURST_NS 1e9		/* CPU the builder may spend at once */

struct sp_unw_builder {
	pthread_t th;
	bool started;
	pthread_mutex_t lock;
	pthread_cond_t cond;		/* work, stop, pause change */
	pthread_cond_t idle_cond;
	struct sp_unw_job *q;
	uint32_t cap, head, n;
	bool stop, paused, running;
	/* Hand-offs cost a futex wake only when someone sleeps: the builder
	 * waiting for work (idle), callers of __wait_idle. */
	bool idle;
	uint32_t idle_waiters;
	bool exited;			/* builder_main has returned (or will now) */
	bool abandoned;			/* __free gave up waiting: the thread frees b */
	double share;
	double tokens_ns;		/* CPU it may spend now (token bucket) */
	uint64_t refill_ns;		/* when tokens were last added */
	sp_unw_build_fn fn;
	sp_unw_tick_fn tick_fn;
	void *ctx;
	struct sp_unw_builder_stats st;
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static uint64_t thread_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static void deadline(struct timespec *ts, uint64_t at_ns)
{
	ts->tv_sec = at_ns / 1000000000ull;
	ts->tv_nsec = at_ns % 1000000000ull;
}

/* Sleeps ns unless stopped (lock held). */
static void nap(struct sp_unw_builder *b, uint64_t ns)
{
	uint64_t until = mono_ns() + ns;
	struct timespec ts;

	deadline(&ts, until);
	while (!b->stop && mono_ns() < until)
		if (pthread_cond_timedwait(&b->cond, &b->lock, &ts) == ETIMEDOUT)
			break;
}

static void builder_destroy(struct sp_unw_builder *b)
{
	pthread_mutex_destroy(&b->lock);
	pthread_cond_destroy(&b->cond);
	pthread_cond_destroy(&b->idle_cond);
	free(b->q);
	free(b);
}

static void *builder_main(void *arg)
{
	struct sp_unw_builder *b = arg;
	uint64_t next_tick = mono_ns() + TICK_NS, last_tick = 0;

	/* Named, so its CPU time can be read from outside
	 * (/proc/PID/task/TID/stat; test_unwind_cpu_budget.py). */
	pthread_setname_np(pthread_self(), "sp-unwind");
	pthread_mutex_lock(&b->lock);
	while (!b->stop) {
		struct sp_unw_job job;
		uint64_t c0, used, now = mono_ns();

		if (now >= next_tick || ((!b->n || b->paused) && now - last_tick >= IDLE_TICK_NS)) {
			/* Ticks also find rebuilds to queue. */
			pthread_mutex_unlock(&b->lock);
			c0 = thread_ns();
			b->tick_fn(b->ctx);
			used = thread_ns() - c0;
			pthread_mutex_lock(&b->lock);
			b->st.cpu_ns += used;
			last_tick = mono_ns();
			next_tick = last_tick + TICK_NS;
		}
		if (!b->n || b->paused) {
			struct timespec ts;

			if (b->idle_waiters)
				pthread_cond_broadcast(&b->idle_cond);
			deadline(&ts, next_tick);
			b->idle = true;
			pthread_cond_timedwait(&b->cond, &b->lock, &ts);
			b->idle = false;
			continue;
		}
		/* Token bucket: share x wall time accrues, up to BURST_NS; a
		 * job runs only with tokens left, and costs its CPU time. */
		b->tokens_ns += b->share * (double)(now - b->refill_ns);
		b->refill_ns = now;
		if (b->tokens_ns > BURST_NS)
			b->tokens_ns = BURST_NS;
		if (b->tokens_ns < 0) {
			uint64_t sleep = (uint64_t)(-b->tokens_ns / b->share);

			b->st.throttle_ns += sleep;
			nap(b, sleep);
			continue;
		}
		job = b->q[b->head];
		b->head = (b->head + 1) % b->cap;
		b->n--;
		b->running = true;
		pthread_mutex_unlock(&b->lock);

		c0 = thread_ns();
		b->fn(&job, b->ctx);
		if (job.fd >= 0)
			close(job.fd);
		used = thread_ns() - c0;

		pthread_mutex_lock(&b->lock);
		b->running = false;
		b->st.jobs++;
		b->st.cpu_ns += used;
		b->tokens_ns -= (double)used;
		if (!b->n && b->idle_waiters)
			pthread_cond_broadcast(&b->idle_cond);
	}
	b->running = false;
	b->exited = true;
	pthread_cond_broadcast(&b->idle_cond);
	if (b->abandoned) {
		/* __free has returned without us: b is ours to free. */
		pthread_mutex_unlock(&b->lock);
		builder_destroy(b);
		return NULL;
	}
	pthread_mutex_unlock(&b->lock);
	return NULL;
}

struct sp_unw_builder *sp_unw_builder__new(uint32_t queue_max, double cpu_share, sp_unw_build_fn fn,
					   sp_unw_tick_fn tick_fn, void *ctx)
{
	struct sp_unw_builder *b = calloc(1, sizeof(*b));
	pthread_condattr_t ca;

	if (!b)
		return NULL;
	b->cap = queue_max ? queue_max : DEF_QUEUE;
	b->share = cpu_share > 0 && cpu_share <= 1 ? cpu_share : DEF_SHARE;
	b->tokens_ns = BURST_NS;
	b->refill_ns = mono_ns();
	b->fn = fn;
	b->tick_fn = tick_fn;
	b->ctx = ctx;
	b->q = calloc(b->cap, sizeof(*b->q));
	if (!b->q) {
		free(b);
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_init(&b->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&b->cond, &ca);
	pthread_cond_init(&b->idle_cond, &ca);
	pthread_condattr_destroy(&ca);
	return b;
}

int sp_unw_builder__start(struct sp_unw_builder *b)
{
	if (b->started)
		return 0;
	if (pthread_create(&b->th, NULL, builder_main, b))
		return -EAGAIN;
	b->started = true;
	return 0;
}

int sp_unw_builder__free(struct sp_unw_builder *b, uint32_t wait_ms)
{
	struct timespec ts;
	bool exited;

	if (!b)
		return 0;
	deadline(&ts, mono_ns() + (uint64_t)wait_ms * 1000000ull);
	pthread_mutex_lock(&b->lock);
	b->stop = true;
	pthread_cond_broadcast(&b->cond);
	while (b->started && !b->exited)
		if (pthread_cond_timedwait(&b->idle_cond, &b->lock, &ts) == ETIMEDOUT)
			break;
	exited = !b->started || b->exited;
	/* Jobs never run: their fds are closed here (the running job's by
	 * the thread, when fn returns). */
	for (uint32_t i = 0; i < b->n; i++) {
		struct sp_unw_job *j = &b->q[(b->head + i) % b->cap];

		if (j->fd >= 0)
			close(j->fd);
	}
	b->n = 0;
	if (!exited) {
		/* Stuck in its job (a read from a file system that does not
		 * answer, which only a fatal signal ends): left behind, it
		 * frees b when its job returns, if ever. */
		b->abandoned = true;
		pthread_detach(b->th);
		pthread_mutex_unlock(&b->lock);
		return -EBUSY;
	}
	pthread_mutex_unlock(&b->lock);
	if (b->started)
		pthread_join(b->th, NULL);
	builder_destroy(b);
	return 0;
}

uint32_t sp_unw_builder__push_many(struct sp_unw_builder *b, const struct sp_unw_job *jobs,
				   uint32_t n)
{
	uint32_t i;

	if (!n)
		return 0;
	pthread_mutex_lock(&b->lock);
	for (i = 0; i < n && b->n < b->cap && !b->stop; i++) {
		b->q[(b->head + b->n) % b->cap] = jobs[i];
		b->n++;
	}
	b->st.queue_full += n - i;
	b->st.pushes++;
	/* One wake for the batch, and none when the builder is busy (it
	 * looks at the queue after each job) or throttled (it sleeps until
	 * its tokens return, whatever is queued). */
	if (i && b->idle && !b->paused) {
		b->st.wakeups++;
		pthread_cond_signal(&b->cond);
	}
	pthread_mutex_unlock(&b->lock);
	return i;
}

int sp_unw_builder__push(struct sp_unw_builder *b, const struct sp_unw_job *job)
{
	return sp_unw_builder__push_many(b, job, 1) == 1 ? 0 : -ENOSPC;
}

void sp_unw_builder__set_paused(struct sp_unw_builder *b, bool paused)
{
	pthread_mutex_lock(&b->lock);
	b->paused = paused;
	pthread_cond_broadcast(&b->cond);
	pthread_mutex_unlock(&b->lock);
}

bool sp_unw_builder__wait_idle(struct sp_unw_builder *b, uint32_t timeout_ms)
{
	uint64_t until = mono_ns() + (uint64_t)timeout_ms * 1000000ull;
	struct timespec ts;
	bool idle;

	deadline(&ts, until);
	pthread_mutex_lock(&b->lock);
	b->idle_waiters++;
	while ((b->n || b->running) && !b->stop && mono_ns() < until)
		if (pthread_cond_timedwait(&b->idle_cond, &b->lock, &ts) == ETIMEDOUT)
			break;
	b->idle_waiters--;
	idle = !b->n && !b->running;
	pthread_mutex_unlock(&b->lock);
	return idle;
}

void sp_unw_builder__stats(struct sp_unw_builder *b, struct sp_unw_builder_stats *out)
{
	pthread_mutex_lock(&b->lock);
	*out = b->st;
	out->queued = b->n;
	pthread_mutex_unlock(&b->lock);
}
