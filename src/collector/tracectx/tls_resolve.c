// SPDX-License-Identifier: MIT
/*
 * tls_resolve.c - finds where a live process keeps each thread's OTEP 4947
 * otel_thread_ctx_v1 pointer and describes it as a struct sp_tls_desc for
 * the BPF sampler (contract: tls_resolve.h; layouts: include/spanprof/abi.h).
 *
 * Steps, all bounded (inputs are a process's maps, files and memory):
 *
 *  1. /proc/PID/maps -> file-backed modules (grouped by device + inode);
 *     the main program is the module that is /proc/PID/exe.
 *  2. The defining module: every module's .dynsym first (the standard
 *     requires the symbol there), then the .symtab of the modules that
 *     have one.  Files are opened by base/pin.h's sp_pin__mapping (the
 *     map_files entry, else PATH inside /proc/PID/root; a regular file
 *     with the maps line's inode) and only then reopened for reading.  The main
 *     program is searched first in each pass (it interposes libraries).
 *  3. Where the variable lives:
 *     a) main program (or any ET_EXEC): static TLS, x86-64 variant II,
 *        module 1 right below TP:
 *          offset = st_value - roundup(PT_TLS.p_memsz, PT_TLS.p_align)
 *     b) shared object with R_X86_64_TLSDESC: read the descriptor
 *        {resolver, arg} at bias + r_offset.  arg a small negative number
 *        and resolver in executable memory: glibc's _dl_tlsdesc_return,
 *        static TLS, offset = arg.  arg pointing into anonymous memory
 *        (malloc) is glibc's dynamic descriptor (_dl_tlsdesc_dynamic); its
 *        first two words are {module id, offset in the block}; accepted as
 *        the DTV model only when that offset is the variable's.  Anything
 *        else (e.g. a descriptor not yet relocated): try (c)/(d), else
 *        SP_TLS_FAIL_DYNAMIC_DESC.
 *     c) R_X86_64_TPOFF64 (initial-exec inside a .so): the GOT word is the
 *        TP offset: static.
 *     d) R_X86_64_DTPMOD64 (legacy general dynamic): the GOT word is the
 *        module id, filled by ld.so: DTV model, offset = st_value,
 *        dtv_offset 8, stride 16 (glibc; 8 for musl, detected from the
 *        musl loader's mapping).  A DTPMOD64 against symbol 0 (a symbol
 *        local to the object) is the object's own id and also serves.
 *     The load bias comes from a mapping of the module whose file offset
 *     is a PT_LOAD's page-aligned p_offset.
 *
 * Known limits: glibc-specific descriptor recognition (ld.so is stripped
 * on the target distros, so the resolver is not identified by name but by
 * the argument's shape); with two modules defining the symbol the main
 * program wins, then maps order (not the loader's search order).  In the
 * DTV model a thread that never touched the variable may have a DTV
 * shorter than the module id or an unallocated entry: the BPF reader then
 * fails a read or sees valid != 1, both counted there.
 *
 * Return values: 0 and *out filled; -ENOENT (NO_SYMBOL); -ESRCH / -EACCES /
 * -E2BIG / -ENXIO (MAPS; -ENXIO: no mapping of the module matches a PT_LOAD); -EINVAL (NOT_TLS, ELF); -ENOEXEC (NO_PT_TLS); -ENODATA
 * (NO_RELOC); -EOPNOTSUPP (DYNAMIC_DESC); -EIO or the read's errno
 * (READ_MEM).  *out is zeroed on failure.
 */
#include <errno.h>
#include <elf.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "base/maps.h"
#include "base/maps_reader.h"
#include "base/pin.h"
#include "collector/tracectx/tls_elf.h"
#include "collector/tracectx/tls_resolve.h"

#define MAX_MODULES 4096
#define MAX_MODULE_ID (1u << 20)
#define MAX_STATIC_TLS (1ll << 31)	/* |TP offset| bound for static TLS */
#define PAGE_MASK_4K (~(uint64_t)4095)

