// SPDX-License-Identifier: MIT
/*
 * uploader.c - host-symbol blobs to `spanprof-symbolizer serve`, on one
 * thread through the one OTLP/HTTP sender (contract: uploader.h).
 *
 * Threads: submit/flush/stats from any thread, under the mutex (never
 * held across I/O); the upload thread pops one blob at a time and sends
 * it unlocked.  Keys: a FIFO ring of SP_UPLOADER_KNOWN (kind, key) pairs,
 * delivered or queued, searched linearly (a submit happens a few times per
 * interval, not per sample).
 */
#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/symstore.h"
#include "export/config.h"
#include "export/monotonic.h"
#include "export/uploader.h"
#include "profile/codec.h"

#define LOG_PREFIX "spanprof symbols upload: "
#define DEF_QUEUE (32u << 20)

struct blob {
	struct blob *next;
	int kind;
	uint8_t key[SP_SYMSTORE_KEY_MAX];
	size_t key_len;
	uint8_t *body;
	size_t len;
};

struct known {
	int kind;
	uint8_t key_len;
	uint8_t key[SP_SYMSTORE_KEY_MAX];
};

struct sp_uploader {
	bool gzip;			/* Content-Encoding: gzip (the sender labels it) */
	char *url;
	struct sp_sender *sender;
	sp_uploader_lost_fn on_lost;
	void *ctx;
	pthread_mutex_t lock;
	pthread_cond_t work, idle;
	pthread_t thread;
	bool started;
	atomic_bool stop;
	struct blob *head, *tail, *inflight;
	size_t queue_bytes, cap;
	struct known *known;
	uint32_t n_known, next_known;
	struct sp_uploader_stats st;
};

/* The upload URL from the profiles URL: its /v1development/profiles
 * suffix replaced by the upload path, or the upload path appended. */
static int upload_url(const char *profiles, char **out, char *err, size_t err_len)
{
	static const char sig[] = "/" SP_EXPORT_SIGNAL_PATH;
	char *path = NULL, *np = NULL, *full = NULL;
	CURLU *u = curl_url();
	size_t n;
	int r = -ENOMEM;

	*out = NULL;
	if (!u || curl_url_set(u, CURLUPART_URL, profiles, CURLU_NON_SUPPORT_SCHEME) ||
	    curl_url_get(u, CURLUPART_PATH, &path, 0))
		goto out;
	n = strlen(path);
	if (n >= sizeof(sig) - 1 && !strcmp(path + n - (sizeof(sig) - 1), sig))
		n -= sizeof(sig) - 1;
	while (n && path[n - 1] == '/')
		n--;
	if (asprintf(&np, "%.*s%s", (int)n, path, SP_SYMSTORE_UPLOAD_PATH) < 0) {
		np = NULL;
		goto out;
	}
	if (curl_url_set(u, CURLUPART_PATH, np, 0) || curl_url_get(u, CURLUPART_URL, &full, 0))
		goto out;
	*out = strdup(full);
	r = *out ? 0 : -ENOMEM;
out:
	if (r)
		snprintf(err, err_len, "out of memory forming the symbol upload URL");
	curl_free(path);
	curl_free(full);
	free(np);
	curl_url_cleanup(u);
	return r;
}

/* ------------------------------------------------------------ keys */

static struct known *find_known(struct sp_uploader *u, int kind, const uint8_t *key,
				size_t key_len)
{
	for (uint32_t i = 0; i < u->n_known; i++) {
		struct known *k = &u->known[i];

		if (k->kind == kind && k->key_len == key_len && !memcmp(k->key, key, key_len))
			return k;
	}
	return NULL;
}

static void add_known(struct sp_uploader *u, int kind, const uint8_t *key, size_t key_len)
{
	struct known *k = &u->known[u->next_known];

	u->next_known = (u->next_known + 1) % SP_UPLOADER_KNOWN;
	if (u->n_known < SP_UPLOADER_KNOWN)
		u->n_known++;
	k->kind = kind;
	k->key_len = (uint8_t)key_len;
	memcpy(k->key, key, key_len);
}

