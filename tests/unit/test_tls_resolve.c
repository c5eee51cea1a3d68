// SPDX-License-Identifier: MIT
/*
 * test_tls_resolve.c - sp_tls_resolve__pid() against live programs built
 * with every TLS model OTEP 4947 readers must handle, and sp_tls_elf__inspect()
 * against malformed ELF bytes.
 *
 * The group setup compiles tests/fixtures/tls_fixture.c with each model's
 * flags into a temporary directory (gcc is part of the build environment;
 * the flags live here, next to the expectations).  Each fixture prints, for
 * two threads, its thread pointer, the address of its otel_thread_ctx_v1
 * slot and the value stored there.  A test starts the fixture, resolves the
 * descriptor, follows it from each thread pointer exactly as the BPF
 * program does (reading the fixture's memory through /proc/PID/mem for
 * the DTV model) and checks it lands on the printed slot holding the
 * printed value.  Needs root (or ptrace rights over children) for
 * /proc/PID/mem and map_files.
 *
 * The fixture source is found through $SPANPROF_SRCDIR, the current
 * directory (tests/run.sh runs from the repo root) or two levels above the
 * test binary.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <elf.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <setjmp.h>
#include <cmocka.h>

#include "testutil.h"

#include "collector/tracectx/tls_elf.h"
#include "collector/tracectx/tls_resolve.h"

#define FIX_SRC_REL "tests/fixtures/tls_fixture.c"
#define FIX_CFLAGS "-O1 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer " \
	"-fno-inline -fno-optimize-sibling-calls -Wl,--build-id -Wall -Werror -pthread"
#define FIX_VALUE 0x00005eedc0ffee00ull
#define FIX_THREADS 2

static char g_src[PATH_MAX];

/* snprintf that fails the test instead of truncating. */
#define XPRINTF(buf, cap, ...) \
	do { \
		if ((size_t)snprintf(buf, cap, __VA_ARGS__) >= (cap)) \
			abort(); \
	} while (0)

struct variant {
	const char *name;
	const char *flags;
	const char *link_lib;	/* a library built earlier, linked in */
};

/* Built in this order (libraries before the programs linking them). */
static const struct variant variants[] = {
	{ "exec_pie", "-fPIE -pie -Wl,--export-dynamic-symbol=otel_thread_ctx_v1", NULL },
	{ "exec_nopie", "-fno-PIE -no-pie -Wl,--export-dynamic-symbol=otel_thread_ctx_v1", NULL },
	{ "exec_symtab_only", "-fPIE -pie", NULL },
	{ "exec_static", "-static", NULL },
	{ "exec_static_pie", "-static-pie -fPIE", NULL },
	{ "libdesc.so", "-fPIC -shared -mtls-dialect=gnu2 -DTLS_FIX_LIB", NULL },
	{ "libdesc_hidden.so", "-fPIC -shared -mtls-dialect=gnu2 -DTLS_FIX_LIB -DTLS_FIX_HIDDEN", NULL },
	{ "libgd.so", "-fPIC -shared -mtls-dialect=gnu -DTLS_FIX_LIB", NULL },
	{ "libgd_hidden.so", "-fPIC -shared -mtls-dialect=gnu -DTLS_FIX_LIB -DTLS_FIX_HIDDEN", NULL },
	{ "libie.so", "-fPIC -shared -ftls-model=initial-exec -DTLS_FIX_LIB", NULL },
	{ "desc_main", "-DTLS_FIX_LINKED", "libdesc.so" },
	{ "desc_hidden_main", "-DTLS_FIX_LINKED", "libdesc_hidden.so" },
	{ "gd_main", "-DTLS_FIX_LINKED", "libgd.so" },
	{ "gd_hidden_main", "-DTLS_FIX_LINKED", "libgd_hidden.so" },
	{ "ie_main", "-DTLS_FIX_LINKED", "libie.so" },
	{ "dlopen_main", "-DTLS_FIX_DLOPEN", NULL },
	{ "none_main", "-DTLS_FIX_NONE", NULL },
	{ "not_tls_main", "-DTLS_FIX_NOT_TLS -rdynamic", NULL },
};

