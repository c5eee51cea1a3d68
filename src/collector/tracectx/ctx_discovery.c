/* SPDX-License-Identifier: MIT */
/*
 * ctx_discovery.c - see ctx_discovery.h.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/proc_read.h"
#include "collector/pipeline/bpf_sampler.h"
#include "collector/tracectx/ctx_discovery.h"
#include "collector/tracectx/go_discovery.h"
#include "collector/procs/proc_table.h"
#include "collector/tracectx/process_ctx.h"
#include "collector/pipeline/summary.h"
#include "collector/tracectx/tls_resolve.h"

/* SLOT_GONE: the process exited; its descriptor is already out of the BPF
 * map (the map holds live processes only), its service name and attribute
 * keys stay for the samples still buffered until __forget. */
enum slot_state { SLOT_EMPTY = 0, SLOT_NONE, SLOT_RESOLVED, SLOT_FAILED, SLOT_GONE };

struct slot {
	uint32_t pid;
	uint8_t state;
	bool publish_pending;	/* a coalesced publication awaits its re-read */
	bool go;		/* its Go descriptor is in BPF (go_discovery.h) */
	uint64_t *fail_ctr;	/* the reason counted when state == FAILED */
	char *service_name;	/* heap, or NULL: few processes publish one */
	/* threadlocal.attribute_key_map, owned (moved out of the process
	 * context read); freed when the pid execs or is forgotten, or with
	 * the table. */
	char **keys;
	uint32_t n_keys;
	uint32_t last_publish_ms;	/* CLOCK_MONOTONIC_COARSE ms (mod 2^32) of the
					 * last publication re-read; 0 = none */
	struct sp_go_keys *go_keys;	/* a Go process's label keys, or NULL */
};

_Static_assert(sizeof(struct slot) == 48, "the slot table stays 48 B per slot");

#define CTX_SERVICE_NAME_MAX 127

struct sp_ctx_discovery {
	struct sp_sampler *sampler;
	struct sp_go_discovery *go;
	struct sp_proc_table *procs;	/* borrowed, may be NULL */
	const char *proc_root;
	struct slot *slots;		/* open addressing, SP_CTX_DISCOVERY_MAX * 2;
					 * kept small (40 B): hashing pids spreads
					 * writes over every page of it */
	uint32_t mask;
	uint32_t used;
	uint64_t resolved;
	uint64_t failed;
	uint64_t examined;	/* process contexts read: one maps read each */
	uint64_t skipped;	/* no OTEL_CTX in maps the table just read, or gone */
	uint64_t table_full;
	uint64_t tls_fail[SP_TLS_FAIL__MAX];
	uint64_t pctx_fail[SP_PCTX__MAX];
	uint64_t bpf_map_errors;	/* tls_descs update failed (map full) */
	uint64_t timed_out;	/* the look did not end within the limit */
	uint64_t stuck;		/* not looked at: its earlier look still stuck */
	struct sp_proc_read *pread;	/* the looks, off the caller's thread */
	/* Every publication is re-read at once or coalesced:
	 * received = publish_rereads + publish_coalesced.  Coalesced ones
	 * are covered by the next immediate re-read or, if none comes within
	 * the interval, by one deferred re-read at tick. */
	uint64_t publish_rereads;	/* publications re-read at once */
	uint64_t publish_coalesced;	/* publications folded into a later re-read */
	uint64_t publish_deferred;	/* re-reads done at tick for coalesced ones */
	uint32_t *pending;		/* pids with publish_pending, at most one each */
	uint32_t n_pending;
};

struct sp_ctx_discovery *sp_ctx_discovery__new(struct sp_sampler *s, const char *proc_root)
{
	struct sp_ctx_discovery *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->sampler = s;
	d->proc_root = proc_root ? proc_root : "/proc";
	d->mask = 2 * SP_CTX_DISCOVERY_MAX - 1;
	d->slots = calloc(d->mask + 1, sizeof(*d->slots));
	d->pending = calloc(SP_CTX_DISCOVERY_MAX, sizeof(*d->pending));
	d->go = sp_go_discovery__new(s, d->proc_root);
	d->pread = sp_proc_read__new(&(struct sp_io_deadline_config){
		.timeout_ms = SP_CTX_LOOK_TIMEOUT_MS });
	if (!d->slots || !d->pending || !d->go || !d->pread) {
		sp_ctx_discovery__free(d);
		return NULL;
	}
	return d;
}

