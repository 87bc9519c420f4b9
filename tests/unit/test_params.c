// SPDX-License-Identifier: GPL-2.0
/*
 * Typed values and options (issue 18 §3): one parser per type
 * (util/value.h) behind the option tables and the KEY=VALUE tables;
 * short options, .required and .given (no UINT32_MAX sentinels).
 */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "util/cli.h"
#include "util/params.h"
#include "util/value.h"

Test(value, u64_decimal_only)
{
	__u64 v = 7;

	cr_assert_eq(nfsl_parse_u64("0", 0, 10, &v), 0);
	cr_assert_eq(v, 0);
	cr_assert_eq(nfsl_parse_u64("18446744073709551615", 0, UINT64_MAX, &v), 0);
	cr_assert_eq(v, UINT64_MAX);
	cr_assert_eq(nfsl_parse_u64("18446744073709551616", 0, UINT64_MAX, &v), -ERANGE);
	cr_assert_eq(nfsl_parse_u64("99999999999999999999", 0, UINT64_MAX, &v), -ERANGE);
	cr_assert_eq(nfsl_parse_u64("010", 0, 100, &v), -EDOM);
	cr_assert_eq(nfsl_parse_u64("00", 0, 100, &v), -EDOM);
	cr_assert_eq(nfsl_parse_u64("0x10", 0, 100, &v), -EDOM);
	cr_assert_eq(nfsl_parse_u64("0X10", 0, 100, &v), -EDOM);
	cr_assert_eq(nfsl_parse_u64("", 0, 100, &v), -EINVAL);
	cr_assert_eq(nfsl_parse_u64("+5", 0, 100, &v), -EINVAL);
	cr_assert_eq(nfsl_parse_u64("-0", 0, 100, &v), -EINVAL);
	cr_assert_eq(nfsl_parse_u64(" 5", 0, 100, &v), -EINVAL);
	cr_assert_eq(nfsl_parse_u64("5 ", 0, 100, &v), -EINVAL);
	cr_assert_eq(nfsl_parse_u64("1e2", 0, 1000, &v), -EINVAL);
	cr_assert_eq(nfsl_parse_u64("101", 0, 100, &v), -ERANGE);
	cr_assert_eq(nfsl_parse_u64("4", 5, 100, &v), -ERANGE);
	cr_assert_eq(v, UINT64_MAX, "a refused value left the result alone");
}

Test(value, durations)
{
	__u64 v;

	cr_assert_eq(nfsl_parse_duration("250", NFSL_MS, 0, 0, UINT64_MAX, &v), 0);
	cr_assert_eq(v, 250, "a bare number is in the field's unit");
	cr_assert_eq(nfsl_parse_duration("2s", NFSL_MS, 0, 0, UINT64_MAX, &v), 0);
	cr_assert_eq(v, 2000);
	cr_assert_eq(nfsl_parse_duration("1500us", NFSL_US, 0, 0, UINT64_MAX, &v), 0);
	cr_assert_eq(v, 1500);
	cr_assert_eq(nfsl_parse_duration("3000000ns", NFSL_MS, 0, 0, UINT64_MAX, &v), 0);
	cr_assert_eq(v, 3);
	cr_assert_eq(nfsl_parse_duration("2m", NFSL_S, 0, 0, UINT64_MAX, &v), 0);
	cr_assert_eq(v, 120);
	cr_assert_eq(nfsl_parse_duration("1h", NFSL_NS, 0, 0, UINT64_MAX, &v), 0);
	cr_assert_eq(v, 3600000000000ull);
	cr_assert_eq(nfsl_parse_duration("0ms", NFSL_MS, 0, 0, 10, &v), 0);
	cr_assert_eq(v, 0);
	/* not a whole number of the unit, out of range, overflow */
	cr_assert_eq(nfsl_parse_duration("1500us", NFSL_MS, 0, 0, UINT64_MAX, &v), -ERANGE);
	cr_assert_eq(nfsl_parse_duration("11ms", NFSL_MS, 0, 0, 10, &v), -ERANGE);
	cr_assert_eq(nfsl_parse_duration("18446744073709551615h", NFSL_NS, 0, 0, UINT64_MAX, &v),
		     -ERANGE);
	/* bad units, bad numbers */
	cr_assert_eq(nfsl_parse_duration("5sec", NFSL_MS, 0, 0, UINT64_MAX, &v), -EINVAL);
	cr_assert_eq(nfsl_parse_duration("5 s", NFSL_MS, 0, 0, UINT64_MAX, &v), -EINVAL);
	cr_assert_eq(nfsl_parse_duration("5S", NFSL_MS, 0, 0, UINT64_MAX, &v), -EINVAL);
	cr_assert_eq(nfsl_parse_duration("ms", NFSL_MS, 0, 0, UINT64_MAX, &v), -EINVAL);
	cr_assert_eq(nfsl_parse_duration("1.5s", NFSL_MS, 0, 0, UINT64_MAX, &v), -EINVAL);
	cr_assert_eq(nfsl_parse_duration("010ms", NFSL_MS, 0, 0, UINT64_MAX, &v), -EDOM);
	cr_assert_eq(nfsl_parse_duration("0x10", NFSL_MS, 0, 0, UINT64_MAX, &v), -EINVAL);
	cr_assert_str_eq(nfsl_unit_name(NFSL_US), "us");
}

