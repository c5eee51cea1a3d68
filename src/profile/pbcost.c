/* SPDX-License-Identifier: MIT */
/*
 * pbcost.c - see pbcost.h.
 *
 * How protobuf-c 1.4 unpacks one message (what is counted here):
 *   1. the struct: malloc(desc->sizeof_message);
 *   2. a scan of every field occurrence into "scanned member" records of
 *      32 bytes: 16 on the stack, then slabs of 32, 64, 128, ... records,
 *      freed when the message is done.  The scan of a message finishes
 *      before its sub-messages are unpacked, so the slabs alive at once are
 *      those of one root-to-leaf path: the peak is the heaviest path;
 *   3. one array per repeated field that occurs (n x element size);
 *   4. a copy of each string (len + 1) and bytes value (len);
 *   5. unknown fields: an array of 24-byte records and a copy of each
 *      one's bytes;
 *   6. each sub-message, recursively.
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "base/pb_wire.h"
#include "profile/pbcost.h"

#define SCANNED_MEMBER 32u	/* sizeof(ScannedMember) on LP64 */
#define UNKNOWN_FIELD 24u	/* sizeof(ProtobufCMessageUnknownField) */

/* Transient bytes of the scanned-member slabs for occ field occurrences. */
static uint64_t slab_bytes(uint64_t occ)
{
	uint64_t cap = 16, bytes = 0;

	for (unsigned k = 1; cap < occ && k < 40; k++) {
		uint64_t n = (uint64_t)1 << (k + 4);

		bytes += sp_pbcost__alloc(n * SCANNED_MEMBER);
		cap += n;
	}
	return bytes;
}

static size_t elem_size(const ProtobufCFieldDescriptor *f)
{
	switch (f->type) {
	case PROTOBUF_C_TYPE_INT64: case PROTOBUF_C_TYPE_SINT64: case PROTOBUF_C_TYPE_SFIXED64:
	case PROTOBUF_C_TYPE_UINT64: case PROTOBUF_C_TYPE_FIXED64: case PROTOBUF_C_TYPE_DOUBLE:
	case PROTOBUF_C_TYPE_STRING: case PROTOBUF_C_TYPE_MESSAGE:
		return 8;
	case PROTOBUF_C_TYPE_BYTES:
		return sizeof(ProtobufCBinaryData);
	default:
		return 4;
	}
}

static uint64_t *msg_counter(struct sp_pbcost *w, const ProtobufCMessageDescriptor *d)
{
	for (uint32_t i = 0; i < w->n_msgs; i++)
		if (w->msgs[i].desc == d)
			return &w->msgs[i].n;
	if (w->n_msgs == SP_PBCOST_MAX_DESCS)
		return NULL;
	w->msgs[w->n_msgs].desc = d;
	w->msgs[w->n_msgs].n = 0;
	return &w->msgs[w->n_msgs++].n;
}

static uint64_t *elem_counter(struct sp_pbcost *w, const ProtobufCMessageDescriptor *d,
			      uint32_t field)
{
	for (uint32_t i = 0; i < w->n_elems; i++)
		if (w->elems[i].desc == d && w->elems[i].field == field)
			return &w->elems[i].n;
	if (w->n_elems == SP_PBCOST_MAX_FIELDS)
		return NULL;
	w->elems[w->n_elems].desc = d;
	w->elems[w->n_elems].field = field;
	w->elems[w->n_elems].n = 0;
	return &w->elems[w->n_elems++].n;
}

uint64_t sp_pbcost__msgs(const struct sp_pbcost *w, const ProtobufCMessageDescriptor *d)
{
	for (uint32_t i = 0; i < w->n_msgs; i++)
		if (w->msgs[i].desc == d)
			return w->msgs[i].n;
	return 0;
}

uint64_t sp_pbcost__elems(const struct sp_pbcost *w, const ProtobufCMessageDescriptor *d,
			  uint32_t field)
{
	for (uint32_t i = 0; i < w->n_elems; i++)
		if (w->elems[i].desc == d && w->elems[i].field == field)
			return w->elems[i].n;
	return 0;
}

static int fail(struct sp_pbcost *w, int err)
{
	w->err = err;
	return err;
}

