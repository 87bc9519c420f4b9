/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Declared option tables for the nfslice tools and subcommands (in the
 * manner of xdp-tools' params): each command lists its options once, and
 * parsing, range checks, error messages, --help, the man pages and the bash
 * completion all come from that table.
 */
#ifndef NFSL_PARAMS_H
#define NFSL_PARAMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <linux/types.h>

enum nfsl_opt_type {
	NFSL_OPT_STR,  /* const char *, checked by .check if set */
	NFSL_OPT_U32,  /* __u32 within [min, max], decimal digits */
	NFSL_OPT_FLAG, /* bool, no argument */
	NFSL_OPT_ENUM, /* int: index into choices[] */
	NFSL_OPT_U64,  /* __u64 within [min, max], decimal digits */
	/* __u32 / __u64: a count of .unit ns (NFSL_MS, ...) within [min, max]
	 * of that unit; "N" in the unit itself, or "N" with ns, us, ms, s, m
	 * or h (nfsl_parse_duration) */
	NFSL_OPT_DURATION,
	NFSL_OPT_DURATION64,
	NFSL_OPT_IPADDR, /* struct nfsl_ip; .af: AF_UNSPEC (0), AF_INET or AF_INET6 */
	NFSL_OPT_PREFIX, /* struct nfsl_prefix, ADDR/LEN; .af as for IPADDR */
	NFSL_OPT_MAC,    /* __u8[6] */
	NFSL_OPT_IFNAME, /* const char *, an interface name (nfsl_parse_ifname) */
	NFSL_OPT_CUSTOM, /* the field as .parse writes it */
};

/* Units of NFSL_OPT_DURATION fields, in ns. */
#define NFSL_NS 1ull
#define NFSL_US 1000ull
#define NFSL_MS 1000000ull
#define NFSL_S 1000000000ull

/*
 * .given of an option: where the parser records that it was given, a bool
 * @field of the options struct @type (0: not recorded). What tells "not
 * given" from any value, instead of a sentinel such as UINT32_MAX.
 */
#define NFSL_GIVEN(type, field) (offsetof(type, field) + 1)

struct nfsl_opt {
	const char *name;       /* long option (KEY in a KEY=VALUE table), without "--" */
	enum nfsl_opt_type type;
	size_t off;             /* offset of the field in the options struct */
	__u64 min, max;         /* number and duration range, inclusive */
	const char *const *choices; /* NFSL_OPT_ENUM, NULL-terminated */
	const char *metavar;    /* shown in help, e.g. BYTES */
	const char *help;       /* one line; states units and default */
	/* NFSL_OPT_STR: NULL when @arg is valid, else the rule it breaks,
	 * shown as "--NAME 'ARG' is not valid: RULE" (a usage error). */
	const char *(*check)(const char *arg);
	__u64 unit;             /* NFSL_OPT_DURATION*: ns per unit of the field */
	__u64 bare;             /* ... and of a number without a unit; 0: .unit */
	int af;                 /* NFSL_OPT_IPADDR, _PREFIX: address family or 0 */
	char short_name;        /* e.g. 'n' for -n as well as --name; 0: none */
	bool required;          /* a usage error when not given */
	size_t given;           /* NFSL_GIVEN(), or 0 */
	/* KEY=VALUE tables (nfsl_kv_parse): the message after "KEY=VALUE"
	 * when the value is refused, e.g. " is not a port: give 1..65535";
	 * NULL: ": " and the type's own rule. */
	const char *bad;
	/* NFSL_OPT_CUSTOM: parse @arg into @field; 0 or a negative errno. */
	int (*parse)(const char *arg, void *field);
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

/* The three fields of struct nfsl_cmd that go together: the declared
 * option table @table, the options' struct @type and its defaults @dflt
 * (a const @type). */
#define NFSL_CMD_OPTS(table, type, dflt) \
	.opts = (table), .opts_size = sizeof(type), .defaults = &(dflt)

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
 * Values as util/value.h parses them: numbers in decimal digits only (no
 * sign; "--slots 010" and "0x10" are refused, never read as 8 or 16).
 * Short options (.short_name) as -n VALUE, -nVALUE or clustered flags.
 * Returns 0, 1 when --help
 * was printed, -EINVAL after printing an error that names the option and
 * the fix (a failed .check of an option or of the command included, a
 * .required option not given) (through nfsl_msg: as JSON under
 * nfsl_msg_json). A program's own command (.prog set) also takes
 * --version, and the hidden options --man and --bash-completion, which
 * print its man page or completion script (nfsl_man,
 * nfsl_bash_completion); they return 1 too.
 */
int nfsl_cmd_parse(const struct nfsl_cmd *cmd, int argc, char **argv,
		   void *opts, int *first);

void nfsl_cmd_help(const struct nfsl_cmd *cmd, FILE *f);

/*
 * nfsl_opt_value - parse @arg as option @o's type into @field (the
 * option's field). Returns 0, or a negative errno (util/value.h) with the
 * fix written into @why ("give a whole number of N from 1 to 9, in
 * decimal digits (no leading 0 or 0x)"). The one value parser behind the
 * option tables and the KEY=VALUE tables.
 */
int nfsl_opt_value(const struct nfsl_opt *o, void *field, const char *arg, char *why,
		   size_t whylen);

/*
 * nfsl_kv_parse - KEY=VALUE items @kv (NULL-terminated) against the table
 * @keys (struct nfsl_opt, keys as .name, values typed as for options; a
 * FLAG key takes no value and no '='), into @out. A key given twice
 * takes the last value, as an option does. Returns 0, or with a message
 * in @err: -ENOMSG "'X' is not KEY=VALUE: give one of KEYS", -ENOENT
 * "unknown option 'K': the options are KEYS" (for a caller that words
 * these two its own way), -EINVAL "K=V" and .bad (or ": " and the type's
 * rule), or "K= is missing: give K=METAVAR" for a .required key.
 */
int nfsl_kv_parse(const struct nfsl_opt *keys, const char *const *kv, void *out,
		  char *err, size_t errlen);

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
