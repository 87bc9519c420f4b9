/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Declared option tables for the nfslice tools and subcommands (in the
 * manner of xdp-tools' params): each command lists its options once, and
 * parsing, range checks, error messages, --help, the man pages and the bash
 * completion all come from that table.
 */
#ifndef NFSL_PARAMS_H
#define NFSL_PARAMS_H

#include <stddef.h>
#include <stdio.h>
#include <linux/types.h>

enum nfsl_opt_type {
	NFSL_OPT_STR,  /* char * */
	NFSL_OPT_U32,  /* __u32 within [min, max] */
	NFSL_OPT_FLAG, /* bool, no argument */
	NFSL_OPT_ENUM, /* int: index into choices[] */
};

struct nfsl_opt {
	const char *name;       /* long option, without "--" */
	enum nfsl_opt_type type;
	size_t off;             /* offset of the field in the options struct */
	__u32 min, max;         /* NFSL_OPT_U32 range, inclusive */
	const char *const *choices; /* NFSL_OPT_ENUM, NULL-terminated */
	const char *metavar;    /* shown in help, e.g. BYTES */
	const char *help;       /* one line; states units and default */
	/* NFSL_OPT_STR: NULL when @arg is valid, else the rule it breaks,
	 * shown as "--NAME 'ARG' is not valid: RULE" (a usage error). */
	const char *(*check)(const char *arg);
};

struct nfsl_cmd {
	const char *name;
	const char *prog;        /* program in messages and usage; NULL:
				  * "nfslice NAME" (a subcommand) */
	const char *args;        /* positional arguments in usage, e.g. "IFACE..." */
	unsigned int min_args, max_args;
	const char *summary;     /* one line for the command list */
	const char *description; /* man-page style paragraph(s) */
	const struct nfsl_opt *opts; /* terminated by { .name = NULL } */
	int (*run)(void *opts, int argc, char **argv);
	size_t opts_size;
	const void *defaults;
	/* After every option is parsed: what no single option can check
	 * (options that need each other). Prints its message through
	 * nfsl_msg and returns nonzero on bad usage. NULL: none. */
	int (*check)(const void *opts);
	/* Capabilities it needs (NFSL_CAP() bits of caps.h), with why, for
	 * the tool to check before it runs (nfsl_caps_missing). */
	unsigned long long caps;
	const char *caps_why;
	/* A program's own command (.prog set) only, for its man page: */
	const char *exit_status; /* the exit codes, one per line: "  0  done" */
	const char *const *env; /* pairs NAME, meaning; NULL-terminated */
	const char *see_also;   /* e.g. "nfslice(8)" */
};

/*
 * A program with subcommands (nfslice), as its usage, man page and bash
 * completion show it. A program that is one command (nfslice-pktgen) is
 * described by its struct nfsl_cmd with .prog set.
 */
struct nfsl_prog {
	const char *name;
	const char *summary;     /* one line */
	const char *description; /* paragraph(s) */
	const char *exit_status; /* the exit codes, one per line: "  0  done" */
	const char *const *env;  /* pairs NAME, meaning; NULL-terminated */
	const char *see_also;
	const struct nfsl_cmd *const *cmds;
	size_t ncmds;
};

/* Most options one table may declare. */
#define NFSL_MAX_OPTS 32

/*
 * nfsl_cmd_parse - parse @argv (argv[0] is the command name) into @opts.
 * Positional arguments are moved to the end of argv; *@first is their index.
 * Numbers are decimal only (no 0x, no leading 0 as octal, no sign), so that
 * "--slots 010" is ten or refused, never eight. Returns 0, 1 when --help
 * was printed, -EINVAL after printing an error that names the option and
 * the fix (a failed .check of an option or of the command included) (through nfsl_msg: as JSON under
 * nfsl_msg_json). A program's own command (.prog set) also takes
 * --version, and the hidden options --man and --bash-completion, which
 * print its man page or completion script (nfsl_man,
 * nfsl_bash_completion); they return 1 too.
 */
int nfsl_cmd_parse(const struct nfsl_cmd *cmd, int argc, char **argv,
		   void *opts, int *first);

void nfsl_cmd_help(const struct nfsl_cmd *cmd, FILE *f);

/* Usage of a program with subcommands: its description and the commands. */
void nfsl_prog_help(const struct nfsl_prog *prog, FILE *f);

/*
 * nfsl_man - print the man page (troff, section 8) of @prog, made from its
 * declared option tables: nothing in it is written twice.
 * nfsl_bash_completion - print a bash completion script for @prog: its
 * commands, their options, the choices of enumerated options, interface
 * names for IFACE values and arguments, file names for FILE values.
 */
void nfsl_man(const struct nfsl_prog *prog, FILE *f);
void nfsl_bash_completion(const struct nfsl_prog *prog, FILE *f);

#endif /* NFSL_PARAMS_H */
