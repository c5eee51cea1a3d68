// SPDX-License-Identifier: MIT
/*
 * kernel_layout.c - the running kernel's image, boot and modules as
 * profile mappings (contract: kernel_layout.h).
 *
 * Reads happen in __new and __refresh only, never in __map: __map is a
 * binary search over the module table plus two comparisons.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>
#include <zlib.h>

#include "base/hex.h"
#include "collector/host/kallsyms.h"
#include "base/small_file.h"
#include "collector/host/kernel_layout.h"
#include "profile/fileio.h"

#define MODULES_MAX_BYTES (1u << 20)
#define CONFIG_MAX_BYTES (4u << 20)
#define SECTIONS_MAX 512
#define X86_START_KERNEL_MAP 0xffffffff80000000ULL
#define BOOT_START 0xffff800000000000ULL

/* Where a module slot's code is: [lo, lo + size). */
struct krange {
	uint64_t lo, size;
	uint32_t slot;
};

struct sp_kernel_layout {
	char *proc_root, *sys_root;
	uint64_t text, base, image_end;
	struct sp_build_id boot_id;
	struct sp_kmod *mods;		/* sorted by text */
	size_t n_mods;
	struct sp_kernel_slot *slots;	/* SP_KSLOT_MODULES + n_ranges */
	struct krange *ranges;		/* every module section slot, by lo */
	size_t n_ranges;
	char *modules_text;		/* the last PROC/modules read */
	size_t modules_len;
	uint64_t last_read_s;
	uint64_t misses;		/* module-area addresses in no module */
	struct sp_kernel_layout_stats st;
};

static void say(char *err, size_t len, const char *msg, int e)
{
	if (err && len)
		snprintf(err, len, "kernel layout: %s%s%s", msg, e ? ": " : "",
			 e ? strerror(-e) : "");
}

static int parse_hex_u64(const char *s, uint64_t *out)
{
	uint64_t v = 0;
	int d, n = 0;

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	while ((d = sp_hex_digit(*s)) >= 0 && n < 17) {
		v = v << 4 | (uint64_t)d;
		s++;
		n++;
	}
	if (!n || n > 16)
		return -EINVAL;
	*out = v;
	return 0;
}

uint64_t sp_kernel_layout__base_from_config(const char *text, size_t len)
{
	static const char ks[] = "CONFIG_PHYSICAL_START=", ka[] = "CONFIG_PHYSICAL_ALIGN=";
	uint64_t start = 0, align = 0;
	const char *p = text, *end = text + len;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t l = nl ? (size_t)(nl - p) : (size_t)(end - p);
		char v[32];

		if (l > sizeof(ks) - 1 && l - (sizeof(ks) - 1) < sizeof(v)) {
			size_t vl = l - (sizeof(ks) - 1);

			memcpy(v, p + sizeof(ks) - 1, vl);
			v[vl] = '\0';
			if (!memcmp(p, ks, sizeof(ks) - 1))
				parse_hex_u64(v, &start);
			else if (!memcmp(p, ka, sizeof(ka) - 1))
				parse_hex_u64(v, &align);
		}
		p += l + 1;
	}
	/* arch/x86/include/asm/page_64_types.h: __START_KERNEL =
	 * __START_KERNEL_map + LOAD_PHYSICAL_ADDR (PHYSICAL_START aligned up) */
	if (!start || !align || (align & (align - 1)) || start > (1ULL << 40))
		return SP_KLAYOUT_DEFAULT_BASE;
	return X86_START_KERNEL_MAP + ((start + align - 1) & ~(align - 1));
}

static uint64_t read_base(const char *path)
{
	char def[300];
	struct utsname u;
	uint8_t *buf = NULL;
	size_t len = 0;
	uint64_t base = SP_KLAYOUT_DEFAULT_BASE;
	gzFile gz;
	int n;

	if (!path) {
		gz = gzopen("/proc/config.gz", "rb");
		if (gz) {
			buf = malloc(CONFIG_MAX_BYTES);
			while (buf && len < CONFIG_MAX_BYTES &&
			       (n = gzread(gz, buf + len, (unsigned)(CONFIG_MAX_BYTES - len))) > 0)
				len += (size_t)n;
			gzclose(gz);
			if (buf)
				base = sp_kernel_layout__base_from_config((char *)buf, len);
			free(buf);
			return base;
		}
		if (uname(&u))
			return base;
		snprintf(def, sizeof(def), "/boot/config-%s", u.release);
		path = def;
	}
	if (!sp_read_path(path, CONFIG_MAX_BYTES, &buf, &len))
		base = sp_kernel_layout__base_from_config((char *)buf, len);
	free(buf);
	return base;
}

