// SPDX-License-Identifier: GPL-2.0
/* Table-driven option parsing and help for the nfslice tools: see params.h.
 * Man pages and bash completion from the same tables: gendoc.c. */
#include <errno.h>
#include <getopt.h>
#include <sys/socket.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "util/cli.h"
#include "util/params.h"
#include "util/value.h"
#include "util/version.h"

/* "nfslice attach" for a subcommand, else the program's own name. */
static const char *label(const struct nfsl_cmd *cmd)
{
	static char buf[64];

	if (cmd->prog)
		return cmd->prog;
	snprintf(buf, sizeof(buf), "nfslice %s", cmd->name);
	return buf;
}

static size_t nr_opts(const struct nfsl_cmd *cmd)
{
	size_t n = 0;

	while (cmd->opts && cmd->opts[n].name)
		n++;
	return n;
}

static int set_opt(const struct nfsl_cmd *cmd, const struct nfsl_opt *o,
		   void *opts, const char *arg)
{
	char why[256];

	if (nfsl_opt_value(o, (char *)opts + o->off, arg, why, sizeof(why))) {
		nfsl_msg("", "%s: --%s '%s' is not valid: %s", label(cmd), o->name, arg, why);
		return -EINVAL;
	}
	if (o->given)
		*(bool *)((char *)opts + o->given - 1) = true;
	return 0;
}

int nfsl_cmd_parse(const struct nfsl_cmd *cmd, int argc, char **argv,
		   void *opts, int *first)
{
	struct option lopts[NFSL_MAX_OPTS + 5] = {};
	char sopts[3 * NFSL_MAX_OPTS + 4] = ":h";
	bool given[NFSL_MAX_OPTS] = {};
	size_t n = nr_opts(cmd), ns = 2;
	unsigned int npos;
	int c, idx;

	if (n > NFSL_MAX_OPTS) {
		nfsl_msg("", "%s: option table has %zu entries, more than %d",
			 label(cmd), n, NFSL_MAX_OPTS);
		return -EINVAL;
	}
	memcpy(opts, cmd->defaults, cmd->opts_size);
	for (size_t i = 0; i < n; i++) {
		lopts[i].name = cmd->opts[i].name;
		lopts[i].has_arg = cmd->opts[i].type == NFSL_OPT_FLAG ? no_argument
								       : required_argument;
		lopts[i].val = 256 + (int)i;
		if (cmd->opts[i].short_name) {
			sopts[ns++] = cmd->opts[i].short_name;
			if (cmd->opts[i].type != NFSL_OPT_FLAG)
				sopts[ns++] = ':';
		}
	}
	if (cmd->prog)
		sopts[ns++] = 'V';
	lopts[n].name = "help";
	lopts[n].val = 'h';
	if (cmd->prog) {
		lopts[n + 1] = (struct option){ "version", no_argument, NULL, 'V' };
		/* hidden: what make install generates */
		lopts[n + 2] = (struct option){ "man", no_argument, NULL, 'M' };
		lopts[n + 3] = (struct option){ "bash-completion", no_argument, NULL, 'B' };
	}

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, sopts, lopts, &idx)) != -1) {
		for (size_t i = 0; c > 0 && c < 256 && i < n; i++)
			if (cmd->opts[i].short_name == c)
				c = 256 + (int)i;
		if (c == 'h') {
			nfsl_cmd_help(cmd, stdout);
			return 1;
		}
		if (c == 'V') {
			nfsl_print_version(cmd->prog, stdout);
			return 1;
		}
		if (c == 'M' || c == 'B') {
			const struct nfsl_prog prog = {
				.name = cmd->prog, .summary = cmd->summary,
				.description = cmd->description, .env = cmd->env,
				.exit_status = cmd->exit_status,
				.see_also = cmd->see_also, .cmds = &cmd, .ncmds = 1,
			};

			if (c == 'M')
				nfsl_man(&prog, stdout);
			else
				nfsl_bash_completion(&prog, stdout);
			return 1;
		}
		if (c >= 256 && c < 256 + (int)n) {
			if (set_opt(cmd, &cmd->opts[c - 256], opts, optarg))
				return -EINVAL;
			given[c - 256] = true;
			continue;
		}
		/* A short option's name is optopt, not the whole word
		 * ("-xv" holds -x and -v). */
		if (c == ':' && optopt && optopt < 256)
			nfsl_msg("", "%s: option -%c needs a value", label(cmd), optopt);
		else if (c == ':')
			nfsl_msg("", "%s: option %s needs a value", label(cmd),
				 argv[optind - 1]);
		else if (optopt && optopt < 256)
			nfsl_msg("", "%s: unknown option '-%c'", label(cmd), optopt);
		else
			nfsl_msg("", "%s: unknown option '%s'", label(cmd),
				 argv[optind - 1]);
		nfsl_msg("", "See '%s --help'.", label(cmd));
		return -EINVAL;
	}
	for (size_t i = 0; i < n; i++) {
		const struct nfsl_opt *o = &cmd->opts[i];

		if (o->required && !given[i]) {
			nfsl_msg("", "%s: --%s%s%s is required", label(cmd), o->name,
				 o->metavar && o->type != NFSL_OPT_FLAG ? " " : "",
				 o->metavar && o->type != NFSL_OPT_FLAG ? o->metavar : "");
			nfsl_msg("", "See '%s --help'.", label(cmd));
			return -EINVAL;
		}
	}
	/* getopt_long permuted the positional arguments to the end. */
	*first = optind;
	npos = argc - optind;
	if (npos < cmd->min_args || npos > cmd->max_args) {
		if (npos < cmd->min_args)
			nfsl_msg("", "%s: missing %s", label(cmd), cmd->args);
		else
			nfsl_msg("", "%s: unexpected argument '%s'", label(cmd),
				 argv[optind + cmd->max_args]);
		nfsl_msg("", "Usage: %s [OPTIONS]%s%s", label(cmd),
			 cmd->args ? " " : "", cmd->args ? cmd->args : "");
		return -EINVAL;
	}
	if (cmd->check && cmd->check(opts)) {
		nfsl_msg("", "See '%s --help'.", label(cmd));
		return -EINVAL;
	}
	return 0;
}

