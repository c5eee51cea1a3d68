/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * tracectx.bpf.h - read the sampled thread's OTEP 4947 trace context from
 * its TLS, in the thread's own context, into the record being built.
 *
 * Per sample: one hash lookup (is there a descriptor for this process?),
 * then TP from task->thread.fsbase, the slot (one read more for DTV), the
 * record pointer, and the 28-byte header.  valid must be exactly 1.
 * Every outcome is counted (SP_CNT_CTX_*) and written as hdr.ctx_status.
 *
 * Fallback: when the thread has no valid TLS context (none published, NULL,
 * invalid or unreadable) and OBI's shared map is present, the thread's entry
 * there (key pid_tgid) is used: status SP_CTX_OBI.
 */
#ifndef SPANPROF_TRACECTX_BPF_H
#define SPANPROF_TRACECTX_BPF_H

#include "maps.bpf.h"

/* Returns 1 when OBI's map had a context for this thread. */
static __always_inline int sp_read_obi_ctx(struct sp_scratch *s)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct sp_obi_ctx *o;

	if (!cfg_obi)
		return 0;
	o = bpf_map_lookup_elem(&obi_ctx, &id);
	if (!o)
		return 0;
	__builtin_memcpy(s->hdr.ctx.trace_id, o->trace_id, SP_TRACE_ID_LEN);
	__builtin_memcpy(s->hdr.ctx.span_id, o->span_id, SP_SPAN_ID_LEN);
	s->hdr.ctx.trace_flags = 1;	/* OBI only shares sampled traces */
	s->hdr.ctx_status = SP_CTX_OBI;
	sp_count(SP_CNT_CTX_OBI);
	return 1;
}

static __always_inline void sp_read_tls_ctx(struct sp_scratch *s, __u32 tgid)
{
	struct sp_otel_thread_ctx_hdr rec;
	struct sp_tls_desc *d;
	struct task_struct *task;
	__u64 tp, slot, ptr, dtv, blk;

	if (!cfg_read_ctx)
		return;
	d = bpf_map_lookup_elem(&tls_descs, &tgid);
	if (!d)
		return;		/* SP_CTX_NONE: process publishes nothing */
	/* A BTF task pointer: a direct (CO-RE relocated) load, no helper. */
	task = bpf_get_current_task_btf();
	tp = task->thread.fsbase;
	if (d->model == SP_TLS_STATIC) {
		slot = tp + d->offset;
	} else if (d->model == SP_TLS_DTV) {
		if (bpf_probe_read_user(&dtv, sizeof(dtv), (void *)(tp + d->dtv_offset)) ||
		    bpf_probe_read_user(&blk, sizeof(blk),
					(void *)(dtv + d->module_id * d->dtv_stride)))
			goto read_err;
		if (!blk || blk == (__u64)-1)	/* block not allocated yet */
			goto read_err;
		slot = blk + d->offset;
	} else {
		return;
	}
	if (bpf_probe_read_user(&ptr, sizeof(ptr), (void *)slot))
		goto read_err;
	if (!ptr) {
		s->hdr.ctx_status = SP_CTX_NULL;
		sp_count(SP_CNT_CTX_NULL);
		return;
	}
	if (bpf_probe_read_user(&rec, sizeof(rec), (void *)ptr))
		goto read_err;
	if (rec.valid != 1) {
		s->hdr.ctx_status = SP_CTX_INVALID;
		sp_count(SP_CNT_CTX_INVALID);
		return;
	}
	__builtin_memcpy(s->hdr.ctx.trace_id, rec.trace_id, SP_TRACE_ID_LEN);
	__builtin_memcpy(s->hdr.ctx.span_id, rec.span_id, SP_SPAN_ID_LEN);
	s->hdr.ctx.trace_flags = rec.trace_flags;
	s->hdr.ctx_status = SP_CTX_OK;
	sp_count(SP_CNT_CTX_OK);
	return;
read_err:
	s->hdr.ctx_status = SP_CTX_READ_ERR;
	sp_count(SP_CNT_CTX_READ_ERR);
}

static __always_inline void sp_read_trace_ctx(struct sp_scratch *s, __u32 tgid)
{
	sp_read_tls_ctx(s, tgid);
	if (s->hdr.ctx_status != SP_CTX_OK)
		sp_read_obi_ctx(s);
}

#endif /* SPANPROF_TRACECTX_BPF_H */
