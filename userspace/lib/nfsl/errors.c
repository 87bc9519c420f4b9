// SPDX-License-Identifier: GPL-2.0
/* The engines' messages: see errors.h. */
#include <errno.h>
#include <string.h>

#include "nfsl/errors.h"
#include "nfsl/domain.h"

int nfsl_bpffs_state;

int nfsl_err_domain(int err, const char *name)
{
	if (err == -EINVAL)
		return nfsl_err("invalid domain name '%s': " NFSL_NAME_RULE, name);
	if (err == -ENOMEDIUM && nfsl_bpffs_state == -EACCES)
		return nfsl_err("no bpffs at %s in this mount namespace, and PID 1's "
				"(/proc/1/ns/mnt) cannot be read to find the host's: run "
				"nfslice in the host's mount namespace (nsenter "
				"--net=/run/netns/NS nfslice ..., or as a service), set "
				"NFSLICE_BPFFS to a bpffs that outlives this command, or, "
				"as a user other than root, add CAP_SYS_PTRACE (reads "
				"PID 1's) and CAP_SYS_CHROOT (enters it)",
				nfsl_bpffs());
	if (err == -ENOMEDIUM)
		return nfsl_err("no bpffs at %s; mount it in the host's mount namespace "
				"with: mount -t bpf bpf %s (not inside 'ip netns exec', "
				"whose mounts vanish when it exits)", nfsl_bpffs(), nfsl_bpffs());
	if (err == -ENOENT)
		return nfsl_err("no domain '%s' is attached in this network namespace "
				"(attach one with: nfslice attach --name %s IFACE...; "
				"nfslice list shows the domains of every namespace)",
				name, name);
	if (err == -EACCES || err == -EPERM)
		return nfsl_err("domain '%s' is attached, but its pins cannot be opened: %s "
				"(" NFSL_DAC_WHY "): run nfslice as root, or give this user "
				"CAP_DAC_OVERRIDE besides CAP_BPF, CAP_NET_ADMIN and "
				"CAP_SYS_ADMIN", name, strerror(-err));
	if (err == -EPROTO)
		return nfsl_err("domain '%s' was attached by an nfslice whose maps have another "
				"layout than this one's: use the nfslice that attached it (its "
				"status, detach), or detach it and attach again with this one",
				name);
	return nfsl_err("cannot open domain '%s': %s", name, strerror(-err));
}

/* Attach, detach, repair and gc of any domain on the host run one at a
 * time: two attaches of one NAME would otherwise both proceed and the
 * loser's teardown remove the winner's pins. Returns the lock fd or -1. */
int nfsl_lock_domains(void)
{
	int fd = nfsl_domains_lock();

	if (fd < 0)
		nfsl_err("cannot lock %s: %s", NFSL_LOCK_FILE, nfsl_lock_strerror(fd));
	return fd < 0 ? -1 : fd;
}
