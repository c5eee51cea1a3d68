/* SPDX-License-Identifier: MIT */
/*
 * profile.h - the neutral in-memory profile model shared by every binary.
 *
 * It mirrors the OTLP Profiles dictionary (one string table, mapping,
 * location, function, link and stack tables, each with a zero entry at
 * index 0 meaning "unset") plus a flat list of samples, each tagged with the
 * resource (process) it belongs to.  The pprof and OTLP codecs translate it
 * to and from the wire; the collector fills it from the aggregator; the
 * symbolizer decodes into it, fills functions and lines, and re-encodes.
 *
 * Ownership: a struct sp_profile owns every table and every string it
 * holds (strings are copied on intern).  Indices returned by the add/intern
 * calls stay valid for the profile's life.  All add/intern functions dedup:
 * adding an equal entry returns the existing index.
 *
 * Errors: functions returning int32_t return an index >= 0 or a negative
 * errno (-ENOMEM, -EINVAL).  Nothing aborts.
 *
 * This layer imports nothing above it.
 */
#ifndef SPANPROF_PROFILE_H
#define SPANPROF_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What a sample measures.  Each kind becomes one OTLP Profile and one set of
 * pprof value columns. */
enum sp_sample_kind {
	SP_KIND_ONCPU = 0,	/* values: samples/count, cpu/nanoseconds */
	SP_KIND_OFFCPU = 1,	/* values: off_cpu/nanoseconds (+ count of waits) */
	SP_KIND__MAX,
};

enum sp_frame_kind {
	SP_FRAME_NATIVE = 0,	/* user-space native code */
	SP_FRAME_KERNEL = 1,
};

struct sp_mapping {
	uint64_t memory_start;
	uint64_t memory_limit;
	uint64_t file_offset;
	int32_t filename;	/* string index */
	int32_t build_id;	/* string index: lower-case hex GNU build id, or a Go
				 * build id (base/buildid.h) when the file has no
				 * GNU one; 0 = none */
	bool has_functions;
	bool has_filenames;
	bool has_line_numbers;
	bool has_inline_frames;
};

struct sp_line {
	int32_t function;	/* function index */
	int64_t line;
	int64_t column;
};

#define SP_MAX_INLINE 16	/* lines per location (inlined chain + caller) */

struct sp_location {
	int32_t mapping;	/* mapping index, 0 = unknown */
	uint64_t address;	/* runtime address; non-leaf already call-adjusted */
	uint8_t frame_kind;	/* enum sp_frame_kind */
	uint8_t n_lines;
	struct sp_line lines[SP_MAX_INLINE];	/* inlined callees first, caller last */
};

struct sp_function {
	int32_t name;
	int32_t system_name;
	int32_t filename;
	int64_t start_line;
};

struct sp_link {
	uint8_t trace_id[16];
	uint8_t span_id[8];
};

/* A resource attribute beyond the fixed fields (from the process's and
 * the collector's OTEL_RESOURCE_ATTRIBUTES, k8s.node.name): string
 * indices, both non-zero. */
struct sp_res_attr {
	int32_t key;
	int32_t value;
};

#define SP_RES_ATTRS_MAX 16

/* One process (OTLP ResourceProfiles).  Strings are indices.  attrs never
 * repeats a key nor names a fixed field's key (the snapshot sees to it;
 * the OTLP decoder keeps the first of each). */
struct sp_resource {
	int64_t pid;
	int32_t service_name;	/* 0 = unknown */
	int32_t exe_path;
	int32_t exe_name;
	int32_t container_id;
	int32_t host_name;
	uint32_t n_attrs;
	struct sp_res_attr attrs[SP_RES_ATTRS_MAX];
};

/* A sample label beyond the fixed fields (pprof Label / OTLP attribute). */
struct sp_label {
	int32_t key;		/* string index */
	int32_t str;		/* string index, 0 when numeric */
	int64_t num;
};

#define SP_MAX_LABELS 16

/* The label carrying an off-CPU wait's reason (sleep, io, runqueue, other). */
#define SP_LABEL_OFFCPU_REASON "off_cpu_reason"

/* True for a label name the pprof and OTLP codecs read as one of a
 * sample's fixed fields (pid, tid, thread name, trace and span id,
 * service.name, thread.id/.name) or the off-CPU reason: a user-supplied
 * attribute of that name must be renamed, or it would pose as one. */