Test(value, addresses_and_prefixes)
{
	struct nfsl_prefix p;
	struct nfsl_ip ip;

	cr_assert_eq(nfsl_parse_ip("192.0.2.1", AF_UNSPEC, &ip), 0);
	cr_assert_eq(ip.af, AF_INET);
	cr_assert_eq(ip.v4.s_addr, htonl(0xc0000201));
	cr_assert_eq(nfsl_parse_ip("2001:db8::1", AF_UNSPEC, &ip), 0);
	cr_assert_eq(ip.af, AF_INET6);
	cr_assert_eq(ip.b[15], 1);
	cr_assert_eq(ip.b[0], 0x20);
	cr_assert_eq(nfsl_parse_ip("2001:db8::1", AF_INET, &ip), -EAFNOSUPPORT);
	cr_assert_eq(nfsl_parse_ip("192.0.2.1", AF_INET6, &ip), -EAFNOSUPPORT);
	for (const char *const *s = (const char *const[]){ "", "192.0.2", "192.0.2.256",
			"192.0.2.1 ", "0x7f.0.0.1", "2001:db8:::1", "host", NULL }; *s; s++)
		cr_assert_eq(nfsl_parse_ip(*s, AF_UNSPEC, &ip), -EINVAL, "'%s'", *s);

	cr_assert_eq(nfsl_parse_prefix("10.1.0.0/16", AF_UNSPEC, &p), 0);
	cr_assert_eq(p.len, 16);
	cr_assert_eq(p.addr.v4.s_addr, htonl(0x0a010000));
	cr_assert_eq(nfsl_parse_prefix("0.0.0.0/0", AF_INET, &p), 0);
	cr_assert_eq(nfsl_parse_prefix("2001:db8::/32", AF_UNSPEC, &p), 0);
	cr_assert_eq(p.len, 32);
	cr_assert_eq(p.addr.af, AF_INET6);
	cr_assert_eq(nfsl_parse_prefix("10.1.2.3/16", AF_UNSPEC, &p), -ERANGE);
	cr_assert_eq(nfsl_parse_prefix("2001:db8::1/64", AF_UNSPEC, &p), -ERANGE);
	cr_assert_eq(nfsl_parse_prefix("10.1.0.0/33", AF_UNSPEC, &p), -EINVAL);
	cr_assert_eq(nfsl_parse_prefix("2001:db8::/129", AF_UNSPEC, &p), -EINVAL);
	cr_assert_eq(nfsl_parse_prefix("10.1.0.0/016", AF_UNSPEC, &p), -EDOM);
	cr_assert_eq(nfsl_parse_prefix("10.1.0.0", AF_UNSPEC, &p), -EINVAL);
	cr_assert_eq(nfsl_parse_prefix("10.1.0.0/", AF_UNSPEC, &p), -EINVAL);
	cr_assert_eq(nfsl_parse_prefix("10.1.0.0/16/1", AF_UNSPEC, &p), -EINVAL);
	cr_assert_eq(nfsl_parse_prefix("2001:db8::/32", AF_INET, &p), -EAFNOSUPPORT);
}

