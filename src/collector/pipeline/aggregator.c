// SPDX-License-Identifier: MIT
/*
 * aggregator.c - bounded, preallocated aggregation of resolved samples.
 *
 * Contract (see aggregator.h):
 *   - sp_agg__new() makes exactly one anonymous mmap() of bytes_reserved
 *     (<= byte_budget, page-rounded) and never allocates again; sp_agg__add,
 *     sp_agg__foreach and sp_agg__reset never allocate and never grow.
 *   - added == accepted + dropped_entries_full + dropped_bytes_full,
 *     always.  Calls rejected with -EINVAL (NULL
 *     aggregator/key, NULL addrs with frames) are programming errors and are
 *     not counted in added.
 *   - A drop is counted under exactly one reason, checked in this order:
 *     entry table full (new key), then frame storage full (new key).
 *   - A full event log drops the timestamp, not the sample
 *     (timestamps_dropped); that entry's timestamps are then withheld.
 *
 * Config: cfg == NULL means all defaults (64 MiB, 65536 entries,
 * keep_timestamps).  byte_budget == 0 and max_entries == 0 mean "default"
 * for that field.  A budget too small for the fixed part (hash slots and
 * entry headers for max_entries) plus SP_AGG_MIN_VAR_BYTES, or max_entries
 * above 2^30, is rejected: NULL with errno = EINVAL.
 *
 * Memory layout and budget split (one mapping, in this order):
 *   struct sp_agg                          fixed
 *   slots:   nslots x 8 B                  fixed, nslots = pow2 >= 2*max_entries
 *   entries: max_entries x sizeof(entry)   fixed (104 B: key + count + weight
 *                                          + frame offset + slot + scratch
 *                                          + timestamps logged / lost)
 *   then the remainder R of the page-rounded-down budget is split:
 *     keep_timestamps: 1/4 of R for events, 3/4 of R for frames;
 *     otherwise:       all of R for frames.
 *   frame:  12 B  (u64 address + u32 mapping id, two parallel arrays);
 *           an entry's attrs take ceil(attrs_len / 8) more frame slots
 *           after its frames (bytes in the address array, mapping 0)
 *   event:  20 B  (u64 timestamp + u32 entry index in the log, plus a u64
 *                  slot of foreach's grouping scratch)
 *   Defaults: 64 MiB, 65536 entries -> 1 MiB slots + 6.5 MiB headers;
 *   R ~ 57 MiB -> ~3.5 M frames (~54 per entry) and ~750 K events.
 *   Capacities are capped at UINT32_MAX (u32 offsets).
 *
 * Keys are normalized before hashing and comparing, so only defined bytes
 * matter: comm bytes after the first NUL and _pad are zeroed, has_ctx becomes
 * 0/1 and trace_id/span_id/trace_flags are zeroed when has_ctx is 0 (attrs
 * stay: a goroutine's pprof labels travel without ids too).  struct
 * sp_agg_key has no padding (static assert below), so the normalized key is
 * hashed and compared as bytes.  A NULL mappings array means all mapping ids
 * are 0; mapping ids are only hashed when one is non-zero, so both spellings
 * land on the same entry.
 *
 * The hash table uses linear probing; it is never more than half full, so a
 * probe always ends.  There are no deletions, so reset clears exactly the
 * slots the live entries occupy: O(entries), no memset of the table.
 *
 * sp_agg__foreach's callback must not add to or reset the aggregator it is
 * iterating.
 *
 * Memory is touched lazily (anonymous pages are zero-filled on first use),
 * but bytes_reserved reports the whole mapping.
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <xxhash.h>

#include "collector/pipeline/aggregator.h"

#define SP_AGG_DEFAULT_BUDGET	(64u << 20)
#define SP_AGG_DEFAULT_ENTRIES	65536u
#define SP_AGG_MAX_ENTRIES	(1u << 30)
#define SP_AGG_MIN_VAR_BYTES	4096u

#define FRAME_BYTES	(sizeof(uint64_t) + sizeof(uint32_t))
#define EVENT_BYTES	(2 * sizeof(uint64_t) + sizeof(uint32_t))

_Static_assert(sizeof(struct sp_agg_key) ==
	       4 + 4 + 4 * 1 + 2 * 2 + 16 + 16 + 8 + 4,
	       "struct sp_agg_key must have no padding: it is hashed as bytes");

struct agg_slot {
	uint32_t idx1;		/* entry index + 1; 0 = empty */
	uint32_t tag;		/* high half of the hash */
};