int sp_kernel_layout__parse_boot_id(const char *s, struct sp_build_id *out)
{
	unsigned n = 0;

	memset(out, 0, sizeof(*out));
	for (unsigned i = 0; s[i] && s[i] != '\n'; i++) {
		int hi, lo;

		if (s[i] == '-')
			continue;
		hi = sp_hex_digit(s[i]);
		lo = s[i + 1] ? sp_hex_digit(s[i + 1]) : -1;
		if (hi < 0 || lo < 0 || n == 16)
			return -EINVAL;
		out->id[n++] = (uint8_t)(hi << 4 | lo);
		i++;
	}
	if (n != 16)
		return -EINVAL;
	out->len = 16;
	return 0;
}

/* ------------------------------------------------------------ modules */

static int mod_cmp(const void *a, const void *b)
{
	const struct sp_kmod *x = a, *y = b;

	return x->text < y->text ? -1 : x->text > y->text;
}

/* An executable section of a module, by its name (kernel_layout.h). */
static bool exec_section(const char *n, size_t len)
{
	return !strncmp(n, ".text", 5) ? len == 5 || n[5] == '.'
	       : (len > 5 && !strcmp(n + len - 5, ".text")) || !strcmp(n, ".fixup") ||
		 !strcmp(n, ".altinstr_replacement");
}

/* Where m's .text and its other executable sections end: at the next
 * section of the module above each (addrs: all its sections read), never
 * past the core's end [core, core + size) for one inside it, never longer
 * than the module.  Sorts m->sects by address. */
static void section_sizes(struct sp_kmod *m, const uint64_t *addrs, size_t n,
			  uint64_t core, uint64_t size)
{
	for (uint32_t i = 0; i <= m->n_sects; i++) {
		uint64_t a = i ? m->sects[i - 1].addr : m->text, next = 0, len;

		for (size_t j = 0; j < n; j++)
			if (addrs[j] > a && (!next || addrs[j] < next))
				next = addrs[j];
		len = next && next - a < size ? next - a : size;
		if (core && core <= a && core + size > a && core + size - a < len)
			len = core + size - a;
		if (i)
			m->sects[i - 1].size = len;
		else
			m->size = len;
	}
	for (uint32_t i = 1; i < m->n_sects; i++)	/* insertion sort: <= 16 */
		for (uint32_t j = i; j && m->sects[j - 1].addr > m->sects[j].addr; j--) {
			struct sp_ksect t = m->sects[j];

			m->sects[j] = m->sects[j - 1];
			m->sects[j - 1] = t;
		}
}

/* The sections of SYS/module/NAME into m: .text (required) and up to
 * SP_KMOD_SECTIONS_MAX other executable ones (kernel_layout.h), sized by
 * section_sizes.  loading: the module's state is "Loading" (its .init.*
 * sections are live).  0, -ENOENT without a .text, -EACCES when the
 * addresses read as 0, -ENOMEM. */