#define GLIBC_DTV_OFFSET 8	/* offsetof(tcbhead_t, dtv) */
#define GLIBC_DTV_STRIDE 16	/* sizeof(dtv_t) */
#define MUSL_DTV_OFFSET 8	/* offsetof(struct pthread, dtv) */
#define MUSL_DTV_STRIDE 8

static const char *const fail_names[SP_TLS_FAIL__MAX] = {
	[SP_TLS_FAIL_NONE] = "none",
	[SP_TLS_FAIL_NO_SYMBOL] = "no_symbol",
	[SP_TLS_FAIL_NOT_TLS] = "not_tls",
	[SP_TLS_FAIL_NO_PT_TLS] = "no_pt_tls",
	[SP_TLS_FAIL_NO_RELOC] = "no_reloc",
	[SP_TLS_FAIL_DYNAMIC_DESC] = "dynamic_desc",
	[SP_TLS_FAIL_READ_MEM] = "read_mem",
	[SP_TLS_FAIL_ELF] = "elf",
	[SP_TLS_FAIL_MAPS] = "maps",
};

const char *sp_tls_fail__name(enum sp_tls_fail f)
{
	if ((unsigned)f >= SP_TLS_FAIL__MAX || !fail_names[f])
		return "unknown";
	return fail_names[f];
}

struct map_ent {
	uint64_t start, end, offset;
	uint8_t perms;
	uint8_t anon;		/* no file: [heap], [anon:...], plain anonymous */
	int mod;		/* index in view.mods, -1 when not a module */
};

struct module {
	char *path;
	uint64_t inode;
	uint32_t dev_major, dev_minor;
	int is_main;
	int has_symtab;
};

struct view {
	const char *proc_root;
	uint32_t pid;
	struct map_ent *ents;
	size_t n_ents, cap_ents;
	struct module *mods;
	size_t n_mods, cap_mods;
	int musl;
	int mem_fd;
};

static void view__free(struct view *v)
{
	size_t i;

	for (i = 0; i < v->n_mods; i++)
		free(v->mods[i].path);
	free(v->mods);
	free(v->ents);
	if (v->mem_fd >= 0)
		close(v->mem_fd);
}

static int grow(void **arr, size_t *cap, size_t n, size_t elem, size_t max)
{
	size_t ncap;
	void *p;

	if (n < *cap)
		return 0;
	if (n >= max)
		return -E2BIG;
	ncap = *cap ? *cap * 2 : 64;
	if (ncap > max)
		ncap = max;
	p = realloc(*arr, ncap * elem);
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = ncap;
	return 0;
}

static int is_musl_loader(const char *path, size_t len)
{
	const char *base = memrchr(path, '/', len);
	size_t blen;

	base = base ? base + 1 : path;
	blen = len - (size_t)(base - path);
	return (blen > 7 && memcmp(base, "ld-musl", 7) == 0) ||
	       (blen > 9 && memcmp(base, "libc.musl", 9) == 0);
}

static int add_module(struct view *v, const struct sp_map_entry *e, const char *exe_path,
		      const struct stat *exe_st)
{
	struct module *m;
	size_t i;
	int err;

	/* Newest first: a module's mappings are usually adjacent lines. */
	for (i = v->n_mods; i-- > 0;) {
		m = &v->mods[i];
		if (m->inode == e->inode && m->dev_major == e->dev_major &&
		    m->dev_minor == e->dev_minor && strlen(m->path) == e->path_len &&
		    memcmp(m->path, e->path, e->path_len) == 0)
			return (int)i;
	}
	err = grow((void **)&v->mods, &v->cap_mods, v->n_mods, sizeof(*v->mods), MAX_MODULES);
	if (err)
		return err;
	m = &v->mods[v->n_mods];
	memset(m, 0, sizeof(*m));
	m->path = strndup(e->path, e->path_len);
	if (!m->path)
		return -ENOMEM;
	m->inode = e->inode;
	m->dev_major = e->dev_major;
	m->dev_minor = e->dev_minor;
	m->has_symtab = 1;
	if (exe_path && strcmp(m->path, exe_path) == 0)
		m->is_main = 1;
	if (exe_st && exe_st->st_ino == e->inode && major(exe_st->st_dev) == e->dev_major &&
	    minor(exe_st->st_dev) == e->dev_minor)
		m->is_main = 1;
	return (int)v->n_mods++;
}

