// SPDX-License-Identifier: MIT
/*
 * unwind_bpf.c - see unwind_bpf.h.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "collector/unwind/unwind_bpf.h"

struct ubpf_chunk {
	int fd;
	uint64_t *words;
};

struct sp_unw_bpf {
	struct sp_sampler_unwind_maps maps;
	struct ubpf_chunk chunks[SP_UNW_CHUNKS_MAX];
	struct sp_unw_file *files;
	size_t files_len;
	volatile uint64_t *seq;
	size_t seq_len;
};

static size_t page_round(size_t n)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);

	return (n + pg - 1) / pg * pg;
}

static uint64_t *ubpf_chunk_map(void *ctx, uint32_t i)
{
	struct sp_unw_bpf *u = ctx;
	LIBBPF_OPTS(bpf_map_create_opts, opts, .map_flags = BPF_F_MMAPABLE);
	size_t len = (size_t)SP_UNW_CHUNK_WORDS * 8;
	void *p;
	int fd, err;

	if (i >= SP_UNW_CHUNKS_MAX) {
		errno = EINVAL;
		return NULL;
	}
	if (u->chunks[i].words)
		return u->chunks[i].words;
	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "sp_unw_chunk", 4, 8, SP_UNW_CHUNK_WORDS, &opts);
	if (fd < 0)
		return NULL;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		err = errno;
		close(fd);
		errno = err;
		return NULL;
	}
	if (bpf_map_update_elem(u->maps.chunks, &i, &fd, BPF_ANY)) {
		err = errno;
		munmap(p, len);
		close(fd);
		errno = err;
		return NULL;
	}
	u->chunks[i].fd = fd;
	u->chunks[i].words = p;
	return p;
}

static void ubpf_chunk_unmap(void *ctx, uint32_t i)
{
	struct sp_unw_bpf *u = ctx;

	if (i >= SP_UNW_CHUNKS_MAX || !u->chunks[i].words)
		return;
	/* BPF programs still holding the inner map finish with it (RCU);
	 * later lookups see no chunk and fall back to frame pointers. */
	bpf_map_delete_elem(u->maps.chunks, &i);
	munmap(u->chunks[i].words, (size_t)SP_UNW_CHUNK_WORDS * 8);
	close(u->chunks[i].fd);
	u->chunks[i].words = NULL;
	u->chunks[i].fd = -1;
}

static int ubpf_proc_set(void *ctx, uint32_t pid, const struct sp_unw_proc *p)
{
	struct sp_unw_bpf *u = ctx;

	return bpf_map_update_elem(u->maps.procs, &pid, p, BPF_ANY) ? -errno : 0;
}

static int ubpf_proc_del(void *ctx, uint32_t pid)
{
	struct sp_unw_bpf *u = ctx;

	if (bpf_map_delete_elem(u->maps.procs, &pid) && errno != ENOENT)
		return -errno;
	return 0;
}

int sp_unw_bpf__new(const struct sp_sampler_unwind_maps *maps, struct sp_unw_bpf **out,
		    struct sp_unw_backend *be, char *err, size_t err_len)
{
	struct sp_unw_bpf *u;
	void *p;
	int e;

	*out = NULL;
	u = calloc(1, sizeof(*u));
	if (!u)
		return -ENOMEM;
	u->maps = *maps;
	for (int i = 0; i < SP_UNW_CHUNKS_MAX; i++)
		u->chunks[i].fd = -1;
	u->files_len = page_round((size_t)SP_UNW_FILES_MAX * sizeof(struct sp_unw_file));
	p = mmap(NULL, u->files_len, PROT_READ | PROT_WRITE, MAP_SHARED, maps->files, 0);
	if (p == MAP_FAILED) {
		e = -errno;
		snprintf(err, err_len, "cannot map the unwinder's file descriptors: %s "
			 "(BPF_F_MMAPABLE arrays need Linux 5.5+)", strerror(-e));
		free(u);
		return e;
	}
	u->files = p;
	u->seq_len = page_round((size_t)SP_UNW_SEQ_SLOTS * sizeof(uint64_t));
	p = mmap(NULL, u->seq_len, PROT_READ, MAP_SHARED, maps->seq, 0);
	if (p == MAP_FAILED) {
		e = -errno;
		snprintf(err, err_len, "cannot map the unwinder's sequence array: %s", strerror(-e));
		munmap(u->files, u->files_len);
		free(u);
		return e;
	}
	u->seq = p;
	memset(be, 0, sizeof(*be));
	be->ctx = u;
	be->chunk_map = ubpf_chunk_map;
	be->chunk_unmap = ubpf_chunk_unmap;
	be->files = u->files;
	be->seq = u->seq;
	be->proc_set = ubpf_proc_set;
	be->proc_del = ubpf_proc_del;
	*out = u;
	return 0;
}

void sp_unw_bpf__free(struct sp_unw_bpf *u)
{
	if (!u)
		return;
	for (uint32_t i = 0; i < SP_UNW_CHUNKS_MAX; i++)
		ubpf_chunk_unmap(u, i);
	if (u->files)
		munmap(u->files, u->files_len);
	if (u->seq)
		munmap((void *)u->seq, u->seq_len);
	free(u);
}
