/* SPDX-License-Identifier: MIT */
/*
 * pb_wire.h - reading the protobuf wire format by hand, where a generated
 * decoder is not used (google.rpc.Status, the nesting-depth pre-check).
 *
 * sp_pb_wire__varint: one base-128 varint from [*p, end) into *v, *p
 * advanced past it.  At most 10 bytes (64 bits); a varint that runs past
 * end or past 64 bits is -1 (*p and *v then unspecified), else 0.
 * sp_pb_wire__put_varint: writes v at p (room for SP_PB_WIRE_VARINT_MAX
 * bytes is the caller's) and returns the bytes written, 1..10.
 */
#ifndef SPANPROF_BASE_PB_WIRE_H
#define SPANPROF_BASE_PB_WIRE_H

#include <stddef.h>
#include <stdint.h>

#define SP_PB_WIRE_VARINT_MAX 10

static inline int sp_pb_wire__varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	uint64_t x = 0;

	for (unsigned shift = 0; shift < 64; shift += 7) {
		if (*p >= end)
			return -1;
		x |= (uint64_t)(**p & 0x7f) << shift;
		if (!(*(*p)++ & 0x80)) {
			*v = x;
			return 0;
		}
	}
	return -1;
}

static inline size_t sp_pb_wire__put_varint(uint8_t *p, uint64_t v)
{
	size_t n = 0;

	do {
		p[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v);
	return n;
}

#endif /* SPANPROF_BASE_PB_WIRE_H */
