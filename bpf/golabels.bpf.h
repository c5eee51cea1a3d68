/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * golabels.bpf.h - read the pprof labels of the goroutine the sampled
 * thread runs, in the thread's own context, into the record being built.
 *
 * Why labels: Go code binds the active span to the goroutine with
 * pprof.Do(ctx, pprof.Labels("trace_id", ..., "span_id", ...), f) (the
 * OpenTelemetry practice; OTEP 4947 names it go_pprof_labels_v1).  A
 * goroutine moves between OS threads, so a thread-local record cannot
 * carry it; the goroutine itself does.
 *
 * Chain (struct sp_go_desc in abi.h): TP -> g (TLS slot) -> g.labels, or
 * when g has none, g.m -> m.curg -> curg.labels (sp_read_go_ctx says why
 * a labelled g is m.curg).  m.curg, not g: on the system stack (g0) or in
 * a signal handler (gsignal) g is not the user goroutine, and m.curg is
 * NULL when the M runs no goroutine (scheduler, idle, spinning): then
 * there are no ids, never the ids of a goroutine that ran on this thread
 * before.  In a blocking syscall or cgo call m.curg is still the caller:
 * its labels.  The parsed result of a label set is cached per labels
 * pointer and GC cycle (go_label_cache; the cycle is the process's GC
 * epoch, bumped by a uprobe on runtime.gcSweep, or else sweepgen;
 * sp_read_go_ctx has the proof that a hit is the same set).
 *
 * Labels, read with bounded reads into a per-CPU scratch:
 *   map (Go <= 1.23): *lp = hmap; its 2^B buckets (B <= SP_GO_MAX_B), the
 *     not-yet-evacuated slots of oldbuckets while the map is mid-grow, and
 *     overflow chains, at most SP_GO_MAX_BUCKETS bucket reads; a slot is
 *     live when tophash >= 5 (evacuated slots carry 2..4, so an entry is
 *     seen exactly once); emptyRest (0) ends a chain.
 *   slice (Go >= 1.24): lp = {array, len, cap}: one read of
 *     min(len, SP_GO_MAX_LABELS) pairs.
 * Either way at most SP_GO_MAX_LABELS {key, value} string pairs, then for
 * each: key "trace_id" with a 32-char value and "span_id" with a 16-char
 * value are parsed as lower-case hex (W3C); any other byte, another
 * length, an all-zero id, an unreadable value or one id without the other
 * drops both (SP_CNT_GO_BAD_IDS): never half-used.  Other labels are
 * copied as {klen, vlen, key, value} entries into the attrs after the
 * frames (abi.h), keys <= SP_GO_KEY_MAX, values cut to SP_GO_VALUE_MAX,
 * as many as fit SP_CTX_ATTRS_MAX bytes; what is left out is counted
 * (SP_CNT_GO_LABELS_CUT), as is a label whose strings fault
 * (SP_CNT_GO_LABEL_ERR).  User space checks UTF-8 and names the keys.
 *
 * Accounting, one outcome per read (a process with a Go descriptor):
 *   reads = GO_IDS + GO_NO_GOROUTINE + GO_NO_LABELS + GO_NO_IDS
 *           + GO_BAD_IDS + GO_READ_ERR
 * and, for each read that reached a labels pointer, one of GO_CACHE_HIT,
 * GO_CACHE_MISS, GO_CACHE_OFF (abi.h).  A hit counts the outcome and
 * GO_LABELS_CUT as its parse did (a parse with a failed read is never
 * cached, so GO_LABEL_ERR comes from parses only).
 * Status: SP_CTX_GO with ids; SP_CTX_GO_LABELS when labels without ids
 * were copied; otherwise NULL (no goroutine / labels / ids), INVALID (bad
 * ids) or READ_ERR.
 *
 * The loops run through bpf_loop, so the verifier checks each callback
 * once, whatever the bounds.
 */
#ifndef SPANPROF_GOLABELS_BPF_H
#define SPANPROF_GOLABELS_BPF_H

#include "maps.bpf.h"

static __always_inline struct sp_go_scratch *sp_go_scratch(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&go_scratch, &zero);
}

/* Lower-case hex digit value, or 16. */
static __always_inline __u8 sp_go_nibble(__u8 c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return 16;
}

