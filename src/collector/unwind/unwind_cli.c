// SPDX-License-Identifier: MIT
/*
 * unwind_cli.c - see unwind_cli.h.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "collector/unwind/unwind_cli.h"

int sp_unwind_cli__mode(const char *arg, bool *fp, char *msg, size_t len)
{
	msg[0] = '\0';
	if (!strcmp(arg, "fp")) {
		*fp = true;
		return 0;
	}
	if (!strcmp(arg, "dwarf") || !strcmp(arg, "eh-frame") || !strcmp(arg, "cfi")) {
		*fp = false;
		return 0;
	}
	snprintf(msg, len, "--unwind %s: expected dwarf (.eh_frame tables, the default) or fp "
		 "(frame pointers only)", arg);
	return -EINVAL;
}

int sp_unwind_cli__call_graph(const char *arg, bool *fp, char *msg, size_t len)
{
	msg[0] = '\0';
	if (!strcmp(arg, "fp")) {
		*fp = true;
		return 0;
	}
	if (!strncmp(arg, "dwarf", 5) && (arg[5] == '\0' || arg[5] == ',')) {
		*fp = false;
		if (arg[5] == ',')
			snprintf(msg, len, "--call-graph %s: the stack size is ignored: spanprof "
				 "copies no stack, it walks it in the kernel from .eh_frame tables "
				 "(up to 127 frames)", arg);
		return 0;
	}
	if (!strcmp(arg, "lbr"))
		snprintf(msg, len, "--call-graph lbr: not supported (it needs hardware branch "
			 "records); use dwarf (the default) or fp");
	else
		snprintf(msg, len, "--call-graph %s: expected fp or dwarf[,SIZE] (perf's spellings; "
			 "the same as --unwind fp|dwarf)", arg);
	return -EINVAL;
}
