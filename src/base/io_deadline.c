/* SPDX-License-Identifier: MIT */
/*
 * io_deadline.c - see io_deadline.h.
 *
 * One helper thread at a time serves the caller; its job slot, done flag
 * and abandoned flag are under the helper's own mutex.  An abandoned
 * helper owns itself from then on (it frees its job, its own struct and
 * its reference on the shared counter), so nothing the caller frees later
 * is touched by it.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#include "base/io_deadline.h"

#define HELPER_STACK (256u << 10)	/* ELF note reads need little */

/* Outlives the deadline object while abandoned helpers may come back.
 * slots[]: the keys of the abandoned jobs still running, one slot per
 * stuck helper (max_stuck of them), under mu. */
struct io_shared {
	atomic_uint stuck;
	atomic_uint refs;
	pthread_mutex_t mu;
	uint32_t n_slots;
	struct {
		uint64_t key;
		bool used;
	} slots[];
};

struct io_helper {
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;		/* CLOCK_MONOTONIC */
	struct sp_io_job *job;		/* set by the caller, cleared when run */
	bool done;
	uint32_t stages;		/* sp_io_job__stage calls of the job */
	bool abandoned;
	bool quit;
	uint32_t key_slot;		/* in sh->slots while abandoned */
	struct io_shared *sh;
};

struct sp_io_deadline {
	struct sp_io_deadline_config cfg;
	struct io_helper *cur;		/* idle helper, NULL until needed */
	struct io_shared *sh;
	struct sp_io_deadline_stats st;
	struct sp_io_deadline *next, *prev;	/* in all_head, under all_mu */
};

/* Every live deadline object, for __retire_all. */
static pthread_mutex_t all_mu = PTHREAD_MUTEX_INITIALIZER;
static struct sp_io_deadline *all_head;

static void shared_put(struct io_shared *sh)
{
	if (atomic_fetch_sub(&sh->refs, 1) == 1) {
		pthread_mutex_destroy(&sh->mu);
		free(sh);
	}
}

static void helper_free(struct io_helper *h)
{
	pthread_cond_destroy(&h->cv);
	pthread_mutex_destroy(&h->mu);
	free(h);
}

static void *helper_main(void *arg)
{
	struct io_helper *h = arg;

	pthread_mutex_lock(&h->mu);
	for (;;) {
		struct sp_io_job *j;

		while (!h->job && !h->quit)
			pthread_cond_wait(&h->cv, &h->mu);
		if (!h->job)
			break;
		j = h->job;
		pthread_mutex_unlock(&h->mu);
		j->run(j);
		pthread_mutex_lock(&h->mu);
		h->job = NULL;
		h->done = true;
		if (h->abandoned) {
			struct io_shared *sh = h->sh;

			pthread_mutex_unlock(&h->mu);
			j->destroy(j);
			pthread_mutex_lock(&sh->mu);
			sh->slots[h->key_slot].used = false;
			pthread_mutex_unlock(&sh->mu);
			atomic_fetch_sub(&sh->stuck, 1);
			shared_put(sh);
			helper_free(h);
			return NULL;
		}
		pthread_cond_signal(&h->cv);
	}
	pthread_mutex_unlock(&h->mu);
	return NULL;
}

void sp_io_job__stage(struct sp_io_job *j)
{
	struct io_helper *h = j->helper;

	pthread_mutex_lock(&h->mu);
	h->stages++;
	pthread_mutex_unlock(&h->mu);
}

static struct io_helper *helper_start(struct io_shared *sh)
{
	struct io_helper *h = calloc(1, sizeof(*h));
	pthread_condattr_t ca;
	pthread_attr_t ta;
	sigset_t all, old;
	int rc;