Test(value, mac_and_ifname)
{
	__u8 m[6] = {};

	cr_assert_eq(nfsl_parse_mac("02:00:0a:Bc:d:ff", m), 0);
	cr_assert_arr_eq(m, ((__u8[]){ 2, 0, 0x0a, 0xbc, 0x0d, 0xff }), 6);
	for (const char *const *s = (const char *const[]){ "", "02:00:00:00:00",
			"02:00:00:00:00:00:00", "02:00:00:00:00:100", "02-00-00-00-00-01",
			"02:00:00:00:00:0g", "02:00:00:00::01", "02:00:00:00:00:01 ", NULL };
	     *s; s++)
		cr_assert_eq(nfsl_parse_mac(*s, m), -EINVAL, "'%s'", *s);

	cr_assert_eq(nfsl_parse_ifname("dut0"), 0);
	cr_assert_eq(nfsl_parse_ifname("veth-a.100"), 0);
	cr_assert_eq(nfsl_parse_ifname("123456789012345"), 0);
	cr_assert_eq(nfsl_parse_ifname("1234567890123456"), -ENAMETOOLONG);
	for (const char *const *s = (const char *const[]){ "", ".", "..", "a/b", "a:1", "a b",
			"a\tb", NULL }; *s; s++)
		cr_assert_eq(nfsl_parse_ifname(*s), -EINVAL, "'%s'", *s);
}

/* Decimal numbers with a fraction (tenants' quotas, pktgen's mix weights):
 * strtod took "0x10" as 16 and "1e3" as 1000. */