/* Parses n (16 or 8) bytes of id from 2n hex chars in gs->hex; 0 if the
 * id is valid (hex, not all zero). */
static __always_inline int sp_go_parse_hex(const __u8 *hex, __u8 *id, int n)
{
	__u8 any = 0;

#pragma unroll
	for (int i = 0; i < SP_TRACE_ID_LEN; i++) {
		__u8 hi, lo;

		if (i >= n)
			break;
		hi = sp_go_nibble(hex[2 * i]);
		lo = sp_go_nibble(hex[2 * i + 1]);
		if ((hi | lo) & 16)
			return -1;
		id[i] = hi << 4 | lo;
		any |= id[i];
	}
	return any ? 0 : -1;
}

/* One bucket read and its live slots appended to the pairs; returns 1 to
 * stop the walk. */
static long sp_go_bucket_cb(__u32 i, void *ctx)
{
	struct sp_go_scratch *gs = sp_go_scratch();
	struct sp_go_walk *w;
	bool stop_chain = false;

	if (!gs)
		return 1;
	w = &gs->walk;
	if (!w->cur) {
		/* next table slot: new buckets first, then old ones */
		if (w->table < w->nb)
			w->cur = w->buckets + (__u64)w->table * SP_GO_BUCKET_SIZE;
		else if (w->table < w->nb + w->nold)
			w->cur = w->oldbuckets + (__u64)(w->table - w->nb) * SP_GO_BUCKET_SIZE;
		else
			return 1;	/* every bucket seen */
		w->table++;
	}
	if (bpf_probe_read_user(gs->bucket, sizeof(gs->bucket), (void *)w->cur)) {
		w->label_err = 1;	/* a bucket we cannot see: its labels lost */
		w->fault = 1;
		w->cur = 0;
		return 0;
	}
	w->read_ok++;
#pragma unroll
	for (int k = 0; k < SP_GO_BUCKET_SLOTS; k++) {
		__u8 th = gs->bucket[k];

		if (stop_chain)
			break;
		if (th == SP_GO_TOPHASH_EMPTY_REST) {
			stop_chain = true;
			break;
		}
		if (th < SP_GO_TOPHASH_MIN)
			continue;
		if (w->n >= SP_GO_MAX_LABELS) {
			w->cut = 1;
			return 1;
		}
		__builtin_memcpy(&gs->pairs[w->n & (SP_GO_MAX_LABELS - 1)].key,
				 &gs->bucket[SP_GO_BUCKET_KEYS + 16 * k], 16);
		__builtin_memcpy(&gs->pairs[w->n & (SP_GO_MAX_LABELS - 1)].value,
				 &gs->bucket[SP_GO_BUCKET_VALUES + 16 * k], 16);
		w->n++;
	}
	w->cur = 0;
	if (!stop_chain)
		__builtin_memcpy(&w->cur, &gs->bucket[SP_GO_BUCKET_OVERFLOW], 8);
	return 0;
}

/* An id label's value: exactly 2 * n lower-case hex chars. */
static __always_inline void sp_go_id(struct sp_go_walk *w, struct sp_go_scratch *gs,
				     const struct sp_go_str *v, __u8 *id, int n, __u8 *have)
{
	if (*have || v->len != 2 * (__u64)n) {
		w->bad = 1;	/* duplicate, wrong length */
		return;
	}
	if (bpf_probe_read_user(gs->hex, 2 * n, (void *)v->ptr)) {
		w->bad = 1;	/* unreadable: maybe only now (not cached) */
		w->fault = 1;
		return;
	}
	if (sp_go_parse_hex(gs->hex, id, n)) {
		w->bad = 1;	/* not hex, or zero */
		return;
	}
	*have = 1;
}

