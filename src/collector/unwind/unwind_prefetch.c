// SPDX-License-Identifier: MIT
/*
 * unwind_prefetch.c - see unwind_prefetch.h.
 *
 * A job owns a duplicate of the caller's descriptor and its buffers (an
 * open job: its pin and the reopened descriptor): an abandoned job
 * outlives the call (io_deadline.h's ownership table).
 *
 * ELF64 little-endian layouts read (offsets in bytes):
 *   header:  0x20 e_phoff u64, 0x28 e_shoff u64, 0x36 e_phentsize u16,
 *            0x38 e_phnum u16, 0x3a e_shentsize u16, 0x3c e_shnum u16,
 *            0x3e e_shstrndx u16
 *   phdr:    0 p_type u32, 8 p_offset u64, 0x20 p_filesz u64
 *   shdr:    0 sh_name u32, 4 sh_type u32, 8 sh_flags u64, 0x18 sh_offset u64,
 *            0x20 sh_size u64, 0x28 sh_link u32
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/buildid.h"
#include "base/io_deadline.h"
#include "base/pin.h"
#include "collector/unwind/unwind_prefetch.h"

#define JOB_MAX (8ull << 20)		/* bytes per deadline-bound job */
#define KEEP_MAX (16ull << 20)		/* headers and name table kept */
#define DEBUG_MAX (64ull << 20)		/* cfi_extract.c's .debug_* limit */
#define CHUNK (256u << 10)
#define IMAGE_VSIZE_MAX (16ull << 30)	/* address space of one image */
#define PT_GNU_EH_FRAME_ 0x6474e550u
#define SHT_NOBITS_ 8u
#define SHN_XINDEX_ 0xffffu
#define PT_LOAD_ 1u
#define SHF_COMPRESSED_ (1u << 11)

struct sp_unw_prefetch {
	struct sp_io_deadline *io;
	uint64_t marks[SP_UNW_PREFETCH_MARKS];	/* st_dev of stalled devices */
	uint32_t n_marks, next_mark;
	struct sp_unw_prefetch_stats st;
};

struct pf_job {
	struct sp_io_job base;		/* first */
	int fd;				/* a duplicate, the job's */
	uint64_t off, len;
	uint8_t *keep;			/* len bytes, the job's */
	int err;
};