struct agg_entry {
	struct sp_agg_key key;	/* normalized */
	uint64_t h, h2;		/* two XXH3 chains over key, frames, attrs, mappings */
	uint64_t count;
	uint64_t weight_ns;
	uint32_t frame_off;	/* into addrs/mappings */
	uint32_t slot;		/* where this entry sits in slots[] */
	uint32_t ts_off;	/* foreach scratch: first timestamp */
	uint32_t ts_fill;	/* foreach scratch: timestamps placed */
	uint32_t n_logged;	/* events of this entry in the log */
	uint32_t ts_lost;	/* 1: some event had no room in the log */
};

struct sp_agg {
	struct sp_agg_stats stats;
	bool keep_timestamps;
	size_t map_len;
	size_t fixed_bytes;	/* struct + slots, counted in bytes_used */

	struct agg_slot *slots;
	uint32_t slot_mask;

	struct agg_entry *entries;
	uint32_t max_entries;

	uint64_t *addrs;
	uint32_t *mappings;
	uint32_t frames_cap;
	uint32_t frames_used;

	uint64_t *ev_ts;
	uint32_t *ev_entry;
	uint64_t *ev_scratch;	/* timestamps grouped by entry in foreach */
	uint32_t events_cap;
	uint32_t events_used;
};

static size_t round_up(size_t v, size_t a)
{
	return (v + a - 1) / a * a;
}

struct sp_agg *sp_agg__new(const struct sp_agg_config *cfg)
{
	struct sp_agg_config c = {
		.byte_budget = SP_AGG_DEFAULT_BUDGET,
		.max_entries = SP_AGG_DEFAULT_ENTRIES,
		.keep_timestamps = true,
	};
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t budget, hdr, nslots, fixed, rem, ev_bytes, total;
	uint64_t frames_cap, events_cap = 0;
	struct sp_agg *a = NULL;
	char *p;
	int err = 0;

	if (cfg) {
		c = *cfg;
		if (!c.byte_budget)
			c.byte_budget = SP_AGG_DEFAULT_BUDGET;
		if (!c.max_entries)
			c.max_entries = SP_AGG_DEFAULT_ENTRIES;
	}
	if (c.max_entries > SP_AGG_MAX_ENTRIES) {
		err = EINVAL;
		goto out;
	}

	budget = c.byte_budget / page * page;
	hdr = round_up(sizeof(struct sp_agg), 64);
	nslots = 1;
	while (nslots < 2 * (size_t)c.max_entries)
		nslots <<= 1;
	fixed = hdr + nslots * sizeof(struct agg_slot) +
		(size_t)c.max_entries * sizeof(struct agg_entry);
	if (budget < fixed || budget - fixed < SP_AGG_MIN_VAR_BYTES) {
		err = EINVAL;
		goto out;
	}
	rem = budget - fixed;
	if (c.keep_timestamps) {
		ev_bytes = rem / 4;
		events_cap = ev_bytes / EVENT_BYTES;
		if (events_cap > UINT32_MAX)
			events_cap = UINT32_MAX;
		rem -= events_cap * EVENT_BYTES;
	}
	frames_cap = rem / FRAME_BYTES;
	if (frames_cap > UINT32_MAX)
		frames_cap = UINT32_MAX;
	/* 8-byte arrays first, then 4-byte arrays: no padding between. */
	total = fixed + frames_cap * FRAME_BYTES + events_cap * EVENT_BYTES;

	p = mmap(NULL, total, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		err = errno;
		goto out;
	}
	a = (struct sp_agg *)p;
	a->map_len = total;
	a->keep_timestamps = c.keep_timestamps;
	a->max_entries = c.max_entries;
	a->slot_mask = (uint32_t)(nslots - 1);
	a->frames_cap = (uint32_t)frames_cap;
	a->events_cap = (uint32_t)events_cap;
	p += hdr;
	a->slots = (struct agg_slot *)p;
	p += nslots * sizeof(struct agg_slot);
	a->entries = (struct agg_entry *)p;
	p += (size_t)c.max_entries * sizeof(struct agg_entry);
	a->addrs = (uint64_t *)p;
	p += frames_cap * sizeof(uint64_t);
	a->ev_ts = (uint64_t *)p;
	p += events_cap * sizeof(uint64_t);
	a->ev_scratch = (uint64_t *)p;
	p += events_cap * sizeof(uint64_t);
	a->mappings = (uint32_t *)p;
	p += frames_cap * sizeof(uint32_t);
	a->ev_entry = (uint32_t *)p;
	p += events_cap * sizeof(uint32_t);