static void fixpath(char *buf, size_t cap, const char *name)
{
	XPRINTF(buf, cap, "%s/%s", tu_dir, name);
}

static int group_setup(void **state)
{
	size_t i;

	(void)state;
	if (tu_source_path(g_src, sizeof(g_src), FIX_SRC_REL)) {
		fprintf(stderr, "cannot find %s (set SPANPROF_SRCDIR)\n", FIX_SRC_REL);
		return -1;
	}
	if (tu_setup_dir(state))
		return -1;
	for (i = 0; i < sizeof(variants) / sizeof(variants[0]); i++) {
		const struct variant *v = &variants[i];
		char cmd[4 * PATH_MAX], lib[PATH_MAX] = "";

		if (v->link_lib)
			XPRINTF(lib, sizeof(lib), "%s/%s", tu_dir, v->link_lib);
		XPRINTF(cmd, sizeof(cmd), "cc %s %s -o %s/%s %s %s", FIX_CFLAGS, v->flags, tu_dir,
			 v->name, g_src, lib);
		if (system(cmd) != 0) {
			fprintf(stderr, "fixture build failed: %s\n", cmd);
			return -1;
		}
	}
	return 0;
}

/* ------------------------------------------------------------ fixtures */

struct fix {
	pid_t pid;
	int n;
	uint64_t tp[FIX_THREADS], slot[FIX_THREADS], val[FIX_THREADS];
};

