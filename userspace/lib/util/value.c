// SPDX-License-Identifier: GPL-2.0
/* Typed values, parsed one way everywhere: see value.h. */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "util/value.h"

/* nfsl_parse_u64 over the @n bytes at @s (a field of a longer string). */
static int u64_span(const char *s, size_t n, __u64 min, __u64 max, __u64 *v)
{
	__u64 x = 0;

	if (n >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X' || isdigit((unsigned char)s[1])))
		return -EDOM;
	if (!n)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if (!isdigit((unsigned char)s[i]))
			return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (x > (UINT64_MAX - (__u64)(s[i] - '0')) / 10)
			return -ERANGE;
		x = x * 10 + (__u64)(s[i] - '0');
	}
	if (x < min || x > max)
		return -ERANGE;
	*v = x;
	return 0;
}

int nfsl_parse_u64(const char *s, __u64 min, __u64 max, __u64 *v)
{
	return u64_span(s, strlen(s), min, max, v);
}

int nfsl_parse_u64_fields(const char *s, char sep, unsigned int n, __u64 max, __u64 *v)
{
	unsigned int i = 0;

	for (;;) {
		const char *e = strchr(s, sep);
		size_t len = e ? (size_t)(e - s) : strlen(s);
		__u64 x;
		int rc = u64_span(s, len, 0, max, &x);

		if (rc)
			return rc;
		if (i < n)
			v[i] = x;
		i++;
		if (!e)
			return i == n ? 0 : -EINVAL;
		s = e + 1;
	}
}

/*
 * A decimal number, digits then optionally '.' and digits, that ends
 * @s with the suffix @unit ("" or "%"). The spelling is checked first,
 * so strtod reads exactly those digits (never hex, an exponent, inf or
 * nan).
 */
static int decimal(const char *s, const char *unit, double min, double max, double *v)
{
	size_t k = strspn(s, "0123456789");
	double x;

	if (s[0] == '0' && (isdigit((unsigned char)s[1]) || s[1] == 'x' || s[1] == 'X'))
		return -EDOM;
	if (!k)
		return -EINVAL;
	if (s[k] == '.') {
		size_t f = strspn(s + k + 1, "0123456789");

		if (!f)
			return -EINVAL;
		k += 1 + f;
	}
	if (strcmp(s + k, unit))
		return -EINVAL;
	x = strtod(s, NULL);
	if (!isfinite(x) || x < min || x > max)
		return -ERANGE;
	*v = x;
	return 0;
}

int nfsl_parse_decimal(const char *s, double min, double max, double *v)
{
	return decimal(s, "", min, max, v);
}

int nfsl_parse_percent(const char *s, double *frac)
{
	double x;
	int rc = decimal(s, "%", 0, 100, &x);

	if (!rc)
		*frac = x / 100;
	return rc;
}

static const struct {
	const char *name;
	__u64 ns;
} units[] = {
	{ "ns", 1ull },
	{ "us", 1000ull },
	{ "ms", 1000000ull },
	{ "s", 1000000000ull },
	{ "m", 60000000000ull },
	{ "h", 3600000000000ull },
};

const char *nfsl_unit_name(__u64 unit_ns)
{
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (units[i].ns == unit_ns)
			return units[i].name;
	return "";
}

int nfsl_parse_duration(const char *s, __u64 unit_ns, __u64 bare_ns, __u64 min, __u64 max,
			__u64 *v)
{
	size_t k = strspn(s, "0123456789");
	char num[24];
	__u64 n, mul = bare_ns ? bare_ns : unit_ns;
	int rc;

	if (!k || k >= sizeof(num))
		return k ? -ERANGE : -EINVAL;
	memcpy(num, s, k);
	num[k] = '\0';
	if (s[k]) {
		size_t i;

		for (i = 0; i < sizeof(units) / sizeof(units[0]); i++)
			if (!strcmp(s + k, units[i].name))
				break;
		if (i == sizeof(units) / sizeof(units[0]))
			return -EINVAL;
		mul = units[i].ns;
	}
	rc = nfsl_parse_u64(num, 0, UINT64_MAX, &n);
	if (rc)
		return rc;
	/* n * mul nanoseconds in units of unit_ns, exactly. */
	if (mul >= unit_ns) {
		if (mul % unit_ns || n > UINT64_MAX / (mul / unit_ns))
			return -ERANGE;
		n *= mul / unit_ns;
	} else {
		if (unit_ns % mul || n % (unit_ns / mul))
			return -ERANGE;
		n /= unit_ns / mul;
	}
	if (n < min || n > max)
		return -ERANGE;
	*v = n;
	return 0;
}

int nfsl_parse_ip(const char *s, int af, struct nfsl_ip *ip)
{
	struct nfsl_ip a = {};

	if (inet_pton(AF_INET, s, &a.v4) == 1)
		a.af = AF_INET;
	else if (inet_pton(AF_INET6, s, &a.v6) == 1)
		a.af = AF_INET6;
	else
		return -EINVAL;
	if (af != AF_UNSPEC && af != a.af)
		return -EAFNOSUPPORT;
	*ip = a;
	return 0;
}

int nfsl_parse_prefix(const char *s, int af, struct nfsl_prefix *p)
{
	const char *slash = strchr(s, '/');
	char addr[INET6_ADDRSTRLEN + 1];
	struct nfsl_prefix q = {};
	__u64 len;
	int rc;

	if (!slash || (size_t)(slash - s) >= sizeof(addr))
		return -EINVAL;
	memcpy(addr, s, slash - s);
	addr[slash - s] = '\0';
	rc = nfsl_parse_ip(addr, af, &q.addr);
	if (rc)
		return rc;
	rc = nfsl_parse_u64(slash + 1, 0, q.addr.af == AF_INET ? 32 : 128, &len);
	if (rc)
		return rc == -ERANGE ? -EINVAL : rc;
	q.len = (__u8)len;
	for (unsigned int b = q.len; b < (q.addr.af == AF_INET ? 32u : 128u); b++)
		if (q.addr.b[b / 8] & (0x80 >> (b % 8)))
			return -ERANGE;
	*p = q;
	return 0;
}

int nfsl_parse_mac(const char *s, __u8 mac[6])
{
	__u8 m[6];

	for (int i = 0; i < 6; i++) {
		unsigned int x = 0, nd = 0;

		for (; isxdigit((unsigned char)*s) && nd < 3; s++, nd++)
			x = x * 16 + (isdigit((unsigned char)*s) ? *s - '0'
								  : (tolower((unsigned char)*s) - 'a' + 10));
		if (!nd || nd > 2 || *s != (i < 5 ? ':' : '\0'))
			return -EINVAL;
		m[i] = (__u8)x;
		if (i < 5)
			s++;
	}
	memcpy(mac, m, sizeof(m));
	return 0;
}

int nfsl_parse_ifname(const char *s)
{
	size_t n = strnlen(s, IFNAMSIZ);

	if (!n || !strcmp(s, ".") || !strcmp(s, ".."))
		return -EINVAL;
	if (n >= IFNAMSIZ)
		return -ENAMETOOLONG;
	for (; *s; s++)
		if (*s == '/' || *s == ':' || isspace((unsigned char)*s))
			return -EINVAL;
	return 0;
}
