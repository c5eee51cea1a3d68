// SPDX-License-Identifier: MIT
/*
 * vdso.c - copy our own [vdso] and read its build id (contract: vdso.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/maps_reader.h"
#include "collector/host/vdso.h"

struct find {
	uint64_t start, end;
};

static int take(const struct sp_map_entry *e, void *ctx)
{
	struct find *f = ctx;

	if (e->path_len == 6 && !memcmp(e->path, "[vdso]", 6)) {
		f->start = e->start;
		f->end = e->end;
		return 1;
	}
	return 0;
}

int sp_vdso__read(struct sp_vdso *v)
{
	struct find f = { 0 };
	int fd, err;

	memset(v, 0, sizeof(*v));
	err = sp_maps_reader__scan("/proc", (uint32_t)getpid(), take, &f, NULL);
	if (err)
		return err;
	if (!f.end)
		return -ENOENT;
	if (f.end - f.start > SP_VDSO_MAX)
		return -E2BIG;
	v->len = f.end - f.start;
	v->image = malloc(v->len);
	if (!v->image)
		return -ENOMEM;
	memcpy(v->image, (const void *)(uintptr_t)f.start, v->len);
	if (v->len < 4 || memcmp(v->image, "\177ELF", 4)) {
		err = -EINVAL;
		goto fail;
	}
	/* libelf reads the notes from a descriptor: a memfd of the copy */
	fd = memfd_create("spanprof-vdso", MFD_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		goto fail;
	}
	err = write(fd, v->image, v->len) == (ssize_t)v->len ? 0 : -EIO;
	if (!err)
		err = sp_buildid__from_fd(fd, &v->build_id);
	close(fd);
	if (!err && !v->build_id.len)
		err = -EINVAL;
	if (err)
		goto fail;
	return 0;
fail:
	sp_vdso__release(v);
	return err == -ENOENT ? -EINVAL : err;
}

void sp_vdso__release(struct sp_vdso *v)
{
	if (!v)
		return;
	free(v->image);
	v->image = NULL;
	v->len = 0;
}