struct sp_io_job *sp_ctx_discovery__companion(struct sp_ctx_discovery *d, uint32_t pid)
{
	return d ? sp_go_discovery__companion(d->go, pid) : NULL;
}

void sp_ctx_discovery__companion_back(struct sp_ctx_discovery *d, uint32_t pid,
				      struct sp_io_job *j, int rc)
{
	if (d)
		sp_go_discovery__companion_back(d->go, pid, j, rc);
}

void sp_ctx_discovery__set_procs(struct sp_ctx_discovery *d, struct sp_proc_table *procs)
{
	if (d)
		d->procs = procs;
}

static void slot_free_keys(struct slot *sl)
{
	for (uint32_t i = 0; i < sl->n_keys; i++)
		free(sl->keys[i]);
	free(sl->keys);
	sl->keys = NULL;
	sl->n_keys = 0;
}

/* Forgets a slot's Go side: its descriptor leaves BPF, its keys go. */
static void slot_drop_go(struct sp_ctx_discovery *d, struct slot *sl)
{
	if (sl->go)
		sp_go_discovery__drop(d->go, sl->pid);
	sl->go = false;
	sp_go_keys__free(sl->go_keys);
	sl->go_keys = NULL;
}

void sp_ctx_discovery__free(struct sp_ctx_discovery *d)
{
	if (!d)
		return;
	if (d->slots)
		for (uint32_t i = 0; i <= d->mask; i++) {
			free(d->slots[i].service_name);
			slot_free_keys(&d->slots[i]);
			sp_go_keys__free(d->slots[i].go_keys);
		}
	free(d->slots);
	free(d->pending);
	sp_go_discovery__free(d->go);
	sp_proc_read__free(d->pread);
	free(d);
}

static uint32_t slot_home(const struct sp_ctx_discovery *d, uint32_t pid)
{
	return (pid * 2654435761u) & d->mask;
}

void sp_ctx_discovery__forget(struct sp_ctx_discovery *d, uint32_t pid)
{
	uint32_t i, j, k;

	if (!d)
		return;
	for (i = slot_home(d, pid); d->slots[i].state != SLOT_EMPTY; i = (i + 1) & d->mask)
		if (d->slots[i].pid == pid)
			break;
	if (d->slots[i].state == SLOT_EMPTY)
		return;
	if (d->slots[i].state == SLOT_RESOLVED && d->sampler)
		sp_sampler__del_tls_desc(d->sampler, pid);
	free(d->slots[i].service_name);
	slot_free_keys(&d->slots[i]);
	slot_drop_go(d, &d->slots[i]);
	d->used--;
	/* Backward-shift deletion (linear probing, no tombstones): a later
	 * member of the cluster moves into the hole unless its home slot is
	 * cyclically in (i, j]. */
	for (j = i;;) {
		j = (j + 1) & d->mask;
		if (d->slots[j].state == SLOT_EMPTY)
			break;
		k = slot_home(d, d->slots[j].pid);
		if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
			continue;
		d->slots[i] = d->slots[j];
		i = j;
	}
	memset(&d->slots[i], 0, sizeof(d->slots[i]));
}

static struct slot *slot_for(struct sp_ctx_discovery *d, uint32_t pid, bool create)
{
	uint32_t h = slot_home(d, pid);

	while (d->slots[h].state != SLOT_EMPTY) {
		if (d->slots[h].pid == pid)
			return &d->slots[h];
		h = (h + 1) & d->mask;
	}
	if (!create)
		return NULL;
	if (d->used >= SP_CTX_DISCOVERY_MAX) {
		d->table_full++;
		return NULL;
	}
	d->used++;
	d->slots[h].pid = pid;
	d->slots[h].state = SLOT_NONE;
	return &d->slots[h];
}

/* Counts a process once per failure reason, not once per look. */
static void mark_failed(struct sp_ctx_discovery *d, struct slot *sl, uint64_t *reason_ctr)
{
	if (sl->state == SLOT_FAILED && sl->fail_ctr == reason_ctr)
		return;
	if (sl->state != SLOT_FAILED)
		d->failed++;
	if (reason_ctr)
		(*reason_ctr)++;
	sl->state = SLOT_FAILED;
	sl->fail_ctr = reason_ctr;
}

/* One look at a process (its maps, memory and ELF files: the process
 * context, then the TLS search), run on a helper within the limit
 * (base/proc_read.h).  Owns copies of what it reads with and what it
 * finds: an abandoned look may end after the table has moved on. */
