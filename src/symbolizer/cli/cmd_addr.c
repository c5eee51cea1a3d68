// SPDX-License-Identifier: MIT
/*
 * cmd_addr.c - `spanprof-symbolizer addr -e ELF [ADDR...]`: resolve ELF
 * virtual addresses (file offsets with --offset, offsets in .text with
 * --text: a kernel module frame's location, offsets in another executable
 * section with --section NAME: a [module-section:...] frame's) and print them like
 * `llvm-symbolizer --inlining`: function, then file:line:column, inlined
 * callees first, a blank line after each address ("??" when unknown).
 * Without ADDR, one address per line of stdin, each answered at once when
 * stdin is a pipe.
 */
#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "symbolizer/cli/cmds.h"
#include "symbolizer/cli/context.h"
#include "symbolizer/cli/privs.h"

enum { OPT_OFFSET = SP_OPT_CMD, OPT_TEXT, OPT_SECTION };

struct addr_opts {
	struct sp_common_opts c;
	const char *elf;
	const char *section;		/* --section NAME */
	uint64_t sect_lo, sect_size;	/* where it is (the file's layout) */
	bool is_offset, is_text;
	char **addrs;
	int n_addrs;
};

#define A struct addr_opts
static const struct sp_cli_opt addr_options[] = {
	SP_CLI_STR_OPT(A, "exe", 'e', "ELF", elf, "the ELF file the addresses belong to"),
	SP_CLI_FLAG_OPT(A, "offset", OPT_OFFSET, is_offset,
			"the addresses are file offsets, not virtual addresses"),
	SP_CLI_FLAG_OPT(A, "text", OPT_TEXT, is_text,
			"the addresses are offsets in the file's .text (a kernel module frame's "
			"location; a .ko's sections all sit at 0)"),
	SP_CLI_STR_OPT(A, "section", OPT_SECTION, "NAME", section,
		       "the addresses are offsets in the executable section NAME (.text.unlikely, "
		       ".init.text, ...: a [module-section:MODULE:NAME] frame's location)"),
	SP_CLI_OPT_END,
};

static int check(struct sp_cli *p, int argc, char **argv, void *opts)
{
	struct addr_opts *o = opts;

	if (!o->elf)
		return sp_cli__bad(p, "needs -e ELF");
	if (o->is_offset + o->is_text + !!o->section > 1)
		return sp_cli__bad(p, "--offset, --text and --section: give one");
	o->addrs = argv + optind;
	o->n_addrs = argc - optind;
	return 0;
}

/* The answers, formatted here rather than by printf (100,000 addresses
 * print 300,000 lines or more: formatting was a third of a warm run). */
struct outbuf {
	char b[1 << 16];
	size_t n;
	int err;
};

static void out_flush(struct outbuf *o)
{
	if (o->n && fwrite(o->b, 1, o->n, stdout) != o->n)
		o->err = -EIO;
	o->n = 0;
}

/* Appends s.  A byte loop: the strings are short (names, paths), and
 * memccpy's two passes cost more than they save there. */
static void out_str(struct outbuf *o, const char *s)
{
	for (;;) {
		char *d = o->b + o->n, *end = o->b + sizeof(o->b);

		while (d < end && *s)
			*d++ = *s++;
		o->n = (size_t)(d - o->b);
		if (!*s)
			return;
		out_flush(o);
	}
}

static void out_i64(struct outbuf *o, int64_t v)
{
	char tmp[24], *p = tmp + sizeof(tmp);
	uint64_t u = v < 0 ? -(uint64_t)v : (uint64_t)v;

	*--p = 0;
	do
		*--p = (char)('0' + u % 10);
	while (u /= 10);
	if (v < 0)
		*--p = '-';
	out_str(o, p);
}

static void print_frames(struct outbuf *o, const struct sp_frames *fr, int rc)
{
	if (rc || !fr->n) {
		out_str(o, "??\n??:0:0\n\n");
		return;
	}
	for (uint8_t i = 0; i < fr->n; i++) {
		out_str(o, fr->f[i].function ? fr->f[i].function : "??");
		out_str(o, "\n");
		out_str(o, fr->f[i].file ? fr->f[i].file : "??");
		out_str(o, ":");
		out_i64(o, fr->f[i].line);
		out_str(o, ":");
		out_i64(o, fr->f[i].column);
		out_str(o, "\n");
	}
	out_str(o, "\n");
}

