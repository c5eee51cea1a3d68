/* SPDX-License-Identifier: MIT */
/*
 * consumer.c - see consumer.h.
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "collector/pipeline/aggregator.h"
#include "collector/pipeline/consumer.h"
#include "collector/tracectx/ctx_attrs.h"
#include "collector/procs/jit_maps.h"
#include "collector/procs/proc_table.h"
#include "collector/unwind/unwinder.h"
#include "profile/profile.h"

_Static_assert(sizeof(((struct sp_consumer_stats *)0)->samples_unread) / sizeof(uint64_t) ==
		       SP_PROC_UNREAD__MAX, "samples_unread has one slot per enum sp_proc_unread");

void sp_consumer__init(struct sp_consumer *c, struct sp_proc_table *procs, struct sp_agg *agg)
{
	memset(c, 0, sizeof(*c));
	c->procs = procs;
	c->agg = agg;
}

static void handle_proc_event(struct sp_consumer *c, const struct sp_event *e)
{
	if (e->type == SP_EV_EXEC) {
		bool lazy;

		c->stats.received_exec++;
		lazy = sp_proc_table__on_exec(c->procs, e->pid, e->comm, e->ts_ns);
		sp_jit_maps__forget(c->jit, e->pid);	/* a new image: a new map */
		/* Deferred: the old image's ranges leave BPF now (the new
		 * one's are written at its first sample; until then its
		 * frames step by frame pointer, and its mmaps send nothing). */
		if (lazy)
			sp_unwinder__on_exit(c->unwinder, e->pid, e->ts_ns);
		if (c->on_proc)
			c->on_proc(e->pid, lazy ? SP_PROC_EXEC_LAZY : SP_PROC_EXEC,
				   c->on_proc_ctx);
	} else if (e->type == SP_EV_CTX_PUBLISH) {
		c->stats.received_publish++;
		if (c->on_proc)
			c->on_proc(e->pid, SP_PROC_PUBLISH, c->on_proc_ctx);
	} else if (e->type == SP_EV_MMAP_EXEC) {
		c->stats.received_mmap++;
		sp_unwinder__on_exec_mapping(c->unwinder, e->pid, e->ts_ns);
	} else {
		c->stats.received_exit++;
		sp_unwinder__on_exit(c->unwinder, e->pid, e->ts_ns);
		sp_proc_table__on_exit(c->procs, e->pid);
		if (c->on_proc)
			c->on_proc(e->pid, SP_PROC_EXIT, c->on_proc_ctx);
	}
}

struct go_key_ctx {
	struct sp_consumer *c;
	uint32_t pid;
};

static int go_key_index(const uint8_t *key, uint8_t len, void *ctx)
{
	struct go_key_ctx *g = ctx;

	return g->c->go_key ? g->c->go_key(g->pid, key, len, g->c->go_key_ctx) : -1;
}

/* A goroutine's pprof labels (keys inline) -> canonical attrs keyed by the
 * process's Go key table. */
static void go_labels(struct sp_consumer *c, const struct sp_event *e, const uint8_t *raw,
		      struct sp_agg_key *key)
{
	struct go_key_ctx g = { .c = c, .pid = e->pid };
	uint32_t lost = 0, bad = 0;

	key->attrs_len = sp_ctx_attrs__canon_go(raw, e->ctx.attrs_len, go_key_index, &g, c->attrs,
						&lost, &bad);
	c->stats.attrs_samples += key->attrs_len != 0;
	c->stats.go_labels_samples += key->attrs_len != 0;
	c->stats.attrs_dropped += lost;
	c->stats.go_labels_bad_utf8 += bad;
}

