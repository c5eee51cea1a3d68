/* SPDX-License-Identifier: MIT */
/*
 * internal.h - private helpers of src/profile (not for other modules).
 *
 *  - sp_hidx: an open-addressing hash index from a 64-bit hash to an int32
 *    table index.  It stores no keys: callers pass an equality callback that
 *    compares the candidate table entry with their key.  Owned by whoever
 *    embeds it; sp_hidx__free() is NULL-safe and idempotent.
 *  - sp_strtab: the string table an encoder writes: only the strings the
 *    encoding references, "" at [0], the others in the order of their first
 *    reference, each once.  Model strings are referenced by their index
 *    (sp_strtab__ref), other strings by content (sp_strtab__get; a model
 *    string of equal content is the same entry).  Extras are owned by the
 *    strtab, model strings stay the profile's.
 *  - sp_pballoc: a protobuf-c allocator with a byte budget, so unpacking
 *    untrusted input cannot allocate without bound (NULL past the budget,
 *    protobuf-c then fails the unpack).
 *  - decoder caps: no decoded table or sample list grows past
 *    SP_DECODE_MAX_ENTRIES entries (-E2BIG).
 *
 * Errors are negative errno; nothing aborts.
 */
#ifndef SPANPROF_PROFILE_INTERNAL_H
#define SPANPROF_PROFILE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

#include "profile/arena.h"
#include "profile/codec.h"
#include "profile/profile.h"

#define SP_TABLE_MAX (INT32_MAX / 2)		/* any model table */

/* Well-known names (labels in pprof, attribute keys in OTLP). */
#define SP_K_PID "pid"
#define SP_K_TID "tid"
#define SP_K_THREAD_NAME "thread_name"
#define SP_K_TRACE_ID "trace_id"
#define SP_K_SPAN_ID "span_id"
#define SP_K_SERVICE_NAME "service.name"
#define SP_A_THREAD_ID "thread.id"
#define SP_A_THREAD_NAME "thread.name"
#define SP_A_PROCESS_PID "process.pid"
#define SP_A_EXE_PATH "process.executable.path"
#define SP_A_EXE_NAME "process.executable.name"
#define SP_A_CONTAINER_ID "container.id"
#define SP_A_HOST_NAME "host.name"
#define SP_A_BUILD_ID_GNU "process.executable.build_id.gnu"
#define SP_A_BUILD_ID_GO "process.executable.build_id.go"
#define SP_A_FRAME_TYPE "profile.frame.type"

/* ------------------------------------------------------------ hash index */
struct sp_hidx {
	uint32_t cap;		/* slots, power of two; 0 = nothing allocated */
	uint32_t n;		/* used slots */
	uint64_t *hash;
	int32_t *val;		/* -1 = empty */
};

typedef bool (*sp_hidx_eq_fn)(const void *ctx, int32_t val);

/* Returns the stored value whose hash matches and eq() accepts, or -1. */
int32_t sp_hidx__find(const struct sp_hidx *h, uint64_t hash, sp_hidx_eq_fn eq,
		      const void *ctx);
/* Adds (hash, val); duplicates are the caller's business.  0 or -ENOMEM. */
int sp_hidx__insert(struct sp_hidx *h, uint64_t hash, int32_t val);
void sp_hidx__free(struct sp_hidx *h);

uint64_t sp_hash_bytes(const void *p, size_t len);

/* Index of string s[0..len) in p's table, or -1 (also when p has no index). */
int32_t sp_profile__find_str(const struct sp_profile *p, const char *s, size_t len);

/* ------------------------------------------------------------ strtab */
struct sp_strtab {
	const struct sp_profile *base;	/* borrowed */
	uint32_t n_base;
	int32_t *wire_of;		/* model index -> wire index, 0 = not yet */
	const char **wire;		/* wire index -> string */
	uint32_t n_wire, cap_wire;
	char **extra;			/* owned */
	int32_t *extra_wire;		/* extra i -> wire index */
	uint32_t n_extra, cap_extra;
	struct sp_hidx idx;		/* over extras */
};