static void job_run(struct sp_io_job *base)
{
	struct pf_job *j = (struct pf_job *)base;
	uint64_t done = 0;

	while (done < j->len) {
		size_t want = j->len - done < CHUNK ? (size_t)(j->len - done) : CHUNK;
		ssize_t n = pread(j->fd, j->keep + done, want, (off_t)(j->off + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			j->err = n < 0 ? -errno : -EIO;	/* short: file shrank */
			return;
		}
		done += (uint64_t)n;
	}
}

static void job_destroy(struct sp_io_job *base)
{
	struct pf_job *j = (struct pf_job *)base;

	if (j->fd >= 0)
		close(j->fd);
	free(j->keep);
	free(j);
}

static bool marked(const struct sp_unw_prefetch *p, uint64_t dev)
{
	if (!dev)
		return false;
	for (uint32_t i = 0; i < p->n_marks; i++)
		if (p->marks[i] == dev)
			return true;
	return false;
}

static void mark(struct sp_unw_prefetch *p, uint64_t dev)
{
	if (!dev || marked(p, dev))
		return;
	p->marks[p->next_mark] = dev;
	p->next_mark = (p->next_mark + 1) % SP_UNW_PREFETCH_MARKS;
	if (p->n_marks < SP_UNW_PREFETCH_MARKS)
		p->n_marks++;
}

/* The builder's open (__open): owns its pin (a duplicate, or its own of
 * path) and, until handed back, the reopened descriptor. */
struct open_job {
	struct sp_io_job base;		/* first */
	int pfd;			/* the pin, the job's; -1: pin path */
	char path[96];
	bool want_bid;
	int fd;				/* reopened, -1 none */
	int err;
	struct stat st;
	struct sp_build_id b;
};

static void open_run(struct sp_io_job *base)
{
	struct open_job *j = (struct open_job *)base;

	if (j->pfd < 0) {
		j->pfd = sp_pin__path(-1, j->path, 0, &j->st);
		if (j->pfd < 0) {
			j->err = j->pfd;
			return;
		}
	} else if (fstat(j->pfd, &j->st)) {
		j->err = -errno;
		return;
	}
	j->fd = sp_pin__reopen(j->pfd, &j->st, NULL);
	if (j->fd < 0) {
		j->err = j->fd;
		return;
	}
	if (j->want_bid && sp_buildid__from_fd(j->fd, &j->b))
		memset(&j->b, 0, sizeof(j->b));
}

static void open_destroy(struct sp_io_job *base)
{
	struct open_job *j = (struct open_job *)base;

	if (j->pfd >= 0)
		close(j->pfd);
	if (j->fd >= 0)
		close(j->fd);
	free(j);
}

int sp_unw_prefetch__open(struct sp_unw_prefetch *p, int pinned_fd, const char *pin_path,
			  uint64_t dev, struct stat *st, struct sp_build_id *b)
{
	struct open_job *j;
	int rc;

	if (pinned_fd < 0 && (!pin_path || strlen(pin_path) >= sizeof(j->path)))
		return -EINVAL;
	if (marked(p, dev)) {
		p->st.skipped++;
		p->st.marked_skipped++;
		return -ETIMEDOUT;	/* that device stalled before: no helper */
	}
	j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	j->base = (struct sp_io_job){ .run = open_run, .destroy = open_destroy };
	j->fd = -1;
	j->pfd = pinned_fd >= 0 ? fcntl(pinned_fd, F_DUPFD_CLOEXEC, 0) : -1;
	if (pinned_fd >= 0 && j->pfd < 0) {
		rc = -errno;
		free(j);
		return rc;
	}
	if (pinned_fd < 0)
		strcpy(j->path, pin_path);
	j->want_bid = pinned_fd < 0 && b;
	rc = sp_io_deadline__run(p->io, &j->base);
	if (rc == -ETIMEDOUT) {
		p->st.open_stalled++;	/* j is its helper's now */
		mark(p, dev);
		return rc;
	}
	if (rc) {
		p->st.skipped++;
		open_destroy(&j->base);
		return rc;
	}
	rc = j->err ? j->err : j->fd;
	if (!j->err) {
		*st = j->st;
		if (j->want_bid)
			*b = j->b;
		j->fd = -1;	/* the caller's now */
	}
	open_destroy(&j->base);
	return rc;
}

struct sp_unw_prefetch *sp_unw_prefetch__new(uint32_t timeout_ms, uint32_t max_stuck)
{
	struct sp_io_deadline_config c = { .timeout_ms = timeout_ms ? timeout_ms : 2000,
					   .max_stuck = max_stuck ? max_stuck : 4 };
	struct sp_unw_prefetch *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->io = sp_io_deadline__new(&c);
	if (!p->io) {
		free(p);
		errno = ENOMEM;
		return NULL;
	}
	return p;
}

void sp_unw_prefetch__free(struct sp_unw_prefetch *p)
{
	if (!p)
		return;
	sp_io_deadline__free(p->io);
	free(p);
}

/* The image being filled (sp_unw_image) and what it may still take. */
struct fill {
	struct sp_unw_image *img;
	uint64_t budget;		/* bytes left of SP_UNW_IMAGE_MAX */
};

/* Reads [off, off + len) (within the file: the caller checked) on a
 * helper, in jobs of at most JOB_MAX, each into the job's own buffer (an
 * abandoned job must not write into the image), copied into the image at
 * off once back; with keep, *keep also gets a malloc'd copy (the caller
 * frees).  -E2BIG past the image's budget, nothing read. */
static int read_range(struct sp_unw_prefetch *p, int fd, uint64_t dev, uint64_t off, uint64_t len,
		      uint8_t **keep, struct fill *f)
{
	uint64_t start = off, total = len;

	if (len > f->budget) {
		p->st.refused++;
		return -E2BIG;
	}
	f->budget -= len;
	while (len) {
		uint64_t n = len < JOB_MAX ? len : JOB_MAX;
		struct pf_job *j = calloc(1, sizeof(*j));
		int rc;

		if (!j)
			return -ENOMEM;
		j->base = (struct sp_io_job){ .run = job_run, .destroy = job_destroy };
		j->off = off;
		j->len = n;
		j->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
		j->keep = malloc(n ? n : 1);
		if (j->fd < 0 || !j->keep) {
			rc = j->fd < 0 ? -errno : -ENOMEM;
			job_destroy(&j->base);
			return rc;
		}
		rc = sp_io_deadline__run(p->io, &j->base);
		if (rc == -ETIMEDOUT) {
			mark(p, dev);		/* j is its helper's now */
			p->st.stalled++;
			return -ETIMEDOUT;
		}
		if (rc) {
			job_destroy(&j->base);
			p->st.skipped++;
			return rc;
		}
		rc = j->err;
		if (!rc)
			memcpy(f->img->base + off, j->keep, n);
		job_destroy(&j->base);
		if (rc)
			return rc;
		p->st.bytes += n;
		off += n;
		len -= n;
	}
	if (keep) {
		*keep = malloc(total ? total : 1);
		if (!*keep)
			return -ENOMEM;
		memcpy(*keep, f->img->base + start, total);
	}
	return 0;
}

static uint16_t u16(const uint8_t *b)
{
	return (uint16_t)(b[0] | b[1] << 8);
}

static uint32_t u32(const uint8_t *b)
{
	return (uint32_t)u16(b) | (uint32_t)u16(b + 2) << 16;
}

static uint64_t u64(const uint8_t *b)
{
	return (uint64_t)u32(b) | (uint64_t)u32(b + 4) << 32;
}

/* [off, off + len) within size, and len at most max. */
static bool fits(uint64_t off, uint64_t len, uint64_t size, uint64_t max)
{
	return len <= max && off <= size && len <= size - off;
}

void sp_unw_image__release(struct sp_unw_image *img)
{
	if (img && img->base)
		munmap(img->base, img->size);
	if (img)
		*img = (struct sp_unw_image){ 0 };
}

/* With no .eh_frame section to name it, cfi_extract.c finds .eh_frame
 * through PT_GNU_EH_FRAME's pointer, in the PT_LOAD segment holding it:
 * the linkers put it right after .eh_frame_hdr, so that segment's bytes
 * from the header on are read. */
static int read_eh_segment(struct sp_unw_prefetch *p, int fd, uint64_t dev, const uint8_t *ph,
			   uint32_t phnum, uint32_t phent, uint64_t size, struct fill *f)
{
	uint64_t hdr = UINT64_MAX;

	for (uint32_t i = 0; i < phnum; i++)
		if (u32(ph + (uint64_t)i * phent) == PT_GNU_EH_FRAME_)
			hdr = u64(ph + (uint64_t)i * phent + 8);
	if (hdr == UINT64_MAX)
		return 0;
	for (uint32_t i = 0; i < phnum; i++) {
		const uint8_t *e = ph + (uint64_t)i * phent;
		uint64_t off = u64(e + 8), len = u64(e + 0x20);

		if (u32(e) == PT_LOAD_ && fits(off, len, size, UINT64_MAX) && hdr >= off &&
		    hdr < off + len)
			return read_range(p, fd, dev, hdr, off + len - hdr, NULL, f);
	}
	return 0;
}

int sp_unw_prefetch__file(struct sp_unw_prefetch *p, int fd, const struct stat *stp,
			  struct sp_unw_image *img)
{
	uint8_t *eh = NULL, *ph = NULL, *sh = NULL, *names = NULL;
	uint64_t size, phoff, shoff, phlen, shlen, debug = 0, names_len = 0;
	uint64_t debug_all = 0;
	bool want_debug = false, have_debug_frame = false;
	uint32_t phnum = 0, phent = 0, shnum, shent, shstrndx;
	struct fill f = { .img = img, .budget = SP_UNW_IMAGE_MAX };
	bool have_eh = false;
	struct stat st = *stp;
	void *base;
	int rc;

	*img = (struct sp_unw_image){ 0 };
	if (fd < 0)
		return -EBADF;
	if (marked(p, (uint64_t)st.st_dev)) {
		p->st.skipped++;
		p->st.marked_skipped++;
		return -ETIMEDOUT;
	}
	size = (uint64_t)st.st_size;
	if (size < 64)
		return 0;
	if (size > IMAGE_VSIZE_MAX) {
		p->st.refused++;
		return -E2BIG;
	}
	/* Address space for the whole file; only the pages read are ever
	 * touched (and charged). */
	base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		    -1, 0);
	if (base == MAP_FAILED)
		return -ENOMEM;
	img->base = base;
	img->size = size;
	rc = read_range(p, fd, st.st_dev, 0, 64, &eh, &f);
	if (rc)
		goto out;
	if (memcmp(eh, "\177ELF\2\1", 6)) {
		rc = -EINVAL;	/* not ELF64 LE: not an x86-64 file */
		goto out;
	}
	phoff = u64(eh + 0x20);
	shoff = u64(eh + 0x28);
	phent = u16(eh + 0x36);
	phnum = u16(eh + 0x38);
	shent = u16(eh + 0x3a);
	shnum = u16(eh + 0x3c);
	shstrndx = u16(eh + 0x3e);
	phlen = (uint64_t)phent * phnum;
	if (phent >= 56 && phnum && fits(phoff, phlen, size, KEEP_MAX)) {
		rc = read_range(p, fd, st.st_dev, phoff, phlen, &ph, &f);
		if (rc)
			goto out;
		for (uint32_t i = 0; i < phnum; i++) {
			const uint8_t *e = ph + (uint64_t)i * phent;

			if (u32(e) == PT_GNU_EH_FRAME_ && fits(u64(e + 8), u64(e + 0x20), size,
							       UINT64_MAX)) {
				rc = read_range(p, fd, st.st_dev, u64(e + 8), u64(e + 0x20), NULL,
						&f);
				if (rc)
					goto out;
			}
		}
	} else {
		phnum = 0;
	}
	shlen = (uint64_t)shent * shnum;
	if (shent < 64 || !shnum || !fits(shoff, shlen, size, KEEP_MAX))
		goto eh_seg;
	rc = read_range(p, fd, st.st_dev, shoff, shlen, &sh, &f);
	if (rc)
		goto out;
	if (shstrndx == SHN_XINDEX_)
		shstrndx = u32(sh + 0x28);
	if (shstrndx >= shnum)
		goto eh_seg;
	{
		const uint8_t *s = sh + (uint64_t)shstrndx * shent;

		names_len = u64(s + 0x20);
		if (u32(s + 4) == SHT_NOBITS_ || !fits(u64(s + 0x18), names_len, size, KEEP_MAX))
			goto eh_seg;
		rc = read_range(p, fd, st.st_dev, u64(s + 0x18), names_len, &names, &f);
		if (rc)
			goto out;
	}
	/* Two passes: .debug_* only when the file has a .debug_frame (the
	 * only reason cfi_extract.c opens them: a -g binary's debug info is
	 * never read for .eh_frame alone; reading it anyway once got the agent
	 * OOM-killed in test_agent_memguard's 48 MiB cgroup), those it counts
	 * (not compressed) are at most 64 MiB, its rule, and all of them
	 * (libdw reads every one) fit what is left of the image: else none is
	 * read (cfi_extract.c then finds no .debug_frame rows, the .eh_frame
	 * ones stay). */
	for (int pass = 0; pass < 2 && !rc; pass++) {
		want_debug = pass == 1 && have_debug_frame && debug <= DEBUG_MAX &&
			     debug_all <= f.budget;
		for (uint32_t i = 0; i < shnum && !rc; i++) {
			const uint8_t *s = sh + (uint64_t)i * shent;
			uint32_t name = u32(s);
			uint64_t off = u64(s + 0x18), len = u64(s + 0x20);
			const char *n;
			bool is_eh, is_debug;

			if (name >= names_len || u32(s + 4) == SHT_NOBITS_ ||
			    !memchr(names + name, '\0', names_len - name))
				continue;
			n = (const char *)names + name;
			is_eh = !strncmp(n, ".eh_frame", 9);
			is_debug = !strncmp(n, ".debug_", 7);
			if (!fits(off, len, size, UINT64_MAX))
				continue;
			if (pass == 0 && is_debug) {
				have_debug_frame |= !strcmp(n, ".debug_frame");
				debug += u64(s + 8) & SHF_COMPRESSED_ ? 0 : len;
				debug_all += len;
			} else if (pass == 0 && is_eh) {
				have_eh |= !strcmp(n, ".eh_frame");
				rc = read_range(p, fd, st.st_dev, off, len, NULL, &f);
			} else if (want_debug && is_debug) {
				rc = read_range(p, fd, st.st_dev, off, len, NULL, &f);
			}
		}
	}
eh_seg:
	if (!rc && !have_eh && phnum)
		rc = read_eh_segment(p, fd, st.st_dev, ph, phnum, phent, size, &f);
out:
	if (!rc)
		p->st.files++;
	else
		sp_unw_image__release(img);
	free(eh);
	free(ph);
	free(sh);
	free(names);
	return rc;
}

void sp_unw_prefetch__stats(const struct sp_unw_prefetch *p, struct sp_unw_prefetch_stats *out)
{
	*out = p->st;
}