/* A new message of type d starting here. */
static int push(struct sp_pbcost *w, const ProtobufCMessageDescriptor *d, uint64_t end)
{
	uint64_t *n = msg_counter(w, d);

	if (!n)
		return fail(w, -E2BIG);
	if (w->depth > w->max_depth)
		return fail(w, -EBADMSG);
	if (w->max_msgs && *n >= w->max_msgs)
		return fail(w, -E2BIG);
	(*n)++;
	w->total_msgs++;
	w->bytes += sp_pbcost__alloc(d->sizeof_message);
	w->st[w->depth] = (struct sp_pbcost_frame){ .desc = d, .end = end };
	w->depth++;
	return 0;
}

/* The innermost message is complete: its slab joins the heaviest path. */
static void pop(struct sp_pbcost *w)
{
	struct sp_pbcost_frame *f = &w->st[--w->depth];
	uint64_t path = slab_bytes(f->occurrences) + f->child_peak;

	if (w->depth) {
		struct sp_pbcost_frame *parent = &w->st[w->depth - 1];

		if (path > parent->child_peak)
			parent->child_peak = path;
	} else {
		w->transient = path;
		w->bytes += path;
	}
}

void sp_pbcost__init(struct sp_pbcost *w, const ProtobufCMessageDescriptor *root,
		     uint32_t max_depth)
{
	memset(w, 0, sizeof(*w));
	w->max_depth = max_depth > SP_PBCOST_MAX_DEPTH ? SP_PBCOST_MAX_DEPTH : max_depth;
	push(w, root, UINT64_MAX);
}

/* A varint at buf[*pos, len): 0 and *pos advanced, 1 when it runs past
 * len (wait for more), -EBADMSG past 10 bytes. */
static int varint(const uint8_t *buf, size_t len, uint64_t *pos, uint64_t *v)
{
	const uint8_t *p = buf + *pos, *end = buf + len;

	if (end - p > SP_PB_WIRE_VARINT_MAX)
		end = p + SP_PB_WIRE_VARINT_MAX;
	if (sp_pb_wire__varint(&p, end, v) == 0) {
		*pos = (uint64_t)(p - buf);
		return 0;
	}
	return (size_t)(end - (buf + *pos)) < SP_PB_WIRE_VARINT_MAX ? 1 : -EBADMSG;
}

/* Counts one occurrence of a repeated field f of the innermost message
 * (n elements) and its array, once per message. */
static int count_repeated(struct sp_pbcost *w, const ProtobufCFieldDescriptor *f, uint64_t n)
{
	struct sp_pbcost_frame *fr = &w->st[w->depth - 1];
	unsigned idx = (unsigned)(f - fr->desc->fields);
	uint64_t *c = elem_counter(w, fr->desc, f->id);

	if (!c)
		return fail(w, -E2BIG);
	*c += n;
	/* The array is allocated once with the final count: its malloc
	 * overhead once, its elements as they come. */
	if (idx < 64 && !(fr->repeated_seen & (1ull << idx))) {
		fr->repeated_seen |= 1ull << idx;
		w->bytes += 32;		/* malloc's header and rounding */
	}
	w->bytes += n * elem_size(f);
	return 0;
}

/* One length-delimited field of len bytes starting at w->pos. */
static int take_len(struct sp_pbcost *w, const ProtobufCFieldDescriptor *f, uint64_t len)
{
	uint64_t start = w->pos;

	if (!f) {			/* unknown: kept by protobuf-c */
		w->bytes += UNKNOWN_FIELD + sp_pbcost__alloc(len);
		w->skip_to = start + len;
		return 0;
	}
	if (f->label == PROTOBUF_C_LABEL_REPEATED) {
		if (f->type != PROTOBUF_C_TYPE_STRING && f->type != PROTOBUF_C_TYPE_BYTES &&
		    f->type != PROTOBUF_C_TYPE_MESSAGE) {
			bool fixed32 = f->type == PROTOBUF_C_TYPE_FIXED32 ||
				       f->type == PROTOBUF_C_TYPE_SFIXED32 ||
				       f->type == PROTOBUF_C_TYPE_FLOAT;
			bool fixed64 = f->type == PROTOBUF_C_TYPE_FIXED64 ||
				       f->type == PROTOBUF_C_TYPE_SFIXED64 ||
				       f->type == PROTOBUF_C_TYPE_DOUBLE;

			/* packed: fixed-width elements are len / size; varints
			 * are counted as the bytes arrive */
			if (count_repeated(w, f, fixed32 ? len / 4 : fixed64 ? len / 8 : 0))
				return w->err;
			if (fixed32 || fixed64) {
				w->skip_to = start + len;
				return 0;
			}
			w->packed_end = start + len;
			w->packed_count = elem_counter(w, w->st[w->depth - 1].desc, f->id);
			w->packed_elem = elem_size(f);
			return 0;
		}
		if (count_repeated(w, f, 1))
			return w->err;
	}
	switch (f->type) {
	case PROTOBUF_C_TYPE_MESSAGE:
		return push(w, f->descriptor, start + len);
	case PROTOBUF_C_TYPE_STRING:
		w->bytes += sp_pbcost__alloc(len + 1);
		w->str_bytes += len;
		break;
	case PROTOBUF_C_TYPE_BYTES:
		w->bytes += sp_pbcost__alloc(len);
		w->str_bytes += len;
		break;
	default:			/* a scalar sent as LEN: protobuf-c refuses it */
		break;
	}
	w->skip_to = start + len;
	return 0;
}

