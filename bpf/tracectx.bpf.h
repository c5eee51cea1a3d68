/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * tracectx.bpf.h - read the sampled thread's OTEP 4947 trace context from
 * its TLS, in the thread's own context, into the record being built.
 *
 * Per sample: one hash lookup (is there a descriptor for this process?),
 * then TP from task->thread.fsbase, the slot (one read more for DTV), the
 * record pointer, and the 28-byte header with up to SP_CTX_ATTRS_MAX bytes
 * of its attrs in the same read.  valid must be exactly 1.  The attrs are
 * copied unparsed after the frames (abi.h); user space decodes them.
 * Every outcome is counted (SP_CNT_CTX_*) and written as hdr.ctx_status.
 *
 * Fallback: when the thread has no valid TLS context (none published, NULL,
 * invalid or unreadable) and OBI's shared map is present, the thread's entry
 * there (key pid_tgid) is used: status SP_CTX_OBI.
 */
#ifndef SPANPROF_TRACECTX_BPF_H
#define SPANPROF_TRACECTX_BPF_H

#include "maps.bpf.h"
#include "golabels.bpf.h"

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

/*
 * The record header and its attrs as one read lands them: the header sits
 * at offset 4 so that the attrs start 8-aligned and copy out as words.
 */
struct sp_ctx_raw {
	__u32 _align;
	struct sp_otel_thread_ctx_hdr hdr;
	__u64 attrs[SP_CTX_ATTRS_MAX / 8];
};

/*
 * Copies the valid record's attrs (at most SP_CTX_ATTRS_MAX bytes) right
 * after the frames already in s.  read_attrs: the optimistic read did not
 * bring them (it crossed into an unmapped page), read them on their own.
 */
static __always_inline void sp_ctx_attrs(struct sp_scratch *s, struct sp_ctx_raw *raw,
					 __u64 rec, bool read_attrs)
{
	__u32 len = raw->hdr.attrs_size, nf;

	if (!len)
		return;
	if (len > SP_CTX_ATTRS_MAX) {
		len = SP_CTX_ATTRS_MAX;
		s->hdr.flags |= SP_F_ATTRS_TRUNC;
		sp_count(SP_CNT_CTX_ATTRS_TRUNC);
	}
	if (read_attrs && bpf_probe_read_user(raw->attrs, len, (void *)(rec + sizeof(raw->hdr)))) {
		sp_count(SP_CNT_CTX_ATTRS_ERR);
		return;
	}
	/* A constant-size copy (16 word moves, no helper); bytes past len are
	 * not emitted (sp_emit sends attrs_len of them). */
	nf = (s->hdr.kstack_n + s->hdr.ustack_n) & 255;
	__builtin_memcpy(&s->frames[nf], raw->attrs, sizeof(raw->attrs));
	s->hdr.ctx.attrs_len = len;
}

/* Call after the stacks are in s: the attrs go after the last frame.
 * Returns false when tgid has no TLS descriptor. */
static __always_inline bool sp_read_tls_ctx(struct sp_scratch *s, __u32 tgid)
{
	struct sp_ctx_raw raw;
	struct sp_tls_desc *d;
	struct task_struct *task;
	__u64 tp, slot, ptr, dtv, blk;
	bool read_attrs = false;

	d = bpf_map_lookup_elem(&tls_descs, &tgid);
	if (!d)
		return false;	/* SP_CTX_NONE: process publishes nothing */
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
		return true;
	}
	if (bpf_probe_read_user(&ptr, sizeof(ptr), (void *)slot))
		goto read_err;
	if (!ptr) {
		s->hdr.ctx_status = SP_CTX_NULL;
		sp_count(SP_CNT_CTX_NULL);
		return true;
	}
	/* One read for header and attrs: a record is small and sits in
	 * mapped memory, so reading past its end almost never faults; when
	 * it does (the record ends a mapping), the header is read alone. */
	if (bpf_probe_read_user(&raw.hdr, sizeof(raw.hdr) + sizeof(raw.attrs), (void *)ptr)) {
		if (bpf_probe_read_user(&raw.hdr, sizeof(raw.hdr), (void *)ptr))
			goto read_err;
		read_attrs = true;
	}
	if (raw.hdr.valid != 1) {
		s->hdr.ctx_status = SP_CTX_INVALID;
		sp_count(SP_CNT_CTX_INVALID);
		return true;
	}
	__builtin_memcpy(s->hdr.ctx.trace_id, raw.hdr.trace_id, SP_TRACE_ID_LEN);
	__builtin_memcpy(s->hdr.ctx.span_id, raw.hdr.span_id, SP_SPAN_ID_LEN);
	s->hdr.ctx.trace_flags = raw.hdr.trace_flags;
	s->hdr.ctx_status = SP_CTX_OK;
	sp_count(SP_CNT_CTX_OK);
	sp_ctx_attrs(s, &raw, ptr, read_attrs);
	return true;
read_err:
	s->hdr.ctx_status = SP_CTX_READ_ERR;
	sp_count(SP_CNT_CTX_READ_ERR);
	return true;
}

/* OTEP 4947 record if the process publishes one, else the goroutine's
 * pprof labels if it is a Go process (golabels.bpf.h), else nothing; then
 * OBI's map when neither gave ids. */
static __always_inline void sp_read_trace_ctx(struct sp_scratch *s, __u32 tgid)
{
	if (cfg_read_ctx && !sp_read_tls_ctx(s, tgid))
		sp_read_go_ctx(s, tgid);
	if (s->hdr.ctx_status != SP_CTX_OK && s->hdr.ctx_status != SP_CTX_GO)
		sp_read_obi_ctx(s);
}

#endif /* SPANPROF_TRACECTX_BPF_H */