/* One collected pair: an id, or an attribute entry. */
static long sp_go_pair_cb(__u32 i, void *ctx)
{
	struct sp_go_scratch *gs = sp_go_scratch();
	struct sp_go_walk *w;
	struct sp_go_pair p;
	__u64 kw = 0, klen, vlen;
	__u32 o, need;

	if (!gs)
		return 1;
	w = &gs->walk;
	if (i >= w->n)
		return 1;
	p = gs->pairs[i & (SP_GO_MAX_LABELS - 1)];
	klen = p.key.len;
	vlen = p.value.len;
	if (klen == 7 || klen == 8) {
		/* "trace_id" / "span_id": one 8-byte word to compare */
		if (bpf_probe_read_user(&kw, klen, (void *)p.key.ptr)) {
			w->label_err = 1;
			w->fault = 1;
			return 0;
		}
		if (klen == 8 && kw == 0x64695f6563617274ull) {	/* "trace_id" LE */
			sp_go_id(w, gs, &p.value, w->trace_id, SP_TRACE_ID_LEN, &w->have_trace);
			return 0;
		}
		if (klen == 7 && kw == 0x0064695f6e617073ull) {	/* "span_id" LE */
			sp_go_id(w, gs, &p.value, w->span_id, SP_SPAN_ID_LEN, &w->have_span);
			return 0;
		}
	}
	if (klen == 0 || klen > SP_GO_KEY_MAX) {
		w->cut = 1;
		return 0;
	}
	if (vlen > SP_GO_VALUE_MAX) {
		vlen = SP_GO_VALUE_MAX;
		w->cut = 1;
	}
	need = 2 + klen + vlen;
	if (w->attrs_len + need > SP_CTX_ATTRS_MAX) {
		w->cut = 1;	/* a shorter label later may still fit */
		return 0;
	}
	o = w->attrs_len & (SP_CTX_ATTRS_MAX - 1);
	gs->attrs[o] = klen;
	gs->attrs[o + 1] = vlen;
	if (kw)
		__builtin_memcpy(&gs->attrs[o + 2], &kw, 8);
	else if (bpf_probe_read_user(&gs->attrs[o + 2], klen, (void *)p.key.ptr))
		goto err;
	if (vlen && bpf_probe_read_user(&gs->attrs[o + 2 + klen], vlen, (void *)p.value.ptr))
		goto err;
	w->attrs_len += need;
	return 0;
err:
	w->label_err = 1;
	w->fault = 1;
	return 0;
}

/* The pairs of a map[string]string label set (Go <= 1.23); 0 or -1 when
 * the map cannot be read. */
static __always_inline int sp_go_map_pairs(struct sp_go_walk *w, __u64 lp)
{
	__u8 hdr[SP_GO_HMAP_HDR];
	__u64 h, count;
	__u8 b, flags;

	if (bpf_probe_read_user(&h, sizeof(h), (void *)lp))
		return -1;
	if (!h)
		return 0;	/* nil map: no labels */
	if (bpf_probe_read_user(hdr, sizeof(hdr), (void *)h))
		return -1;
	__builtin_memcpy(&count, &hdr[SP_GO_HMAP_COUNT], 8);
	__builtin_memcpy(&w->buckets, &hdr[SP_GO_HMAP_BUCKETS], 8);
	__builtin_memcpy(&w->oldbuckets, &hdr[SP_GO_HMAP_OLDBUCKETS], 8);
	b = hdr[SP_GO_HMAP_B];
	flags = hdr[SP_GO_HMAP_FLAGS];
	if (!count || !w->buckets)
		return 0;
	if (b > SP_GO_MAX_B || count > SP_GO_MAX_LABELS) {
		w->cut = 1;	/* read what the bounds allow */
		if (b > SP_GO_MAX_B)
			b = SP_GO_MAX_B;
	}
	w->nb = 1u << b;
	if (w->oldbuckets)
		w->nold = (flags & SP_GO_HMAP_SAME_SIZE_GROW) || !b ? w->nb : w->nb / 2;
	if (w->nb + w->nold > SP_GO_MAX_BUCKETS)
		w->cut = 1;
	bpf_loop(SP_GO_MAX_BUCKETS, sp_go_bucket_cb, NULL, 0);
	if (!w->read_ok)
		return -1;	/* not one bucket readable: the map is */
	if (w->cur || w->table < w->nb + w->nold)
		w->cut = 1;	/* stopped by the read bound */
	return 0;
}

/* The pairs of a sorted-slice label set (Go >= 1.24). */
static __always_inline int sp_go_slice_pairs(struct sp_go_walk *w, __u64 lp)
{
	struct sp_go_scratch *gs = sp_go_scratch();
	struct { __u64 array, len, cap; } sl;
	__u32 n;

	if (!gs || bpf_probe_read_user(&sl, sizeof(sl), (void *)lp))
		return -1;
	if (!sl.len)
		return 0;
	if (sl.len > sl.cap || !sl.array)
		return -1;	/* not a slice header */
	n = sl.len > SP_GO_MAX_LABELS ? SP_GO_MAX_LABELS : sl.len;
	if (sl.len > SP_GO_MAX_LABELS)
		w->cut = 1;
	if (bpf_probe_read_user(gs->pairs, (n & (2 * SP_GO_MAX_LABELS - 1)) * SP_GO_LABEL_SIZE,
				(void *)sl.array))
		return -1;
	w->n = n;
	return 0;
}

