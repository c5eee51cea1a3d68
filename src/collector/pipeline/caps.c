/* SPDX-License-Identifier: MIT */
/*
 * caps.c - see caps.h.  Reads the effective set with capget(2) (v3, two
 * 32-bit words) rather than pulling in libcap for three bits.
 */
#include <errno.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "collector/pipeline/caps.h"

int sp_caps__current(uint64_t *eff, uint64_t *perm)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2] = { 0 };

	if (syscall(SYS_capget, &h, d))
		return -errno;
	if (eff)
		*eff = d[0].effective | (uint64_t)d[1].effective << 32;
	if (perm)
		*perm = d[0].permitted | (uint64_t)d[1].permitted << 32;
	return 0;
}

static bool has_cap(uint64_t eff, int cap)
{
	return (eff >> cap) & 1;
}

bool sp_caps__can_profile(char *msg, size_t len)
{
	uint64_t d;

	if (sp_caps__current(&d, NULL) != 0) {
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
