// SPDX-License-Identifier: MIT
/*
 * bad_fp.c - spins for ever with its frame pointer set to an aligned
 * address above the stack that nothing maps (16 bytes below the top of a
 * 47-bit user space; the stack's randomized top is lower), so that every
 * sample's frame-pointer step faults on its first read
 * (SP_CNT_USTACK_ERR).  The unwinder only reads a frame pointer at or
 * above the stack pointer (one below it ends the stack unread), and only
 * for code without CFI: the test builds this with -fomit-frame-pointer
 * (rbp is an ordinary register then) and -fno-asynchronous-unwind-tables
 * (no .eh_frame row for main); it kills it.
 */
int main(void)
{
	__asm__ volatile("movabs $0x7fffffffeff0, %%rbp\n1:\tjmp 1b" ::: "rbp", "memory");
	return 0;
}
