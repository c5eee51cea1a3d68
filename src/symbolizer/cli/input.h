/* SPDX-License-Identifier: MIT */
/*
 * input.h - the profile file `file` and `report` read, and the files they
 * write.
 *
 * sp_input__read: the whole of path ("-": stdin) into in->raw, at most
 *   SP_DECODE_MAX_BYTES (64 MiB).
 * sp_input__decode: gunzips when the bytes are gzip (in->gzip), detects
 *   the format from the bytes (in->fmt) and decodes into in->p, within the
 *   decoder's limits.
 * Both print one line naming the file and the cause on failure and return
 *   a negative errno.  sp_input__free releases everything (NULL-safe
 *   fields; in itself is the caller's).
 * sp_input__detect: OTLP's ExportProfilesServiceRequest has fields 1 and 2
 *   only at its top level; a pprof Profile always carries its string table
 *   (field 6).  Anything that does not parse as a top level of fields 1..2
 *   is pprof.
 * sp_output__open: "-" or NULL is stdout, else the file is created; NULL
 *   after one line on stderr.  sp_output__close: flushes, closes what is
 *   not stdout; -EIO when a write failed.
 */
#ifndef SPANPROF_SYMBOLIZER_INPUT_H
#define SPANPROF_SYMBOLIZER_INPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct sp_profile;

enum sp_in_fmt { SP_FMT_AUTO = 0, SP_FMT_PPROF, SP_FMT_OTLP };

struct sp_input {
	uint8_t *raw;
	size_t raw_len;
	struct sp_profile *p;	/* after decode */
	enum sp_in_fmt fmt;	/* after decode */
	bool gzip;		/* after decode: the input was gzip'd */
};

int sp_input__read(struct sp_input *in, const char *path);
int sp_input__decode(struct sp_input *in, const char *path);
void sp_input__free(struct sp_input *in);
enum sp_in_fmt sp_input__detect(const uint8_t *b, size_t len);

FILE *sp_output__open(const char *path);
int sp_output__close(FILE *f);

#endif /* SPANPROF_SYMBOLIZER_INPUT_H */
