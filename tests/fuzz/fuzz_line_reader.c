/* libFuzzer target: src/base/line_reader.c.  The first byte picks the
 * buffer size (2..257, so lines straddle it and over-long lines are
 * common); the rest is the text, fed through a memfd to __fd and in
 * memory to __buf.  Properties, not only "no crash":
 *   - both forms make the same calls (lines and over-long reports, in
 *     order) and return the same;
 *   - every passed line is shorter than the buffer and holds no '\n';
 *   - the passed lines, each with its '\n', and the over-long ones are
 *     exactly the input: lines + over-long = the input's line count, and
 *     the passed bytes are the input's lines of fewer than cap bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/line_reader.h"

struct seen {
	uint8_t *log;		/* lines, each then '\n'; over-long: one 0xff byte */
	size_t len, cap;
	size_t bufcap;
};

static void put(struct seen *s, const void *p, size_t n)
{
	if (s->len + n > s->cap)
		abort();	/* more output than input: impossible */
	memcpy(s->log + s->len, p, n);
	s->len += n;
}

static int on_line(void *ctx, const char *l, size_t len)
{
	struct seen *s = ctx;

	if (len >= s->bufcap || memchr(l, '\n', len))
		abort();
	put(s, l, len);
	put(s, "\n", 1);
	return 0;
}

static int on_long(void *ctx)
{
	put(ctx, "\xff", 1);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int fd = -1;
	struct sp_line_stats st, bst;
	struct seen a = { 0 }, b = { 0 }, want = { 0 };
	struct sp_line_sink sink = { .line = on_line, .overlong = on_long };
	const char *text;
	size_t len, cap, start = 0;
	char *buf;
	int rc, brc;

	if (!size)
		return 0;
	cap = (size_t)data[0] + 2;
	text = (const char *)data + 1;
	len = size - 1;
	if (fd < 0)
		fd = memfd_create("fuzz-lines", MFD_CLOEXEC);
	if (fd < 0 || ftruncate(fd, 0) || pwrite(fd, text, len, 0) != (ssize_t)len ||
	    lseek(fd, 0, SEEK_SET) != 0)
		return 0;
	a.cap = b.cap = want.cap = len + 1;
	a.log = malloc(a.cap);
	b.log = malloc(b.cap);
	want.log = malloc(want.cap);
	buf = malloc(cap);	/* exactly cap: ASan sees an overrun */
	if (!a.log || !b.log || !want.log || !buf)
		abort();
	a.bufcap = b.bufcap = cap;
	sink.ctx = &a;
	rc = sp_line_reader__fd(fd, buf, cap, 0, &sink, &st);
	sink.ctx = &b;
	brc = sp_line_reader__buf(text, len, cap, &sink, &bst);
	if (rc || brc || a.len != b.len || memcmp(a.log, b.log, a.len) || st.lines != bst.lines ||
	    st.overlong != bst.overlong || st.bytes != len)
		abort();
	/* The same cut by hand. */
	while (start < len) {
		const char *nl = memchr(text + start, '\n', len - start);
		size_t end = nl ? (size_t)(nl - text) : len;

		if (end - start >= cap) {
			put(&want, "\xff", 1);
		} else {
			put(&want, text + start, end - start);
			put(&want, "\n", 1);
		}
		start = end + 1;
	}
	if (want.len != a.len || memcmp(want.log, a.log, a.len))
		abort();
	free(a.log);
	free(b.log);
	free(want.log);
	free(buf);
	return 0;
}
