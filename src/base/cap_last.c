/* SPDX-License-Identifier: MIT */
/*
 * cap_last.c - see cap_last.h.
 */
#include <linux/capability.h>
#include <stdio.h>

#include "base/cap_last.h"

int sp_cap_last(void)
{
	FILE *f = fopen("/proc/sys/kernel/cap_last_cap", "re");
	int v = -1;

	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v >= 0 && v < 64 ? v : CAP_LAST_CAP;
}