/* The parsed labels into r (gs->res): outcome, status, ids, attrs. */
static __always_inline void sp_go_result(struct sp_go_walk *w, struct sp_go_scratch *gs,
					 struct sp_go_cached *r)
{
	r->cut = w->cut;
	r->attrs_len = w->attrs_len;
	if (w->attrs_len)
		__builtin_memcpy(r->attrs, gs->attrs, SP_CTX_ATTRS_MAX);
	if (w->have_trace && w->have_span && !w->bad) {
		__builtin_memcpy(r->trace_id, w->trace_id, SP_TRACE_ID_LEN);
		__builtin_memcpy(r->span_id, w->span_id, SP_SPAN_ID_LEN);
		r->status = SP_CTX_GO;
		r->outcome = SP_CNT_GO_IDS;
		return;
	}
	if (w->bad || w->have_trace || w->have_span)
		r->outcome = SP_CNT_GO_BAD_IDS;
	else if (!w->n)
		r->outcome = SP_CNT_GO_NO_LABELS;
	else
		r->outcome = SP_CNT_GO_NO_IDS;
	if (w->attrs_len)
		r->status = SP_CTX_GO_LABELS;
	else
		r->status = r->outcome == SP_CNT_GO_BAD_IDS ? SP_CTX_INVALID : SP_CTX_NULL;
}

/* A parsed result (fresh or cached) into the record, and its counts. */
static __always_inline void sp_go_apply(struct sp_scratch *s, const struct sp_go_cached *r)
{
	__u32 nf;

	if (r->cut)
		sp_count(SP_CNT_GO_LABELS_CUT);
	if (r->attrs_len) {
		/* constant-size copy, as for OTEP attrs; attrs_len bytes count */
		nf = (s->hdr.kstack_n + s->hdr.ustack_n) & 255;
		__builtin_memcpy(&s->frames[nf], r->attrs, SP_CTX_ATTRS_MAX);
		s->hdr.ctx.attrs_len = r->attrs_len;
	}
	if (r->status == SP_CTX_GO) {
		__builtin_memcpy(s->hdr.ctx.trace_id, r->trace_id, SP_TRACE_ID_LEN);
		__builtin_memcpy(s->hdr.ctx.span_id, r->span_id, SP_SPAN_ID_LEN);
	}
	s->hdr.ctx_status = r->status;
	sp_count(r->outcome);
}

/* g.sched.sp: gobuf is the field after g.m in every release (stack,
 * stackguard0/1, _panic, _defer, m: 56 bytes), and sp its first word. */
#define SP_GO_G_SCHED_SP 56

/* g.m, g.labels and, when sched_sp is not NULL, g.sched.sp of g; g.stack
 * {lo, hi} is left in gs->gspan[0..16).  One read of g's first
 * SP_GO_G_SPAN bytes when the fields lie inside (every release in the
 * table), else one read per field. */
static __always_inline int sp_go_g_fields(struct sp_go_scratch *gs, const struct sp_go_desc *d,
					  __u64 g, __u64 *m, __u64 *lp, __u64 *sched_sp)
{
	__u32 om = d->g_m, ol = d->g_labels;

	if (om <= SP_GO_G_SPAN - 8 && ol <= SP_GO_G_SPAN - 8) {
		if (bpf_probe_read_user(gs->gspan, SP_GO_G_SPAN, (void *)g))
			return -1;
		__builtin_memcpy(m, &gs->gspan[om], 8);
		__builtin_memcpy(lp, &gs->gspan[ol], 8);
		if (sched_sp)
			__builtin_memcpy(sched_sp, &gs->gspan[SP_GO_G_SCHED_SP], 8);
		return 0;
	}
	if (bpf_probe_read_user(gs->gspan, 16, (void *)g) ||
	    bpf_probe_read_user(m, sizeof(*m), (void *)(g + d->g_m)) ||
	    bpf_probe_read_user(lp, sizeof(*lp), (void *)(g + d->g_labels)))
		return -1;
	if (sched_sp && bpf_probe_read_user(sched_sp, 8, (void *)(g + SP_GO_G_SCHED_SP)))
		return -1;
	return 0;
}

