// SPDX-License-Identifier: MIT
/*
 * buildid.c - GNU build ids of ELF files (libelf) and of the running kernel.
 *
 * Contract: nothing here allocates memory the caller must free; libelf
 * handles are opened and ended inside each call.  The fd passed to
 * sp_buildid__from_fd stays owned (and open) by the caller.  Note areas are
 * untrusted: every length is checked against the buffer with 64-bit
 * arithmetic before it is used, so huge or wrapping namesz/descsz give
 * -EINVAL rather than an out-of-bounds read.  Results: 0 (out filled),
 * -ENOENT (well-formed, no GNU build id note), -EINVAL (not ELF, truncated
 * or malformed), other negative errno from open/read.  *out is zeroed on
 * every failure.
 *
 * Files are read with ELF_C_READ (pread), not mapped: a file truncated by
 * someone else, or whose file system fails a read (a FUSE or NFS server
 * that answers EIO after hanging), is an error here, not a SIGBUS that
 * ends the process.  Callers run this on a deadline-bound helper
 * (base/io_deadline.h) when the file is untrusted.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include "base/buildid.h"
#include "base/hex.h"
#include "base/pin.h"

#define NT_GNU_BUILD_ID_TYPE 3
#define NOTE_HDR_SIZE 12	/* namesz, descsz, type: Elf32_Nhdr == Elf64_Nhdr */
#define KERNEL_NOTES_PATH "/sys/kernel/notes"
#define KERNEL_NOTES_MAX 8192	/* a few hundred bytes in practice */

/* elf_version() once per process: serve's workers read build ids at the
 * same time, and libelf's version is a global. */
static pthread_once_t elf_once = PTHREAD_ONCE_INIT;
static bool elf_ok;

static void elf_init_once(void)
{
	elf_ok = elf_version(EV_CURRENT) != EV_NONE;
}

static uint32_t rd32(const uint8_t *p, int swap)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return swap ? __builtin_bswap32(v) : v;
}

static uint64_t align_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) & ~(a - 1);
}

/*
 * The note walker behind sp_buildid__from_notes.  align is 4 or 8 (notes in
 * an 8-aligned PT_NOTE / SHT_NOTE pad name and desc to 8); swap is set when
 * the file's byte order differs from ours.  A final note whose desc padding
 * runs past the end of the area is accepted (some producers omit it).
 */
static int buildid_walk_notes(const uint8_t *buf, size_t len, uint64_t align,
			      int swap, struct sp_build_id *out)
{
	struct sp_build_id go = { 0 };
	uint64_t off = 0;
	int err = -ENOENT;

	memset(out, 0, sizeof(*out));
	if (!buf)
		return -EINVAL;
	while (off < len) {
		uint32_t namesz, descsz, type;
		uint64_t name_off, desc_off, next;

		if (len - off < NOTE_HDR_SIZE) {
			err = -EINVAL;
			break;
		}
		namesz = rd32(buf + off, swap);
		descsz = rd32(buf + off + 4, swap);
		type = rd32(buf + off + 8, swap);
		name_off = off + NOTE_HDR_SIZE;
		/* All in 64 bits: off < len <= SIZE_MAX, sizes < 2^32. */
		desc_off = align_up(name_off + namesz, align);
		if (name_off + namesz > len || desc_off > len ||
		    (uint64_t)descsz > len - desc_off) {
			err = -EINVAL;
			break;
		}
		if (namesz == 4 && type == NT_GNU_BUILD_ID_TYPE &&
		    !memcmp(buf + name_off, "GNU", 4)) {
			if (descsz == 0 || descsz > SP_BUILD_ID_MAX)
				return -EINVAL;
			out->len = (uint8_t)descsz;
			out->kind = SP_BUILD_ID_GNU;
			memcpy(out->id, buf + desc_off, descsz);
			return 0;
		}
		/* a Go id is kept while a GNU one may still follow */
		if (namesz == 4 && type == SP_GO_NOTE_TYPE && !go.len &&
		    !memcmp(buf + name_off, "Go\0\0", 4) &&
		    !sp_buildid__validate_go_n(buf + desc_off, descsz)) {
			go.len = (uint8_t)descsz;
			go.kind = SP_BUILD_ID_GO;
			memcpy(go.id, buf + desc_off, descsz);
		}
		next = align_up(desc_off + descsz, align);
		if (next > len)
			break;	/* unpadded last note */
		off = next;
	}
	if (go.len) {
		*out = go;
		return 0;
	}
	return err;
}

int sp_buildid__from_notes(const uint8_t *buf, size_t len, struct sp_build_id *out)
{
	if (!out)
		return -EINVAL;
	return buildid_walk_notes(buf, len, 4, 0, out);
}

static uint64_t note_align(uint64_t a)
{
	return a == 8 ? 8 : 4;
}

/* Keeps b in out if it is better (GNU over Go over none); true when out
 * now holds a GNU id, i.e. the search is over. */
static bool keep(struct sp_build_id *out, const struct sp_build_id *b)
{
	if (b->len && (b->kind == SP_BUILD_ID_GNU || !out->len))
		*out = *b;
	return out->len && out->kind == SP_BUILD_ID_GNU;
}

