// SPDX-License-Identifier: GPL-2.0
/*
 * nfslice - attach payload slicing to interfaces and inspect it.
 *
 * A slicing domain is a named set of interfaces sharing one payload store:
 * each slices on ingress (XDP, through the libxdp dispatcher) and splices on
 * egress (tc clsact). Mechanism: NFSlicer §III (slice & splice, token),
 * PayloadPark §3-5 (split/merge, expiry threshold, counters).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nfslice.h"
#include "domain.h"

static const struct nfsl_cmd *const cmds[] = {
	&nfsl_cmd_attach, &nfsl_cmd_detach, &nfsl_cmd_status, &nfsl_cmd_stats,
};
#define NR_CMDS (sizeof(cmds) / sizeof(cmds[0]))

int nfsl_require_root(void)
{
	if (geteuid() == 0)
		return 0;
	return nfsl_err("must run as root: loading BPF programs and changing "
			"interfaces needs CAP_BPF, CAP_NET_ADMIN and CAP_SYS_ADMIN; "
			"run it with sudo");
}

int nfsl_err_domain(int err, const char *name)
{
	if (err == -EINVAL)
		return nfsl_err("invalid domain name '%s': use 1-63 letters, digits, '_', '-' or '.'",
				name);
	if (err == -ENOMEDIUM)
		return nfsl_err("no bpffs at %s; mount it in the host's mount namespace "
				"with: mount -t bpf bpf %s (not inside 'ip netns exec', "
				"whose mounts vanish when it exits)", nfsl_bpffs(), nfsl_bpffs());
	if (err == -ENOENT)
		return nfsl_err("no domain '%s' is attached in this network namespace "
				"(attach one with: nfslice attach --name %s IFACE...)",
				name, name);
	return nfsl_err("cannot open domain '%s': %s", name, strerror(-err));
}

static const char *const env[] = {
	"NFSLICE_BPFFS", "put the pins under this bpffs instead of /sys/fs/bpf",
	"NFSLICE_VERBOSE", "when set, show libbpf's and libxdp's details (verifier logs)",
	NULL,
};

static const struct nfsl_prog prog = {
	.name = "nfslice",
	.summary = "payload slicing for shallow network functions",
	.description =
		"Payload slicing for shallow network functions: an XDP slicer parks the\n"
		"payload of large UDP/TCP packets in a BPF map store and sends the header\n"
		"on, tagged (DSCP 63 + token); a tc egress splicer restores it when the\n"
		"packet leaves (NFSlicer §III, PayloadPark §3).",
	.env = env,
	.see_also = "nfslice-pktgen(8), nfslice-delay(8), bpftool(8), xdp-loader(8)",
	.cmds = cmds,
	.ncmds = NR_CMDS,
};

int main(int argc, char **argv)
{
	const struct nfsl_cmd *cmd = NULL;
	char optbuf[256];
	int first, err, bpffs_err;

	if (argc < 2) {
		nfsl_prog_help(&prog, stderr);
		return 2;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") ||
	    !strcmp(argv[1], "help")) {
		nfsl_prog_help(&prog, stdout);
		return 0;
	}
	/* Hidden: what make install generates. */
	if (!strcmp(argv[1], "--man")) {
		nfsl_man(&prog, stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--bash-completion")) {
		nfsl_bash_completion(&prog, stdout);
		return 0;
	}
	for (size_t i = 0; i < NR_CMDS; i++)
		if (!strcmp(argv[1], cmds[i]->name))
			cmd = cmds[i];
	if (!cmd) {
		nfsl_err("unknown command '%s'", argv[1]);
		nfsl_prog_help(&prog, stderr);
		return 2;
	}
	/* Pins, ours and libxdp's, must outlive this command: see
	 * nfsl_bpffs_enter. Commands report a missing bpffs themselves. */
	bpffs_err = nfsl_bpffs_enter();
	if (bpffs_err && bpffs_err != -ENOENT && bpffs_err != -ENOMEDIUM)
		nfsl_err("cannot reach the host's bpffs: %s", strerror(-bpffs_err));
	nfsl_log_init(NFSL_LOG_WARN);

	if (cmd->opts_size > sizeof(optbuf))
		return 1;
	err = nfsl_cmd_parse(cmd, argc - 1, argv + 1, optbuf, &first);
	if (err)
		return err > 0 ? 0 : 2;
	return cmd->run(optbuf, argc - 1 - first, argv + 1 + first) ? 1 : 0;
}