/* What read_maps collects per line (sp_maps_reader__scan's ctx). */
struct maps_scan {
	struct view *v;
	const char *exe_path;
	const struct stat *exe_st;
};

static int take_map_line(const struct sp_map_entry *e, void *ctx)
{
	struct maps_scan *sc = ctx;
	struct view *v = sc->v;
	struct map_ent *me;
	int err;

	err = grow((void **)&v->ents, &v->cap_ents, v->n_ents, sizeof(*v->ents),
		   SP_MAPS_MAX_LINES);
	if (err)
		return err;
	me = &v->ents[v->n_ents];
	me->start = e->start;
	me->end = e->end;
	me->offset = e->offset;
	me->perms = e->perms;
	me->mod = -1;
	me->anon = e->inode == 0 &&
		   (e->path_len == 0 || (e->path_len == 6 && memcmp(e->path, "[heap]", 6) == 0) ||
		    (e->path_len > 6 && memcmp(e->path, "[anon:", 6) == 0));
	if (e->inode != 0 && e->path_len > 0 && e->path[0] == '/') {
		int mi = add_module(v, e, sc->exe_path, sc->exe_st);

		if (mi < 0)
			return mi;
		me->mod = mi;
		if (is_musl_loader(e->path, e->path_len))
			v->musl = 1;
	}
	v->n_ents++;
	return 0;
}

static int read_maps(struct view *v)
{
	char path[PATH_MAX], exe_path[PATH_MAX];
	struct stat exe_st;
	struct maps_scan sc = { .v = v };
	struct sp_maps_read_stats rs;
	ssize_t n;
	int err;

	snprintf(path, sizeof(path), "%s/%u/exe", v->proc_root, v->pid);
	n = readlink(path, exe_path, sizeof(exe_path) - 1);
	if (n > 0) {
		exe_path[n] = '\0';
		if (n > 10 && strcmp(exe_path + n - 10, " (deleted)") == 0)
			exe_path[n - 10] = '\0';
		sc.exe_path = exe_path;
	}
	if (stat(path, &exe_st) == 0)
		sc.exe_st = &exe_st;

	err = sp_maps_reader__scan(v->proc_root, v->pid, take_map_line, &sc, &rs);
	if (err == -ENOENT)
		return -ESRCH;
	if (err)
		return err;
	if (rs.truncated)
		return -E2BIG;
	if (v->n_ents == 0)
		return -ESRCH;	/* kernel threads and zombies have no maps */
	return 0;
}

/* Opens a module's file for reading without side effects (base/pin.h):
 * pinned through the map_files entry of its first mapping, else by its
 * maps path inside PID/root, with the maps line's inode, then reopened. */
static int open_module(const struct view *v, int mi)
{
	const struct module *m = &v->mods[mi];
	struct sp_map_entry e;
	struct stat st;
	int pfd, fd;
	size_t i;

	memset(&e, 0, sizeof(e));
	e.path = m->path;
	e.path_len = strlen(m->path);
	e.inode = m->inode;
	for (i = 0; i < v->n_ents; i++) {
		if (v->ents[i].mod == mi) {
			e.start = v->ents[i].start;
			e.end = v->ents[i].end;
			break;
		}
	}
	pfd = sp_pin__mapping(v->proc_root, v->pid, &e, &st);
	if (pfd < 0)
		return pfd;
	fd = sp_pin__reopen(pfd, &st, NULL);
	close(pfd);
	return fd;
}

/* bias = where the module is mapped minus where it was linked. */
static int load_bias(const struct view *v, int mi, const struct sp_tls_elf_info *info,
		     uint64_t *bias)
{
	size_t i;
	uint32_t j;

	for (i = 0; i < v->n_ents; i++) {
		if (v->ents[i].mod != mi)
			continue;
		for (j = 0; j < info->n_loads; j++) {
			const struct sp_tls_elf_load *l = &info->loads[j];

			if ((l->offset & PAGE_MASK_4K) == v->ents[i].offset) {
				*bias = v->ents[i].start - (l->vaddr & PAGE_MASK_4K);
				return 0;
			}
		}
	}
	return -ENOENT;
}

