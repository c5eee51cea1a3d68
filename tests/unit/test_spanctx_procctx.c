/* SPDX-License-Identifier: MIT */
/*
 * test_spanctx_procctx.c - libspanctx process context (OTEP 4719 writer) and
 * the ELF-level contract of the library: the OTEL_CTX mapping, its header
 * and protobuf payload (decoded with protobuf-c from
 * proto/otel_process_context.proto, independently of the hand-written
 * encoder), the update protocol, fork behaviour, and otel_thread_ctx_v1 in
 * .dynsym (libspanctx.so with a TLSDESC relocation; this statically linked
 * test executable through -Wl,--export-dynamic-symbol).
 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "otel_process_context.pb-c.h"
#include "spanctx.h"

struct hdr {
	char signature[8];
	uint32_t version;
	uint32_t payload_size;
	uint64_t published_at_ns;
	uint64_t payload;
};

/* Start addresses of mappings whose name mentions OTEL_CTX; returns count. */
static int find_otel_ctx(uintptr_t *addr, char *name, size_t name_len)
{
	char line[512];
	FILE *f = fopen("/proc/self/maps", "r");
	int n = 0;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo;
		char *nm;

		if (!strstr(line, "OTEL_CTX"))
			continue;
		if (sscanf(line, "%lx-", &lo) != 1)
			continue;
		n++;
		*addr = lo;
		nm = strchr(line, '/') ? strchr(line, '/') : strchr(line, '[');
		if (name && nm) {
			snprintf(name, name_len, "%s", nm);
			name[strcspn(name, "\n")] = '\0';
		}
	}
	fclose(f);
	return n;
}

static const char *anyvalue_str(const Opentelemetry__Proto__Common__V1__AnyValue *v)
{
	if (!v || v->value_case !=
		  OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE)
		return NULL;
	return v->string_value;
}

static const Opentelemetry__Proto__Common__V1__AnyValue *
kv_find(Opentelemetry__Proto__Common__V1__KeyValue **kv, size_t n,
	const char *key)
{
	for (size_t i = 0; i < n; i++)
		if (kv[i]->key && strcmp(kv[i]->key, key) == 0)
			return kv[i]->value;
	return NULL;
}

/* Reads and checks the header; returns the decoded payload (caller frees). */
static Opentelemetry__Proto__Processcontext__ProcessContext *
read_published(struct hdr *out)
{
	Opentelemetry__Proto__Processcontext__ProcessContext *pc;
	char name[256] = "";
	uintptr_t addr = 0;

	assert_int_equal(find_otel_ctx(&addr, name, sizeof(name)), 1);
	print_message("mapping: %s\n", name);
	assert_true(strstr(name, "/memfd:OTEL_CTX") == name ||
		    strcmp(name, "[anon:OTEL_CTX]") == 0 ||
		    strcmp(name, "[anon_shmem:OTEL_CTX]") == 0);
	memcpy(out, (const void *)addr, sizeof(*out));
	assert_memory_equal(out->signature, "OTEL_CTX", 8);
	assert_int_equal(out->version, 2);
	assert_true(out->published_at_ns != 0);
	assert_true(out->payload_size > 0);
	assert_true(out->payload_size <= SPANCTX_PROCESS_CTX_MAX_PAYLOAD);
	assert_true(out->payload != 0);
	pc = opentelemetry__proto__processcontext__process_context__unpack(
		NULL, out->payload_size, (const uint8_t *)(uintptr_t)out->payload);
	assert_non_null(pc);
	/* Every byte belongs to the message: re-encoding gives the size. */
	assert_int_equal(
		opentelemetry__proto__processcontext__process_context__get_packed_size(pc),
		out->payload_size);
	return pc;
}

static const char *service_name_of(
	const Opentelemetry__Proto__Processcontext__ProcessContext *pc)
{
	assert_non_null(pc->resource);
	return anyvalue_str(kv_find(pc->resource->attributes,
				    pc->resource->n_attributes,
				    "service.name"));
}