int sp_pbcost__feed(struct sp_pbcost *w, const uint8_t *buf, size_t len)
{
	while (!w->err) {
		struct sp_pbcost_frame *fr;
		const ProtobufCFieldDescriptor *f;
		uint64_t pos = w->pos, key, v;
		int r;

		if (w->skip_to > w->pos) {
			if (len <= w->pos)
				return 0;
			w->pos = w->skip_to < len ? w->skip_to : len;
			continue;
		}
		if (w->packed_end > w->pos) {	/* a packed varint field's payload */
			uint64_t stop = w->packed_end < len ? w->packed_end : len, n = 0;

			for (uint64_t i = w->pos; i < stop; i++)
				n += buf[i] < 0x80;
			*w->packed_count += n;
			w->bytes += n * w->packed_elem;
			w->pos = stop;
			if (stop < w->packed_end)
				return 0;
			continue;
		}
		fr = &w->st[w->depth - 1];
		if (fr->end != UINT64_MAX && w->pos >= fr->end) {
			if (w->pos > fr->end)
				return fail(w, -EBADMSG);
			pop(w);
			continue;
		}
		if (w->pos >= len)
			return 0;
		r = varint(buf, len, &pos, &key);
		if (r)
			return r > 0 ? 0 : fail(w, r);
		if ((key >> 3) == 0 || (key >> 3) > UINT32_MAX)
			return fail(w, -EBADMSG);
		f = protobuf_c_message_descriptor_get_field(fr->desc, (unsigned)(key >> 3));
		switch (key & 7) {
		case 0:
			r = varint(buf, len, &pos, &v);
			if (r)
				return r > 0 ? 0 : fail(w, r);
			w->pos = pos;
			if (!f)
				w->bytes += UNKNOWN_FIELD + sp_pbcost__alloc(SP_PB_WIRE_VARINT_MAX);
			else if (f->label == PROTOBUF_C_LABEL_REPEATED && count_repeated(w, f, 1))
				return w->err;
			break;
		case 1:
		case 5:
			w->pos = pos;
			w->skip_to = pos + ((key & 7) == 1 ? 8 : 4);
			if (!f)
				w->bytes += UNKNOWN_FIELD + sp_pbcost__alloc((key & 7) == 1 ? 8 : 4);
			else if (f->label == PROTOBUF_C_LABEL_REPEATED && count_repeated(w, f, 1))
				return w->err;
			break;
		case 2:
			r = varint(buf, len, &pos, &v);
			if (r)
				return r > 0 ? 0 : fail(w, r);
			if (fr->end != UINT64_MAX ? v > fr->end - pos : v > UINT64_MAX / 2)
				return fail(w, -EBADMSG);
			w->pos = pos;
			if (take_len(w, f, v))
				return w->err;
			break;
		default:
			return fail(w, -EBADMSG);
		}
		fr->occurrences++;	/* counted once the value is complete */
		/* a value that ends past its message is malformed */
		fr = &w->st[w->depth - 1];
		if (w->skip_to > w->pos && fr->end != UINT64_MAX && w->skip_to > fr->end)
			return fail(w, -EBADMSG);
	}
	return w->err;
}

int sp_pbcost__finish(struct sp_pbcost *w, const uint8_t *buf, size_t len)
{
	if (sp_pbcost__feed(w, buf, len))
		return w->err;
	if (w->pos != len || w->skip_to > len || w->packed_end > len)
		return fail(w, -EBADMSG);
	/* every nested message must end exactly here */
	while (w->depth > 1) {
		if (w->st[w->depth - 1].end != len)
			return fail(w, -EBADMSG);
		pop(w);
	}
	pop(w);
	/* what the per-array and per-message rounding above does not see:
	 * large blocks are page-rounded mmaps */
	w->bytes += w->bytes / 128 + 16384;
	return 0;
}
