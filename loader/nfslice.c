// SPDX-License-Identifier: GPL-2.0
/*
 * nfslice - attach payload slicing to interfaces and inspect it.
 *
 * A slicing domain is a named set of interfaces sharing one payload store:
 * each slices on ingress (XDP, through the libxdp dispatcher) and splices on
 * egress (TCX, else tc clsact). Mechanism: NFSlicer §III (slice & splice, token),
 * PayloadPark §3-5 (split/merge, expiry threshold, counters).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nfslice.h"
#include "nfsl/domain.h"
#include "util/json_writer.h"
#include "util/version.h"

static const struct nfsl_cmd *const cmds[] = {
	&nfsl_cmd_attach, &nfsl_cmd_detach, &nfsl_cmd_repair, &nfsl_cmd_status,
	&nfsl_cmd_stats, &nfsl_cmd_list, &nfsl_cmd_gc, &nfsl_cmd_set,
	&nfsl_cmd_upgrade, &nfsl_cmd_checkpoint, &nfsl_cmd_restore,
	&nfsl_cmd_migrate, &nfsl_cmd_adopt, &nfsl_cmd_evict, &nfsl_cmd_tenants, &nfsl_cmd_events,
};
#define NR_CMDS (sizeof(cmds) / sizeof(cmds[0]))

/* Refuse a command whose capabilities are missing, naming them. A user
 * other than root also needs CAP_DAC_OVERRIDE: what nfslice opens is
 * root's (NFSL_DAC_WHY). */
static int check_caps(const struct nfsl_cmd *cmd)
{
	unsigned long long need = cmd->caps, missing;
	bool dac = geteuid() != 0;
	char names[160];

	if (dac)
		need |= NFSL_CAP(CAP_DAC_OVERRIDE);
	missing = nfsl_caps_missing(need, names, sizeof(names));
	if (!missing)
		return 0;
	dac = dac && (missing & NFSL_CAP(CAP_DAC_OVERRIDE));
	return nfsl_msg("", "nfslice %s: missing capabilit%s %s (%s%s%s); run it as root "
			"(e.g. with sudo) or with these capabilities (systemd: "
			"AmbientCapabilities=CAP_BPF CAP_NET_ADMIN CAP_SYS_ADMIN%s)",
			cmd->name, strchr(names, ',') ? "ies" : "y", names, cmd->caps_why,
			dac ? "; CAP_DAC_OVERRIDE " : "", dac ? NFSL_DAC_WHY : "",
			dac ? " CAP_DAC_OVERRIDE with User=" : "");
}

static const char *const env[] = {
	"NFSLICE_BPFFS", "put the pins under this bpffs instead of /sys/fs/bpf",
	"NFSLICE_VERBOSE", "when set, show libbpf's and libxdp's details (verifier logs)",
	"NFSLICE_EGRESS", "clsact: attach splicers as tc clsact filters even where the kernel "
	"has TCX (the fallback of kernels before 6.6; default: TCX where it exists)",
	NULL,
};

static const struct nfsl_prog prog = {
	.name = "nfslice",
	.summary = "payload slicing for shallow network functions",
	.description =
		"Payload slicing for shallow network functions: an XDP slicer parks the\n"
		"payload of large UDP/TCP packets in a BPF map store and sends the header\n"
		"on, tagged (DSCP 63 + token); a tc egress splicer restores it when the\n"
		"packet leaves (NFSlicer §III, PayloadPark §3).\n"
		"\n"
		"Commands run with capabilities, not as a user: attach, detach, repair,\n"
		"upgrade and migrate need CAP_BPF, CAP_NET_ADMIN and CAP_SYS_ADMIN;\n"
		"status, list, gc, set, checkpoint, restore and evict CAP_BPF and\n"
		"CAP_SYS_ADMIN; stats CAP_BPF. A user other than root also needs\n"
		"CAP_DAC_OVERRIDE (the lock file and the pins are root's, mode 0600),\n"
		"and through ip netns exec CAP_SYS_PTRACE and CAP_SYS_CHROOT (to find\n"
		"and enter the host's mount namespace). With --json, an error is one\n"
		"JSON object on stdout, {\"error\": MESSAGE, \"code\": EXIT STATUS},\n"
		"and nothing goes to stderr but notes and warnings (a command that\n"
		"succeeds never prints an error object).",
	.exit_status =
		"  0  success (status: the domain is whole)\n"
		"  1  failure: the message says what failed and how to fix it\n"
		"  2  bad usage (unknown command or option, bad value or name): nothing was done\n"
		"  3  status only: the domain is damaged (a slicer or splicer missing,\n"
		"     or an interface gone); nfslice repair restores missing programs",
	.env = env,
	.see_also = "nfslice-pktgen(8), nfslice-delay(8), bpftool(8), xdp-loader(8)",
	.cmds = cmds,
	.ncmds = NR_CMDS,
};

static const struct nfsl_cmd *find_cmd(const char *name)
{
	for (size_t i = 0; i < NR_CMDS; i++)
		if (!strcmp(name, cmds[i]->name))
			return cmds[i];
	return NULL;
}