static void test_process_ctx_published(void **state)
{
	static const char *const keys[] = { "http.route", "worker", "tenant" };
	Opentelemetry__Proto__Processcontext__ProcessContext *pc;
	const Opentelemetry__Proto__Common__V1__AnyValue *v;
	struct hdr h;
	struct timespec now;
	(void)state;

	assert_int_equal(spanctx_init("svc-under-test", keys, 3), 0);
	pc = read_published(&h);
	clock_gettime(CLOCK_BOOTTIME, &now);
	assert_true(h.published_at_ns <=
		    (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec);
	assert_string_equal(service_name_of(pc), "svc-under-test");
	assert_string_equal(anyvalue_str(kv_find(pc->attributes,
						 pc->n_attributes,
						 "threadlocal.schema_version")),
			    "tlsdesc_v1_dev");
	v = kv_find(pc->attributes, pc->n_attributes,
		    "threadlocal.attribute_key_map");
	assert_non_null(v);
	assert_int_equal(v->value_case,
			 OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_ARRAY_VALUE);
	assert_int_equal(v->array_value->n_values, 3);
	for (int i = 0; i < 3; i++)
		assert_string_equal(anyvalue_str(v->array_value->values[i]),
				    keys[i]);
	opentelemetry__proto__processcontext__process_context__free_unpacked(pc, NULL);
}

static void test_process_ctx_update(void **state)
{
	Opentelemetry__Proto__Processcontext__ProcessContext *pc;
	uintptr_t a1 = 0, a2 = 0;
	struct hdr h1, h2;
	const Opentelemetry__Proto__Common__V1__AnyValue *v;
	(void)state;

	assert_int_equal(spanctx_init("first", NULL, 0), 0);
	pc = read_published(&h1);
	assert_string_equal(service_name_of(pc), "first");
	v = kv_find(pc->attributes, pc->n_attributes,
		    "threadlocal.attribute_key_map");
	assert_non_null(v);
	assert_int_equal(v->array_value ? v->array_value->n_values : 99, 0);
	opentelemetry__proto__processcontext__process_context__free_unpacked(pc, NULL);
	find_otel_ctx(&a1, NULL, 0);

	assert_int_equal(spanctx_init("second", NULL, 0), 0);
	pc = read_published(&h2);
	find_otel_ctx(&a2, NULL, 0);
	assert_int_equal(a1, a2);	/* same mapping, updated in place */
	assert_true(h2.published_at_ns > h1.published_at_ns);
	assert_string_equal(service_name_of(pc), "second");
	opentelemetry__proto__processcontext__process_context__free_unpacked(pc, NULL);
}

static void test_service_name_sources(void **state)
{
	Opentelemetry__Proto__Processcontext__ProcessContext *pc;
	struct hdr h;
	(void)state;

	setenv("OTEL_SERVICE_NAME", "from-env", 1);
	assert_int_equal(spanctx_init(NULL, NULL, 0), 0);
	pc = read_published(&h);
	assert_string_equal(service_name_of(pc), "from-env");
	opentelemetry__proto__processcontext__process_context__free_unpacked(pc, NULL);

	assert_int_equal(spanctx_init("explicit", NULL, 0), 0);	/* arg wins */
	pc = read_published(&h);
	assert_string_equal(service_name_of(pc), "explicit");
	opentelemetry__proto__processcontext__process_context__free_unpacked(pc, NULL);

	unsetenv("OTEL_SERVICE_NAME");
	assert_int_equal(spanctx_init("", NULL, 0), 0);
	pc = read_published(&h);
	assert_string_equal(service_name_of(pc), program_invocation_short_name);
	opentelemetry__proto__processcontext__process_context__free_unpacked(pc, NULL);
}

static void test_init_rejects_bad_input(void **state)
{
	static const char *const with_null[] = { "a", NULL };
	Opentelemetry__Proto__Processcontext__ProcessContext *pc;
	const char *keys[SPANCTX_MAX_KEYS + 1];
	struct hdr before, after;
	char *huge;
	(void)state;

	assert_int_equal(spanctx_init("keep-me", NULL, 0), 0);
	pc = read_published(&before);
	opentelemetry__proto__processcontext__process_context__free_unpacked(pc, NULL);

	for (int i = 0; i <= SPANCTX_MAX_KEYS; i++)
		keys[i] = "k";
	assert_int_equal(spanctx_init("x", keys, SPANCTX_MAX_KEYS + 1), -EINVAL);
	assert_int_equal(spanctx_init("x", with_null, 2), -EINVAL);
	assert_int_equal(spanctx_init("x", NULL, 1), -EINVAL);
	huge = malloc(70000);
	assert_non_null(huge);
	memset(huge, 'n', 69999);
	huge[69999] = '\0';
	assert_int_equal(spanctx_init(huge, NULL, 0), -E2BIG);
	free(huge);

	pc = read_published(&after);
	assert_memory_equal(&before, &after, sizeof(before));
	assert_string_equal(service_name_of(pc), "keep-me");
	opentelemetry__proto__processcontext__process_context__free_unpacked(pc, NULL);

	/* 255 keys is the maximum and works. */
	assert_int_equal(spanctx_init("many", keys, SPANCTX_MAX_KEYS), 0);
}

static void test_not_inherited_by_fork(void **state)
{
	uintptr_t a;
	int status;
	pid_t pid;
	(void)state;

	assert_int_equal(spanctx_init("parent", NULL, 0), 0);
	assert_int_equal(find_otel_ctx(&a, NULL, 0), 1);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		uintptr_t b;
		int n0, n1;

		n0 = find_otel_ctx(&b, NULL, 0);
		/* The child may publish its own. */
		if (spanctx_init("child", NULL, 0) != 0)
			_exit(3);
		n1 = find_otel_ctx(&b, NULL, 0);
		_exit(n0 == 0 && n1 == 1 ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

static void test_shutdown(void **state)
{
	uintptr_t a;
	(void)state;

	assert_int_equal(spanctx_init("bye", NULL, 0), 0);
	assert_int_equal(find_otel_ctx(&a, NULL, 0), 1);
	spanctx_shutdown();
	assert_int_equal(find_otel_ctx(&a, NULL, 0), 0);
	spanctx_shutdown();
	assert_int_equal(spanctx_init("again", NULL, 0), 0);
	assert_int_equal(find_otel_ctx(&a, NULL, 0), 1);
	spanctx_shutdown();
}

/* ------------------------------------------------------------ ELF */

struct elf_file {
	const uint8_t *p;
	size_t len;
};

static void elf_open(const char *path, struct elf_file *e)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	e->len = (size_t)st.st_size;
	e->p = mmap(NULL, e->len, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	assert_true(e->p != MAP_FAILED);
	assert_memory_equal(e->p, ELFMAG, SELFMAG);
	assert_int_equal(e->p[EI_CLASS], ELFCLASS64);
}

static const Elf64_Shdr *elf_shdr(const struct elf_file *e, size_t i)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)e->p;

	assert_true(eh->e_shoff + (i + 1) * sizeof(Elf64_Shdr) <= e->len);
	return (const Elf64_Shdr *)(e->p + eh->e_shoff) + i;
}

struct dynsym_info {
	int index;		/* of otel_thread_ctx_v1, -1 if absent */
	int type, bind;
	bool defined;
	int tlsdesc_relocs;	/* R_X86_64_TLSDESC against it */
	int foreign_exports;	/* defined globals not spanctx_* / the TLS var */
};

static void elf_scan(const char *path, struct dynsym_info *out)
{
	const Elf64_Ehdr *eh;
	const Elf64_Shdr *dynsym = NULL, *strtab;
	struct elf_file e;
	size_t dynsym_idx = 0;

	memset(out, 0, sizeof(*out));
	out->index = -1;
	elf_open(path, &e);
	eh = (const Elf64_Ehdr *)e.p;
	for (size_t i = 0; i < eh->e_shnum; i++)
		if (elf_shdr(&e, i)->sh_type == SHT_DYNSYM) {
			dynsym = elf_shdr(&e, i);
			dynsym_idx = i;
		}
	assert_non_null(dynsym);
	strtab = elf_shdr(&e, dynsym->sh_link);
	for (size_t i = 0; i < dynsym->sh_size / sizeof(Elf64_Sym); i++) {
		const Elf64_Sym *s = (const Elf64_Sym *)(e.p + dynsym->sh_offset) + i;
		const char *name = (const char *)e.p + strtab->sh_offset + s->st_name;
		int bind = ELF64_ST_BIND(s->st_info);

		if (strcmp(name, "otel_thread_ctx_v1") == 0) {
			out->index = (int)i;
			out->type = ELF64_ST_TYPE(s->st_info);
			out->bind = bind;
			out->defined = s->st_shndx != SHN_UNDEF;
		} else if (s->st_shndx != SHN_UNDEF && s->st_shndx != SHN_ABS &&
			   (bind == STB_GLOBAL || bind == STB_WEAK) &&
			   strncmp(name, "spanctx_", 8) != 0) {
			out->foreign_exports++;
		}
	}
	for (size_t i = 0; i < eh->e_shnum; i++) {
		const Elf64_Shdr *sh = elf_shdr(&e, i);

		if (sh->sh_type != SHT_RELA || sh->sh_link != dynsym_idx)
			continue;
		for (size_t j = 0; j < sh->sh_size / sizeof(Elf64_Rela); j++) {
			const Elf64_Rela *r = (const Elf64_Rela *)(e.p + sh->sh_offset) + j;

			if (ELF64_R_TYPE(r->r_info) == R_X86_64_TLSDESC &&
			    (int)ELF64_R_SYM(r->r_info) == out->index)
				out->tlsdesc_relocs++;
		}
	}
	munmap((void *)e.p, e.len);
}

/* $(O)/tests/test_x -> $(O)/libspanctx.so */
static void lib_path(char *buf, size_t len)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	char *slash;

	assert_true(n > 0);
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	assert_non_null(slash);
	*slash = '\0';
	snprintf(buf, len, "%s/../libspanctx.so", exe);
}

