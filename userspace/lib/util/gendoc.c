// SPDX-License-Identifier: GPL-2.0
/*
 * Man pages and bash completion made from the declared option tables
 * (params.h), so that `make install` ships no second copy of an option's
 * help. Printed by the tools' hidden --man and --bash-completion options.
 */
#include <ctype.h>
#include <stdbool.h>
#include <string.h>

#include "util/params.h"
#include "util/value.h"
#include "util/version.h"

/* Is @cmd the program itself (nfslice-pktgen), not a subcommand? */
static bool is_prog_cmd(const struct nfsl_prog *prog)
{
	return prog->ncmds == 1 && prog->cmds[0]->prog;
}

/* ---- man page (troff) ------------------------------------------------- */

/* Text as troff reads it: backslashes and dashes escaped, a line that
 * starts with '.' or '\'' guarded, a blank line a new paragraph. */
static void roff_inline(FILE *f, const char *s)
{
	bool bol = true;

	for (; *s; s++) {
		if (bol && *s == '\n') {
			fputs(".PP\n", f);
			continue;
		}
		if (bol && (*s == '.' || *s == '\''))
			fputs("\\&", f);
		bol = *s == '\n';
		if (*s == '\\')
			fputs("\\e", f);
		else if (*s == '-')
			fputs("\\-", f);
		else
			fputc(*s, f);
	}
}

/* The same, ending its line. */
static void roff(FILE *f, const char *s)
{
	roff_inline(f, s);
	if (*s && s[strlen(s) - 1] != '\n')
		fputc('\n', f);
}

static void man_upper(FILE *f, const char *s)
{
	for (; *s; s++)
		fputc(toupper((unsigned char)*s), f);
}

static void man_synopsis(FILE *f, const char *prog, const struct nfsl_cmd *cmd)
{
	fputs(".B ", f);
	roff(f, prog);
	if (!cmd->prog) {
		fputs(".B ", f);
		roff(f, cmd->name);
	}
	fputs("[\\fIOPTIONS\\fR]", f);
	if (cmd->args) {
		fputs(" \\fI", f);
		roff_inline(f, cmd->args);
		fputs("\\fR", f);
	}
	fputc('\n', f);
}

static void man_options(FILE *f, const struct nfsl_cmd *cmd)
{
	for (const struct nfsl_opt *o = cmd->opts; o && o->name; o++) {
		fputs(".TP\n", f);
		if (o->short_name)
			fprintf(f, "\\fB\\-%c\\fR, ", o->short_name);
		fputs("\\fB\\-\\-", f);
		roff_inline(f, o->name);
		fputs("\\fR", f);
		if (o->metavar && o->type != NFSL_OPT_FLAG) {
			fputs(" \\fI", f);
			roff_inline(f, o->metavar);
			fputs("\\fR", f);
		}
		fputc('\n', f);
		roff(f, o->help);
		if (o->type == NFSL_OPT_DURATION || o->type == NFSL_OPT_DURATION64) {
			fprintf(f, ".br\nA duration: N (%s), or N with a unit ns, us, ms, s, m or h, "
				   "e.g. 2s.\n", nfsl_unit_name(o->unit));
		}
		if (o->required)
			fputs(".br\nRequired.\n", f);
	}
	fputs(".TP\n\\fB\\-h\\fR, \\fB\\-\\-help\\fR\nshow the usage and the options\n", f);
	if (cmd->prog)
		fputs(".TP\n\\fB\\-V\\fR, \\fB\\-\\-version\\fR\nshow the version\n", f);
}

/* "  0  done\n  1  ...\n     more": one .TP entry per code, in bold; a
 * line that starts with no code goes on with the entry before it. */
static void man_exit_status(FILE *f, const char *text)
{
	const char *s = text;

	fputs(".SH EXIT STATUS\n", f);
	while (*s) {
		const char *eol = strchr(s, '\n');
		size_t n = eol ? (size_t)(eol - s) : strlen(s);
		char line[512], *p = line, *code;

		snprintf(line, sizeof(line), "%.*s", (int)(n < sizeof(line) ? n : sizeof(line) - 1), s);
		while (*p == ' ')
			p++;
		if (isdigit((unsigned char)*p)) { /* "3  text": a new entry */
			code = p;
			while (*p && *p != ' ')
				p++;
			if (*p)
				*p++ = '\0';
			while (*p == ' ')
				p++;
			fprintf(f, ".TP\n.B %s\n", code);
		} /* else the entry's text goes on */
		roff(f, p);
		s += n + (eol ? 1 : 0);
	}
}

