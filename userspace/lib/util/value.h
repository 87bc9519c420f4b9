/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Typed values, parsed one way everywhere: the command-line option tables
 * (params.h), the NFs' KEY=VALUE option strings, the tenants file and
 * nfslice-pktgen's mix files.
 * Each parser takes the whole string (no blanks, no trailing bytes) and
 * returns 0 or a negative errno that says what is wrong with it:
 *   -EINVAL  not of the type at all
 *   -EDOM    a number spelled in hex or octal (leading 0x, or 0 then digits)
 *   -ERANGE  of the type, but outside the range asked (or, for a prefix,
 *            host bits set after the prefix length)
 *   -ENAMETOOLONG  an interface name of IFNAMSIZ bytes or more
 */
#ifndef NFSL_VALUE_H
#define NFSL_VALUE_H

#include <net/if.h>
#include <netinet/in.h>
#include <linux/types.h>

/* An IPv4 or IPv6 address, in network order. */
struct nfsl_ip {
	int af; /* AF_INET or AF_INET6 */
	union {
		struct in_addr v4;
		struct in6_addr v6;
		__u8 b[16];
	};
};

/* ADDR/LEN: the address with no bit set after the first @len. */
struct nfsl_prefix {
	struct nfsl_ip addr;
	__u8 len; /* 0..32 (IPv4), 0..128 (IPv6) */
};

/*
 * nfsl_parse_u64 - a whole number in decimal digits, within [@min, @max].
 * No sign, no blanks, no base prefix: "0" is zero, "010" and "0x10" are
 * refused (-EDOM) rather than read as octal 8 or hex 16 as strtoul's base
 * 0 would. -ERANGE also on overflow of 64 bits.
 */
int nfsl_parse_u64(const char *s, __u64 min, __u64 max, __u64 *v);

/*
 * nfsl_parse_u64_fields - exactly @n numbers, each as nfsl_parse_u64
 * within [0, @max], separated by @sep: "0:4600:60000" into @v[0..2].
 * Returns 0, the first bad field's error (an empty field is -EINVAL), or
 * -EINVAL for another count of fields. @v may be partly written on error.
 */
int nfsl_parse_u64_fields(const char *s, char sep, unsigned int n, __u64 max, __u64 *v);

/*
 * nfsl_parse_decimal - a decimal number, a fraction allowed: digits, then
 * optionally '.' and digits ("30", "2.5", "0.125"), within [@min, @max].
 * No sign, no exponent ("1e3": -EINVAL), no inf or nan, no ".5" or "5.";
 * a leading 0 before a digit or x ("05", "0x10") is -EDOM, as in
 * nfsl_parse_u64 (strtod would read "0x10" as 16).
 */
int nfsl_parse_decimal(const char *s, double min, double max, double *v);

/*
 * nfsl_parse_percent - "P%", P as nfsl_parse_decimal within [0, 100]
 * ("40%", "12.5%"), into the fraction *@frac = P / 100 in [0, 1]. Without
 * the '%' (or with bytes after it) -EINVAL; P over 100 -ERANGE.
 */
int nfsl_parse_percent(const char *s, double *frac);

/*
 * nfsl_parse_duration - a duration into a count of @unit_ns nanoseconds
 * (1: ns, 1000: us, 1000000: ms, 1000000000: s), within [@min, @max] of
 * that unit. Spellings: a decimal number N (in @bare_ns, or in the unit
 * itself when @bare_ns is 0), or N followed by one of ns, us, ms, s, m
 * (minutes), h; the value must be a whole number of the unit ("1500us" is
 * refused for ms: -ERANGE). An unknown suffix is -EINVAL; numbers as
 * nfsl_parse_u64.
 */
int nfsl_parse_duration(const char *s, __u64 unit_ns, __u64 bare_ns, __u64 min, __u64 max,
			__u64 *v);

/* The suffix of @unit_ns ("ns", "us", "ms", "s"), "" for another unit. */
const char *nfsl_unit_name(__u64 unit_ns);

/*
 * nfsl_parse_ip - an IPv4 (dotted quad) or IPv6 (RFC 4291 text) address.
 * @af: AF_INET or AF_INET6 to take only that family, AF_UNSPEC for both.
 * The other family is -EAFNOSUPPORT.
 */
int nfsl_parse_ip(const char *s, int af, struct nfsl_ip *ip);

/*
 * nfsl_parse_prefix - ADDR/LEN (RFC 4632 notation, IPv6 too); LEN in
 * decimal. @af as nfsl_parse_ip. Host bits set after LEN (10.1.2.3/16)
 * are -ERANGE: the prefix means what it says.
 */
int nfsl_parse_prefix(const char *s, int af, struct nfsl_prefix *p);

/* nfsl_parse_mac - six hex octets of one or two digits, ':'-separated. */
int nfsl_parse_mac(const char *s, __u8 mac[6]);

/*
 * nfsl_parse_ifname - the kernel's rule for an interface name
 * (dev_valid_name, net/core/dev.c): 1 to IFNAMSIZ-1 bytes, not "." or
 * "..", no '/', ':' or white space. Returns 0, -EINVAL or -ENAMETOOLONG.
 */
int nfsl_parse_ifname(const char *s);

/* The rule nfsl_parse_ifname checks, for messages. */
#define NFSL_IFNAME_RULE "1 to 15 bytes, not '.' or '..', without '/', ':' or blanks"

#endif /* NFSL_VALUE_H */