static void forget_known(struct sp_uploader *u, int kind, const uint8_t *key, size_t key_len)
{
	struct known *k = find_known(u, kind, key, key_len);

	if (k)
		k->kind = 0;	/* never matches again */
}

/* ------------------------------------------------------------ thread */

static void lost(struct sp_uploader *u, const struct blob *b)
{
	pthread_mutex_lock(&u->lock);
	forget_known(u, b->kind, b->key, b->key_len);
	pthread_mutex_unlock(&u->lock);
	if (u->on_lost)
		u->on_lost(u->ctx, b->kind, b->key, b->key_len);
}

static void *upload_thread(void *arg)
{
	struct sp_uploader *u = arg;
	enum sp_send_result r;
	struct blob *b;
	char what[96];

	pthread_mutex_lock(&u->lock);
	for (;;) {
		while (!atomic_load(&u->stop) && !u->head) {
			pthread_cond_broadcast(&u->idle);
			pthread_cond_wait(&u->work, &u->lock);
		}
		if (atomic_load(&u->stop))
			break;
		b = u->head;
		u->head = b->next;
		if (!u->head)
			u->tail = NULL;
		u->queue_bytes -= b->len;
		u->inflight = b;
		pthread_mutex_unlock(&u->lock);
		snprintf(what, sizeof(what), "host-symbol blob (kind %d) of %zu bytes", b->kind,
			 b->len);
		r = sp_sender__send(u->sender, b->body, b->len, what);
		if (r != SP_SEND_DELIVERED)
			lost(u, b);
		pthread_mutex_lock(&u->lock);
		u->inflight = NULL;
		if (r == SP_SEND_DELIVERED)
			u->st.delivered++;
		else if (r == SP_SEND_FAILED)
			u->st.failed++;
		else
			u->st.dropped_shutdown++;
		free(b->body);
		free(b);
		if (r == SP_SEND_ABORTED)
			break;
	}
	pthread_cond_broadcast(&u->idle);
	pthread_mutex_unlock(&u->lock);
	return NULL;
}

/* ------------------------------------------------------------ API */

int sp_uploader__new(const struct sp_export_config *cfg, size_t queue_bytes,
		     sp_uploader_lost_fn on_lost, void *ctx, struct sp_uploader **out, char *err,
		     size_t err_len)
{
	struct sp_export_config sc;
	struct sp_uploader *u;
	char *profiles = NULL;
	sigset_t all, old;
	int r;

	*out = NULL;
	u = calloc(1, sizeof(*u));
	if (!u)
		return -ENOMEM;
	u->on_lost = on_lost;
	u->ctx = ctx;
	u->cap = queue_bytes ? queue_bytes : DEF_QUEUE;
	u->st.queue_limit_bytes = u->cap;
	atomic_init(&u->stop, false);
	pthread_mutex_init(&u->lock, NULL);
	pthread_cond_init(&u->work, NULL);
	sp_mono__cond_init(&u->idle);
	u->known = calloc(SP_UPLOADER_KNOWN, sizeof(*u->known));
	r = -ENOMEM;
	if (!u->known)
		goto fail;
	r = sp_export__url(cfg->endpoint, cfg->profiles_url, &profiles, err, err_len);
	if (!r && !profiles) {
		snprintf(err, err_len, "no endpoint to upload host symbols to");
		r = -EINVAL;
	}
	if (!r)
		r = upload_url(profiles, &u->url, err, err_len);
	free(profiles);
	if (r)
		goto fail;
	u->gzip = cfg->gzip;
	sc = *cfg;
	sc.endpoint = NULL;
	sc.profiles_url = u->url;
	sc.output_dir = NULL;
	sc.content_type = "application/octet-stream";
	r = sp_sender__new(&sc, LOG_PREFIX, &u->stop, &u->sender, err, err_len);
	if (r)
		goto fail;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	r = -pthread_create(&u->thread, NULL, upload_thread, u);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r) {
		snprintf(err, err_len, "cannot start the symbol upload thread: %s", strerror(-r));
		goto fail;
	}
	u->started = true;
	pthread_setname_np(u->thread, "sp-symbols");
	*out = u;
	return 0;