static const struct map_ent *find_ent(const struct view *v, uint64_t addr)
{
	size_t i;

	for (i = 0; i < v->n_ents; i++)
		if (addr >= v->ents[i].start && addr < v->ents[i].end)
			return &v->ents[i];
	return NULL;
}

static int read_mem(struct view *v, uint64_t addr, void *buf, size_t len)
{
	char path[PATH_MAX];
	ssize_t n;

	if (v->mem_fd < 0) {
		snprintf(path, sizeof(path), "%s/%u/mem", v->proc_root, v->pid);
		v->mem_fd = open(path, O_RDONLY | O_CLOEXEC);
		if (v->mem_fd < 0)
			return -errno;
	}
	if (addr > (uint64_t)INT64_MAX - len)
		return -EFAULT;
	n = pread(v->mem_fd, buf, len, (off_t)addr);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EIO;
}

static int is_static_off(int64_t off)
{
	return off < 0 && off >= -MAX_STATIC_TLS;
}

static void set_dtv(const struct view *v, struct sp_tls_desc *out, uint64_t modid, uint64_t off)
{
	out->model = SP_TLS_DTV;
	out->module_id = modid;
	out->offset = (int64_t)off;
	out->dtv_offset = v->musl ? MUSL_DTV_OFFSET : GLIBC_DTV_OFFSET;
	out->dtv_stride = v->musl ? MUSL_DTV_STRIDE : GLIBC_DTV_STRIDE;
}

/* Case b: 0 resolved, -EAGAIN not recognisably static or dynamic, other
 * negative: the read failed. */
static int from_tlsdesc(struct view *v, uint64_t bias, const struct sp_tls_elf_info *info,
			struct sp_tls_desc *out)
{
	const struct map_ent *re, *ae;
	uint64_t desc[2], dyn[2];
	int err;

	err = read_mem(v, bias + info->tlsdesc_off, desc, sizeof(desc));
	if (err)
		return err;
	re = find_ent(v, desc[0]);
	if (!re || !(re->perms & SP_MAP_X))
		return -EAGAIN;
	if (is_static_off((int64_t)desc[1])) {
		out->model = SP_TLS_STATIC;
		out->offset = (int64_t)desc[1];
		return 0;
	}
	ae = find_ent(v, desc[1]);
	if (!ae || !ae->anon || !(ae->perms & SP_MAP_R))
		return -EAGAIN;
	/* glibc struct tlsdesc_dynamic_arg: {ti_module, ti_offset}, gen */
	err = read_mem(v, desc[1], dyn, sizeof(dyn));
	if (err)
		return err;
	if (dyn[0] == 0 || dyn[0] > MAX_MODULE_ID || dyn[1] != info->tlsdesc_blk_off)
		return -EAGAIN;
	set_dtv(v, out, dyn[0], dyn[1]);
	return 0;
}

static int resolve_in_module(struct view *v, int mi, const struct sp_tls_elf_info *info,
			     struct sp_tls_desc *out, enum sp_tls_fail *why)
{
	uint64_t bias, word;
	int err, mem_err = 0;