void nfsl_cmd_help(const struct nfsl_cmd *cmd, FILE *f)
{
	size_t n = nr_opts(cmd);

	fprintf(f, "Usage: %s [OPTIONS]%s%s\n\n%s\n\n%s\n\nOptions:\n",
		label(cmd), cmd->args ? " " : "", cmd->args ? cmd->args : "",
		cmd->summary, cmd->description);
	for (size_t i = 0; i < n; i++) {
		const struct nfsl_opt *o = &cmd->opts[i];
		char left[64], sh[8] = "";

		if (o->short_name)
			snprintf(sh, sizeof(sh), "-%c, ", o->short_name);
		snprintf(left, sizeof(left), "%s--%s%s%s", sh, o->name,
			 o->metavar && o->type != NFSL_OPT_FLAG ? " " : "",
			 o->metavar && o->type != NFSL_OPT_FLAG ? o->metavar : "");
		fprintf(f, "  %-24s %s\n", left, o->help);
	}
	fprintf(f, "  %-24s %s\n", "-h, --help", "show this help");
	if (cmd->prog)
		fprintf(f, "  %-24s %s\n", "-V, --version", "show the version");
	if (cmd->exit_status)
		fprintf(f, "\nExit status:\n%s\n", cmd->exit_status);
}

void nfsl_prog_help(const struct nfsl_prog *prog, FILE *f)
{
	int w = 8;

	fprintf(f, "Usage: %s COMMAND [OPTIONS] [ARGS]\n"
		   "       %s help [COMMAND] | version | -h, --help | -V, --version\n\n"
		   "%s\n\nCommands:\n",
		prog->name, prog->name, prog->description);
	for (size_t i = 0; i < prog->ncmds; i++)
		if ((int)strlen(prog->cmds[i]->name) > w)
			w = strlen(prog->cmds[i]->name);
	for (size_t i = 0; i < prog->ncmds; i++)
		fprintf(f, "  %-*s %s\n", w, prog->cmds[i]->name, prog->cmds[i]->summary);
	fprintf(f, "\nSee '%s help COMMAND' (or '%s COMMAND --help').\n",
		prog->name, prog->name);
	if (prog->exit_status)
		fprintf(f, "\nExit status:\n%s\n", prog->exit_status);
	if (prog->env && prog->env[0])
		fprintf(f, "\nEnvironment:\n");
	for (size_t i = 0; prog->env && prog->env[i]; i += 2)
		fprintf(f, "  %-16s %s\n", prog->env[i], prog->env[i + 1]);
}