fail:
	sp_uploader__free(u);
	return r;
}

void sp_uploader__free(struct sp_uploader *u)
{
	struct blob *b, *n;

	if (!u)
		return;
	if (u->started) {
		pthread_mutex_lock(&u->lock);
		atomic_store(&u->stop, true);
		pthread_cond_broadcast(&u->work);
		pthread_mutex_unlock(&u->lock);
		sp_sender__wakeup(u->sender);
		pthread_join(u->thread, NULL);
	}
	/* what never went out: counted, and the producer told (on_lost) */
	for (b = u->head; b; b = n) {
		n = b->next;
		u->st.dropped_shutdown++;
		lost(u, b);
		free(b->body);
		free(b);
	}
	sp_sender__free(u->sender);
	pthread_cond_destroy(&u->idle);
	pthread_cond_destroy(&u->work);
	pthread_mutex_destroy(&u->lock);
	free(u->known);
	free(u->url);
	free(u);
}

int sp_uploader__submit(struct sp_uploader *u, int kind, const uint8_t *key, size_t key_len,
			const uint8_t *data, size_t len)
{
	uint8_t *env = NULL, *gz = NULL;
	size_t env_len = 0, gz_len = 0;
	struct blob *b;
	int r;

	if (!u || key_len > SP_SYMSTORE_KEY_MAX)
		return -EINVAL;
	pthread_mutex_lock(&u->lock);
	if (find_known(u, kind, key, key_len)) {
		u->st.known++;
		pthread_mutex_unlock(&u->lock);
		return 1;
	}
	pthread_mutex_unlock(&u->lock);
	r = sp_symstore__upload_encode(kind, key, key_len, data, len, &env, &env_len);
	if (r)
		return r;
	if (u->gzip) {
		r = sp_gzip(env, env_len, &gz, &gz_len);
		free(env);
		if (r)
			return r;
		env = gz;
		env_len = gz_len;
	}
	b = calloc(1, sizeof(*b));
	if (!b) {
		free(env);
		return -ENOMEM;
	}
	b->kind = kind;
	memcpy(b->key, key, key_len);
	b->key_len = key_len;
	b->body = env;
	b->len = env_len;
	pthread_mutex_lock(&u->lock);
	if (u->queue_bytes + env_len > u->cap) {
		u->st.dropped_queue_full++;
		pthread_mutex_unlock(&u->lock);
		free(env);
		free(b);
		return -ENOSPC;
	}
	add_known(u, kind, key, key_len);
	if (u->tail)
		u->tail->next = b;
	else
		u->head = b;
	u->tail = b;
	u->queue_bytes += env_len;
	u->st.submitted++;
	pthread_cond_signal(&u->work);
	pthread_mutex_unlock(&u->lock);
	return 0;
}

int sp_uploader__flush(struct sp_uploader *u, uint32_t timeout_ms)
{
	struct timespec dl = sp_mono__deadline(timeout_ms);
	int r = 0;

	if (!u)
		return 0;
	pthread_mutex_lock(&u->lock);
	while ((u->head || u->inflight) && !atomic_load(&u->stop))
		if (pthread_cond_timedwait(&u->idle, &u->lock, &dl) == ETIMEDOUT) {
			r = (u->head || u->inflight) ? -ETIMEDOUT : 0;
			break;
		}
	pthread_mutex_unlock(&u->lock);
	return r;
}

void sp_uploader__stats(struct sp_uploader *u, struct sp_uploader_stats *st)
{
	if (!u) {
		memset(st, 0, sizeof(*st));
		return;
	}
	pthread_mutex_lock(&u->lock);
	*st = u->st;
	st->queue_bytes = u->queue_bytes + (u->inflight ? u->inflight->len : 0);
	pthread_mutex_unlock(&u->lock);
	sp_sender__stats(u->sender, &st->sender);
}

const char *sp_uploader__url(const struct sp_uploader *u)
{
	return u ? u->url : NULL;
}