static void test_shared_lib_dynsym_and_tlsdesc(void **state)
{
	struct dynsym_info di;
	char path[PATH_MAX + 32];
	(void)state;

	lib_path(path, sizeof(path));
	elf_scan(path, &di);
	assert_true(di.index > 0);
	assert_int_equal(di.type, STT_TLS);
	assert_int_equal(di.bind, STB_GLOBAL);
	assert_true(di.defined);
	assert_true(di.tlsdesc_relocs >= 1);	/* -mtls-dialect=gnu2 */
	assert_int_equal(di.foreign_exports, 0);	/* version script */
}

static void test_static_exe_exports_symbol(void **state)
{
	struct dynsym_info di;
	(void)state;

	elf_scan("/proc/self/exe", &di);
	assert_true(di.index > 0);
	assert_int_equal(di.type, STT_TLS);
	assert_true(di.defined);
}

static void test_dlopen_finds_symbols(void **state)
{
	char path[PATH_MAX + 32];
	const char *(*version)(void);
	void *h;
	(void)state;

	lib_path(path, sizeof(path));
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	assert_non_null(h);
	assert_non_null(dlsym(h, "otel_thread_ctx_v1"));
	*(void **)&version = dlsym(h, "spanctx_version");
	assert_non_null(version);
	assert_string_equal(version(), SPANCTX_VERSION_STRING);
	assert_null(dlsym(h, "spanctx__n_keys"));	/* internal: hidden */
	assert_null(dlsym(h, "spanctx__once"));
	dlclose(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_process_ctx_published),
		cmocka_unit_test(test_process_ctx_update),
		cmocka_unit_test(test_service_name_sources),
		cmocka_unit_test(test_init_rejects_bad_input),
		cmocka_unit_test(test_not_inherited_by_fork),
		cmocka_unit_test(test_shutdown),
		cmocka_unit_test(test_shared_lib_dynsym_and_tlsdesc),
		cmocka_unit_test(test_static_exe_exports_symbol),
		cmocka_unit_test(test_dlopen_finds_symbols),
	};

	return cmocka_run_group_tests_name("spanctx_procctx", tests, NULL, NULL);
}