/*
 * Whether the stack a walk from the user frame pointer bp reads is not
 * g's but its M's system stack (g0), for a labelled g in the TLS slot;
 * also true when m.g0 cannot be read (no ids rather than maybe wrong
 * ones; counted as a switch).  The window: runtime.gogo stores the next
 * goroutine in the TLS slot before it loads that goroutine's SP and BP
 * (golang/go src/runtime/asm_amd64.s, gogo<>), so for a few
 * instructions the registers are g0's, whose frames (execute <- schedule
 * <- park_m) lead, through the frame pointer mcall kept, into the frames
 * of the goroutine that left: its stack with the next one's ids
 * (before this check: test_go_labels_attribution, one sample in ~5000
 * now and then; test_go_labels_switching, where goroutines yield all the
 * time, one wrong sample in 1 run of 2; with it the check fired 1-3 times
 * a run, and no sample was wrong in 5 runs).
 * The test is BP, not SP: a vDSO call (runtime.nanotime1, time.Now)
 * runs on g0's stack with g unchanged and BP still in the goroutine's
 * frames, and its walk is the goroutine's.  And BP outside g.stack is
 * not enough: assembly may use BP as a register (crypto), with g's own
 * stack under the walk; so only a BP inside g0's stack counts.  g.stack
 * is in gs->gspan[0..16) (sp_go_g_fields); m.g0 is m's first field in
 * every release.
 */
static __always_inline bool sp_go_on_g0_stack(struct sp_go_scratch *gs, __u64 m, __u64 bp)
{
	__u64 lo, hi, g0;

	__builtin_memcpy(&lo, &gs->gspan[0], 8);
	__builtin_memcpy(&hi, &gs->gspan[8], 8);
	if (bp - lo < hi - lo)
		return false;	/* lo <= bp < hi, the common case: no read */
	if (!m || bpf_probe_read_user(&g0, sizeof(g0), (void *)m) || !g0 ||
	    bpf_probe_read_user(gs->g0_stack, sizeof(gs->g0_stack), (void *)g0))
		return true;
	return bp >= gs->g0_stack[0] && bp < gs->g0_stack[1];
}