	if (!h)
		return NULL;
	h->sh = sh;
	pthread_mutex_init(&h->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&h->cv, &ca);
	pthread_condattr_destroy(&ca);
	pthread_attr_init(&ta);
	pthread_attr_setstacksize(&ta, HELPER_STACK);
	/* Signals stay with the threads that handle them. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&h->th, &ta, helper_main, h);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&ta);
	if (rc) {
		helper_free(h);
		return NULL;
	}
	return h;
}

struct sp_io_deadline *sp_io_deadline__new(const struct sp_io_deadline_config *cfg)
{
	struct sp_io_deadline *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	if (cfg)
		d->cfg = *cfg;
	if (!d->cfg.timeout_ms)
		d->cfg.timeout_ms = 250;
	if (!d->cfg.max_stuck)
		d->cfg.max_stuck = 4;
	if (d->cfg.max_stuck > SP_IO_DEADLINE_MAX_STUCK)
		d->cfg.max_stuck = SP_IO_DEADLINE_MAX_STUCK;
	d->sh = calloc(1, sizeof(*d->sh) + d->cfg.max_stuck * sizeof(d->sh->slots[0]));
	if (!d->sh) {
		free(d);
		errno = ENOMEM;
		return NULL;
	}
	atomic_init(&d->sh->refs, 1);
	atomic_init(&d->sh->stuck, 0);
	pthread_mutex_init(&d->sh->mu, NULL);
	d->sh->n_slots = d->cfg.max_stuck;
	pthread_mutex_lock(&all_mu);
	d->next = all_head;
	if (all_head)
		all_head->prev = d;
	all_head = d;
	pthread_mutex_unlock(&all_mu);
	return d;
}

/* Ends and joins d's idle helper: the next run starts another. */
static void retire(struct sp_io_deadline *d)
{
	if (!d->cur)
		return;
	pthread_mutex_lock(&d->cur->mu);
	d->cur->quit = true;
	pthread_cond_signal(&d->cur->cv);
	pthread_mutex_unlock(&d->cur->mu);
	pthread_join(d->cur->th, NULL);
	helper_free(d->cur);
	d->cur = NULL;
}

void sp_io_deadline__free(struct sp_io_deadline *d)
{
	if (!d)
		return;
	pthread_mutex_lock(&all_mu);
	if (d->prev)
		d->prev->next = d->next;
	else
		all_head = d->next;
	if (d->next)
		d->next->prev = d->prev;
	pthread_mutex_unlock(&all_mu);
	retire(d);
	shared_put(d->sh);
	free(d);
}

uint32_t sp_io_deadline__retire_all(void)
{
	uint32_t stuck = 0;

	pthread_mutex_lock(&all_mu);
	for (struct sp_io_deadline *d = all_head; d; d = d->next) {
		retire(d);
		stuck += atomic_load(&d->sh->stuck);
	}
	pthread_mutex_unlock(&all_mu);
	return stuck;
}

int sp_io_deadline__run(struct sp_io_deadline *d, struct sp_io_job *j)
{
	struct io_helper *h;
	struct timespec dl;
	pthread_t th;

	if (atomic_load(&d->sh->stuck) >= d->cfg.max_stuck) {
		d->st.refused++;
		return -EBUSY;
	}
	if (!d->cur)
		d->cur = helper_start(d->sh);
	if (!d->cur) {
		d->st.refused++;
		return -EAGAIN;
	}
	h = d->cur;
	clock_gettime(CLOCK_MONOTONIC, &dl);
	dl.tv_sec += d->cfg.timeout_ms / 1000;
	dl.tv_nsec += (long)(d->cfg.timeout_ms % 1000) * 1000000L;
	if (dl.tv_nsec >= 1000000000L) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&h->mu);
	j->helper = h;
	h->job = j;
	h->done = false;
	h->stages = 0;
	pthread_cond_signal(&h->cv);
	while (!h->done)
		if (pthread_cond_timedwait(&h->cv, &h->mu, &dl) == ETIMEDOUT)
			break;
	if (h->done) {
		pthread_mutex_unlock(&h->mu);
		d->st.runs++;
		return 0;
	}
	/* Late: the helper and the job are its own from here.  Fewer than
	 * max_stuck were stuck at the start and only this thread adds: a
	 * key slot is free.  What the job finished before its stage is
	 * moved out first (the helper cannot end it while we hold h->mu). */
	if (h->stages && j->late) {
		j->stages = h->stages;
		j->late(j);
	}
	pthread_mutex_lock(&d->sh->mu);
	for (h->key_slot = 0; h->key_slot + 1 < d->sh->n_slots; h->key_slot++)
		if (!d->sh->slots[h->key_slot].used)
			break;
	d->sh->slots[h->key_slot].key = j->key;
	d->sh->slots[h->key_slot].used = true;
	pthread_mutex_unlock(&d->sh->mu);
	h->abandoned = true;
	atomic_fetch_add(&d->sh->stuck, 1);
	atomic_fetch_add(&d->sh->refs, 1);
	th = h->th;
	pthread_mutex_unlock(&h->mu);
	pthread_detach(th);
	d->cur = NULL;
	d->st.timeouts++;
	return -ETIMEDOUT;
}

bool sp_io_deadline__stuck_on(const struct sp_io_deadline *d, uint64_t key)
{
	bool found = false;

	if (!key)
		return false;
	pthread_mutex_lock(&d->sh->mu);
	for (uint32_t i = 0; i < d->sh->n_slots && !found; i++)
		found = d->sh->slots[i].used && d->sh->slots[i].key == key;
	pthread_mutex_unlock(&d->sh->mu);
	return found;
}

void sp_io_deadline__stats(const struct sp_io_deadline *d, struct sp_io_deadline_stats *out)
{
	*out = d->st;
	out->stuck = atomic_load(&d->sh->stuck);
}
