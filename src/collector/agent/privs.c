/* SPDX-License-Identifier: MIT */
/*
 * privs.c - see privs.h.  capget/capset (v3, two 32-bit words) and prctl,
 * without libcap.
 */
#include <errno.h>
#include <linux/capability.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/cap_last.h"
#include "collector/agent/privs.h"
#include "collector/pipeline/caps.h"

#define BIT(c) (1ull << (c))

static const char *const cap_names[] = {
	"cap_chown", "cap_dac_override", "cap_dac_read_search", "cap_fowner",
	"cap_fsetid", "cap_kill", "cap_setgid", "cap_setuid", "cap_setpcap",
	"cap_linux_immutable", "cap_net_bind_service", "cap_net_broadcast",
	"cap_net_admin", "cap_net_raw", "cap_ipc_lock", "cap_ipc_owner",
	"cap_sys_module", "cap_sys_rawio", "cap_sys_chroot", "cap_sys_ptrace",
	"cap_sys_pacct", "cap_sys_admin", "cap_sys_boot", "cap_sys_nice",
	"cap_sys_resource", "cap_sys_time", "cap_sys_tty_config", "cap_mknod",
	"cap_lease", "cap_audit_write", "cap_audit_control", "cap_setfcap",
	"cap_mac_override", "cap_mac_admin", "cap_syslog", "cap_wake_alarm",
	"cap_block_suspend", "cap_audit_read", "cap_perfmon", "cap_bpf",
	"cap_checkpoint_restore",
};

int sp_privs__refuse_setuid(char *err, size_t err_len)
{
	if (getuid() != geteuid() || getgid() != getegid()) {
		snprintf(err, err_len, "refusing to run setuid or setgid (uid %u euid %u, gid %u "
			 "egid %u): give the binary capabilities or run it from a service "
			 "manager instead", getuid(), geteuid(), getgid(), getegid());
		return -EPERM;
	}
	return 0;
}

uint64_t sp_privs__needed(bool uprobes)
{
	int last = sp_cap_last();
	uint64_t m = BIT(CAP_SYS_PTRACE) | BIT(CAP_DAC_READ_SEARCH);

	m |= last >= CAP_BPF ? BIT(CAP_BPF) : BIT(CAP_SYS_ADMIN);
	if (uprobes)
		m |= BIT(CAP_SYS_ADMIN);	/* the uprobe PMU: see privs.h */
	m |= last >= CAP_CHECKPOINT_RESTORE ? BIT(CAP_CHECKPOINT_RESTORE) : BIT(CAP_SYS_ADMIN);
	return m;
}

int sp_privs__drop(uint64_t keep, char *err, size_t err_len)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2] = { 0 };
	int last = sp_cap_last();
	uint64_t eff, perm, have_setpcap;
	bool bset_skipped = false;

	if (err_len)
		err[0] = '\0';
	if (sp_caps__current(&eff, &perm))
		goto fail;
	have_setpcap = eff & BIT(CAP_SETPCAP);
	/* Bounding set first: it needs CAP_SETPCAP, which goes next. */
	for (int c = 0; c <= last; c++) {
		if (keep & BIT(c))
			continue;
		if (prctl(PR_CAPBSET_READ, c, 0, 0, 0) != 1)
			continue;
		if (!have_setpcap) {
			bset_skipped = true;
			break;
		}
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0))
			goto fail;
	}
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) && errno != EINVAL)
		goto fail;
	perm &= keep;
	d[0].effective = d[0].permitted = (uint32_t)perm;
	d[1].effective = d[1].permitted = (uint32_t)(perm >> 32);
	d[0].inheritable = d[1].inheritable = 0;
	if (syscall(SYS_capset, &h, d))
		goto fail;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		goto fail;
	if (bset_skipped)
		snprintf(err, err_len, "no CAP_SETPCAP: capability bounding set left as is");
	return 0;
fail:
	{
		int e = errno;

		snprintf(err, err_len, "dropping capabilities failed: %s", strerror(e));
		return -e;
	}
}

void sp_privs__names(uint64_t mask, char *out, size_t len)
{
	size_t n = 0;

	if (!len)
		return;
	out[0] = '\0';
	for (int c = 0; c < 64; c++) {
		int w;

		if (!(mask & BIT(c)))
			continue;
		if (c < (int)(sizeof(cap_names) / sizeof(cap_names[0])))
			w = snprintf(out + n, len - n, "%s%s", n ? "," : "", cap_names[c]);
		else
			w = snprintf(out + n, len - n, "%scap_%d", n ? "," : "", c);
		if (w < 0 || (size_t)w >= len - n)
			break;
		n += w;
	}
	if (!n)
		snprintf(out, len, "none");
}