/* An address as strtoull(s, .., 0) reads it (trailing bytes ignored),
 * "0x" hex without it.  0, or -EINVAL for no number or an overflow. */
static int parse_addr(const char *s, uint64_t *a)
{
	char *end;

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		uint64_t v = 0;
		int n = 0;

		for (s += 2; n < 16; s++, n++) {
			int d = *s >= '0' && *s <= '9' ? *s - '0' :
				(*s | 0x20) >= 'a' && (*s | 0x20) <= 'f' ? (*s | 0x20) - 'a' + 10 : -1;

			if (d < 0)
				break;
			v = v << 4 | (uint64_t)d;
		}
		if (n && !isxdigit((unsigned char)*s)) {
			*a = v;
			return 0;
		}
		s -= n + 2;	/* no digit, or more than 16: strtoull decides */
	}
	errno = 0;
	*a = strtoull(s, &end, 0);
	return errno || end == s ? -EINVAL : 0;
}

/* The printed answers of recent addresses, direct-mapped by address: a
 * repeated address costs a hash and a copy, not a resolution and its
 * formatting (the resolver's own cache answers the frames; this one saves
 * printing them again).  At most TEXT_SLOTS texts of TEXT_MAX bytes. */
#define TEXT_SLOTS 4096
#define TEXT_MAX 512

struct text_cache {
	uint64_t addr[TEXT_SLOTS];
	uint16_t len[TEXT_SLOTS];	/* 0 = empty */
	char *text[TEXT_SLOTS];
};

static uint32_t text_slot(uint64_t a)
{
	return (uint32_t)((a * 0x9e3779b97f4a7c15ull) >> 52) & (TEXT_SLOTS - 1);
}

static void text_cache_free(struct text_cache *tc)
{
	for (uint32_t i = 0; tc && i < TEXT_SLOTS; i++)
		free(tc->text[i]);
	free(tc);
}

static int addr_one(const struct addr_opts *o, struct sp_sym_ctx *x, const char *id,
		    const char *s, struct outbuf *ob, struct text_cache *tc)
{
	struct sp_frames fr;
	uint32_t slot;
	size_t start;
	uint64_t a;
	int rc;

	if (parse_addr(s, &a)) {
		out_str(ob, "??\n??:0:0\n\n");
		return 0;
	}
	slot = text_slot(a);
	if (tc->len[slot] && tc->addr[slot] == a) {
		if (sizeof(ob->b) - ob->n < tc->len[slot])
			out_flush(ob);
		memcpy(ob->b + ob->n, tc->text[slot], tc->len[slot]);
		ob->n += tc->len[slot];
		return ob->err;
	}
	if (o->is_text)
		rc = sp_resolver__resolve_text(x->res, id, o->elf, a, &fr);
	else if (o->section && a >= o->sect_size)
		rc = -ENOENT;	/* past the section */
	else if (o->section)
		rc = sp_resolver__resolve_vaddr(x->res, id, o->elf, o->sect_lo + a, &fr);
	else if (o->is_offset)
		rc = sp_resolver__resolve(x->res, id, o->elf, a, &fr);
	else
		rc = sp_resolver__resolve_vaddr(x->res, id, o->elf, a, &fr);
	if (rc == -ENOMEM)
		return rc;
	if (sizeof(ob->b) - ob->n < TEXT_MAX)
		out_flush(ob);
	start = ob->n;
	print_frames(ob, &fr, rc);
	/* still in the buffer (no flush in between) and short enough: keep */
	if (ob->n > start && ob->n - start <= TEXT_MAX) {
		char *t = tc->text[slot] ? tc->text[slot] : malloc(TEXT_MAX);

		if (t) {
			memcpy(t, ob->b + start, ob->n - start);
			tc->text[slot] = t;
			tc->addr[slot] = a;
			tc->len[slot] = (uint16_t)(ob->n - start);
		}
	}
	return ob->err;
}

/* stdin, read in blocks and cut into lines (CR and LF stripped; a line
 * longer than the buffer is cut there, its rest read as more lines). */