int sp_buildid__from_fd(int fd, struct sp_build_id *out)
{
	struct sp_build_id b;
	static const int host_data =
		__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? ELFDATA2LSB : ELFDATA2MSB;
	Elf *elf = NULL;
	GElf_Ehdr ehdr;
	Elf_Scn *scn = NULL;
	size_t phnum, i;
	int err = -EINVAL, swap, r;

	if (!out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	if (fd < 0)
		return -EBADF;
	pthread_once(&elf_once, elf_init_once);
	if (!elf_ok)
		return -EINVAL;
	elf = elf_begin(fd, ELF_C_READ, NULL);	/* not mmap: see the top */
	if (!elf)
		goto out;
	if (elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &ehdr))
		goto out;
	if (ehdr.e_ident[EI_CLASS] != ELFCLASS32 && ehdr.e_ident[EI_CLASS] != ELFCLASS64)
		goto out;
	if (ehdr.e_ident[EI_DATA] != ELFDATA2LSB && ehdr.e_ident[EI_DATA] != ELFDATA2MSB)
		goto out;
	swap = ehdr.e_ident[EI_DATA] != host_data;

	/* From here on, "no note found" is the default answer; a malformed
	 * header anywhere downgrades it to -EINVAL unless an id turns up. */
	err = -ENOENT;
	if (elf_getphdrnum(elf, &phnum) != 0) {
		err = -EINVAL;
		phnum = 0;
	}
	for (i = 0; i < phnum; i++) {
		GElf_Phdr ph;
		Elf_Data *d;

		if (!gelf_getphdr(elf, (int)i, &ph)) {
			err = -EINVAL;
			continue;
		}
		if (ph.p_type != PT_NOTE || ph.p_filesz == 0)
			continue;
		d = elf_getdata_rawchunk(elf, (int64_t)ph.p_offset, ph.p_filesz, ELF_T_BYTE);
		if (!d || !d->d_buf) {
			err = -EINVAL;
			continue;
		}
		r = buildid_walk_notes(d->d_buf, d->d_size, note_align(ph.p_align), swap, &b);
		if (r == 0 && keep(out, &b)) {
			err = 0;
			goto out;
		}
		if (r == -EINVAL)
			err = -EINVAL;
	}

	(void)elf_errno();	/* clear: we only want errors from the walk below */
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh)) {
			err = -EINVAL;
			continue;
		}
		if (sh.sh_type != SHT_NOTE || sh.sh_size == 0)
			continue;
		d = elf_rawdata(scn, NULL);
		if (!d || !d->d_buf) {
			err = -EINVAL;
			continue;
		}
		r = buildid_walk_notes(d->d_buf, d->d_size, note_align(sh.sh_addralign), swap, &b);
		if (r == 0 && keep(out, &b)) {
			err = 0;
			goto out;
		}
		if (r == -EINVAL)
			err = -EINVAL;
	}
	/* elf_nextscn also stops on a broken section table. */
	if (elf_errno() != 0 && err == -ENOENT)
		err = -EINVAL;
	if (out->len)	/* a Go id, and no GNU one anywhere */
		err = 0;
out:
	if (err)
		memset(out, 0, sizeof(*out));
	elf_end(elf);
	return err;
}

int sp_buildid__from_path(const char *path, struct sp_build_id *out)
{
	int fd, err;

	if (!out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	if (!path)
		return -EINVAL;
	fd = sp_pin__open(path, NULL);
	if (fd < 0)
		return fd;
	err = sp_buildid__from_fd(fd, out);
	close(fd);
	return err;
}

int sp_buildid__kernel(struct sp_build_id *out)
{
	uint8_t buf[KERNEL_NOTES_MAX];
	size_t len = 0;
	ssize_t n;
	int fd, err;

	if (!out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	fd = open(KERNEL_NOTES_PATH, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while (len < sizeof(buf)) {
		n = read(fd, buf + len, sizeof(buf) - len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			goto out;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	/* The kernel's .notes is 4-aligned; some builds have used 8. */
	err = buildid_walk_notes(buf, len, 4, 0, out);
	if (err == -EINVAL)
		err = buildid_walk_notes(buf, len, 8, 0, out);
out:
	close(fd);
	return err;
}

void sp_buildid__hex(const struct sp_build_id *b, char *out)
{
	size_t n;

	if (!out)
		return;
	n = b ? b->len : 0;
	if (n && b->kind == SP_BUILD_ID_GO) {
		if (n > SP_GO_BUILD_ID_MAX)
			n = SP_GO_BUILD_ID_MAX;
		memcpy(out, b->id, n);
		out[n] = '\0';
		return;
	}
	if (n > SP_BUILD_ID_MAX)
		n = SP_BUILD_ID_MAX;
	sp_hex__encode(b ? b->id : NULL, n, out);
}

int sp_buildid__read_file(const char *path, char *out, size_t out_size)
{
	struct sp_build_id b;
	int err;

	if (!out || out_size < SP_BUILDID_MAX_HEX + 1)
		return -EINVAL;
	out[0] = '\0';
	err = sp_buildid__from_path(path, &b);
	if (!err)
		sp_buildid__hex(&b, out);
	return err;
}

int sp_buildid__validate(const char *hex)
{
	size_t n = 0;

	if (!hex)
		return -EINVAL;
	for (; hex[n]; n++) {
		char c = hex[n];

		if (n >= SP_BUILDID_MAX_HEX)
			return -EINVAL;
		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
			return -EINVAL;
	}
	if (n < 2 || (n & 1))
		return -EINVAL;
	return 0;
}

int sp_buildid__validate_go_n(const uint8_t *s, size_t n)
{
	bool slash = false;

	if (!s || n < 3 || n > SP_GO_BUILD_ID_MAX || s[0] == '/' || s[n - 1] == '/')
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		uint8_t c = s[i];

		if (c == '/')
			slash = true;
		else if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
			   (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '+' || c == '='))
			return -EINVAL;
	}
	return slash ? 0 : -EINVAL;
}

int sp_buildid__validate_go(const char *s)
{
	if (!s)
		return -EINVAL;
	return sp_buildid__validate_go_n((const uint8_t *)s, strnlen(s, SP_GO_BUILD_ID_MAX + 1));
}