/* Starts a fixture and waits (10 s max) for both threads' lines. */
static int fix_start(struct fix *f, const char *name, const char *arg, const char *tunables)
{
	char bin[PATH_MAX], buf[1024];
	size_t used = 0;
	int p[2];

	memset(f, 0, sizeof(*f));
	fixpath(bin, sizeof(bin), name);
	if (pipe(p) != 0)
		return -errno;
	f->pid = fork();
	if (f->pid < 0)
		return -errno;
	if (f->pid == 0) {
		dup2(p[1], 1);
		close(p[0]);
		close(p[1]);
		if (tunables)
			setenv("GLIBC_TUNABLES", tunables, 1);
		execl(bin, bin, arg, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	while (f->n < FIX_THREADS) {
		struct pollfd pfd = { .fd = p[0], .events = POLLIN };
		char *nl;
		ssize_t r;

		if (poll(&pfd, 1, 10000) <= 0)
			break;
		r = read(p[0], buf + used, sizeof(buf) - 1 - used);
		if (r <= 0)
			break;
		used += (size_t)r;
		buf[used] = '\0';
		while (f->n < FIX_THREADS && (nl = strchr(buf, '\n')) != NULL) {
			unsigned long long tp, slot, val;

			*nl = '\0';
			if (sscanf(buf, "TP=0x%llx SLOT=0x%llx VAL=0x%llx", &tp, &slot, &val) == 3) {
				f->tp[f->n] = tp;
				f->slot[f->n] = slot;
				f->val[f->n] = val;
				f->n++;
			}
			used -= (size_t)(nl + 1 - buf);
			memmove(buf, nl + 1, used + 1);
		}
	}
	close(p[0]);
	return f->n == FIX_THREADS ? 0 : -EIO;
}

static void fix_stop(struct fix *f)
{
	if (f->pid > 0) {
		kill(f->pid, SIGKILL);
		waitpid(f->pid, NULL, 0);
		f->pid = 0;
	}
}

static int read_u64(pid_t pid, uint64_t addr, uint64_t *v)
{
	char path[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -errno;
	n = pread(fd, v, sizeof(*v), (off_t)addr);
	close(fd);
	return n == (ssize_t)sizeof(*v) ? 0 : -EIO;
}

/* What the BPF program does from a thread pointer. */
static int follow(pid_t pid, const struct sp_tls_desc *d, uint64_t tp, uint64_t *slot)
{
	uint64_t dtv, blk;

	switch (d->model) {
	case SP_TLS_STATIC:
		*slot = tp + (uint64_t)d->offset;
		return 0;
	case SP_TLS_DTV:
		if (read_u64(pid, tp + d->dtv_offset, &dtv) ||
		    read_u64(pid, dtv + d->module_id * d->dtv_stride, &blk))
			return -EIO;
		*slot = blk + (uint64_t)d->offset;
		return 0;
	default:
		return -EINVAL;
	}
}

/* Runs one fixture, resolves it, checks the model and every thread. */
static void check_model(const char *name, const char *arg, const char *tunables,
			enum sp_tls_model want)
{
	struct sp_tls_desc d;
	enum sp_tls_fail why;
	struct fix f;
	int i, err;

	assert_int_equal(fix_start(&f, name, arg, tunables), 0);
	err = sp_tls_resolve__pid("/proc", (uint32_t)f.pid, &d, &why);
	if (err)
		fprintf(stderr, "%s: resolve: %d (%s)\n", name, err, sp_tls_fail__name(why));
	if (err == 0)
		printf("%-18s model=%s offset=%lld module_id=%llu dtv_offset=%u stride=%u\n",
		       name, d.model == SP_TLS_STATIC ? "STATIC" : "DTV", (long long)d.offset,
		       (unsigned long long)d.module_id, d.dtv_offset, d.dtv_stride);
	for (i = 0; err == 0 && i < f.n; i++) {
		uint64_t slot = 0, val = 0;

		if (follow(f.pid, &d, f.tp[i], &slot) != 0 || slot != f.slot[i] ||
		    read_u64(f.pid, slot, &val) != 0 || val != f.val[i]) {
			fprintf(stderr, "%s thread %d: tp=%#llx slot=%#llx want %#llx val=%#llx\n",
				name, i, (unsigned long long)f.tp[i], (unsigned long long)slot,
				(unsigned long long)f.slot[i], (unsigned long long)val);
			err = -EFAULT;
		}
	}
	fix_stop(&f);
	assert_int_equal(err, 0);
	assert_int_equal(why, SP_TLS_FAIL_NONE);
	assert_int_equal(d.model, want);
	assert_true(f.val[0] == FIX_VALUE + 0x10 && f.val[1] == FIX_VALUE);
}

static void check_fail(const char *name, const char *arg, int want_err, enum sp_tls_fail want_why)
{
	struct sp_tls_desc d;
	enum sp_tls_fail why;
	struct fix f;
	int err;

	assert_int_equal(fix_start(&f, name, arg, NULL), 0);
	err = sp_tls_resolve__pid("/proc", (uint32_t)f.pid, &d, &why);
	fix_stop(&f);
	assert_int_equal(err, want_err);
	assert_int_equal(why, want_why);
	assert_int_equal(d.model, SP_TLS_NONE);
}

/* ------------------------------------------------------------ models */

static void test_exec_pie(void **s) { (void)s; check_model("exec_pie", NULL, NULL, SP_TLS_STATIC); }
static void test_exec_nopie(void **s) { (void)s; check_model("exec_nopie", NULL, NULL, SP_TLS_STATIC); }
static void test_exec_symtab_only(void **s)
{
	(void)s;
	check_model("exec_symtab_only", NULL, NULL, SP_TLS_STATIC);
}
static void test_exec_static(void **s) { (void)s; check_model("exec_static", NULL, NULL, SP_TLS_STATIC); }
static void test_exec_static_pie(void **s)
{
	(void)s;
	check_model("exec_static_pie", NULL, NULL, SP_TLS_STATIC);
}
static void test_tlsdesc_lib(void **s) { (void)s; check_model("desc_main", NULL, NULL, SP_TLS_STATIC); }
static void test_tlsdesc_hidden_lib(void **s)
{
	(void)s;
	check_model("desc_hidden_main", NULL, NULL, SP_TLS_STATIC);
}
static void test_gd_lib(void **s) { (void)s; check_model("gd_main", NULL, NULL, SP_TLS_DTV); }
static void test_gd_hidden_lib(void **s) { (void)s; check_model("gd_hidden_main", NULL, NULL, SP_TLS_DTV); }
static void test_ie_lib(void **s) { (void)s; check_model("ie_main", NULL, NULL, SP_TLS_STATIC); }

/* dlopen()ed TLSDESC library: glibc puts it in the static TLS surplus when
 * it fits (descriptor resolved by _dl_tlsdesc_return) -> STATIC. */
static void test_dlopen_tlsdesc(void **s)
{
	char lib[PATH_MAX];

	(void)s;
	fixpath(lib, sizeof(lib), "libdesc.so");
	check_model("dlopen_main", lib, NULL, SP_TLS_STATIC);
}

/* No static TLS surplus: the descriptor is glibc's dynamic one -> DTV from
 * its {module id, offset} argument. */
static void test_dlopen_tlsdesc_dynamic(void **s)
{
	char lib[PATH_MAX];

	(void)s;
	fixpath(lib, sizeof(lib), "libdesc.so");
	check_model("dlopen_main", lib, "glibc.rtld.optional_static_tls=0", SP_TLS_DTV);
}

/* dlopen()ed general-dynamic library: dynamic TLS block -> DTV. */
static void test_dlopen_gd(void **s)
{
	char lib[PATH_MAX];

	(void)s;
	fixpath(lib, sizeof(lib), "libgd.so");
	check_model("dlopen_main", lib, NULL, SP_TLS_DTV);
}

/* ------------------------------------------------------------ failures */

static void test_no_symbol(void **s)
{
	struct sp_tls_desc d;
	enum sp_tls_fail why;

	(void)s;
	check_fail("none_main", NULL, -ENOENT, SP_TLS_FAIL_NO_SYMBOL);
	/* this test program itself */
	assert_int_equal(sp_tls_resolve__pid("/proc", (uint32_t)getpid(), &d, &why), -ENOENT);
	assert_int_equal(why, SP_TLS_FAIL_NO_SYMBOL);
}

static void test_not_tls(void **s)
{
	(void)s;
	check_fail("not_tls_main", NULL, -EINVAL, SP_TLS_FAIL_NOT_TLS);
}

static void test_dead_and_zombie_pid(void **s)
{
	struct sp_tls_desc d;
	enum sp_tls_fail why;
	pid_t pid;

	(void)s;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(0);
	/* zombie: exited, not reaped, no maps */
	for (int i = 0; i < 200; i++) {
		siginfo_t si;

		memset(&si, 0, sizeof(si));
		if (waitid(P_PID, pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == pid)
			break;
		usleep(5000);
	}
	assert_int_equal(sp_tls_resolve__pid("/proc", (uint32_t)pid, &d, &why), -ESRCH);
	assert_int_equal(why, SP_TLS_FAIL_MAPS);
	waitpid(pid, NULL, 0);
	/* reaped */
	assert_int_equal(sp_tls_resolve__pid("/proc", (uint32_t)pid, &d, &why), -ESRCH);
	assert_int_equal(why, SP_TLS_FAIL_MAPS);
	assert_int_equal(sp_tls_resolve__pid("/proc", 0, &d, &why), -ESRCH);
	/* a proc root without the pid */
	assert_int_equal(sp_tls_resolve__pid("/nonexistent", 1, &d, &why), -ESRCH);
	assert_int_equal(why, SP_TLS_FAIL_MAPS);
}

static void test_fail_names(void **s)
{
	int i, j;

	(void)s;
	for (i = 0; i < SP_TLS_FAIL__MAX; i++) {
		assert_non_null(sp_tls_fail__name((enum sp_tls_fail)i));
		assert_string_not_equal(sp_tls_fail__name((enum sp_tls_fail)i), "unknown");
		for (j = 0; j < i; j++)
			assert_string_not_equal(sp_tls_fail__name((enum sp_tls_fail)i),
						sp_tls_fail__name((enum sp_tls_fail)j));
	}
	assert_string_equal(sp_tls_fail__name(SP_TLS_FAIL__MAX), "unknown");
	assert_string_equal(sp_tls_fail__name((enum sp_tls_fail)-1), "unknown");
}

/* ------------------------------------------------------------ malformed ELF */

static uint8_t *slurp(const char *name, size_t *len)
{
	char path[PATH_MAX];
	struct stat st;
	uint8_t *b;
	int fd;

	fixpath(path, sizeof(path), name);
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	b = malloc((size_t)st.st_size);
	assert_non_null(b);
	assert_int_equal(read(fd, b, (size_t)st.st_size), st.st_size);
	close(fd);
	*len = (size_t)st.st_size;
	return b;
}

static int bytes_fd(const void *b, size_t len)
{
	int fd = memfd_create("tls_elf_bytes", MFD_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, b, len), (ssize_t)len);
	return fd;
}

static int inspect_tables(const void *b, size_t len, unsigned tables, enum sp_tls_fail *why)
{
	struct sp_tls_elf_info info;
	int fd = bytes_fd(b, len), err;

	err = sp_tls_elf__inspect(fd, tables, &info, why);
	close(fd);
	return err;
}

static int inspect_bytes(const void *b, size_t len, enum sp_tls_fail *why)
{
	return inspect_tables(b, len, SP_TLS_ELF_DYNSYM | SP_TLS_ELF_SYMTAB, why);
}

static Elf64_Shdr *find_shdr(uint8_t *b, size_t len, uint32_t type)
{
	Elf64_Ehdr *eh = (Elf64_Ehdr *)b;
	int i;

	assert_true(eh->e_shoff + (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr) <= len);
	for (i = 0; i < eh->e_shnum; i++) {
		Elf64_Shdr *sh = (Elf64_Shdr *)(b + eh->e_shoff) + i;

		if (sh->sh_type == type)
			return sh;
	}
	return NULL;
}

static void test_malformed_elf(void **s)
{
	static const uint8_t garbage[] = "\177ELF\2\1\1\0garbage garbage garbage garbage";
	enum sp_tls_fail why;
	struct sp_tls_elf_info info;
	size_t len;
	uint8_t *orig = slurp("libdesc.so", &len), *b = malloc(len);
	Elf64_Ehdr *eh = (Elf64_Ehdr *)b;
	int fd;

	(void)s;
	assert_non_null(b);

	/* sanity: the intact library */
	fd = bytes_fd(orig, len);
	assert_int_equal(sp_tls_elf__inspect(fd, SP_TLS_ELF_DYNSYM, &info, &why), 0);
	close(fd);
	assert_true(info.has_tlsdesc && info.in_dynsym && info.tls_memsz >= 8);

	/* not ELF at all: cannot define it */
	assert_int_equal(inspect_bytes("hello, world", 12, &why), -ENOENT);
	assert_int_equal(why, SP_TLS_FAIL_NO_SYMBOL);
	assert_int_equal(inspect_bytes("", 0, &why), -ENOENT);

	/* ELF magic, then junk */
	assert_int_equal(inspect_bytes(garbage, sizeof(garbage), &why), -EINVAL);
	assert_int_equal(why, SP_TLS_FAIL_ELF);

	/* truncated copies */
	assert_int_equal(inspect_bytes(orig, 40, &why), -EINVAL);
	assert_int_equal(why, SP_TLS_FAIL_ELF);
	assert_true(inspect_bytes(orig, len / 2, &why) < 0);

	/* section headers beyond the end of the file */
	memcpy(b, orig, len);
	eh->e_shoff = (uint64_t)len * 4;
	assert_true(inspect_bytes(b, len, &why) < 0);

	/* absurd section count */
	memcpy(b, orig, len);
	eh->e_shnum = 0xffff;
	assert_true(inspect_bytes(b, len, &why) < 0);

	/* .dynsym claims 1 TiB */
	memcpy(b, orig, len);
	find_shdr(b, len, SHT_DYNSYM)->sh_size = 1ull << 40;
	assert_int_equal(inspect_bytes(b, len, &why), -EINVAL);
	assert_int_equal(why, SP_TLS_FAIL_ELF);

	/* .rela.dyn beyond the file: symbol found, relocations unreadable */
	memcpy(b, orig, len);
	find_shdr(b, len, SHT_RELA)->sh_offset = (uint64_t)len * 8;
	assert_int_equal(inspect_bytes(b, len, &why), -EINVAL);
	assert_int_equal(why, SP_TLS_FAIL_ELF);

	/* .dynsym's string table index out of range: names unreadable there,
	 * the (unstripped) .symtab still finds it */
	memcpy(b, orig, len);
	find_shdr(b, len, SHT_DYNSYM)->sh_link = 0x7fff;
	assert_int_equal(inspect_tables(b, len, SP_TLS_ELF_DYNSYM, &why), -ENOENT);
	assert_int_equal(why, SP_TLS_FAIL_NO_SYMBOL);
	assert_int_equal(inspect_bytes(b, len, &why), 0);

	/* PT_TLS removed: TLS symbol without a TLS segment */
	memcpy(b, orig, len);
	for (int i = 0; i < eh->e_phnum; i++) {
		Elf64_Phdr *ph = (Elf64_Phdr *)(b + eh->e_phoff) + i;

		if (ph->p_type == PT_TLS)
			ph->p_type = PT_NULL;
	}
	assert_int_equal(inspect_bytes(b, len, &why), -EINVAL);
	assert_int_equal(why, SP_TLS_FAIL_NO_PT_TLS);

	/* random byte flips: must never crash (run under ASan in CI) */
	srand(4947);
	for (int round = 0; round < 3000; round++) {
		int flips = 1 + rand() % 8;

		memcpy(b, orig, len);
		for (int k = 0; k < flips; k++) {
			/* mostly the headers, where the offsets and sizes are */
			size_t at = rand() % 4 ? (size_t)rand() % 64 : (size_t)rand() % len;

			if (rand() % 2 && eh->e_shoff < len)
				at = (size_t)eh->e_shoff + (size_t)rand() % (len - (size_t)eh->e_shoff);
			b[at] ^= (uint8_t)(1 + rand() % 255);
		}
		(void)inspect_bytes(b, len, &why);
	}
	free(b);
	free(orig);
}

/* A process that mapped a corrupted copy of the library (not loaded by
 * ld.so): the symbol is found, the relocations are unreadable -> ELF.  An
 * intact copy mapped the same way has descriptors never relocated. */
static void mapped_copy(const uint8_t *bytes, size_t len, int want_err, enum sp_tls_fail want_why)
{
	char path[PATH_MAX];
	struct sp_tls_desc d;
	enum sp_tls_fail why;
	int ready[2], fd;
	pid_t pid;
	char c;

	fixpath(path, sizeof(path), "mapped_copy.so");
	unlink(path);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, bytes, len), (ssize_t)len);
	assert_int_equal(pipe(ready), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		void *p = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);

		c = p == MAP_FAILED ? 'x' : 'k';
		if (write(ready[1], &c, 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	close(fd);
	assert_int_equal(read(ready[0], &c, 1), 1);
	close(ready[0]);
	close(ready[1]);
	assert_int_equal(c, 'k');
	assert_int_equal(sp_tls_resolve__pid("/proc", (uint32_t)pid, &d, &why), want_err);
	assert_int_equal(why, want_why);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	unlink(path);
}

static void test_mapped_corrupt_lib(void **s)
{
	size_t len;
	uint8_t *b = slurp("libdesc.so", &len);

	(void)s;
	/* never relocated: {0, 0} is neither static nor dynamic */
	mapped_copy(b, len, -EOPNOTSUPP, SP_TLS_FAIL_DYNAMIC_DESC);
	find_shdr(b, len, SHT_RELA)->sh_size = 1ull << 40;
	mapped_copy(b, len, -EINVAL, SP_TLS_FAIL_ELF);
	free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exec_pie),
		cmocka_unit_test(test_exec_nopie),
		cmocka_unit_test(test_exec_symtab_only),
		cmocka_unit_test(test_exec_static),
		cmocka_unit_test(test_exec_static_pie),
		cmocka_unit_test(test_tlsdesc_lib),
		cmocka_unit_test(test_tlsdesc_hidden_lib),
		cmocka_unit_test(test_gd_lib),
		cmocka_unit_test(test_gd_hidden_lib),
		cmocka_unit_test(test_ie_lib),
		cmocka_unit_test(test_dlopen_tlsdesc),
		cmocka_unit_test(test_dlopen_tlsdesc_dynamic),
		cmocka_unit_test(test_dlopen_gd),
		cmocka_unit_test(test_no_symbol),
		cmocka_unit_test(test_not_tls),
		cmocka_unit_test(test_dead_and_zombie_pid),
		cmocka_unit_test(test_fail_names),
		cmocka_unit_test(test_malformed_elf),
		cmocka_unit_test(test_mapped_corrupt_lib),
	};

	return cmocka_run_group_tests(tests, group_setup, tu_teardown_dir);
}