void nfsl_man(const struct nfsl_prog *prog, FILE *f)
{
	bool single = is_prog_cmd(prog);

	fputs(".\\\" Generated from the option tables by '", f);
	fputs(prog->name, f);
	fputs(" --man': do not edit.\n.TH \"", f);
	man_upper(f, prog->name);
	/* Left-aligned, no hyphenation: option names and paths stay whole. */
	fprintf(f, "\" 8 \"\" \"nfslice %s\" \"System Administration\"\n.ad l\n.nh\n.SH NAME\n",
		nfsl_version());
	roff(f, prog->name);
	fputs("\\- ", f);
	roff(f, prog->summary);
	fputs(".SH SYNOPSIS\n", f);
	if (single) {
		man_synopsis(f, prog->name, prog->cmds[0]);
	} else {
		fputs(".B ", f);
		roff(f, prog->name);
		fputs("\\fICOMMAND\\fR [\\fIOPTIONS\\fR] [\\fIARGS\\fR]\n.br\n.B ", f);
		roff(f, prog->name);
		fputs(".B help\n[\\fICOMMAND\\fR]\n.br\n.B ", f);
		roff(f, prog->name);
		fputs(".B version\n[\\fB\\-\\-json\\fR]\n.br\n.B ", f);
		roff(f, prog->name);
		fputs("\\fB\\-h\\fR, \\fB\\-\\-help\\fR | \\fB\\-V\\fR, "
		      "\\fB\\-\\-version\\fR\n", f);
	}
	fputs(".SH DESCRIPTION\n", f);
	roff(f, prog->description);
	if (single) {
		fputs(".SH OPTIONS\n", f);
		man_options(f, prog->cmds[0]);
	} else {
		fputs(".SH COMMANDS\n", f);
		for (size_t i = 0; i < prog->ncmds; i++) {
			const struct nfsl_cmd *cmd = prog->cmds[i];

			fprintf(f, ".SS %s\n", cmd->name);
			man_synopsis(f, prog->name, cmd);
			fputs(".PP\n", f);
			roff(f, cmd->summary);
			fputs(".PP\n", f);
			roff(f, cmd->description);
			fputs(".PP\nOptions:\n", f);
			man_options(f, cmd);
		}
	}
	if (prog->exit_status)
		man_exit_status(f, prog->exit_status);
	if (prog->env && prog->env[0]) {
		fputs(".SH ENVIRONMENT\n", f);
		for (size_t i = 0; prog->env[i]; i += 2) {
			fprintf(f, ".TP\n.B %s\n", prog->env[i]);
			roff(f, prog->env[i + 1]);
		}
	}
	if (prog->see_also) {
		fputs(".SH SEE ALSO\n", f);
		roff(f, prog->see_also);
	}
}

/* ---- bash completion -------------------------------------------------- */

/* The words bash offers for a value of @metavar, or for positional
 * arguments @args: interface names, file names; NULL: nothing to offer. */
static const char *comp_words(const char *what)
{
	if (what && !strncmp(what, "IFACE", 5))
		return "-W \"$(ls /sys/class/net 2>/dev/null)\"";
	if (what && !strcmp(what, "FILE"))
		return "-f";
	return NULL;
}

/* The words bash offers for option @o's value: interface names for an
 * NFSL_OPT_IFNAME, else by its metavar. */
static const char *comp_words_of(const struct nfsl_opt *o)
{
	if (o->type == NFSL_OPT_IFNAME)
		return comp_words("IFACE");
	return comp_words(o->metavar);
}

