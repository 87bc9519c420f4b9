// SPDX-License-Identifier: GPL-2.0
/* Capability checks through capget(2): see caps.h. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>

#include "util/caps.h"

static const char *const names[] = {
	[CAP_CHOWN] = "CAP_CHOWN",
	[CAP_DAC_OVERRIDE] = "CAP_DAC_OVERRIDE",
	[CAP_NET_ADMIN] = "CAP_NET_ADMIN",
	[CAP_NET_RAW] = "CAP_NET_RAW",
	[CAP_SYS_CHROOT] = "CAP_SYS_CHROOT",
	[CAP_SYS_PTRACE] = "CAP_SYS_PTRACE",
	[CAP_SYS_ADMIN] = "CAP_SYS_ADMIN",
	[CAP_SYS_RESOURCE] = "CAP_SYS_RESOURCE",
	[CAP_PERFMON] = "CAP_PERFMON",
	[CAP_BPF] = "CAP_BPF",
};

const char *nfsl_cap_name(int cap)
{
	static char buf[16];

	if (cap >= 0 && cap < (int)(sizeof(names) / sizeof(names[0])) && names[cap])
		return names[cap];
	snprintf(buf, sizeof(buf), "CAP_%d", cap);
	return buf;
}

unsigned long long nfsl_caps_missing(unsigned long long need, char *out,
				     size_t len)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
	unsigned long long eff, missing;
	size_t used = 0;

	if (syscall(SYS_capget, &hdr, data)) {
		snprintf(out, len, "cannot read the capabilities (capget: %s)",
			 strerror(errno));
		return ~0ULL;
	}
	eff = (unsigned long long)data[1].effective << 32 | data[0].effective;
	/* As the kernel's bpf_capable() and perfmon_capable(): CAP_SYS_ADMIN
	 * stands for CAP_BPF and CAP_PERFMON. */
	if (eff & NFSL_CAP(CAP_SYS_ADMIN))
		eff |= NFSL_CAP(CAP_BPF) | NFSL_CAP(CAP_PERFMON);
	missing = need & ~eff;
	if (len)
		out[0] = '\0';
	for (int cap = 0; cap < 64; cap++) {
		if (!(missing & NFSL_CAP(cap)))
			continue;
		if (used < len)
			used += snprintf(out + used, len - used, "%s%s",
					 used ? ", " : "", nfsl_cap_name(cap));
	}
	return missing;
}
