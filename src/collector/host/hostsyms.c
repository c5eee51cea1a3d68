// SPDX-License-Identifier: MIT
/*
 * hostsyms.c - the host's symbol data, captured and handed on (contract:
 * hostsyms.h).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/hex.h"
#include "base/symstore.h"
#include "collector/host/hostsyms.h"
#include "collector/host/kallsyms.h"
#include "collector/pipeline/consumer.h"
#include "collector/pipeline/snapshot.h"
#include "collector/procs/proc_table.h"
#include "profile/profile.h"

struct sp_hostsyms {
	struct sp_hostsyms_config cfg;
	char *store_dir;
	struct sp_kernel_layout *kl;
	struct sp_build_id kernel_id;
	struct sp_vdso vdso;
	bool have_vdso;
	struct sp_jit_maps *jit;
	uint8_t *kernel_gz;		/* keep_kernel_snapshot */
	size_t kernel_gz_len;
	atomic_bool kernel_done, vdso_done;
	pthread_mutex_t lock;		/* st, and the store's mkdir */
	struct sp_hostsyms_stats st;
};

/* One blob to the store and/or the sink.  0 when every configured way
 * took it (an existing store file counts). */
static int put(struct sp_hostsyms *h, int kind, const uint8_t *key, size_t key_len,
	       const uint8_t *data, size_t len)
{
	char hex[2 * SP_SYMSTORE_KEY_MAX + 1];
	int err = 0, r;

	if (h->store_dir) {
		sp_hex__encode(key, key_len, hex);
		pthread_mutex_lock(&h->lock);
		mkdir(h->store_dir, 0755);	/* exists: fine; else the write says */
		pthread_mutex_unlock(&h->lock);
		r = sp_symstore__write(h->store_dir, kind, hex, data, len);
		pthread_mutex_lock(&h->lock);
		if (r && r != -EEXIST) {
			h->st.store_errors++;
			err = r;
		} else if (!r) {
			h->st.store_writes++;
		}
		pthread_mutex_unlock(&h->lock);
	}
	if (h->cfg.sink) {
		r = h->cfg.sink(h->cfg.sink_ctx, kind, key, key_len, data, len);
		if (r) {
			pthread_mutex_lock(&h->lock);
			h->st.sink_refused++;
			pthread_mutex_unlock(&h->lock);
			err = r;
		}
	}
	return err;
}

static int jit_sink(void *ctx, const struct sp_jit_id *id, const uint8_t *piece, size_t len)
{
	return put(ctx, SP_SYMSTORE_JIT, id->b, SP_JIT_ID_LEN, piece, len);
}

/* Module sections left out of the layout (kernel_layout.h bounds): their
 * frames travel as boot frames; said once, counted on /metrics. */
static void say_skipped_sections(const struct sp_kernel_layout *kl, const char *pfx)
{
	struct sp_kernel_layout_stats st;

	sp_kernel_layout__stats(kl, &st);
	if (st.module_sections_skipped)
		fprintf(stderr, "%s%llu executable module section(s) not mapped (no address, a name outside "
			"[A-Za-z0-9._$-] or over %d bytes, or over %d per module): their frames are "
			"boot frames\n", pfx, (unsigned long long)st.module_sections_skipped,
			SP_KSECT_NAME_MAX - 1, SP_KMOD_SECTIONS_MAX);
}

int sp_hostsyms__new(const struct sp_hostsyms_config *cfg, struct sp_hostsyms **out)
{
	const char *pfx = cfg->log_prefix ? cfg->log_prefix : "spanprof: ";
	struct sp_kernel_layout_config kc = { 0 };
	struct sp_jit_maps_config jc;
	struct sp_hostsyms *h;
	char err[320] = "";
	int rc;

	*out = NULL;
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	h->cfg = *cfg;
	pthread_mutex_init(&h->lock, NULL);
	if (cfg->store_dir && !(h->store_dir = strdup(cfg->store_dir))) {
		sp_hostsyms__free(h);
		return -ENOMEM;
	}
	if (cfg->kernel) {
		if (sp_buildid__kernel(&h->kernel_id))
			memset(&h->kernel_id, 0, sizeof(h->kernel_id));
		kc.kernel_id = &h->kernel_id;
		rc = sp_kernel_layout__new(&kc, &h->kl, err, sizeof(err));
		if (rc == -ENOMEM) {
			sp_hostsyms__free(h);
			return rc;
		}
		if (rc)
			fprintf(stderr, "%s%s; kernel frames keep their runtime addresses\n", pfx,
				err);
		else
			say_skipped_sections(h->kl, pfx);
	}
	if (cfg->kernel && cfg->keep_kernel_snapshot && h->kernel_id.len) {
		const struct sp_kmod *mods;
		size_t n_mods;

		mods = sp_kernel_layout__modules(h->kl, &n_mods);
		if (sp_kallsyms__snapshot(&h->kernel_id, mods, n_mods, &h->kernel_gz,
					  &h->kernel_gz_len, err, sizeof(err)))
			fprintf(stderr, "%sno kernel symbol snapshot: %s\n", pfx, err);
	}
	rc = sp_vdso__read(&h->vdso);
	h->have_vdso = rc == 0;
	if (!cfg->no_jit) {
		jc = cfg->jit;
		jc.sink = jit_sink;
		jc.sink_ctx = h;
		rc = sp_jit_maps__new(&jc, &h->jit);
		if (rc) {
			sp_hostsyms__free(h);
			return rc;
		}
	}
	*out = h;
	return 0;
}