	if (v->mods[mi].is_main || info->e_type == ET_EXEC) {
		uint64_t a = info->tls_align;
		uint64_t block = (info->tls_memsz + a - 1) & ~(a - 1);

		out->model = SP_TLS_STATIC;
		out->offset = (int64_t)info->st_value - (int64_t)block;
		return 0;
	}
	if (!info->has_tlsdesc && !info->has_tpoff && !info->has_dtpmod && !info->has_dtpmod_self) {
		*why = SP_TLS_FAIL_NO_RELOC;
		return -ENODATA;
	}
	if (load_bias(v, mi, info, &bias) != 0) {
		*why = SP_TLS_FAIL_MAPS;	/* no mapping matches a PT_LOAD */
		return -ENXIO;
	}
	if (info->has_tlsdesc) {
		err = from_tlsdesc(v, bias, info, out);
		if (err == 0)
			return 0;
		if (err != -EAGAIN)
			mem_err = err;
	}
	if (info->has_tpoff) {
		err = read_mem(v, bias + info->tpoff_off, &word, sizeof(word));
		if (err == 0 && is_static_off((int64_t)word)) {
			out->model = SP_TLS_STATIC;
			out->offset = (int64_t)word;
			return 0;
		}
		if (err)
			mem_err = err;
	}
	if (info->has_dtpmod || info->has_dtpmod_self) {
		uint64_t off = info->has_dtpmod ? info->dtpmod_off : info->dtpmod_self_off;

		err = read_mem(v, bias + off, &word, sizeof(word));
		if (err == 0 && word != 0 && word <= MAX_MODULE_ID) {
			set_dtv(v, out, word, info->st_value);
			return 0;
		}
		if (err)
			mem_err = err;
	}
	if (mem_err) {
		*why = SP_TLS_FAIL_READ_MEM;
		return mem_err;
	}
	if (info->has_tlsdesc) {
		*why = SP_TLS_FAIL_DYNAMIC_DESC;
		return -EOPNOTSUPP;
	}
	/* GOT words present but not filled in (0 / absurd). */
	*why = SP_TLS_FAIL_READ_MEM;
	return -EIO;
}

static int fail_errno(enum sp_tls_fail f)
{
	switch (f) {
	case SP_TLS_FAIL_NOT_TLS:
	case SP_TLS_FAIL_ELF:
		return -EINVAL;
	case SP_TLS_FAIL_NO_PT_TLS:
		return -ENOEXEC;
	default:
		return -EIO;
	}
}

int sp_tls_resolve__pid(const char *proc_root, uint32_t pid, struct sp_tls_desc *out,
			enum sp_tls_fail *reason)
{
	enum sp_tls_fail dummy, first_fail = SP_TLS_FAIL_NONE;
	struct view v;
	int pass, err;

	if (!reason)
		reason = &dummy;
	*reason = SP_TLS_FAIL_NONE;
	if (!out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	memset(&v, 0, sizeof(v));
	v.mem_fd = -1;
	v.proc_root = proc_root ? proc_root : "/proc";
	v.pid = pid;
	if (pid == 0) {
		*reason = SP_TLS_FAIL_MAPS;
		return -ESRCH;
	}

	err = read_maps(&v);
	if (err) {
		*reason = SP_TLS_FAIL_MAPS;
		goto out;
	}

	for (pass = 0; pass < 2; pass++) {
		unsigned tables = pass == 0 ? SP_TLS_ELF_DYNSYM : SP_TLS_ELF_SYMTAB;
		int main_first;

		for (main_first = 1; main_first >= 0; main_first--) {
			size_t i;

			for (i = 0; i < v.n_mods; i++) {
				struct sp_tls_elf_info info;
				enum sp_tls_fail why;
				int fd, r;

				if (v.mods[i].is_main != main_first)
					continue;
				if (pass == 1 && !v.mods[i].has_symtab)
					continue;
				fd = open_module(&v, (int)i);
				if (fd < 0)
					continue;
				r = sp_tls_elf__inspect(fd, tables, &info, &why);
				close(fd);
				if (r == 0) {
					err = resolve_in_module(&v, (int)i, &info, out, reason);
					goto out;
				}
				if (pass == 0 && !info.sym_found)
					v.mods[i].has_symtab = info.has_symtab;
				if (info.sym_found && first_fail == SP_TLS_FAIL_NONE)
					first_fail = why;
			}
		}
	}
	if (first_fail != SP_TLS_FAIL_NONE) {
		*reason = first_fail;
		err = fail_errno(first_fail);
	} else {
		*reason = SP_TLS_FAIL_NO_SYMBOL;
		err = -ENOENT;
	}
out:
	if (err)
		memset(out, 0, sizeof(*out));
	view__free(&v);
	return err;
}
