// SPDX-License-Identifier: GPL-2.0
/*
 * The command-line rules every nfslice tool shares (issue 17 §4): numbers
 * in decimal only, one domain-name rule checked as an option, a
 * command's cross-option check as bad usage, and under --json a warning
 * of a command that succeeds on stderr, never as an error object.
 */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "util/cli.h"
#include "nfsl/domain.h"
#include "util/params.h"

struct t_opts {
	const char *name;
	__u32 n;
	__u32 m;
};

static int check_t(const void *o)
{
	const struct t_opts *t = o;

	return t->m && !t->n ? nfsl_msg("", "t: --m needs --n") : 0;
}

static const struct nfsl_opt t_table[] = {
	{ "name", NFSL_OPT_STR, offsetof(struct t_opts, name), .metavar = "NAME",
	  .check = nfsl_name_opt_check, .help = "a domain name" },
	{ "n", NFSL_OPT_U32, offsetof(struct t_opts, n), 1, 1000, .metavar = "N", .help = "n" },
	{ "m", NFSL_OPT_U32, offsetof(struct t_opts, m), 0, 1000, .metavar = "N", .help = "m" },
	{ NULL },
};

static const struct t_opts t_defaults = { .name = "default" };

static const struct nfsl_cmd t_cmd = {
	.name = "t",
	.prog = "t",
	.summary = "test",
	.description = "test",
	.opts = t_table,
	.check = check_t,
	.opts_size = sizeof(struct t_opts),
	.defaults = &t_defaults,
};

/* Parse "t ARGS..." into @o; nfsl_cmd_parse's return. */
static int parse(struct t_opts *o, int argc, const char **args)
{
	char *argv[8] = { "t" };
	int first;

	for (int i = 0; i < argc; i++)
		argv[i + 1] = (char *)args[i];
	return nfsl_cmd_parse(&t_cmd, argc + 1, argv, o, &first);
}

static void quiet(void)
{
	cr_redirect_stderr();
	cr_redirect_stdout();
}

TestSuite(cli, .init = quiet);

Test(cli, numbers_are_decimal)
{
	struct t_opts o;

	cr_assert_eq(parse(&o, 2, (const char *[]){ "--n", "10" }), 0);
	cr_assert_eq(o.n, 10);
	/* A hex or octal spelling is refused, not read as 16 or 8, nor as ten:
	 * the user who typed it meant another number (issue 18 §3). */
	cr_assert_eq(parse(&o, 2, (const char *[]){ "--n", "010" }), -EINVAL);
	cr_assert_eq(parse(&o, 2, (const char *[]){ "--n", "0x10" }), -EINVAL);
	cr_assert_eq(parse(&o, 2, (const char *[]){ "--n", "+5" }), -EINVAL);
	cr_assert_eq(parse(&o, 2, (const char *[]){ "--n", " 5" }), -EINVAL);
	cr_assert_eq(parse(&o, 2, (const char *[]){ "--n", "5 " }), -EINVAL);
	cr_assert_eq(parse(&o, 2, (const char *[]){ "--n", "1e2" }), -EINVAL);
	cr_assert_eq(parse(&o, 2, (const char *[]){ "--n", "1001" }), -EINVAL);
	fflush(stderr);
	cr_assert_stderr_eq_str(
		"t: --n '010' is not valid: give a whole number of N from 1 to 1000, in decimal digits (no leading 0 or 0x)\n"
		"t: --n '0x10' is not valid: give a whole number of N from 1 to 1000, in decimal digits (no leading 0 or 0x)\n"
		"t: --n '+5' is not valid: give a whole number of N from 1 to 1000, in decimal digits\n"
		"t: --n ' 5' is not valid: give a whole number of N from 1 to 1000, in decimal digits\n"
		"t: --n '5 ' is not valid: give a whole number of N from 1 to 1000, in decimal digits\n"
		"t: --n '1e2' is not valid: give a whole number of N from 1 to 1000, in decimal digits\n"
		"t: --n '1001' is not valid: give a whole number of N from 1 to 1000, in decimal digits\n");
}

Test(cli, one_name_rule)
{
	static const char *const good[] = { "-x", "a.b", "x.", "A_9-z", "default",
		"123456789012345678901234567890123456789012345678901234567890123" };
	static const char *const bad[] = { "", ".", "..", "...", ".x", "a/b", "a b", "a\"b",
		"1234567890123456789012345678901234567890123456789012345678901234" };
	struct t_opts o;

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		cr_assert_eq(nfsl_name_check(good[i]), 0, "'%s' refused", good[i]);
		cr_assert_eq(parse(&o, 2, (const char *[]){ "--name", good[i] }), 0, "%s", good[i]);
		cr_assert_str_eq(o.name, good[i]);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_eq(nfsl_name_check(bad[i]), -EINVAL, "'%s' taken", bad[i]);
		cr_assert_eq(parse(&o, 2, (const char *[]){ "--name", bad[i] }), -EINVAL, "%s",
			     bad[i]);
	}
	cr_assert_str_eq(nfsl_name_opt_check("..."), NFSL_NAME_RULE);
	cr_assert_null(nfsl_name_opt_check("-x"));
}

Test(cli, command_check_is_usage)
{
	struct t_opts o;

	cr_assert_eq(parse(&o, 2, (const char *[]){ "--m", "2" }), -EINVAL);
	cr_assert_eq(parse(&o, 4, (const char *[]){ "--m", "2", "--n", "1" }), 0);
	fflush(stderr);
	cr_assert_stderr_eq_str("t: --m needs --n\nSee 't --help'.\n");
}

Test(cli, json_warning_of_a_success_goes_to_stderr)
{
	nfsl_msg_json(true);
	nfsl_msg("tool: warning: ", "something odd");
	cr_assert_eq(nfsl_msg_json_flush(0), 0);
	/* status's "damaged" (3) printed its object too */
	nfsl_msg("tool: warning: ", "again");
	cr_assert_eq(nfsl_msg_json_flush(NFSL_EXIT_DAMAGED), NFSL_EXIT_DAMAGED);
	nfsl_warn("tool: note: ", "at once");
	nfsl_msg("tool: ", "it failed");
	cr_assert_eq(nfsl_msg_json_flush(NFSL_EXIT_FAIL), NFSL_EXIT_FAIL);
	nfsl_msg_json(false);
	fflush(stdout);
	fflush(stderr);
	cr_assert_stdout_eq_str("{\"error\":\"it failed\",\"code\":1}\n");
	cr_assert_stderr_eq_str("tool: warning: something odd\ntool: warning: again\n"
				"tool: note: at once\n");
}
