/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Declared option tables for the nfslice subcommands (in the manner of
 * xdp-tools' params): each command lists its options once, and parsing,
 * range checks, error messages and --help all come from that table.
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
};

/* Most options one table may declare. */
#define NFSL_MAX_OPTS 32

/*
 * nfsl_cmd_parse - parse @argv (argv[0] is the command name) into @opts.
 * Positional arguments are moved to the end of argv; *@first is their index.
 * Returns 0, 1 when --help was printed, -EINVAL after printing an error that
 * names the option and the fix.
 */
int nfsl_cmd_parse(const struct nfsl_cmd *cmd, int argc, char **argv,
		   void *opts, int *first);

void nfsl_cmd_help(const struct nfsl_cmd *cmd, FILE *f);

#endif /* NFSL_PARAMS_H */