static int module_sections(struct sp_kernel_layout *kl, const char *name, bool loading,
			   uint64_t core, uint64_t size, struct sp_kmod *m)
{
	char path[512], buf[64];
	uint64_t *addrs;
	struct dirent *de;
	size_t n = 0;
	DIR *d;
	int reads = 0;

	snprintf(path, sizeof(path), "%s/module/%s/sections/.text", kl->sys_root, name);
	if (sp_read_small(path, buf, sizeof(buf)) <= 0 || parse_hex_u64(buf, &m->text))
		return -ENOENT;
	if (!m->text)
		return -EACCES;
	snprintf(path, sizeof(path), "%s/module/%s/sections", kl->sys_root, name);
	d = opendir(path);
	if (!d) {
		section_sizes(m, NULL, 0, core, size);
		return 0;
	}
	addrs = calloc(SECTIONS_MAX, sizeof(*addrs));
	if (!addrs) {
		closedir(d);
		return -ENOMEM;
	}
	while ((de = readdir(d)) && reads++ < SECTIONS_MAX) {
		size_t len = strlen(de->d_name);
		char f[768];
		uint64_t a;
		bool ex;

		if (de->d_name[0] != '.' || !strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		ex = exec_section(de->d_name, len) && strcmp(de->d_name, ".text");
		if (!strncmp(de->d_name, ".init.", 6) && !loading)
			continue;	/* freed after init: a stale address */
		snprintf(f, sizeof(f), "%s/%s", path, de->d_name);
		if (sp_read_small(f, buf, sizeof(buf)) <= 0 || parse_hex_u64(buf, &a) || !a) {
			kl->st.module_sections_skipped += ex;
			continue;
		}
		if (ex && (!sp_kallsyms_format__section_ok(de->d_name, len) ||
			   m->n_sects == SP_KMOD_SECTIONS_MAX)) {
			kl->st.module_sections_skipped++;
			ex = false;
		}
		if (ex) {
			struct sp_ksect *k = &m->sects[m->n_sects++];

			memcpy(k->name, de->d_name, len + 1);
			k->addr = a;
		}
		addrs[n++] = a;
	}
	closedir(d);
	section_sizes(m, addrs, n, core, size);
	free(addrs);
	return 0;
}

const struct sp_ksect *sp_kmod__section(const struct sp_kmod *mod, const char *name)
{
	for (uint32_t i = 0; mod && i < mod->n_sects; i++)
		if (!strcmp(mod->sects[i].name, name))
			return &mod->sects[i];
	return NULL;
}

static void module_build_id(const struct sp_kernel_layout *kl, const char *name,
			    struct sp_build_id *b)
{
	char path[512];
	uint8_t *buf = NULL;
	size_t len = 0;

	memset(b, 0, sizeof(*b));
	snprintf(path, sizeof(path), "%s/module/%s/notes/.note.gnu.build-id", kl->sys_root, name);
	if (!sp_read_path(path, 4096, &buf, &len) && sp_buildid__from_notes(buf, len, b))
		memset(b, 0, sizeof(*b));
	free(buf);
}

static void set_slot(struct sp_kernel_slot *s, const char *name, const struct sp_build_id *b,
		     uint64_t start, uint64_t limit)
{
	memset(s, 0, sizeof(*s));
	snprintf(s->filename, sizeof(s->filename), "%s", name);
	if (b)
		s->build_id = *b;
	s->start = start;
	s->limit = limit;
}

static int range_cmp(const void *a, const void *b)
{
	const struct krange *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* The slot table and the range table from the current fields: each
 * module's .text slot, then one per other executable section. */
static int build_slots(struct sp_kernel_layout *kl, const struct sp_build_id *kid)
{
	struct sp_kernel_slot *s;
	struct krange *r;
	size_t n = 0, k = 0;

	for (size_t i = 0; i < kl->n_mods; i++)
		n += 1 + kl->mods[i].n_sects;
	s = calloc(SP_KSLOT_MODULES + n, sizeof(*s));
	r = calloc(n ? n : 1, sizeof(*r));
	if (!s || !r) {
		free(s);
		free(r);
		return -ENOMEM;
	}
	set_slot(&s[SP_KSLOT_VMLINUX], "[kernel.kallsyms]", kid, kl->base,
		 kl->base + (kl->image_end - kl->text));
	set_slot(&s[SP_KSLOT_BOOT], "[kernel.boot]", &kl->boot_id, BOOT_START, UINT64_MAX);
	kl->st.module_sections = 0;
	for (size_t i = 0; i < kl->n_mods; i++) {
		const struct sp_kmod *m = &kl->mods[i];
		char name[sizeof(s->filename)];

		snprintf(name, sizeof(name), SP_KALLSYMS_FN_MODULE "%s]", m->name);
		set_slot(&s[SP_KSLOT_MODULES + k], name, &m->build_id, 0, m->size);
		r[k] = (struct krange){ m->text, m->size, (uint32_t)(SP_KSLOT_MODULES + k) };
		k++;
		for (uint32_t j = 0; j < m->n_sects; j++, k++) {
			snprintf(name, sizeof(name), SP_KALLSYMS_FN_MODULE_SECTION "%s:%s]", m->name,
				 m->sects[j].name);
			set_slot(&s[SP_KSLOT_MODULES + k], name, &m->build_id, 0, m->sects[j].size);
			r[k] = (struct krange){ m->sects[j].addr, m->sects[j].size,
						(uint32_t)(SP_KSLOT_MODULES + k) };
		}
		kl->st.module_sections += m->n_sects;
	}
	if (n > 1)
		qsort(r, n, sizeof(*r), range_cmp);
	free(kl->slots);
	free(kl->ranges);
	kl->slots = s;
	kl->ranges = r;
	kl->n_ranges = n;
	return 0;
}

/* (Re)reads PROC/modules and each module's sysfs entries.  Unchanged text
 * keeps the table as it is. */
static int read_modules(struct sp_kernel_layout *kl, bool *changed)
{
	char path[512];
	uint8_t *buf = NULL;
	size_t len = 0, n = 0, cap = 0;
	struct sp_kmod *mods = NULL;
	int err;

	*changed = false;
	kl->st.module_reads++;
	snprintf(path, sizeof(path), "%s/modules", kl->proc_root);
	err = sp_read_path(path, MODULES_MAX_BYTES, &buf, &len);
	if (err == -ENOENT)
		err = 0;	/* CONFIG_MODULES=n */
	if (err)
		return err;
	if (kl->modules_text && len == kl->modules_len && !memcmp(buf, kl->modules_text, len)) {
		free(buf);
		return 0;
	}
	kl->st.modules_no_build_id = kl->st.modules_hidden = kl->st.module_sections_skipped = 0;
	for (char *line = (char *)buf, *nl; line && *line; line = nl) {
		char name[SP_KMOD_NAME_MAX], state[16], addr[32];
		unsigned long long size;
		uint64_t core = 0;
		struct sp_kmod *m;

		nl = strchr(line, '\n');
		if (nl)
			*nl++ = '\0';
		if (sscanf(line, "%63s %llu %*s %*s %15s %31s", name, &size, state, addr) != 4 ||
		    strchr(name, '/') || name[0] == '.')
			continue;
		parse_hex_u64(addr, &core);
		if (n == SP_KLAYOUT_MAX_MODULES)
			break;
		if (n == cap) {
			size_t nc = cap ? 2 * cap : 64;
			struct sp_kmod *q = realloc(mods, nc * sizeof(*q));

			if (!q) {
				free(mods);
				free(buf);
				return -ENOMEM;
			}
			mods = q;
			cap = nc;
		}
		m = &mods[n];
		memset(m, 0, sizeof(*m));
		err = module_sections(kl, name, !strcmp(state, "Loading"), core, size, m);
		if (err == -ENOMEM) {
			free(mods);
			free(buf);
			return err;
		}
		if (err) {
			kl->st.modules_hidden += err == -EACCES;
			continue;
		}
		n++;
		snprintf(m->name, sizeof(m->name), "%s", name);
		module_build_id(kl, name, &m->build_id);
		kl->st.modules_no_build_id += !m->build_id.len;
	}
	if (kl->modules_text && kl->st.modules_hidden) {
		/* addresses read as 0 now (privileges dropped since the first
		 * read): the table we have is better than this one */
		free(mods);
		free(buf);
		kl->st.modules = kl->n_mods;
		return 0;
	}
	if (n > 1)
		qsort(mods, n, sizeof(*mods), mod_cmp);
	free(kl->mods);
	kl->mods = mods;
	kl->n_mods = n;
	free(kl->modules_text);
	kl->modules_text = (char *)buf;
	kl->modules_len = len;
	/* sscanf cut the copy at newlines; keep the bytes for comparison */
	for (size_t i = 0; i < len; i++)
		if (!kl->modules_text[i])
			kl->modules_text[i] = '\n';
	kl->st.modules = n;
	*changed = true;
	return 0;
}

/* ------------------------------------------------------------ API */

int sp_kernel_layout__new(const struct sp_kernel_layout_config *cfg,
			  struct sp_kernel_layout **out, char *err, size_t err_len)
{
	struct sp_kernel_layout *kl;
	struct sp_build_id kid;
	char boot[64], kerr[256];
	bool changed;
	int rc;

	*out = NULL;
	kl = calloc(1, sizeof(*kl));
	if (!kl)
		return -ENOMEM;
	kl->proc_root = strdup(cfg && cfg->proc_root ? cfg->proc_root : "/proc");
	kl->sys_root = strdup(cfg && cfg->sys_root ? cfg->sys_root : "/sys");
	rc = -ENOMEM;
	if (!kl->proc_root || !kl->sys_root)
		goto fail;
	if (cfg && cfg->kernel_id && cfg->kernel_id->len) {
		kid = *cfg->kernel_id;
	} else if ((rc = sp_buildid__kernel(&kid))) {
		say(err, err_len, "no kernel build id in /sys/kernel/notes", rc);
		goto fail;
	}
	rc = sp_kallsyms__text_range(&kl->text, &kl->image_end, kerr, sizeof(kerr));
	if (rc) {
		if (err && err_len)
			snprintf(err, err_len, "kernel layout: %s", kerr);
		goto fail;
	}
	kl->base = read_base(cfg ? cfg->config_path : NULL);
	snprintf(boot, sizeof(boot), "%s/sys/kernel/random/boot_id", kl->proc_root);
	if (sp_read_small(boot, boot, sizeof(boot)) > 0)
		sp_kernel_layout__parse_boot_id(boot, &kl->boot_id);
	rc = read_modules(kl, &changed);
	if (rc) {
		say(err, err_len, "reading the module list", rc);
		goto fail;
	}
	rc = build_slots(kl, &kid);
	if (rc)
		goto fail;
	kl->st.text = kl->text;
	kl->st.base = kl->base;
	kl->st.image_end = kl->image_end;
	*out = kl;
	return 0;
fail:
	sp_kernel_layout__free(kl);
	return rc;
}

void sp_kernel_layout__free(struct sp_kernel_layout *kl)
{
	if (!kl)
		return;
	free(kl->proc_root);
	free(kl->sys_root);
	free(kl->mods);
	free(kl->slots);
	free(kl->ranges);
	free(kl->modules_text);
	free(kl);
}

uint32_t sp_kernel_layout__map(struct sp_kernel_layout *kl, uint64_t addr, uint64_t *loc)
{
	size_t lo = 0, hi = kl->n_ranges;

	if (addr >= kl->text && addr < kl->image_end) {
		*loc = addr - kl->text + kl->base;
		return SP_KSLOT_VMLINUX;
	}
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (kl->ranges[mid].lo <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo && addr - kl->ranges[lo - 1].lo < kl->ranges[lo - 1].size) {
		*loc = addr - kl->ranges[lo - 1].lo;
		return kl->ranges[lo - 1].slot;
	}
	if (addr >= kl->image_end)
		kl->misses++;	/* module area: perhaps loaded since */
	kl->st.boot_frames++;
	*loc = addr;
	return SP_KSLOT_BOOT;
}

uint32_t sp_kernel_layout__n_slots(const struct sp_kernel_layout *kl)
{
	return kl ? SP_KSLOT_MODULES + (uint32_t)kl->n_ranges : 0;
}

const struct sp_kernel_slot *sp_kernel_layout__slot(const struct sp_kernel_layout *kl,
						    uint32_t i)
{
	return kl && i < sp_kernel_layout__n_slots(kl) ? &kl->slots[i] : NULL;
}

const struct sp_kmod *sp_kernel_layout__modules(const struct sp_kernel_layout *kl, size_t *n)
{
	*n = kl ? kl->n_mods : 0;
	return kl ? kl->mods : NULL;
}

bool sp_kernel_layout__refresh(struct sp_kernel_layout *kl, uint64_t now_s)
{
	struct sp_build_id kid;
	bool changed = false;

	if (!kl || !kl->misses || now_s < kl->last_read_s + SP_KLAYOUT_REFRESH_S)
		return false;
	kl->last_read_s = now_s;
	kl->misses = 0;
	kid = kl->slots[SP_KSLOT_VMLINUX].build_id;
	if (read_modules(kl, &changed) || !changed)
		return false;
	return build_slots(kl, &kid) == 0;
}

void sp_kernel_layout__stats(const struct sp_kernel_layout *kl,
			     struct sp_kernel_layout_stats *st)
{
	if (!kl) {
		memset(st, 0, sizeof(*st));
		return;
	}
	*st = kl->st;
}