void sp_hostsyms__free(struct sp_hostsyms *h)
{
	if (!h)
		return;
	sp_jit_maps__free(h->jit);
	sp_kernel_layout__free(h->kl);
	free(h->kernel_gz);
	sp_vdso__release(&h->vdso);
	pthread_mutex_destroy(&h->lock);
	free(h->store_dir);
	free(h);
}

void sp_hostsyms__proc_config(const struct sp_hostsyms *h, struct sp_proc_table_config *pc)
{
	if (!h || !h->have_vdso)
		return;
	pc->vdso_build_id = h->vdso.build_id;
	pc->vdso_len = h->vdso.len;
}

void sp_hostsyms__snapshot_opts(struct sp_hostsyms *h, struct sp_snapshot_opts *so)
{
	if (!h)
		return;
	so->kernel = h->kl;
	so->jit = h->jit;
}

void sp_hostsyms__consumer(struct sp_hostsyms *h, struct sp_consumer *c)
{
	if (h)
		c->jit = h->jit;
}

struct sp_kernel_layout *sp_hostsyms__kernel(struct sp_hostsyms *h)
{
	return h ? h->kl : NULL;
}

struct sp_jit_maps *sp_hostsyms__jit(struct sp_hostsyms *h)
{
	return h ? h->jit : NULL;
}

const struct sp_vdso *sp_hostsyms__vdso(const struct sp_hostsyms *h)
{
	return h && h->have_vdso ? &h->vdso : NULL;
}

int sp_hostsyms__ship_kernel(struct sp_hostsyms *h)
{
	const char *pfx = h && h->cfg.log_prefix ? h->cfg.log_prefix : "spanprof: ";
	const struct sp_kmod *mods;
	char err[320] = "";
	uint8_t *gz = NULL;
	size_t n_mods, len = 0;
	int rc;

	if (!h || !h->cfg.kernel || atomic_load(&h->kernel_done) || !h->kernel_id.len)
		return 0;
	if (h->cfg.keep_kernel_snapshot) {
		if (!h->kernel_gz)
			return -ENOENT;	/* said at __new */
		gz = h->kernel_gz;
		len = h->kernel_gz_len;
	} else {
		mods = sp_kernel_layout__modules(h->kl, &n_mods);
		rc = sp_kallsyms__snapshot(&h->kernel_id, mods, n_mods, &gz, &len, err,
					   sizeof(err));
		if (rc) {
			fprintf(stderr, "%sno kernel symbol snapshot: %s\n", pfx, err);
			atomic_store(&h->kernel_done, true);	/* kptr_restrict stays */
			return rc;
		}
	}
	atomic_store(&h->kernel_done, true);	/* before: a quick loss clears it */
	rc = put(h, SP_SYMSTORE_KALLSYMS, h->kernel_id.id, h->kernel_id.len, gz, len);
	if (gz != h->kernel_gz)
		free(gz);
	if (rc)
		atomic_store(&h->kernel_done, false);
	else
		h->st.kernel_shipped++;
	return rc;
}

int sp_hostsyms__ship_vdso(struct sp_hostsyms *h)
{
	int rc;

	if (!h || !h->have_vdso || atomic_load(&h->vdso_done))
		return 0;
	atomic_store(&h->vdso_done, true);
	rc = put(h, SP_SYMSTORE_ELF, h->vdso.build_id.id, h->vdso.build_id.len, h->vdso.image,
		 h->vdso.len);
	if (rc)
		atomic_store(&h->vdso_done, false);
	else
		h->st.vdso_shipped++;
	return rc;
}

bool sp_hostsyms__profile_uses_vdso(const struct sp_profile *p)
{
	for (uint32_t i = 1; p && i < p->n_mappings; i++)
		if (!strcmp(sp_profile__str(p, p->mappings[i].filename), "[vdso]"))
			return true;
	return false;
}

void sp_hostsyms__lost(struct sp_hostsyms *h, int kind)
{
	if (!h)
		return;
	if (kind == SP_SYMSTORE_KALLSYMS)
		atomic_store(&h->kernel_done, false);
	else if (kind == SP_SYMSTORE_ELF)
		atomic_store(&h->vdso_done, false);
	else if (kind == SP_SYMSTORE_JIT)
		sp_jit_maps__restart_all(h->jit);
}

int sp_hostsyms__start(struct sp_hostsyms *h)
{
	return h ? sp_jit_maps__start(h->jit) : 0;
}

void sp_hostsyms__stop_jit(struct sp_hostsyms *h)
{
	if (!h)
		return;
	sp_jit_maps__free(h->jit);
	h->jit = NULL;
}

void sp_hostsyms__stats(struct sp_hostsyms *h, struct sp_hostsyms_stats *st)
{
	if (!h) {
		memset(st, 0, sizeof(*st));
		return;
	}
	pthread_mutex_lock(&h->lock);
	*st = h->st;
	pthread_mutex_unlock(&h->lock);
}