struct inbuf {
	char b[1 << 16];
	size_t pos, len;
	bool eof;
};

/* The next line (NUL-terminated in the buffer), or NULL at the end or on a
 * read error (*err).  Before a read that may wait (stdin a pipe), the
 * answers so far go out: each line driven through a pipe is answered
 * before the next is awaited, as llvm-symbolizer does. */
static char *in_line(struct inbuf *in, struct outbuf *ob, bool pipe, int *err)
{
	for (;;) {
		char *nl = memchr(in->b + in->pos, '\n', in->len - in->pos), *line;
		ssize_t n;

		if (nl || (in->eof && in->pos < in->len) ||
		    (in->pos == 0 && in->len == sizeof(in->b) - 1)) {
			line = in->b + in->pos;
			if (!nl)
				nl = in->b + in->len;
			*nl = 0;
			in->pos = (size_t)(nl - in->b) + (nl < in->b + in->len);
			if (nl > line && nl[-1] == '\r')
				nl[-1] = 0;
			return line;
		}
		if (in->eof)
			return NULL;
		memmove(in->b, in->b + in->pos, in->len - in->pos);
		in->len -= in->pos;
		in->pos = 0;
		if (pipe) {
			out_flush(ob);
			fflush(stdout);
		}
		n = read(STDIN_FILENO, in->b + in->len, sizeof(in->b) - 1 - in->len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			*err = -errno;
			return NULL;
		}
		if (n == 0)
			in->eof = true;
		in->len += (size_t)n;
	}
}

static int run(void *opts)
{
	struct addr_opts o = *(struct addr_opts *)opts;
	char id[SP_BUILDID_MAX_HEX + 1];
	struct sp_sym_ctx x = { 0 };
	struct outbuf *ob = NULL;
	struct inbuf *in = NULL;
	struct text_cache *tc = NULL;
	int err;

	err = sp_privs__drop(&o.c);
	if (err)
		return 1;
	err = sp_buildid__read_file(o.elf, id, sizeof(id));
	if (err) {
		fprintf(stderr, SP_CLI_PROG ": %s: no GNU build id (%s)\n", o.elf,
			strerror(-err));
		return 1;
	}
	err = sp_sym_ctx__open(&x, &o.c);
	if (err)
		goto out;
	if (o.section) {
		err = sp_resolver__section(x.res, id, o.elf, o.section, &o.sect_lo, &o.sect_size);
		if (err == -ENOMEM)
			goto out;
		if (err) {
			fprintf(stderr, SP_CLI_PROG ": %s: no executable section %s\n", o.elf,
				o.section);
			goto out;
		}
	}
	ob = calloc(1, sizeof(*ob));
	in = calloc(1, sizeof(*in));
	tc = calloc(1, sizeof(*tc));
	if (!ob || !in || !tc) {
		err = -ENOMEM;
		goto out;
	}
	if (o.n_addrs) {
		for (int i = 0; i < o.n_addrs && !err; i++)
			err = addr_one(&o, &x, id, o.addrs[i], ob, tc);
	} else {
		struct stat st;
		bool pipe = fstat(STDIN_FILENO, &st) || !S_ISREG(st.st_mode);
		char *line;

		while (!err && (line = in_line(in, ob, pipe, &err)))
			err = addr_one(&o, &x, id, line, ob, tc);
	}
	out_flush(ob);
	if (!err)
		err = ob->err;
	if (!o.c.quiet)
		sp_sym_ctx__print_stats(&x, NULL);
out:
	text_cache_free(tc);
	free(in);
	free(ob);
	sp_sym_ctx__close(&x);
	return err ? 1 : 0;
}

const struct sp_cmd sp_cmd_addr = {
	.name = "addr",
	.operands = "-e ELF [ADDR...]",
	.summary = "resolve addresses of one ELF file like llvm-symbolizer --inlining",
	.about = "  Reads one address per line from stdin when no ADDR is given.\n",
	.opts = addr_options,
	.groups = SP_OPTG_DEBUGINFO | SP_OPTG_CACHE | SP_OPTG_PRIVS,
	.opts_size = sizeof(struct addr_opts),
	.check = check,
	.run = run,
};