bool sp_profile__label_reserved(const char *name);
/* True for a resource attribute key that struct sp_resource carries in a
 * fixed field (service.name, host.name, process.pid, ...): never one of
 * its attrs. */
bool sp_profile__resource_key_fixed(const char *key);

struct sp_sample {
	int32_t resource;	/* resource index (0-based, no zero entry) */
	int32_t stack;		/* stack index */
	int32_t link;		/* link index, 0 = no trace context */
	uint8_t kind;		/* enum sp_sample_kind */
	int64_t tid;		/* thread.id, 0 = unknown */
	int32_t thread_name;	/* string index */
	int64_t count;		/* events merged into this sample */
	int64_t value_ns;	/* on-CPU: count * period; off-CPU: blocked ns */
	uint32_t n_labels;
	struct sp_label labels[SP_MAX_LABELS];
	/* Event timestamps (unix ns), one per event when known; either 0 or
	 * equal to count.  Owned by the profile once added. */
	uint32_t n_timestamps;
	uint64_t *timestamps;
};

struct sp_profile {
	/* tables; entry 0 of strings/mappings/locations/functions/links/stacks
	 * is the zero value */
	char **strings;
	uint32_t n_strings;
	struct sp_mapping *mappings;
	uint32_t n_mappings;
	struct sp_location *locations;
	uint32_t n_locations;
	struct sp_function *functions;
	uint32_t n_functions;
	struct sp_link *links;
	uint32_t n_links;
	/* stack i = stack_locs[stack_off[i] .. stack_off[i] + stack_len[i]) */
	uint32_t *stack_off;
	uint32_t *stack_len;
	uint32_t n_stacks;
	int32_t *stack_locs;
	uint32_t n_stack_locs;
	struct sp_resource *resources;
	uint32_t n_resources;
	struct sp_sample *samples;
	uint32_t n_samples;

	uint64_t time_unix_ns;		/* start of the profile */
	uint64_t duration_ns;
	uint64_t period_ns[SP_KIND__MAX];	/* ONCPU: 1e9 / Hz */

	void *priv;			/* codec/dedup indexes, owned */
};

struct sp_profile *sp_profile__new(void);
void sp_profile__free(struct sp_profile *p);	/* NULL-safe */

int32_t sp_profile__intern(struct sp_profile *p, const char *s);
int32_t sp_profile__intern_n(struct sp_profile *p, const char *s, size_t len);
int32_t sp_profile__add_mapping(struct sp_profile *p, const struct sp_mapping *m);
int32_t sp_profile__add_location(struct sp_profile *p, const struct sp_location *l);
int32_t sp_profile__add_function(struct sp_profile *p, const struct sp_function *f);
int32_t sp_profile__add_link(struct sp_profile *p, const uint8_t trace_id[16],
			     const uint8_t span_id[8]);
int32_t sp_profile__add_stack(struct sp_profile *p, const int32_t *locs, uint32_t n);
int32_t sp_profile__add_resource(struct sp_profile *p, const struct sp_resource *r);
/* Copies *s; s->timestamps is copied too (the caller keeps its buffer). */
int32_t sp_profile__add_sample(struct sp_profile *p, const struct sp_sample *s);

/* Frees every sample's timestamps: what remains is the compact form, one
 * count and value per sample (the OTLP encoder then merges samples that
 * differed only in having timestamps).  NULL-safe. */
void sp_profile__drop_timestamps(struct sp_profile *p);

static inline const char *sp_profile__str(const struct sp_profile *p, int32_t i)
{
	return (i >= 0 && (uint32_t)i < p->n_strings) ? p->strings[i] : "";
}

/* Room for that many more samples and locations at once (a decoder that
 * knows the counts: no doubling, no growth transient).  0, -ENOMEM,
 * -E2BIG. */
int sp_profile__reserve(struct sp_profile *p, uint32_t samples, uint32_t locations);

/* Bytes the profile holds on the heap now (tables at their capacity,
 * strings, timestamps, dedup indexes; glibc's per-allocation overhead
 * included): what a memory budget charges for it. */
uint64_t sp_profile__footprint(const struct sp_profile *p);

/* Checks every index is in range and every table's zero entry; returns 0 or
 * -EINVAL.  Decoders call it before handing a profile out. */
int sp_profile__validate(const struct sp_profile *p);

#endif /* SPANPROF_PROFILE_H */