/* The completion of one command's words: option values, options, arguments. */
static void comp_cmd(FILE *f, const struct nfsl_cmd *cmd, const char *in)
{
	const struct nfsl_opt *o;
	bool any = false;

	fprintf(f, "%scase $prev in\n", in);
	for (o = cmd->opts; o && o->name; o++) {
		if (o->type == NFSL_OPT_ENUM) {
			fprintf(f, "%s--%s)\n%s\tCOMPREPLY=($(compgen -W \"", in, o->name, in);
			for (int i = 0; o->choices[i]; i++)
				fprintf(f, "%s%s", i ? " " : "", o->choices[i]);
			fprintf(f, "\" -- \"$cur\"))\n%s\treturn ;;\n", in);
		} else if (o->type != NFSL_OPT_FLAG && comp_words_of(o)) {
			fprintf(f, "%s--%s", in, o->name);
			if (o->short_name)
				fprintf(f, "|-%c", o->short_name);
			fprintf(f, ")\n%s\tCOMPREPLY=($(compgen %s -- \"$cur\"))\n%s\treturn ;;\n",
				in, comp_words_of(o), in);
		}
	}
	/* Values nothing can be offered for: numbers, names, addresses. */
	for (o = cmd->opts; o && o->name; o++) {
		if (o->type == NFSL_OPT_FLAG || o->type == NFSL_OPT_ENUM ||
		    comp_words_of(o))
			continue;
		fprintf(f, "%s--%s", any ? "|" : in, o->name);
		if (o->short_name)
			fprintf(f, "|-%c", o->short_name);
		any = true;
	}
	if (any)
		fputs(")\n", f);
	if (any)
		fprintf(f, "%s\treturn ;;\n", in);
	fprintf(f, "%sesac\n", in);
	/* Options when the word starts with '-' or the command takes no
	 * arguments; else its arguments. */
	if (cmd->max_args && comp_words(cmd->args))
		fprintf(f, "%sif [[ $cur == -* ]]; then\n\t", in);
	fprintf(f, "%sCOMPREPLY=($(compgen -W \"", in);
	for (o = cmd->opts; o && o->name; o++) {
		if (o->short_name)
			fprintf(f, "-%c ", o->short_name);
		fprintf(f, "--%s ", o->name);
	}
	fputs(cmd->prog ? "--help --version\" -- \"$cur\"))\n" : "--help\" -- \"$cur\"))\n", f);
	if (cmd->max_args && comp_words(cmd->args))
		fprintf(f, "%selse\n%s\tCOMPREPLY=($(compgen %s -- \"$cur\"))\n%sfi\n", in, in,
			comp_words(cmd->args), in);
}

void nfsl_bash_completion(const struct nfsl_prog *prog, FILE *f)
{
	char fn[64];
	size_t i;

	/* A bash function name: the program's, '-' as '_'. */
	snprintf(fn, sizeof(fn), "_%s", prog->name);
	for (i = 0; fn[i]; i++)
		if (!isalnum((unsigned char)fn[i]))
			fn[i] = '_';
	fprintf(f, "# bash completion for %s\n"
		   "# Generated from the option tables by '%s --bash-completion': do not edit.\n"
		   "%s()\n{\n"
		   "\tlocal cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}\n"
		   "\n\tCOMPREPLY=()\n",
		prog->name, prog->name, fn);
	if (is_prog_cmd(prog)) {
		comp_cmd(f, prog->cmds[0], "\t");
	} else {
		fputs("\tif ((COMP_CWORD == 1)); then\n\t\tCOMPREPLY=($(compgen -W \"", f);
		for (i = 0; i < prog->ncmds; i++)
			fprintf(f, "%s ", prog->cmds[i]->name);
		fputs("help version --help --version\" -- \"$cur\"))\n\t\treturn\n\tfi\n"
		      "\tcase ${COMP_WORDS[1]} in\n\thelp)\n"
		      "\t\t((COMP_CWORD == 2)) && COMPREPLY=($(compgen -W \"", f);
		for (i = 0; i < prog->ncmds; i++)
			fprintf(f, "%s ", prog->cmds[i]->name);
		fputs("help version", f);
		fputs("\" -- \"$cur\"))\n\t\t;;\n", f);
		for (i = 0; i < prog->ncmds; i++) {
			fprintf(f, "\t%s)\n", prog->cmds[i]->name);
			comp_cmd(f, prog->cmds[i], "\t\t");
			fputs("\t\t;;\n", f);
		}
		fputs("\tesac\n", f);
	}
	fprintf(f, "}\ncomplete -F %s %s\n", fn, prog->name);
}