Test(value, decimal_and_percent)
{
	char big[401];
	double v = -1;

	cr_assert_eq(nfsl_parse_decimal("30", 0, 100, &v), 0);
	cr_assert_float_eq(v, 30, 1e-12);
	cr_assert_eq(nfsl_parse_decimal("2.5", 0, 100, &v), 0);
	cr_assert_float_eq(v, 2.5, 1e-12);
	cr_assert_eq(nfsl_parse_decimal("0.125", 0, 100, &v), 0);
	cr_assert_float_eq(v, 0.125, 1e-12);
	cr_assert_eq(nfsl_parse_decimal("0", 0, 100, &v), 0);
	cr_assert_float_eq(v, 0, 1e-12);
	cr_assert_eq(nfsl_parse_decimal("0x10", 0, 100, &v), -EDOM);
	cr_assert_eq(nfsl_parse_decimal("010", 0, 100, &v), -EDOM);
	cr_assert_eq(nfsl_parse_decimal("00.5", 0, 100, &v), -EDOM);
	for (const char *const *s = (const char *const[]){ "", "1e3", "1E3", "-1", "+1", ".5",
			"5.", "1.2.3", "inf", "nan", " 1", "1 ", "1,5", "5%", NULL }; *s; s++)
		cr_assert_eq(nfsl_parse_decimal(*s, 0, 1e9, &v), -EINVAL, "'%s'", *s);
	cr_assert_eq(nfsl_parse_decimal("100.5", 0, 100, &v), -ERANGE);
	cr_assert_eq(nfsl_parse_decimal("1", 2, 100, &v), -ERANGE);
	memset(big, '9', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	cr_assert_eq(nfsl_parse_decimal(big, 0, 1e308, &v), -ERANGE, "past DBL_MAX: inf");
	cr_assert_float_eq(v, 0, 1e-12, "a refused value left the result alone");

	cr_assert_eq(nfsl_parse_percent("40%", &v), 0);
	cr_assert_float_eq(v, 0.4, 1e-12);
	cr_assert_eq(nfsl_parse_percent("12.5%", &v), 0);
	cr_assert_float_eq(v, 0.125, 1e-12);
	cr_assert_eq(nfsl_parse_percent("100%", &v), 0);
	cr_assert_float_eq(v, 1, 1e-12);
	cr_assert_eq(nfsl_parse_percent("0%", &v), 0);
	cr_assert_float_eq(v, 0, 1e-12);
	cr_assert_eq(nfsl_parse_percent("100.1%", &v), -ERANGE);
	cr_assert_eq(nfsl_parse_percent("0x10%", &v), -EDOM);
	cr_assert_eq(nfsl_parse_percent("05%", &v), -EDOM);
	for (const char *const *s = (const char *const[]){ "40", "%", "1e1%", "-1%", "40%%",
			"40 %", "40%x", ".5%", NULL }; *s; s++)
		cr_assert_eq(nfsl_parse_percent(*s, &v), -EINVAL, "'%s'", *s);
}

/* "N:N[:N]" (nfslice-nf --stall, --slow): strtoul took "010" as 10. */
Test(value, u64_fields)
{
	__u64 v[3] = {};

	cr_assert_eq(nfsl_parse_u64_fields("0:4600:60000", ':', 3, UINT32_MAX, v), 0);
	cr_assert_arr_eq(v, ((__u64[]){ 0, 4600, 60000 }), sizeof(v));
	cr_assert_eq(nfsl_parse_u64_fields("1:200", ':', 2, UINT32_MAX, v), 0);
	cr_assert(v[0] == 1 && v[1] == 200);
	cr_assert_eq(nfsl_parse_u64_fields("0:010:5", ':', 3, UINT32_MAX, v), -EDOM);
	cr_assert_eq(nfsl_parse_u64_fields("0x1:10:5", ':', 3, UINT32_MAX, v), -EDOM);
	cr_assert_eq(nfsl_parse_u64_fields("0:4294967296:5", ':', 3, UINT32_MAX, v), -ERANGE);
	for (const char *const *s = (const char *const[]){ "", "0:1", "0:1:2:3", "0::2", "0:1:",
			":1:2", " 0:1:2", "0:1:2 ", "0:+1:2", "0:-1:2", "0;1;2", NULL }; *s; s++)
		cr_assert_eq(nfsl_parse_u64_fields(*s, ':', 3, UINT32_MAX, v), -EINVAL, "'%s'",
			     *s);
}

/* ---- option tables --------------------------------------------------- */

struct p_opts {
	__u64 big;
	__u32 ttl;
	__u64 wait_ns;
	struct nfsl_ip ip;
	struct nfsl_prefix net;
	__u8 mac[6];
	const char *dev;
	const char *name;
	bool verbose;
	__u32 cpu;
	bool has_cpu, has_ttl;
};

#define OFF(f) offsetof(struct p_opts, f)
static const struct nfsl_opt p_table[] = {
	{ "big", NFSL_OPT_U64, OFF(big), 1, UINT64_MAX, .metavar = "N", .help = "u64" },
	{ "ttl", NFSL_OPT_DURATION, OFF(ttl), 0, 60000, .unit = NFSL_MS, .metavar = "MS",
	  .given = NFSL_GIVEN(struct p_opts, has_ttl), .help = "ttl" },
	{ "wait", NFSL_OPT_DURATION64, OFF(wait_ns), 1, UINT64_MAX, .unit = NFSL_NS,
	  .metavar = "NS", .help = "wait" },
	{ "ip", NFSL_OPT_IPADDR, OFF(ip), .af = AF_INET, .metavar = "ADDR", .help = "ip" },
	{ "net", NFSL_OPT_PREFIX, OFF(net), .metavar = "ADDR/LEN", .help = "net" },
	{ "mac", NFSL_OPT_MAC, OFF(mac), .metavar = "MAC", .help = "mac" },
	{ "dev", NFSL_OPT_IFNAME, OFF(dev), .short_name = 'd', .metavar = "IFACE",
	  .help = "dev" },
	{ "name", NFSL_OPT_STR, OFF(name), .short_name = 'n', .required = true,
	  .metavar = "NAME", .help = "name" },
	{ "verbose", NFSL_OPT_FLAG, OFF(verbose), .short_name = 'v', .help = "more" },
	{ "cpu", NFSL_OPT_U32, OFF(cpu), 0, 1023, .metavar = "CPU",
	  .given = NFSL_GIVEN(struct p_opts, has_cpu), .help = "cpu" },
	{ NULL },
};

static const struct p_opts p_defaults = { .ttl = 5, .cpu = 0 };

static const struct nfsl_cmd p_cmd = {
	.name = "p",
	.prog = "p",
	.args = "[ARG]",
	.max_args = 1,
	.summary = "test",
	.description = "test",
	NFSL_CMD_OPTS(p_table, struct p_opts, p_defaults),
};

static int pparse(struct p_opts *o, int argc, const char **args)
{
	char *argv[24] = { "p" };
	int first;

	for (int i = 0; i < argc; i++)
		argv[i + 1] = (char *)args[i];
	return nfsl_cmd_parse(&p_cmd, argc + 1, argv, o, &first);
}

static void quiet(void)
{
	cr_redirect_stderr();
	cr_redirect_stdout();
}

TestSuite(params, .init = quiet);

Test(params, typed_values)
{
	struct p_opts o;

	cr_assert_eq(pparse(&o, 16, (const char *[]){ "-n", "x", "--big", "18446744073709551615",
		     "--ttl", "2s", "--wait", "3us", "--ip", "192.0.2.7", "--net", "2001:db8::/48",
		     "--mac", "02:00:00:00:00:09", "--dev", "dut0" }), 0);
	cr_assert_eq(o.big, UINT64_MAX);
	cr_assert_eq(o.ttl, 2000);
	cr_assert_eq(o.wait_ns, 3000);
	cr_assert_eq(o.ip.v4.s_addr, htonl(0xc0000207));
	cr_assert_eq(o.net.len, 48);
	cr_assert_eq(o.mac[5], 9);
	cr_assert_str_eq(o.dev, "dut0");
	cr_assert_eq(pparse(&o, 4, (const char *[]){ "-n", "x", "--ttl", "250" }), 0);
	cr_assert_eq(o.ttl, 250, "a bare number in the field's unit (ms)");
}

Test(params, refused_values_name_the_option_and_the_fix)
{
	static const char *const bad[][2] = {
		{ "--big", "0x10" }, { "--big", "010" }, { "--big", "18446744073709551616" },
		{ "--ttl", "61s" }, { "--ttl", "5sec" }, { "--ttl", "1500us" },
		{ "--ip", "2001:db8::1" }, { "--net", "10.1.2.3/16" }, { "--net", "10.1.0.0/33" },
		{ "--mac", "02:00:00:00:00" }, { "--dev", "a/b" }, { "-d", "1234567890123456" },
		{ "--cpu", "007" },
	};
	struct p_opts o;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_eq(pparse(&o, 4, (const char *[]){ "-n", "x", bad[i][0], bad[i][1] }),
			     -EINVAL, "%s %s", bad[i][0], bad[i][1]);
	fflush(stderr);
	cr_assert_stderr_eq_str(
		"p: --big '0x10' is not valid: give a whole number of N from 1 to 18446744073709551615, in decimal digits (no leading 0 or 0x)\n"
		"p: --big '010' is not valid: give a whole number of N from 1 to 18446744073709551615, in decimal digits (no leading 0 or 0x)\n"
		"p: --big '18446744073709551616' is not valid: give a whole number of N from 1 to 18446744073709551615, in decimal digits\n"
		"p: --ttl '61s' is not valid: give a whole number of MS from 0 to 60000, in decimal digits, or a duration with a unit (ns, us, ms, s, m, h) that is a whole number of ms, e.g. 2s\n"
		"p: --ttl '5sec' is not valid: give a whole number of MS from 0 to 60000, in decimal digits, or a duration with a unit (ns, us, ms, s, m, h) that is a whole number of ms, e.g. 2s\n"
		"p: --ttl '1500us' is not valid: give a whole number of MS from 0 to 60000, in decimal digits, or a duration with a unit (ns, us, ms, s, m, h) that is a whole number of ms, e.g. 2s\n"
		"p: --ip '2001:db8::1' is not valid: give an IPv4 address (e.g. 192.0.2.1)\n"
		"p: --net '10.1.2.3/16' is not valid: host bits set after the prefix length (e.g. 10.1.0.0/16, not 10.1.2.3/16)\n"
		"p: --net '10.1.0.0/33' is not valid: give ADDR/LEN, IPv4 or IPv6 prefix (e.g. 10.1.0.0/16)\n"
		"p: --mac '02:00:00:00:00' is not valid: give a MAC address, six hex octets separated by ':' (e.g. 02:00:00:00:00:01)\n"
		"p: --dev 'a/b' is not valid: give an interface name: " NFSL_IFNAME_RULE "\n"
		"p: --dev '1234567890123456' is not valid: give an interface name: " NFSL_IFNAME_RULE "\n"
		"p: --cpu '007' is not valid: give a whole number of CPU from 0 to 1023, in decimal digits (no leading 0 or 0x)\n");
}

Test(params, required_given_and_short)
{
	struct p_opts o;

	cr_assert_eq(pparse(&o, 1, (const char *[]){ "--verbose" }), -EINVAL);
	cr_assert_eq(pparse(&o, 2, (const char *[]){ "-nx", "-v" }), 0);
	cr_assert_str_eq(o.name, "x");
	cr_assert(o.verbose);
	cr_assert_not(o.has_cpu, "--cpu not given");
	cr_assert_not(o.has_ttl);
	cr_assert_eq(o.ttl, 5, "the default stays");
	/* 0 is a CPU like any other: given, not a sentinel */
	cr_assert_eq(pparse(&o, 5, (const char *[]){ "--name=y", "--cpu", "0", "-vd", "dut1" }), 0);
	cr_assert(o.has_cpu);
	cr_assert_eq(o.cpu, 0);
	cr_assert_str_eq(o.name, "y");
	cr_assert_str_eq(o.dev, "dut1");
	cr_assert_eq(pparse(&o, 3, (const char *[]){ "-n", "x", "-q" }), -EINVAL);
	cr_assert_eq(pparse(&o, 2, (const char *[]){ "-v", "-n" }), -EINVAL);
	fflush(stderr);
	cr_assert_stderr_eq_str("p: --name NAME is required\nSee 'p --help'.\n"
				"p: unknown option '-q'\nSee 'p --help'.\n"
				"p: option -n needs a value\nSee 'p --help'.\n");
}

Test(params, help_and_docs_show_short_and_types)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	const struct nfsl_prog prog = { .name = "p", .summary = "s", .description = "d",
					.cmds = (const struct nfsl_cmd *const[]){ &p_cmd },
					.ncmds = 1 };

	nfsl_cmd_help(&p_cmd, f);
	nfsl_man(&prog, f);
	nfsl_bash_completion(&prog, f);
	fclose(f);
	cr_assert(strstr(buf, "  -n, --name NAME          name\n"), "%s", buf);
	cr_assert(strstr(buf, "  --ttl MS                 ttl\n"));
	cr_assert(strstr(buf, ".TP\n\\fB\\-n\\fR, \\fB\\-\\-name\\fR \\fINAME\\fR\nname\n.br\n"
			      "Required.\n"));
	cr_assert(strstr(buf, "ttl\n.br\nA duration: N (ms), or N with a unit ns, us, ms, s, m "
			      "or h, e.g. 2s.\n"));
	/* an IFNAME value completes interface names, under both spellings */
	cr_assert(strstr(buf, "\t--dev|-d)\n\t\tCOMPREPLY=($(compgen -W \"$(ls /sys/class/net"));
	cr_assert(strstr(buf, "-n --name "));
	free(buf);
}