/*
 * Reads the labels of the goroutine the current thread runs, for a
 * process with a Go descriptor; the record's ids and attrs are filled as
 * the header comment says.  Returns false when tgid has no descriptor.
 *
 * Shortcut: g.labels of the TLS g itself when not NULL.  Only user
 * goroutines ever have labels (Go's runtime writes g.labels in three
 * places: runtime_setProfLabel sets getg().labels, called from user code
 * by pprof.SetGoroutineLabels/Do; newproc1 copies the creator's m.curg
 * labels into the new user goroutine; goexit0 clears them), and a user
 * goroutine in a thread's TLS slot is that M's m.curg (execute sets curg
 * before gogo switches g; mcall/systemstack switch g to g0 first).  So a
 * labelled TLS g is m.curg and m.curg is read only when g has none.
 * Except while gogo switches to it: then the registers, and the stack
 * walked, are still the system stack's (sp_go_on_g0_stack): no ids.
 * (bpf_task_pt_regs is the user frame of an interrupt from user mode
 * too, on x86-64: the entry saves it at the top of the task's stack.)
 *
 * Cache (go_label_cache, key {tgid, descriptor seq, labels pointer}):
 * a label set is immutable once a goroutine has it: pprof.WithLabels
 * builds a new map (Go <= 1.23) or a new labelMap{LabelSet} with a new
 * slice (Go >= 1.24) from the parent's and the new labels and never
 * writes it again (golang/go src/runtime/pprof/label.go), and
 * runtime_setProfLabel stores only the pointer (src/runtime/proflabel.go).
 * What can change at one address is the object: a set no goroutine holds
 * any more is freed by the GC and its memory may hold another set later.
 * So an entry holds the GC cycle ("gen") of the program run that parsed
 * it, and a hit needs the same gen now.  Two sources, per descriptor:
 *
 * GC epoch (d->gc_epoch; no user read): the process's go_gc_epochs entry,
 * bumped by sp_go_gc (gogc.bpf.c), a uprobe on the entry of
 * runtime.gcSweep.  Why that function (Go 1.19 src/runtime/mgc.go, mgcsweep.go):
 * heap memory is freed only by sweeping (sweepone / mspan.sweep, also
 * from mcentral and large-object allocation, and finishsweep_m in
 * gcStart), and a span is swept only when its sweepgen is
 * mheap_.sweepgen - 2; gcStart's finishsweep_m leaves every span swept
 * (span sweepgen == mheap_.sweepgen), so nothing is sweepable until
 * gcSweep does `mheap_.sweepgen += 2`, with the world stopped, at the
 * end of gcMarkTermination, its only caller, once per cycle.  The
 * uprobe runs before gcSweep's first instruction, so before that add
 * and before any sweep of the cycle's garbage.  (gcStart would bump
 * too, but is entered several times per cycle, each a needless miss;
 * gcMarkTermination is as good, gcSweep is where sweepgen moves.)
 *
 * Why a hit is the set it names: the entry was written by a run R0
 * that read lp from a goroutine that held it, the set, and gen E; the
 * set was reachable for all of R0 (its goroutine is stopped on this
 * thread, or switched out by it: it cannot drop its labels meanwhile).
 * Suppose a later run R1 finds the same lp, reads gen E again, but the
 * set at lp was freed after R0 (and lp now holds another one).  Freeing
 * needs a mark that found the set unreachable: a mark already running
 * in R0 keeps it (the hybrid write barrier, src/runtime/mbarrier.go,
 * keeps what was reachable at mark start and what is allocated during
 * the mark; an object unreachable at mark start is never reachable
 * again, so one reachable in R0 is one of those), so the freeing cycle
 * started marking after R0, and its gcSweep entry, the bump, came after
 * R0's read of E and before the sweep that freed the set, before the
 * new set was built there and its pointer stored in a g.  R1 reads lp
 * first, then the epoch: x86 keeps loads in order and stores in causal
 * order (the bump is a locked add), so R1, having seen the new pointer,
 * sees the bumped epoch: != E, a miss.  The epoch is the low 32 bits of
 * a counter that would need 2^32 GC cycles of one process to come back.
 * Without its go_gc_epochs entry (not created yet, or already deleted),
 * no cache for that read: sweepgen is never mixed with epochs in one
 * descriptor's entries.
 *
 * sweepgen (d->gc_epoch 0, d->sweepgen set; one user read more): the
 * same argument with runtime.mheap_.sweepgen itself, which gcSweep
 * grows by 2 per cycle (a u32: 2^31 cycles to come back), read in the
 * run; for a fixed-address binary with .symtab and DWARF whose epoch
 * probe could not be attached.  Neither: parsed uncached, counted.
 *
 * The descriptor's seq in the key separates processes and images (exec; a
 * reused pid).  Results with a failed read are not cached (a page may be
 * readable at the next sample).
 */
