// SPDX-License-Identifier: MIT
/*
 * rpc_status.c - google.rpc.Status on the protobuf wire, by hand: the
 * message has three fields and no .proto in the tree (contract:
 * rpc_status.h).
 */
#include <errno.h>
#include <string.h>

#include "base/log_sanitize.h"
#include "base/pb_wire.h"
#include "base/rpc_status.h"

size_t sp_rpc_status__encode(int32_t code, const char *msg, uint8_t *buf, size_t cap)
{
	size_t n = 0, ml = msg ? strlen(msg) : 0;

	if (cap < SP_RPC_STATUS_MIN_BUF)
		return 0;
	if (ml > cap - SP_RPC_STATUS_MIN_BUF)
		ml = cap - SP_RPC_STATUS_MIN_BUF;
	if (code) {	/* proto3: a zero scalar is not written */
		buf[n++] = 0x08;	/* field 1, varint */
		/* int32 is sign-extended to 64 bits on the wire (10 bytes when < 0) */
		n += sp_pb_wire__put_varint(buf + n, (uint64_t)(int64_t)code);
	}
	if (ml) {
		buf[n++] = 0x12;	/* field 2, length-delimited */
		n += sp_pb_wire__put_varint(buf + n, ml);
		memcpy(buf + n, msg, ml);
		n += ml;
	}
	return n;
}

int sp_rpc_status__decode(const uint8_t *buf, size_t len, int32_t *code, char *msg,
			  size_t msg_len)
{
	const uint8_t *p = buf, *end = buf + len;

	*code = 0;
	if (msg_len)
		msg[0] = '\0';
	while (p < end) {
		uint64_t key, v;
		unsigned int field, wt;

		if (sp_pb_wire__varint(&p, end, &key))
			return -EINVAL;
		field = (unsigned int)(key >> 3);
		wt = key & 7;
		if (field == 0)
			return -EINVAL;
		switch (wt) {
		case 0:
			if (sp_pb_wire__varint(&p, end, &v))
				return -EINVAL;
			if (field == 1)
				*code = (int32_t)v;
			else if (field == 2 || field == 3)
				return -EINVAL;
			break;
		case 1:
			if (end - p < 8 || field <= 3)
				return -EINVAL;
			p += 8;
			break;
		case 5:
			if (end - p < 4 || field <= 3)
				return -EINVAL;
			p += 4;
			break;
		case 2:
			if (sp_pb_wire__varint(&p, end, &v) || v > (uint64_t)(end - p) || field == 1)
				return -EINVAL;
			if (field == 2)
				sp_log_sanitize((const char *)p, (size_t)v, msg, msg_len);
			p += v;
			break;
		default:
			return -EINVAL;
		}
	}
	return 0;
}