	a->fixed_bytes = hdr + nslots * sizeof(struct agg_slot);
	a->stats.bytes_reserved = round_up(total, page);
	a->stats.bytes_used = a->fixed_bytes;
out:
	if (err) {
		errno = err;
		return NULL;
	}
	return a;
}

void sp_agg__free(struct sp_agg *a)
{
	if (!a)
		return;
	munmap(a, a->map_len);
}

static void normalize_key(struct sp_agg_key *dst, const struct sp_agg_key *src)
{
	size_t n;

	*dst = *src;
	n = strnlen(src->comm, sizeof(src->comm));
	memset(dst->comm + n, 0, sizeof(dst->comm) - n);
	memset(dst->_pad, 0, sizeof(dst->_pad));
	dst->has_ctx = !!src->has_ctx;
	if (!dst->has_ctx) {
		dst->trace_flags = 0;
		memset(dst->trace_id, 0, sizeof(dst->trace_id));
		memset(dst->span_id, 0, sizeof(dst->span_id));
	}
}

static bool any_nonzero(const uint32_t *v, uint32_t n)
{
	uint32_t acc = 0;

	if (!v)
		return false;
	for (uint32_t i = 0; i < n; i++)
		acc |= v[i];
	return acc != 0;
}

/*
 * Identity: the key byte for byte, and the frames, attributes and
 * mappings by two 64-bit XXH3 chains with different seeds (0 and
 * SP_AGG_SEED2): a false match needs both to collide at once (~2^-128 a
 * pair of stacks).  Comparing the stored frames and mappings instead
 * read an entry's cold lines at every hit (at 97 Hz an entry is last seen
 * about a second before): `bench/bench_aggregator`'s cold case, 734-988
 * ns an add then, 588-703 now (docs/benchmarks.md, issue 17).  The key is
 * still compared: it shares the entry's line with the hashes.
 */
#define SP_AGG_SEED2 0x9e3779b97f4a7c15ull

static uint64_t chain(const struct sp_agg_key *k, const uint64_t *addrs, uint32_t n,
		      const uint8_t *attrs, const uint32_t *maps, uint64_t seed)
{
	uint64_t h = XXH3_64bits_withSeed(k, sizeof(*k), seed);

	if (n)
		h = XXH3_64bits_withSeed(addrs, n * sizeof(*addrs), h);
	if (k->attrs_len)
		h = XXH3_64bits_withSeed(attrs, k->attrs_len, h);
	if (maps)
		h = XXH3_64bits_withSeed(maps, n * sizeof(*maps), h);
	return h;
}

static bool entry_matches(const struct agg_entry *e, const struct sp_agg_key *k, uint64_t h,
			  uint64_t h2)
{
	return e->h == h && e->h2 == h2 && !memcmp(&e->key, k, sizeof(*k));
}

static void log_event(struct sp_agg *a, uint32_t idx, uint64_t ts_ns)
{
	if (!a->keep_timestamps)
		return;
	if (a->events_used >= a->events_cap) {
		a->entries[idx].ts_lost = 1;
		a->stats.timestamps_dropped++;
		return;
	}
	a->entries[idx].n_logged++;
	a->ev_ts[a->events_used] = ts_ns;
	a->ev_entry[a->events_used] = idx;
	a->events_used++;
	a->stats.bytes_used += EVENT_BYTES;
}