/* ---- KEY=VALUE tables ------------------------------------------------ */

struct kv_conf {
	__u64 port;
	__u64 expire_ns;
	struct nfsl_ip ext;
	bool fast, has_port;
};

#define KOFF(f) offsetof(struct kv_conf, f)
static const struct nfsl_opt kv_keys[] = {
	{ "port", NFSL_OPT_U64, KOFF(port), 1, 65535, .metavar = "PORT",
	  .given = NFSL_GIVEN(struct kv_conf, has_port),
	  .bad = " is not a port: give port=1..65535" },
	{ "expire", NFSL_OPT_DURATION64, KOFF(expire_ns), 1, UINT64_MAX, .unit = NFSL_NS },
	{ "ext", NFSL_OPT_IPADDR, KOFF(ext), .af = AF_INET, .required = true, .metavar = "ADDR" },
	{ "fast", NFSL_OPT_FLAG, KOFF(fast) },
	{ NULL },
};

static int kv(struct kv_conf *c, const char *const *items, char *err)
{
	memset(c, 0, sizeof(*c));
	return nfsl_kv_parse(kv_keys, items, c, err, 256);
}

Test(kv, parses_typed_keys)
{
	struct kv_conf c;
	char err[256] = "";

	cr_assert_eq(kv(&c, (const char *[]){ "ext=192.0.2.1", "port=80", "expire=5s", "fast",
					       NULL }, err), 0, "%s", err);
	cr_assert_eq(c.port, 80);
	cr_assert(c.has_port);
	cr_assert_eq(c.expire_ns, 5000000000ull);
	cr_assert(c.fast);
	cr_assert_eq(kv(&c, (const char *[]){ "ext=192.0.2.1", NULL }, err), 0);
	cr_assert_not(c.has_port);
}