struct look_job {
	struct sp_io_job base;		/* first */
	char *proc_root;
	uint32_t pid;
	struct sp_process_ctx pctx;
	enum sp_pctx_fail why;
	int pctx_err;
	struct sp_tls_desc desc;
	enum sp_tls_fail reason;
	int tls_err;
};

static void look_run(struct sp_io_job *base)
{
	struct look_job *j = (struct look_job *)base;

	j->pctx_err = sp_process_ctx__read(j->proc_root, j->pid, &j->pctx, &j->why);
	if (!j->pctx_err)
		j->tls_err = sp_tls_resolve__pid(j->proc_root, j->pid, &j->desc, &j->reason);
}

static void look_destroy(struct sp_io_job *base)
{
	struct look_job *j = (struct look_job *)base;

	sp_process_ctx__clear(&j->pctx);
	free(j->proc_root);
	free(j);
}

/* The finished look, or NULL (not back in time, skipped, no memory:
 * counted on sl). */
static struct look_job *look(struct sp_ctx_discovery *d, struct slot *sl, uint32_t pid)
{
	struct look_job *j = calloc(1, sizeof(*j));
	int rc;

	if (j)
		j->proc_root = strdup(d->proc_root);
	if (!j || !j->proc_root) {
		free(j);
		return NULL;
	}
	j->base = (struct sp_io_job){ .run = look_run, .destroy = look_destroy };
	j->pid = pid;
	rc = sp_proc_read__job(d->pread, pid, &j->base);
	if (rc == 0)
		return j;
	if (rc == -ETIMEDOUT) {
		mark_failed(d, sl, &d->timed_out);	/* j is its helper's */
		return NULL;
	}
	mark_failed(d, sl, &d->stuck);
	look_destroy(&j->base);
	return NULL;
}

static void examine(struct sp_ctx_discovery *d, uint32_t pid)
{
	struct look_job *j;
	struct sp_process_ctx *pctx;
	struct slot *sl;
	int err;

	sl = slot_for(d, pid, true);
	if (!sl)
		return;
	d->examined++;
	j = look(d, sl, pid);
	if (!j)
		return;
	pctx = &j->pctx;
	err = j->pctx_err;
	if (err) {
		enum sp_pctx_fail why = j->why;

		/* Nothing published is the common case, not a failure; nor is
		 * a process that exited before we looked. */
		if (err != -ESRCH && err != -ENOENT && why != SP_PCTX_NO_MAPPING &&
		    why < SP_PCTX__MAX)
			mark_failed(d, sl, &d->pctx_fail[why]);
		goto out;
	}
	free(sl->service_name);
	sl->service_name = pctx->service_name[0]
				   ? strndup(pctx->service_name, CTX_SERVICE_NAME_MAX)
				   : NULL;
	slot_free_keys(sl);
	if (pctx->n_keys && (sl->keys = malloc(pctx->n_keys * sizeof(*sl->keys)))) {
		memcpy(sl->keys, pctx->keys, pctx->n_keys * sizeof(*sl->keys));
		sl->n_keys = pctx->n_keys;
		pctx->n_keys = 0;	/* moved: clear() must not free them */
	}
	if (j->tls_err) {
		mark_failed(d, sl, j->reason < SP_TLS_FAIL__MAX ? &d->tls_fail[j->reason] : NULL);
		goto out;
	}
	if (sp_sampler__set_tls_desc(d->sampler, pid, &j->desc)) {
		mark_failed(d, sl, &d->bpf_map_errors);
		goto out;
	}
	if (sl->state != SLOT_RESOLVED)
		d->resolved++;
	sl->state = SLOT_RESOLVED;
out:
	look_destroy(&j->base);
}

/* Forgets what was known of a slot's process (exec, pid reused after exit). */
static void slot_reset(struct sp_ctx_discovery *d, struct slot *sl)
{
	if (sl->state == SLOT_RESOLVED)
		sp_sampler__del_tls_desc(d->sampler, sl->pid);
	sl->state = SLOT_NONE;
	sl->fail_ctr = NULL;
	free(sl->service_name);
	sl->service_name = NULL;
	slot_free_keys(sl);
	slot_drop_go(d, sl);
	sl->last_publish_ms = 0;
	sl->publish_pending = false;	/* dropped from pending lazily */
}

/* CLOCK_MONOTONIC_COARSE in ms, mod 2^32 (differences are taken unsigned):
 * a few ms resolution is plenty for a 100 ms rate limit, and it reads no
 * hardware clock (the vDSO's fine clock is slow on some VMs). */
static uint32_t coarse_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint32_t)((uint64_t)ts.tv_sec * 1000u + ts.tv_nsec / 1000000);
}

