/* libFuzzer target: the two framings a symbolizer takes from an agent:
 * the host-symbol upload envelope (src/base/symstore.c) and a JIT piece
 * (src/base/jit_piece.c), as serve's store checks an upload.
 *
 * Checked: a decoded envelope's key and payload lie inside the input and
 * the key is 1..SP_SYMSTORE_KEY_MAX bytes; a decoded piece's data is the
 * input's tail, its id decodes the piece again, and re-encoding it gives
 * the same bytes and id. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/jit_piece.h"
#include "base/symstore.h"

static void piece(const uint8_t *data, size_t size)
{
	struct sp_jit_piece pc, again;
	uint8_t *enc;
	size_t len;
	struct sp_jit_id id;

	if (sp_jit_piece__decode(data, size, NULL, &pc))
		return;
	if (pc.data != data + SP_JIT_PIECE_HDR || pc.len != size - SP_JIT_PIECE_HDR)
		abort();
	if (sp_jit_piece__decode(data, size, &pc.id, &again))
		abort();
	if (sp_jit_piece__encode(pc.source, pc.pid,
				 sp_jit_id__is_zero(&pc.parent) ? NULL : &pc.parent, pc.offset,
				 pc.data, pc.len, &enc, &len, &id))
		abort();
	if (len != size || memcmp(enc, data, size) || memcmp(id.b, pc.id.b, SP_JIT_ID_LEN))
		abort();
	free(enc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *key, *payload;
	size_t key_len, plen;
	int kind;

	piece(data, size);
	if (sp_symstore__upload_decode(data, size, &kind, &key, &key_len, &payload, &plen))
		return 0;
	if (!key_len || key_len > SP_SYMSTORE_KEY_MAX || key < data || payload < key + key_len ||
	    payload + plen != data + size || kind < 1 || kind > SP_SYMSTORE_KIND_MAX)
		abort();
	if (kind == SP_SYMSTORE_JIT)
		piece(payload, plen);
	return 0;
}