void sp_strtab__init(struct sp_strtab *t, const struct sp_profile *base);
/* Wire index of model string i (0 for 0).  >= 0, or -EINVAL for an index
 * outside the model's table, -ENOMEM, -E2BIG. */
int32_t sp_strtab__ref(struct sp_strtab *t, int32_t i);
/* Wire index of string s, the model's entry when it has s.  >= 0 or
 * -ENOMEM / -E2BIG. */
int32_t sp_strtab__get(struct sp_strtab *t, const char *s);
/* Entries so far (at least 1: ""). */
uint32_t sp_strtab__count(const struct sp_strtab *t);
/* The whole table as the char *[count] protobuf-c wants, allocated in a
 * (the strings stay t's and the profile's).  NULL on -ENOMEM. */
char **sp_strtab__array(const struct sp_strtab *t, struct sp_arena *a);
void sp_strtab__free(struct sp_strtab *t);

/* ------------------------------------------------------------ allocator */
struct sp_pballoc {
	ProtobufCAllocator a;	/* pass &x.a to protobuf-c */
	size_t used;		/* live bytes (malloc_usable_size) */
	size_t peak;
	size_t budget;		/* on live bytes */
	bool exhausted;		/* an allocation was refused */
};

/* Budget for unpacking len bytes: 48 * len + 1 MiB, at most 1 GiB. */
void sp_pballoc__init(struct sp_pballoc *b, size_t input_len);

/* ------------------------------------------------------------ decoders */
/* A decoder's entry (otlp_decode.c, pprof_decode.c): -EINVAL without out
 * (else *out is cleared) or for a NULL buf with len > 0, -E2BIG past
 * SP_DECODE_MAX_BYTES; on 0, alloc is ready to unpack len bytes. */
int sp_dec__begin(const uint8_t *buf, size_t len, struct sp_profile **out,
		  struct sp_pballoc *alloc);

/* ------------------------------------------------------------ encoders */
/* What every encoder (otlp_encode.c, pprof_encode.c) holds first: the
 * profile, the arena every wire struct points into (freed once), the
 * string table its steps fill. */
struct sp_enc {
	const struct sp_profile *p;
	struct sp_arena arena;
	struct sp_strtab st;
};

/* An encoder's entry: -EINVAL without out/out_len (else both are cleared),
 * then sp_profile__validate(p); on 0, b is ready (p set, arena empty,
 * string table started). */
int sp_enc__begin(struct sp_enc *b, const struct sp_profile *p, uint8_t **out,
		  size_t *out_len);

/* The encoder's last step: every string is known once every other table
 * is written, so the table goes into *table, *n (allocated in b->arena).
 * 0 or -ENOMEM. */
int sp_enc__string_table(struct sp_enc *b, char ***table, size_t *n);

/* The encoder's exit: when err is 0, packs m into *out, *out_len (see
 * sp_pb__pack); frees b's arena and string table either way.  Returns the
 * first error. */
int sp_enc__end(struct sp_enc *b, int err, const ProtobufCMessage *m, uint8_t **out,
		size_t *out_len);

/* Packs message m into a malloc'd buffer (*out, *out_len; at least one
 * byte allocated even for an empty message).  0, -ENOMEM, or -EIO when
 * protobuf-c packs another length than it measured. */
int sp_pb__pack(const ProtobufCMessage *m, uint8_t **out, size_t *out_len);

/* ------------------------------------------------------------ hex */
/* Writes 2n lower-case hex digits and a NUL to out (2n + 1 bytes). */
void sp_hex_encode(const uint8_t *in, size_t n, char *out);
/* Exactly 2n hex digits (either case) -> n bytes.  0 or -EINVAL. */
int sp_hex_decode(const char *s, uint8_t *out, size_t n);

/* True if bytes are all zero. */
bool sp_all_zero(const void *p, size_t n);

#endif /* SPANPROF_PROFILE_INTERNAL_H */