static void handle_sample(struct sp_consumer *c, const struct sp_event *e,
			  const uint64_t *frames)
{
	struct sp_agg_key key;
	struct sp_agg_frames fr = { .addrs = c->addrs, .mappings = c->mappings,
				    .attrs = c->attrs };
	uint32_t kmap = sp_proc_table__kernel_mapping(c->procs);
	uint32_t n = e->kstack_n + e->ustack_n;
	bool anon = false;
	int first_sight;

	if (e->type == SP_EV_ONCPU)
		c->stats.received_oncpu++;
	else
		c->stats.received_offcpu++;
	if (e->flags & SP_F_KSTACK_TRUNC)
		c->stats.kstack_truncated++;
	if (e->flags & SP_F_USTACK_TRUNC)
		c->stats.ustack_truncated++;

	sp_consumer__prepare(c, e);
	/* Also stamps a known process with the current epoch: a kernel-only
	 * stack never reaches __resolve, yet the snapshot needs its info. */
	first_sight = e->pid && !sp_proc_table__touch(c->procs, e->pid);
	for (uint32_t i = 0; i < e->kstack_n; i++) {
		c->addrs[i] = frames[i];
		c->mappings[i] = kmap;
	}
	for (uint32_t i = e->kstack_n; i < n; i++) {
		c->addrs[i] = frames[i];
		c->mappings[i] = sp_proc_table__resolve(c->procs, e->pid, frames[i], e->ts_ns);
		if (!c->mappings[i]) {
			c->stats.frames_unresolved++;
		} else if (sp_proc_table__mapping(c->procs, c->mappings[i])->kind == SP_MAP_ANON) {
			c->stats.frames_unresolved++;
			c->stats.frames_anon++;
			anon = true;
		}
	}
	if (anon)
		sp_jit_maps__note(c->jit, e->pid, e->ts_ns);
	if (e->ustack_n) {
		const struct sp_proc_info *pi = sp_proc_table__proc(c->procs, e->pid);

		if (pi && pi->unread && pi->unread < SP_PROC_UNREAD__MAX)
			c->stats.samples_unread[pi->unread]++;
	}
	c->stats.frames += n;
	if (first_sight && c->on_proc)
		c->on_proc(e->pid, SP_PROC_FIRST_SIGHT, c->on_proc_ctx);

	memset(&key, 0, sizeof(key));
	key.pid = e->pid;
	key.tid = e->tid;
	key.kind = e->type == SP_EV_ONCPU ? SP_KIND_ONCPU : SP_KIND_OFFCPU;
	key.reason = e->reason;
	key.n_kernel = e->kstack_n;
	key.n_user = e->ustack_n;
	memcpy(key.comm, e->comm, sizeof(key.comm));
	if (e->ctx_status == SP_CTX_OK || e->ctx_status == SP_CTX_OBI ||
	    e->ctx_status == SP_CTX_GO) {
		key.has_ctx = 1;
		key.trace_flags = e->ctx.trace_flags;
		memcpy(key.trace_id, e->ctx.trace_id, sizeof(key.trace_id));
		memcpy(key.span_id, e->ctx.span_id, sizeof(key.span_id));
		c->stats.ctx_samples++;
		c->stats.go_samples += e->ctx_status == SP_CTX_GO;
		if (e->ctx.attrs_len && e->ctx_status != SP_CTX_GO) {
			uint32_t lost = 0;

			key.attrs_len = sp_ctx_attrs__canon((const uint8_t *)(frames + n),
							    e->ctx.attrs_len, c->attrs, &lost);
			c->stats.attrs_samples += key.attrs_len != 0;
			c->stats.attrs_dropped += lost;
		}
	}
	if ((e->ctx_status == SP_CTX_GO || e->ctx_status == SP_CTX_GO_LABELS) && e->ctx.attrs_len)
		go_labels(c, e, (const uint8_t *)(frames + n), &key);
	if (e->pid && !e->ustack_n && !(e->flags & SP_F_IDLE))
		c->stats.ustack_empty++;
	if (e->ustack_n) {
		c->stats.ustack_walked++;
		c->stats.ustack_root += !!(e->flags & SP_F_USTACK_ROOT);
		c->stats.ustack_frames += e->ustack_n;
		c->stats.ustack_frames_fp += e->unw_fp;
		c->stats.ustack_end[e->unw_end < SP_UNW_END__MAX ? e->unw_end : 0]++;
	}
	if (sp_agg__add(c->agg, &key, &fr, e->ts_ns, e->weight_ns) == 0)
		c->stats.aggregated++;
	else
		c->stats.agg_dropped++;
}

void sp_consumer__prepare(struct sp_consumer *c, const struct sp_event *e)
{
	if (e->pid && sp_proc_table__sampled(c->procs, e->pid, e->ts_ns) && c->on_proc)
		c->on_proc(e->pid, SP_PROC_EXEC, c->on_proc_ctx);
}

int sp_consumer__handle(void *ctx, void *data, size_t size)
{
	struct sp_consumer *c = ctx;
	const struct sp_event *e = data;

	if (size < SP_EVENT_HDR_SIZE || e->kstack_n > SP_MAX_FRAMES ||
	    e->ustack_n > SP_MAX_FRAMES || e->ctx.attrs_len > SP_CTX_ATTRS_MAX ||
	    size < SP_EVENT_HDR_SIZE + 8u * (e->kstack_n + e->ustack_n) + e->ctx.attrs_len) {
		c->stats.malformed++;
		return 0;
	}
	switch (e->type) {
	case SP_EV_ONCPU:
	case SP_EV_OFFCPU:
		handle_sample(c, e, (const uint64_t *)((const char *)data + SP_EVENT_HDR_SIZE));
		break;
	case SP_EV_EXEC:
	case SP_EV_EXIT:
	case SP_EV_CTX_PUBLISH:
	case SP_EV_MMAP_EXEC:
		handle_proc_event(c, e);
		break;
	default:
		c->stats.malformed++;
	}
	return 0;
}