Test(kv, refuses_with_the_fix)
{
	static const struct {
		const char *items[3];
		const char *msg;
	} bad[] = {
		{ { "ext=192.0.2.1", "port=010" }, "port=010 is not a port: give port=1..65535" },
		{ { "ext=192.0.2.1", "expire=2d" },
		  "expire=2d: give a whole number of N from 1 to 18446744073709551615, in decimal "
		  "digits, or a duration with a unit (ns, us, ms, s, m, h) that is a whole number "
		  "of ns, e.g. 2s" },
		{ { "ext=::1" }, "ext=::1: give an IPv4 address (e.g. 192.0.2.1)" },
		{ { "ext=192.0.2.1", "nope=1" },
		  "unknown option 'nope': the options are port=PORT, expire, ext=ADDR, fast" },
		{ { "ext=192.0.2.1", "nope" }, "'nope' is not KEY=VALUE: give one of port=PORT, expire, ext=ADDR, fast" },
		{ { "ext=192.0.2.1", "port" }, "'port' is not KEY=VALUE: give port=PORT" },
		{ { "ext=192.0.2.1", "fast=1" }, "fast=1: fast takes no value: give fast alone" },
		{ { "port=1" }, "ext= is missing: give ext=ADDR" },
	};
	struct kv_conf c;
	char err[256];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_lt(kv(&c, bad[i].items, err), 0, "%s", bad[i].msg);
		cr_assert_str_eq(err, bad[i].msg);
	}
	/* the two a caller may word its own way */
	cr_assert_eq(kv(&c, (const char *[]){ "nope=1", NULL }, err), -ENOENT);
	cr_assert_eq(kv(&c, (const char *[]){ "nope", NULL }, err), -ENOMSG);
	cr_assert_eq(kv(&c, (const char *[]){ "ext=::1", NULL }, err), -EINVAL);
}

Test(kv, last_value_wins_and_bare_unit)
{
	static const struct nfsl_opt keys[] = {
		/* stored in ns, a bare number in seconds (lb's timeout=) */
		{ "t", NFSL_OPT_DURATION64, 0, 1, UINT64_MAX, .unit = NFSL_NS, .bare = NFSL_S },
		{ NULL },
	};
	__u64 t = 0;
	char err[256];

	cr_assert_eq(nfsl_kv_parse(keys, (const char *[]){ "t=60", NULL }, &t, err, 256), 0);
	cr_assert_eq(t, 60000000000ull);
	cr_assert_eq(nfsl_kv_parse(keys, (const char *[]){ "t=1", "t=500ms", NULL }, &t, err,
				   256), 0);
	cr_assert_eq(t, 500000000ull);
}