static int unknown_cmd(const char *name, bool json)
{
	nfsl_err("unknown command '%s'; see 'nfslice --help'", name);
	if (!json)
		nfsl_prog_help(&prog, stderr);
	return NFSL_EXIT_USAGE;
}

/* nfslice version [--json], -V, --version: as bpftool's (one line, or
 * one JSON object). */
static int version(int argc, char **argv, bool json)
{
	struct json_writer w;

	for (int i = 2; i < argc; i++) {
		if (strcmp(argv[i], "--json")) {
			nfsl_err("version: unexpected argument '%s'; usage: nfslice version "
				 "[--json]", argv[i]);
			return NFSL_EXIT_USAGE;
		}
	}
	if (!json) {
		nfsl_print_version(prog.name, stdout);
		return 0;
	}
	jsonw_init(&w, stdout);
	jsonw_start_object(&w);
	jsonw_string_field(&w, "name", prog.name);
	jsonw_string_field(&w, "version", nfsl_version());
	jsonw_end_object(&w);
	return 0;
}

/* nfslice help [COMMAND]: the help of the program or of COMMAND
 * ('help help' and 'help version' included, as bpftool's). */
static int help(int argc, char **argv, bool json)
{
	const struct nfsl_cmd *cmd;

	if (argc < 3) {
		nfsl_prog_help(&prog, stdout);
		return 0;
	}
	if (argc > 3) {
		nfsl_err("help: unexpected argument '%s'; usage: nfslice help [COMMAND]",
			 argv[3]);
		return NFSL_EXIT_USAGE;
	}
	if (!strcmp(argv[2], "help")) {
		printf("Usage: nfslice help [COMMAND]\n\n"
		       "Show the usage of nfslice (its commands, exit status and\n"
		       "environment), or of COMMAND: the same as 'nfslice COMMAND --help'.\n");
		return 0;
	}
	if (!strcmp(argv[2], "version")) {
		printf("Usage: nfslice version [--json]\n\n"
		       "Show nfslice's version (also: nfslice -V, nfslice --version);\n"
		       "with --json as one object {\"name\", \"version\"}.\n");
		return 0;
	}
	cmd = find_cmd(argv[2]);
	if (!cmd)
		return unknown_cmd(argv[2], json);
	nfsl_cmd_help(cmd, stdout);
	return 0;
}

static int run(int argc, char **argv, bool json)
{
	const struct nfsl_cmd *cmd;
	int first, err;
	void *opts;

	if (argc < 2) {
		nfsl_prog_help(&prog, stderr);
		return NFSL_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		nfsl_prog_help(&prog, stdout);
		return 0;
	}
	if (!strcmp(argv[1], "help"))
		return help(argc, argv, json);
	if (!strcmp(argv[1], "version") || !strcmp(argv[1], "-V") ||
	    !strcmp(argv[1], "--version"))
		return version(argc, argv, json);
	/* Hidden: what make install generates. */
	if (!strcmp(argv[1], "--man")) {
		nfsl_man(&prog, stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--bash-completion")) {
		nfsl_bash_completion(&prog, stdout);
		return 0;
	}
	cmd = find_cmd(argv[1]);
	if (!cmd)
		return unknown_cmd(argv[1], json);
	opts = calloc(1, cmd->opts_size);
	if (!opts)
		return nfsl_err("out of memory"), NFSL_EXIT_FAIL;
	err = nfsl_cmd_parse(cmd, argc - 1, argv + 1, opts, &first);
	if (err) {
		free(opts);
		return err > 0 ? 0 : NFSL_EXIT_USAGE;
	}
	if (check_caps(cmd)) {
		free(opts);
		return NFSL_EXIT_FAIL;
	}
	/* Pins, ours and libxdp's, must outlive this command: see
	 * nfsl_bpffs_enter. Commands report a missing bpffs themselves. */
	nfsl_bpffs_state = nfsl_bpffs_enter();
	if (nfsl_bpffs_state == -EPERM) {
		free(opts);
		return nfsl_err("cannot enter the host's mount namespace to reach its "
				"bpffs: setns needs CAP_SYS_ADMIN and CAP_SYS_CHROOT; "
				"or set NFSLICE_BPFFS"), NFSL_EXIT_FAIL;
	}
	if (nfsl_bpffs_state && nfsl_bpffs_state != -ENOENT &&
	    nfsl_bpffs_state != -EACCES) {
		free(opts);
		return nfsl_err("cannot reach the host's bpffs: %s",
				strerror(-nfsl_bpffs_state)), NFSL_EXIT_FAIL;
	}
	nfsl_log_init(NFSL_LOG_WARN);
	err = cmd->run(opts, argc - 1 - first, argv + 1 + first);
	free(opts);
	return err < 0 ? NFSL_EXIT_FAIL : err;
}

int main(int argc, char **argv)
{
	/* Errors as one JSON object when the command line asks for JSON. */
	bool json = nfsl_argv_has(argc, argv, "--json");

	nfsl_msg_json(json);
	return nfsl_msg_json_flush(run(argc, argv, json));
}