/* Rate limit of SP_PROC_PUBLISH: a process re-read less than
 * SP_CTX_PUBLISH_MIN_MS ago is not read again now; the publication is
 * coalesced (counted) into one re-read that sp_ctx_discovery__tick() does
 * when the interval is over, so the last state is never missed.  True when
 * the re-read is due now. */
static bool publish_due(struct sp_ctx_discovery *d, uint32_t pid)
{
	struct slot *sl = slot_for(d, pid, true);
	uint32_t now = coarse_ms();

	if (!sl)
		return false;	/* table full (counted): examine() could not keep it */
	if (sl->last_publish_ms && now - sl->last_publish_ms < SP_CTX_PUBLISH_MIN_MS) {
		d->publish_coalesced++;
		if (!sl->publish_pending && d->n_pending < SP_CTX_DISCOVERY_MAX) {
			sl->publish_pending = true;
			d->pending[d->n_pending++] = pid;
		}
		return false;
	}
	sl->last_publish_ms = now ? now : 1;
	sl->publish_pending = false;	/* covered by this re-read; dropped lazily */
	d->publish_rereads++;
	return true;
}

/* A Go executable gets its descriptor (and a slot, for its label keys);
 * anything else costs no slot.  The slot of an exec'd process was reset
 * already. */
static void go_examine(struct sp_ctx_discovery *d, uint32_t pid)
{
	struct slot *sl = slot_for(d, pid, false);

	if (sl && sl->go)
		return;		/* examined since its last exec */
	if (sp_go_discovery__examine(d->go, pid) != 1)
		return;
	sl = sl ? sl : slot_for(d, pid, true);
	if (sl)
		sl->go = true;
	else
		sp_go_discovery__drop(d->go, pid);	/* table full (counted) */
}

void sp_ctx_discovery__on_proc(uint32_t pid, enum sp_proc_why why, void *ctx)
{
	struct sp_ctx_discovery *d = ctx;
	struct slot *sl;

	if (!d || !pid)
		return;
	/* A deferred exec (consumer.h): the old image's descriptors leave
	 * BPF as at its exit; SP_PROC_EXEC follows at the first sample. */
	if (why == SP_PROC_EXIT || why == SP_PROC_EXEC_LAZY) {
		sl = slot_for(d, pid, false);
		if (sl && sl->state != SLOT_GONE) {
			/* Frees its tls_descs entry for the next process now;
			 * the Go keys stay for samples still buffered. */
			if (sl->state == SLOT_RESOLVED)
				sp_sampler__del_tls_desc(d->sampler, pid);
			if (sl->go)
				sp_go_discovery__exited(d->go, pid);
			sl->go = false;
			sl->state = SLOT_GONE;
			sl->publish_pending = false;	/* dropped from pending lazily */
		}
		return;
	}
	sl = slot_for(d, pid, false);
	if (sl && sl->state == SLOT_GONE)
		slot_reset(d, sl);	/* pid reused before it was forgotten */
	else if (why == SP_PROC_FIRST_SIGHT && sl)
		return;		/* already examined (e.g. by the start-up scan) */
	if (why == SP_PROC_PUBLISH && !publish_due(d, pid))
		return;
	/* A new image: what was known of the old one goes first, its TLS
	 * descriptor out of BPF included, whether or not the new image
	 * publishes (else it would be read at the old image's offsets). */
	if (why == SP_PROC_EXEC && sl)
		slot_reset(d, sl);
	if (why != SP_PROC_PUBLISH && d->procs) {
		/* The process table has just read this process's maps: no
		 * OTEL_CTX there means nothing published yet (a later publish
		 * comes as SP_PROC_PUBLISH).  Saves a second maps read per
		 * new process.  Nor is there anything to read of one the
		 * table found gone (a short-lived process that exited before
		 * its exec read, common on a loaded machine): its maps are
		 * empty or vanished. */
		const struct sp_proc_info *pi = sp_proc_table__proc(d->procs, pid);

		if (pi && (pi->gone || !pi->has_otel_ctx)) {
			d->skipped++;
			if (!pi->gone)
				go_examine(d, pid);
			return;
		}
	}
	if (why != SP_PROC_PUBLISH)
		go_examine(d, pid);
	examine(d, pid);
}