static __always_inline bool sp_read_go_ctx(struct sp_scratch *s, __u32 tgid)
{
	struct sp_go_scratch *gs;
	struct sp_go_cached *c;
	struct sp_go_desc *d;
	struct task_struct *task;
	struct sp_go_walk *w;
	__u64 g, m, curg, lp, *ep;
	__u32 outcome, gen = 0;
	bool cache;
	int err;

	if (!cfg_read_go)
		return false;
	d = bpf_map_lookup_elem(&go_descs, &tgid);
	if (!d)
		return false;
	gs = sp_go_scratch();
	if (!gs)
		goto read_err;
	task = bpf_get_current_task_btf();
	if (bpf_probe_read_user(&g, sizeof(g), (void *)(task->thread.fsbase + d->tls_g)))
		goto read_err;
	if (!g)
		goto no_goroutine;
	if (sp_go_g_fields(gs, d, g, &m, &lp, NULL))
		goto read_err;
	/* the shortcut's exception: gogo under way (sp_go_on_g0_stack) */
	if (lp && sp_go_on_g0_stack(gs, m, ((struct pt_regs *)bpf_task_pt_regs(task))->bp))
		goto switching;
	if (!lp) {
		/* g0 or gsignal (then m.curg is the user goroutine), or a user
		 * goroutine without labels (then m.curg is g itself) */
		if (!m)
			goto no_goroutine;
		if (bpf_probe_read_user(&curg, sizeof(curg), (void *)(m + d->m_curg)))
			goto read_err;
		if (!curg)
			goto no_goroutine;
		if (curg != g) {
			/* On the system stack m.curg is taken only while it runs
			 * (curg.sched.sp 0: gogo clears it once on the goroutine's
			 * stack; a signal on gsignal interrupted it).  Otherwise
			 * a switch is under way and the stack walked is not
			 * curg's: execute() sets m.curg to the next goroutine
			 * before gogo leaves g0, and mcall keeps the frame pointer
			 * of the goroutine that left, so the walk from g0 ends in
			 * that goroutine's frames: its stack with the next one's
			 * ids (seen in test_go_labels_attribution, one sample in
			 * ~3000).  But for a goroutine in a syscall
			 * (_Gsyscall, 3, also with _Gscan 0x1000): a cgo call
			 * (cgocall's entersyscall, then asmcgocall to g0), or
			 * exitsyscall0 before dropg: the walk from g0 ends in
			 * curg's own frames then.  Status offset from DWARF only
			 * (0: cgo calls carry no ids); a labelled goroutine's
			 * other systemstack calls carry none either. */
			__u64 cm, csp;
			__u32 st = 0;

			if (sp_go_g_fields(gs, d, curg, &cm, &lp, &csp))
				goto read_err;
			if (csp && d->g_status &&
			    bpf_probe_read_user(&st, sizeof(st), (void *)(curg + d->g_status)))
				goto read_err;
			if (csp && (st & ~0x1000u) != 3)
				goto switching;
		}
	}
	if (!lp) {
		outcome = SP_CNT_GO_NO_LABELS;
		s->hdr.ctx_status = SP_CTX_NULL;
		goto count;
	}
	/* The GC cycle, read after lp (the order the proof above needs), in
	 * the same program run as the set's contents. */
	cache = false;
	if (!cfg_go_cache) {
	} else if (cfg_go_epoch && d->gc_epoch) {
		ep = bpf_map_lookup_elem(&go_gc_epochs, &tgid);
		if (ep) {
			gen = (__u32)*(volatile __u64 *)ep;
			cache = true;
		}
	} else if (d->sweepgen) {
		cache = !bpf_probe_read_user(&gen, sizeof(gen), (void *)d->sweepgen);
	}
	if (cache) {
		gs->key.tgid = tgid;
		gs->key.seq = d->seq;
		gs->key.lp = lp;
		c = bpf_map_lookup_elem(&go_label_cache, &gs->key);
		if (c && c->gen == gen) {
			sp_count(SP_CNT_GO_CACHE_HIT);
			sp_go_apply(s, c);
			return true;
		}
		sp_count(SP_CNT_GO_CACHE_MISS);
	} else {
		sp_count(SP_CNT_GO_CACHE_OFF);
	}
	w = &gs->walk;
	__builtin_memset(w, 0, sizeof(*w));
	if (d->layout == SP_GO_LABELS_MAP)
		err = sp_go_map_pairs(w, lp);
	else if (d->layout == SP_GO_LABELS_SLICE)
		err = sp_go_slice_pairs(w, lp);
	else
		err = -1;
	if (err)
		goto read_err;
	if (w->n)
		bpf_loop(SP_GO_MAX_LABELS, sp_go_pair_cb, NULL, 0);
	if (w->label_err)
		sp_count(SP_CNT_GO_LABEL_ERR);
	sp_go_result(w, gs, &gs->res);
	sp_go_apply(s, &gs->res);
	if (cache && !w->fault) {
		gs->res.gen = gen;
		bpf_map_update_elem(&go_label_cache, &gs->key, &gs->res, BPF_ANY);
	}
	return true;
no_goroutine:
	outcome = SP_CNT_GO_NO_GOROUTINE;
	s->hdr.ctx_status = SP_CTX_NULL;
	goto count;
switching:
	outcome = SP_CNT_GO_SWITCHING;
	s->hdr.ctx_status = SP_CTX_NULL;
	goto count;
read_err:
	outcome = SP_CNT_GO_READ_ERR;
	s->hdr.ctx_status = SP_CTX_READ_ERR;
count:
	sp_count(outcome);
	return true;
}

#endif /* SPANPROF_GOLABELS_BPF_H */
