/* SPDX-License-Identifier: MIT */
/*
 * pbcost.h - what unpacking a protobuf message will cost, predicted from
 * its wire bytes before protobuf-c allocates anything.
 *
 * protobuf-c's unpack allocates as it finds things: a message struct per
 * sub-message, an array per repeated field, a copy per string, and while a
 * message is parsed a temporary slab of 32 bytes per field occurrence.  A
 * small input can so ask for far more memory than it is long (62 KiB of
 * gzip holding 33M empty messages asks for over 1 GB).  The walker reads
 * the wire format once, driven by the generated message descriptors (no
 * hand-written table of fields), and adds up what protobuf-c will
 * allocate, so a caller can refuse before the first allocation.
 *
 * Streaming: the input may arrive in pieces (a request body, a gzip stream
 * being inflated).  The caller keeps it in one growing buffer and calls
 * __feed(w, buf, len) with the whole buffer so far each time it grew (buf
 * may move between calls: the walker keeps offsets, never pointers); the
 * walker resumes where it stopped, so every byte is read once.  After each
 * feed, w->bytes is a lower bound of the final cost, so a caller can stop
 * at the first piece that takes it past its budget.  __finish checks the
 * message ended where it should.
 *
 * Costs are glibc's: a malloc of n bytes takes max(32, round16(n + 8)).
 * w->bytes: the unpacked tree (what stays until free_unpacked), the
 * largest transient slab set included (w->transient, a conservative part
 * of it).  Counts: w->msgs[] per descriptor met (messages of that type),
 * w->elems[] per repeated field met (elements, packed or not), w->str_bytes
 * the bytes of every string and bytes field.
 *
 * Errors (sticky: every later call returns the same): -EBADMSG for a
 * malformed message (a varint past 10 bytes, a length past its enclosing
 * message, a group or reserved wire type, nesting deeper than max_depth),
 * -E2BIG past max_msgs messages of one type, or when more distinct
 * descriptors or repeated fields are met than the counting tables hold
 * (not possible with the schemas compiled here).
 */
#ifndef SPANPROF_PROFILE_PBCOST_H
#define SPANPROF_PROFILE_PBCOST_H

#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

#define SP_PBCOST_MAX_DEPTH 64
#define SP_PBCOST_MAX_DESCS 32
#define SP_PBCOST_MAX_FIELDS 64

struct sp_pbcost_frame {
	const ProtobufCMessageDescriptor *desc;
	uint64_t end;			/* offset where the message ends; UINT64_MAX: root */
	uint64_t occurrences;		/* fields seen so far (the slab protobuf-c allocates) */
	uint64_t repeated_seen;		/* bit i: repeated field index i already has an array */
	uint64_t child_peak;		/* heaviest slab path below, of the children done */
};

struct sp_pbcost {
	/* results */
	uint64_t bytes;			/* predicted allocation, transient included */
	uint64_t transient;		/* the scanned-member slabs' part of bytes */
	uint64_t str_bytes;
	uint64_t total_msgs;
	struct {
		const ProtobufCMessageDescriptor *desc;
		uint64_t n;
	} msgs[SP_PBCOST_MAX_DESCS];
	uint32_t n_msgs;
	struct {
		const ProtobufCMessageDescriptor *desc;
		uint32_t field;		/* field number */
		uint64_t n;
	} elems[SP_PBCOST_MAX_FIELDS];
	uint32_t n_elems;

	/* limit: more than this many messages of one type is -E2BIG (0: none;
	 * a decoder's table cap refuses them later anyway, this refuses them
	 * before the rest of the input is read) */
	uint64_t max_msgs;

	/* state */
	int err;
	uint32_t max_depth;
	uint32_t depth;			/* frames in use */
	uint64_t pos;			/* next byte to read */
	uint64_t skip_to;		/* a string or unknown field's end */
	uint64_t packed_end;		/* counting varints of a packed field until here */
	uint64_t *packed_count;		/* where they are counted */
	size_t packed_elem;		/* and their element size */
	struct sp_pbcost_frame st[SP_PBCOST_MAX_DEPTH + 1];
};

/* root: the descriptor of the outer message; max_depth <= SP_PBCOST_MAX_DEPTH
 * nested messages (the root is depth 0). */
void sp_pbcost__init(struct sp_pbcost *w, const ProtobufCMessageDescriptor *root,
		     uint32_t max_depth);
/* Reads buf[w->pos, len) (buf holds the whole input so far).  0 (all
 * complete values read; the rest waits for more bytes) or the sticky
 * error. */
int sp_pbcost__feed(struct sp_pbcost *w, const uint8_t *buf, size_t len);
/* The input ends at len (the last __feed's): 0, or -EBADMSG when a value
 * or a message is cut short. */
int sp_pbcost__finish(struct sp_pbcost *w, const uint8_t *buf, size_t len);

/* Messages of type d met so far, and elements of d's repeated field
 * number field (0 when never met). */
uint64_t sp_pbcost__msgs(const struct sp_pbcost *w, const ProtobufCMessageDescriptor *d);
uint64_t sp_pbcost__elems(const struct sp_pbcost *w, const ProtobufCMessageDescriptor *d,
			  uint32_t field);

/* glibc's footprint of malloc(n) (0 for 0). */
static inline uint64_t sp_pbcost__alloc(uint64_t n)
{
	uint64_t c = (n + 8 + 15) & ~(uint64_t)15;

	return n ? (c < 32 ? 32 : c) : 0;
}

#endif /* SPANPROF_PROFILE_PBCOST_H */
