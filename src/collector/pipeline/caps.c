/* SPDX-License-Identifier: MIT */
/*
 * caps.c - see caps.h.  Reads the effective set with capget(2) (v3, two
 * 32-bit words) rather than pulling in libcap for three bits.
 */
#include <linux/capability.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "collector/pipeline/caps.h"

#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#endif
#ifndef CAP_BPF
#define CAP_BPF 39
#endif

static bool has_cap(const struct __user_cap_data_struct d[2], int cap)
{
	return d[cap / 32].effective & (1u << (cap % 32));
}

bool sp_caps__can_profile(char *msg, size_t len)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2] = { 0 };

	if (syscall(SYS_capget, &h, d) != 0) {
		snprintf(msg, len, "cannot read capabilities (capget failed): run as root");
		return false;
	}
	if (has_cap(d, CAP_SYS_ADMIN) || (has_cap(d, CAP_BPF) && has_cap(d, CAP_PERFMON)))
		return true;
	snprintf(msg, len, "missing privileges: needs CAP_BPF and CAP_PERFMON (have %s, %s) "
		 "or CAP_SYS_ADMIN: run with sudo",
		 has_cap(d, CAP_BPF) ? "CAP_BPF" : "no CAP_BPF",
		 has_cap(d, CAP_PERFMON) ? "CAP_PERFMON" : "no CAP_PERFMON");
	return false;
}
