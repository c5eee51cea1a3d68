// SPDX-License-Identifier: MIT
/*
 * input.c - reading and decoding the input profile, opening outputs
 * (contract: input.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "profile/codec.h"
#include "profile/fileio.h"
#include "profile/profile.h"
#include "symbolizer/cli/cli.h"
#include "symbolizer/cli/input.h"

/* strerror(E2BIG) says "Argument list too long": name the limit instead. */
_Static_assert(SP_DECODE_MAX_BYTES == 64u << 20, "input_error names 64 MiB");
static const char *input_error(int err, bool decoding)
{
	if (err != -E2BIG)
		return strerror(-err);
	return decoding ? "over the decoder's limits (64 MiB limit on the decompressed "
			  "input, 1048576 entries per table)"
			: "larger than the 64 MiB input limit";
}

enum sp_in_fmt sp_input__detect(const uint8_t *b, size_t len)
{
	size_t i = 0;

	while (i < len) {
		uint64_t key = 0, v = 0;
		unsigned sh = 0;

		do {
			if (i >= len || sh > 63)
				return SP_FMT_PPROF;
			key |= (uint64_t)(b[i] & 0x7f) << sh;
			sh += 7;
		} while (b[i++] & 0x80);
		if ((key >> 3) >= 3)
			return SP_FMT_PPROF;
		switch (key & 7) {
		case 0:
		case 2:
			sh = 0;
			do {
				if (i >= len || sh > 63)
					return SP_FMT_PPROF;
				v |= (uint64_t)(b[i] & 0x7f) << sh;
				sh += 7;
			} while (b[i++] & 0x80);
			if ((key & 7) == 2) {
				if (v > len - i)
					return SP_FMT_PPROF;
				i += v;
			}
			break;
		case 1:
			i += 8;
			break;
		case 5:
			i += 4;
			break;
		default:
			return SP_FMT_PPROF;
		}
	}
	return len ? SP_FMT_OTLP : SP_FMT_PPROF;
}

int sp_input__read(struct sp_input *in, const char *path)
{
	int err = sp_read_path(path, SP_DECODE_MAX_BYTES, &in->raw, &in->raw_len);

	if (err)
		fprintf(stderr, SP_CLI_PROG ": %s: %s\n", path, input_error(err, false));
	return err;
}

int sp_input__decode(struct sp_input *in, const char *path)
{
	uint8_t *plain = in->raw;
	size_t len = in->raw_len;
	int err = 0;

	in->gzip = sp_is_gzip(in->raw, in->raw_len);
	if (in->gzip)
		err = sp_gunzip(in->raw, in->raw_len, SP_DECODE_MAX_BYTES, &plain, &len);
	if (!err) {
		in->fmt = sp_input__detect(plain, len);
		err = in->fmt == SP_FMT_OTLP ? sp_otlp__decode(plain, len, &in->p)
					     : sp_pprof__decode(plain, len, &in->p);
	}
	if (plain != in->raw)
		free(plain);
	if (err)
		fprintf(stderr, SP_CLI_PROG ": %s: cannot decode: %s\n", path,
			input_error(err, true));
	return err;
}

void sp_input__free(struct sp_input *in)
{
	free(in->raw);
	sp_profile__free(in->p);
	in->raw = NULL;
	in->p = NULL;
}

FILE *sp_output__open(const char *path)
{
	FILE *f;

	if (!path || !strcmp(path, "-"))
		return stdout;
	f = fopen(path, "w");
	if (!f)
		fprintf(stderr, SP_CLI_PROG ": %s: %s\n", path, strerror(errno));
	return f;
}

int sp_output__close(FILE *f)
{
	int err = 0;

	if (!f)
		return 0;
	if (fflush(f) || ferror(f))
		err = -EIO;
	if (f != stdout && fclose(f))
		err = -EIO;
	return err;
}