void sp_ctx_discovery__tick(struct sp_ctx_discovery *d)
{
	uint32_t now, kept = 0;

	if (!d || !d->n_pending)
		return;
	now = coarse_ms();
	for (uint32_t i = 0; i < d->n_pending; i++) {
		uint32_t pid = d->pending[i];
		struct slot *sl = slot_for(d, pid, false);

		if (!sl || !sl->publish_pending)
			continue;	/* exited, forgotten or reset meanwhile */
		if (now - sl->last_publish_ms < SP_CTX_PUBLISH_MIN_MS) {
			d->pending[kept++] = pid;
			continue;
		}
		sl->publish_pending = false;
		sl->last_publish_ms = now ? now : 1;
		d->publish_deferred++;
		examine(d, pid);
	}
	d->n_pending = kept;
}

void sp_ctx_discovery__scan(struct sp_ctx_discovery *d, bool all, const uint32_t *pids,
			    uint32_t n)
{
	struct dirent *de;
	DIR *dir;

	for (uint32_t i = 0; i < n; i++) {
		go_examine(d, pids[i]);
		examine(d, pids[i]);
	}
	if (!all)
		return;
	dir = opendir(d->proc_root);
	if (!dir)
		return;
	while ((de = readdir(dir))) {
		char *end;
		unsigned long pid;

		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		pid = strtoul(de->d_name, &end, 10);
		if (*end || !pid || pid > 0x3fffffff)
			continue;
		go_examine(d, pid);
		examine(d, pid);
	}
	closedir(dir);
}

uint32_t sp_ctx_discovery__tracked(const struct sp_ctx_discovery *d)
{
	return d ? d->used : 0;
}

const char *sp_ctx_discovery__service_name(uint32_t pid, void *ctx)
{
	struct sp_ctx_discovery *d = ctx;
	struct slot *sl = d ? slot_for(d, pid, false) : NULL;

	return sl ? sl->service_name : NULL;
}

const char *sp_ctx_discovery__attr_key(uint32_t pid, uint8_t key_index, void *ctx)
{
	struct sp_ctx_discovery *d = ctx;
	struct slot *sl = d ? slot_for(d, pid, false) : NULL;

	if (sl && sl->go_keys && key_index >= SP_GO_KEY_BASE)
		return sp_go_keys__name(sl->go_keys, key_index);
	return sl && key_index < sl->n_keys && sl->keys[key_index][0] ?
		sl->keys[key_index] : NULL;
}

int sp_ctx_discovery__go_key(uint32_t pid, const uint8_t *key, uint8_t len, void *ctx)
{
	struct sp_ctx_discovery *d = ctx;
	struct slot *sl = d ? slot_for(d, pid, false) : NULL;

	if (!sl)
		return -1;	/* not a Go process we track: nothing names it */
	return sp_go_keys__index(d->go, &sl->go_keys, key, len);
}

void sp_ctx_discovery__fill_summary(const struct sp_ctx_discovery *d, struct sp_summary *s)
{
	if (!d)
		return;
	s->go = *sp_go_discovery__stats(d->go);
	s->ctx_procs_resolved = d->resolved;
	s->ctx_procs_failed = d->failed;
	s->ctx_publish_rereads = d->publish_rereads;
	s->ctx_publish_coalesced = d->publish_coalesced;
	s->ctx_publish_deferred = d->publish_deferred;
	s->ctx_examined = d->examined;
	s->ctx_skipped = d->skipped;
	s->n_ctx_fail = 0;
	for (int i = 1; i < SP_TLS_FAIL__MAX && s->n_ctx_fail < 16; i++) {
		s->ctx_fail_names[s->n_ctx_fail] = sp_tls_fail__name(i);
		s->ctx_fail[s->n_ctx_fail++] = d->tls_fail[i];
	}
	if (s->n_ctx_fail < 16) {
		s->ctx_fail_names[s->n_ctx_fail] = "bpf_map_full";
		s->ctx_fail[s->n_ctx_fail++] = d->bpf_map_errors;
	}
	if (s->n_ctx_fail + 2 <= 16) {
		s->ctx_fail_names[s->n_ctx_fail] = "timed_out";
		s->ctx_fail[s->n_ctx_fail++] = d->timed_out;
		s->ctx_fail_names[s->n_ctx_fail] = "stuck";
		s->ctx_fail[s->n_ctx_fail++] = d->stuck;
	}
	for (int i = 1; i < SP_PCTX__MAX && s->n_ctx_fail < 16; i++) {
		if (i == SP_PCTX_NO_MAPPING)
			continue;
		s->ctx_fail_names[s->n_ctx_fail] = sp_pctx_fail__name(i);
		s->ctx_fail[s->n_ctx_fail++] = d->pctx_fail[i];
	}
}
