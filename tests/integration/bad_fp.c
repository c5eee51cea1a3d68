// SPDX-License-Identifier: MIT
/*
 * bad_fp.c - spins for ever with its frame pointer set to an aligned,
 * unmapped address (0x1000, below mmap_min_addr), so that every sample's
 * frame-pointer walk faults on its first read (SP_CNT_USTACK_ERR).  Built
 * with -fomit-frame-pointer (rbp is an ordinary register then); the test
 * kills it.
 */
int main(void)
{
	__asm__ volatile("mov $0x1000, %%rbp\n1:\tjmp 1b" ::: "rbp", "memory");
	return 0;
}