int sp_agg__add(struct sp_agg *a, const struct sp_agg_key *key,
		const struct sp_agg_frames *frames, uint64_t ts_ns, uint64_t weight_ns)
{
	const uint64_t *addrs = NULL;
	const uint32_t *maps = NULL;
	const uint8_t *attrs = NULL;
	struct sp_agg_key k;
	struct agg_entry *e;
	uint32_t n, slots_needed, pos, tag, idx;
	uint64_t h, h2;

	if (!a || !key)
		return -EINVAL;
	n = (uint32_t)key->n_kernel + key->n_user;
	if (frames) {
		addrs = frames->addrs;
		maps = frames->mappings;
		attrs = frames->attrs;
	}
	if ((n && !addrs) || (key->attrs_len && !attrs))
		return -EINVAL;
	a->stats.added++;

	normalize_key(&k, key);
	slots_needed = n + (k.attrs_len + 7u) / 8;
	if (!any_nonzero(maps, n))
		maps = NULL;	/* all unknown: the same identity as none given */
	h = chain(&k, addrs, n, attrs, maps, 0);
	h2 = chain(&k, addrs, n, attrs, maps, SP_AGG_SEED2);
	tag = (uint32_t)(h >> 32);

	for (pos = (uint32_t)h & a->slot_mask;; pos = (pos + 1) & a->slot_mask) {
		struct agg_slot *s = &a->slots[pos];

		if (!s->idx1)
			break;
		if (s->tag != tag)
			continue;
		e = &a->entries[s->idx1 - 1];
		if (!entry_matches(e, &k, h, h2))
			continue;
		e->count++;
		e->weight_ns += weight_ns;
		log_event(a, s->idx1 - 1, ts_ns);
		a->stats.accepted++;
		return 0;
	}

	/* New key; pos is the empty slot that ends its probe sequence. */
	if (a->stats.entries >= a->max_entries) {
		a->stats.dropped_entries_full++;
		return -ENOSPC;
	}
	if (slots_needed > a->frames_cap - a->frames_used) {
		a->stats.dropped_bytes_full++;
		return -ENOSPC;
	}
	idx = a->stats.entries++;
	e = &a->entries[idx];
	e->key = k;
	e->h = h;
	e->h2 = h2;
	e->count = 1;
	e->weight_ns = weight_ns;
	e->frame_off = a->frames_used;
	e->slot = pos;
	e->n_logged = 0;
	e->ts_lost = 0;
	if (n) {
		memcpy(a->addrs + e->frame_off, addrs, n * sizeof(*addrs));
		if (maps)
			memcpy(a->mappings + e->frame_off, maps,
			       n * sizeof(*maps));
		else
			memset(a->mappings + e->frame_off, 0,
			       n * sizeof(*maps));
	}
	if (k.attrs_len) {
		uint32_t off = e->frame_off + n, words = slots_needed - n;

		a->addrs[off + words - 1] = 0;	/* no stale bytes in the tail */
		memcpy(a->addrs + off, attrs, k.attrs_len);
		memset(a->mappings + off, 0, words * sizeof(*maps));
	}
	a->frames_used += slots_needed;
	a->slots[pos].idx1 = idx + 1;
	a->slots[pos].tag = tag;
	a->stats.bytes_used += sizeof(*e) + (size_t)slots_needed * FRAME_BYTES;
	log_event(a, idx, ts_ns);
	a->stats.accepted++;
	return 0;
}

/* Counting sort of the event log by entry, stable, into ev_scratch: each
 * entry owns n_logged slots (its count, unless the log ran out). */
static void group_timestamps(struct sp_agg *a)
{
	uint32_t off = 0, i;

	for (i = 0; i < a->stats.entries; i++) {
		a->entries[i].ts_off = off;
		a->entries[i].ts_fill = 0;
		off += a->entries[i].n_logged;
	}
	for (i = 0; i < a->events_used; i++) {
		struct agg_entry *e = &a->entries[a->ev_entry[i]];

		a->ev_scratch[e->ts_off + e->ts_fill++] = a->ev_ts[i];
	}
}

int sp_agg__foreach(struct sp_agg *a, sp_agg_cb cb, void *ctx)
{
	uint32_t i;
	int ret = 0;

	if (!a || !cb)
		return -EINVAL;
	if (a->keep_timestamps)
		group_timestamps(a);
	for (i = 0; i < a->stats.entries; i++) {
		const struct agg_entry *e = &a->entries[i];
		struct sp_agg_entry out = {
			.key = &e->key,
			.frames = {
				.addrs = a->addrs + e->frame_off,
				.mappings = a->mappings + e->frame_off,
				.attrs = (const uint8_t *)(a->addrs + e->frame_off +
							   e->key.n_kernel + e->key.n_user),
			},
			.count = e->count,
			.weight_ns = e->weight_ns,
			.timestamps = a->keep_timestamps && !e->ts_lost ?
				a->ev_scratch + e->ts_off : NULL,
		};

		ret = cb(&out, ctx);
		if (ret)
			break;
	}
	return ret;
}

void sp_agg__reset(struct sp_agg *a)
{
	uint32_t i;

	if (!a)
		return;
	for (i = 0; i < a->stats.entries; i++)
		a->slots[a->entries[i].slot].idx1 = 0;
	a->stats.entries = 0;
	a->frames_used = 0;
	a->events_used = 0;
	a->stats.bytes_used = a->fixed_bytes;
}

const struct sp_agg_stats *sp_agg__stats(const struct sp_agg *a)
{
	return a ? &a->stats : NULL;
}
