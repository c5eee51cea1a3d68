// SPDX-License-Identifier: MIT
/*
 * test_elf_symtab.c - sp_elf_symtab__find (base/elf_symtab.h) on this test
 * program's own ELF file: a defined function is found with its value and
 * type; a weak reference that nothing defines is in .symtab only as an
 * undefined entry, and is not found (its value 0 is no address); a name
 * that is not there is -ENOENT; NULL arguments are -EINVAL.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "base/elf_symtab.h"

/* Referenced, never defined: an SHN_UNDEF entry in this file's .symtab. */
extern void sp_test_never_defined(void) __attribute__((weak));

int sp_test_defined(int x);
int sp_test_defined(int x)
{
	return x + 1;
}

/* True when .symtab holds name as an undefined entry (what the test
 * relies on, checked rather than assumed). */
static bool has_undefined(Elf *elf, const char *name)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB || !sh.sh_entsize ||
		    !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym s;
			const char *n;

			if (gelf_getsym(d, (int)i, &s) && (n = elf_strptr(elf, sh.sh_link, s.st_name)) &&
			    !strcmp(n, name) && s.st_shndx == SHN_UNDEF)
				return true;
		}
	}
	return false;
}

static void test_find(void **state)
{
	GElf_Sym s;
	Elf *elf;
	int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);

	(void)state;
	assert_true(fd >= 0);
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	assert_non_null(elf);

	assert_int_equal(sp_elf_symtab__find(elf, "sp_test_defined", &s), 0);
	assert_int_equal(GELF_ST_TYPE(s.st_info), STT_FUNC);
	assert_true(s.st_value != 0 && s.st_shndx != SHN_UNDEF);
	assert_int_equal(sp_test_defined(1), 2);	/* keep it */

	assert_true(sp_test_never_defined == NULL);
	if (!has_undefined(elf, "sp_test_never_defined"))
		fail_msg("the weak reference is not in .symtab as an undefined entry: the "
			 "test below would prove nothing");
	assert_int_equal(sp_elf_symtab__find(elf, "sp_test_never_defined", &s), -ENOENT);

	assert_int_equal(sp_elf_symtab__find(elf, "sp_test_no_such_symbol", &s), -ENOENT);
	assert_int_equal(sp_elf_symtab__find(NULL, "main", &s), -EINVAL);
	assert_int_equal(sp_elf_symtab__find(elf, NULL, &s), -EINVAL);
	assert_int_equal(sp_elf_symtab__find(elf, "main", NULL), -EINVAL);
	elf_end(elf);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_find),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
