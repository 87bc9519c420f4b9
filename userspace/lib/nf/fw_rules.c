// SPDX-License-Identifier: GPL-2.0
/*
 * The firewall's rules file (format in nfsl_nf_fw.h): reading, with an
 * error naming the file, the line, what is wrong and how to write it, and
 * writing a rule back as a line.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include "nf/nfsl_nf_fw.h"
#include "util/value.h"

#define MAX_TOK 16
#define BLANKS " \t\r\n\v\f"

struct where {
	const char *name;
	unsigned int line;
	char *err;
	size_t errlen;
};

__attribute__((format(printf, 2, 3)))
static int bad(const struct where *w, const char *fmt, ...)
{
	size_t k;
	va_list ap;

	k = snprintf(w->err, w->errlen, "%s:%u: ", w->name, w->line);
	if (k < w->errlen) {
		va_start(ap, fmt);
		vsnprintf(w->err + k, w->errlen - k, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

static bool is_any(const char *s)
{
	return !strcmp(s, "any") || !strcmp(s, "*");
}

/* A decimal number of at most @max, digits only (nfsl_parse_u64). */
static bool dec(const char *s, unsigned long max, unsigned long *v)
{
	__u64 x;

	if (nfsl_parse_u64(s, 0, max, &x))
		return false;
	*v = x;
	return true;
}

/* A hexadecimal number 0xH.. of at most @max. */
static bool hex(const char *s, unsigned long max, unsigned long *v)
{
	unsigned long x = 0;

	if (s[0] != '0' || (s[1] != 'x' && s[1] != 'X') || !s[2])
		return false;
	for (s += 2; *s; s++) {
		int d;

		if (*s >= '0' && *s <= '9')
			d = *s - '0';
		else if (*s >= 'a' && *s <= 'f')
			d = *s - 'a' + 10;
		else if (*s >= 'A' && *s <= 'F')
			d = *s - 'A' + 10;
		else
			return false;
		x = x * 16 + d;
		if (x > max)
			return false;
	}
	*v = x;
	return true;
}

/* Address field @s into @a / @len; *@fam = NFSL_FW_V4, _V6 or both. */
static int parse_addr(const struct where *w, const char *what, const char *s,
		      __u32 *a, __u8 *len, __u8 *fam)
{
	char buf[64];
	const char *slash = strchr(s, '/');
	size_t alen = slash ? (size_t)(slash - s) : strlen(s);
	unsigned long l;
	struct nfsl_ip ip;
	unsigned int max, words;
	const __u8 *b = ip.b;

	memset(a, 0, 4 * sizeof(*a));
	if (is_any(s)) {
		*len = 0;
		*fam = NFSL_FW_V4 | NFSL_FW_V6;
		return 0;
	}
	if (alen >= sizeof(buf))
		goto not_addr;
	memcpy(buf, s, alen);
	buf[alen] = 0;
	if (nfsl_parse_ip(buf, AF_UNSPEC, &ip))
		goto not_addr;
	*fam = ip.af == AF_INET ? NFSL_FW_V4 : NFSL_FW_V6;
	max = ip.af == AF_INET ? 32 : 128;
	words = max / 32;
	l = max;
	if (slash && !dec(slash + 1, max, &l))
		return bad(w, "%s prefix length \"%s\" of %s is not a number 0..%u: write %s/LEN",
			   what, slash + 1, s, max, buf);
	*len = l;
	for (unsigned int i = 0; i < words; i++) {
		__u32 x = (__u32)b[4 * i] << 24 | b[4 * i + 1] << 16 | b[4 * i + 2] << 8 |
			  b[4 * i + 3];
		int keep = (int)l - 32 * (int)i;

		/* Host bits below the prefix do not count (as iptables). */
		if (keep <= 0)
			x = 0;
		else if (keep < 32)
			x &= ~0u << (32 - keep);
		a[i] = x;
	}
	return 0;
not_addr:
	return bad(w, "%s address \"%s\" is not an IPv4 or IPv6 address: write A.B.C.D[/LEN], "
		   "an IPv6 address[/LEN], or any", what, s);
}

static int parse_ports(const struct where *w, const char *what, const char *s,
		       __u16 *lo, __u16 *hi)
{
	const char *colon = strchr(s, ':');
	unsigned long a, b;
	char buf[16];

	if (is_any(s)) {
		*lo = 0;
		*hi = 65535;
		return 0;
	}
	if (!colon) {
		if (!dec(s, 65535, &a))
			goto bad_port;
		*lo = *hi = a;
		return 0;
	}
	if ((size_t)(colon - s) >= sizeof(buf))
		goto bad_port;
	memcpy(buf, s, colon - s);
	buf[colon - s] = 0;
	if (!dec(buf, 65535, &a) || !dec(colon + 1, 65535, &b))
		goto bad_port;
	if (a > b)
		return bad(w, "%s port range %s runs backwards: write LO:HI with LO <= HI",
			   what, s);
	*lo = a;
	*hi = b;
	return 0;
bad_port:
	return bad(w, "%s port \"%s\" is not a port or range of 0..65535: write N, LO:HI, "
		   "LO : HI, or any", what, s);
}

static int parse_proto(const struct where *w, const char *s, struct nfsl_fw_rule *r)
{
	const char *slash = strchr(s, '/');
	unsigned long v, m;
	char buf[16];

	r->proto = 0;
	r->proto_any = 0;
	if (is_any(s)) {
		r->proto_any = 1;
		return 0;
	}
	if (!strcmp(s, "tcp") || !strcmp(s, "TCP")) {
		r->proto = 6;
		return 0;
	}
	if (!strcmp(s, "udp") || !strcmp(s, "UDP")) {
		r->proto = 17;
		return 0;
	}
	if (!slash) {
		if (!dec(s, 255, &v) && !hex(s, 255, &v))
			goto bad_proto;
		r->proto = v;
		return 0;
	}
	if ((size_t)(slash - s) >= sizeof(buf))
		goto bad_proto;
	memcpy(buf, s, slash - s);
	buf[slash - s] = 0;
	if (!hex(buf, 255, &v) || !hex(slash + 1, 255, &m))
		goto bad_proto;
	if (m == 0) {
		r->proto_any = 1;
	} else if (m == 0xff) {
		r->proto = v;
	} else {
		return bad(w, "protocol mask in \"%s\" is neither 0xFF (exact) nor 0x00 (any): "
			   "partial protocol masks are not supported", s);
	}
	return 0;
bad_proto:
	return bad(w, "protocol \"%s\" is not one: write tcp, udp, a number 0..255, "
		   "0xPP/0xFF, 0x00/0x00, or any", s);
}

static int parse_flags(const struct where *w, const char *s)
{
	const char *slash = strchr(s, '/');
	unsigned long v, m;
	char buf[16];

	if (!slash || (size_t)(slash - s) >= sizeof(buf))
		goto bad_flags;
	memcpy(buf, s, slash - s);
	buf[slash - s] = 0;
	if (!hex(buf, 0xffff, &v) || !hex(slash + 1, 0xffff, &m))
		goto bad_flags;
	if (m)
		return bad(w, "TCP flags \"%s\" are not matched by this firewall: give mask "
			   "0x0000 or drop the field", s);
	return 0;
bad_flags:
	return bad(w, "field \"%s\" before the action is not ClassBench TCP flags 0xHHHH/0xHHHH "
		   "(expected [@]SRC DST SPORT DPORT PROTO [FLAGS] ACTION)", s);
}

/* Split @line at blanks into @tok; a lone ':' joins its neighbours
 * (ClassBench writes port ranges "LO : HI"). Returns the count, or -1
 * beyond MAX_TOK. */
static int tokens(char *line, char **tok)
{
	char *save = NULL;
	int n = 0;

	for (char *s = strtok_r(line, BLANKS, &save); s; s = strtok_r(NULL, BLANKS, &save)) {
		if (n == MAX_TOK)
			return -1;
		tok[n++] = s;
	}
	for (int i = 1; i + 1 < n; i++) {
		if (strcmp(tok[i], ":"))
			continue;
		/* The three are adjacent in @line, blanks between: pull the
		 * right part left over them. */
		char *dst = tok[i - 1] + strlen(tok[i - 1]);

		*dst++ = ':';
		memmove(dst, tok[i + 1], strlen(tok[i + 1]) + 1);
		memmove(&tok[i], &tok[i + 2], (n - i - 2) * sizeof(*tok));
		n -= 2;
		i--;
	}
	return n;
}

static int parse_line(const struct where *w, char *line, struct nfsl_fw_rule *r, bool *empty)
{
	char *tok[MAX_TOK], *hash = strchr(line, '#');
	__u8 fs, fd;
	int n, err;

	*empty = false;
	if (hash)
		*hash = 0;
	n = tokens(line, tok);
	if (n == 0) {
		*empty = true;
		return 0;
	}
	if (n > 0 && tok[0][0] == '@') {
		tok[0]++;
		if (!*tok[0])
			return bad(w, "'@' stands alone: write @SRC with no blank after it");
	}
	if (n != 6 && n != 7)
		return bad(w, "%s%d fields, expected [@]SRC DST SPORT DPORT PROTO [FLAGS] ACTION "
			   "(7 or 8 with ClassBench's \"LO : HI\")", n < 0 ? "more than " : "",
			   n < 0 ? MAX_TOK : n);
	memset(r, 0, sizeof(*r));
	r->line = w->line;
	err = parse_addr(w, "source", tok[0], r->src, &r->src_len, &fs);
	if (!err)
		err = parse_addr(w, "destination", tok[1], r->dst, &r->dst_len, &fd);
	if (!err && !(fs & fd))
		err = bad(w, "source %s is IPv%d and destination %s IPv%d: a rule's addresses are "
			  "of one family (any matches both)", tok[0], fs == NFSL_FW_V4 ? 4 : 6,
			  tok[1], fd == NFSL_FW_V4 ? 4 : 6);
	if (!err)
		err = parse_ports(w, "source", tok[2], &r->sport_lo, &r->sport_hi);
	if (!err)
		err = parse_ports(w, "destination", tok[3], &r->dport_lo, &r->dport_hi);
	if (!err)
		err = parse_proto(w, tok[4], r);
	if (!err && n == 7)
		err = parse_flags(w, tok[5]);
	if (err)
		return err;
	r->family = fs & fd;
	if (!strcmp(tok[n - 1], "allow"))
		r->action = NFSL_FW_ALLOW;
	else if (!strcmp(tok[n - 1], "deny"))
		r->action = NFSL_FW_DENY;
	else
		return bad(w, "action \"%s\" is neither allow nor deny (the last field of a rule)",
			   tok[n - 1]);
	return 0;
}

int nfsl_fw_rules_read(FILE *f, const char *name, struct nfsl_fw_rules *out, char *err,
		       size_t errlen)
{
	struct where w = { .name = name, .err = err, .errlen = errlen };
	struct nfsl_fw_rule *r = NULL;
	unsigned int n = 0, cap = 0;
	char *line = NULL;
	size_t lcap = 0;
	ssize_t len;
	int rc = 0;

	out->r = NULL;
	out->n = 0;
	while ((len = getline(&line, &lcap, f)) >= 0) {
		bool empty;

		w.line++;
		if (len > NFSL_FW_MAX_LINE) {
			rc = bad(&w, "line of %zd bytes, at most %d: one rule a line", len,
				 NFSL_FW_MAX_LINE);
			break;
		}
		if (memchr(line, 0, len)) {
			rc = bad(&w, "NUL byte in the line: the rules file is text");
			break;
		}
		if (n == cap) {
			unsigned int c = cap ? 2 * cap : 256;
			struct nfsl_fw_rule *t = realloc(r, c * sizeof(*t));

			if (!t) {
				snprintf(err, errlen, "%s: out of memory at line %u", name, w.line);
				rc = -ENOMEM;
				break;
			}
			r = t;
			cap = c;
		}
		rc = parse_line(&w, line, &r[n], &empty);
		if (rc)
			break;
		if (empty)
			continue;
		if (n == NFSL_FW_MAX_RULES) {
			snprintf(err, errlen, "%s:%u: more than %u rules: split the rule set or "
				 "merge rules", name, w.line, NFSL_FW_MAX_RULES);
			rc = -E2BIG;
			break;
		}
		n++;
	}
	if (!rc && ferror(f)) {
		snprintf(err, errlen, "%s: read error after line %u", name, w.line);
		rc = -EIO;
	}
	free(line);
	if (rc) {
		free(r);
		return rc;
	}
	out->r = r;
	out->n = n;
	return 0;
}

int nfsl_fw_rules_load(const char *path, struct nfsl_fw_rules *out, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	int rc;

	if (!f) {
		rc = -errno;
		snprintf(err, errlen, "cannot open rules file %s: %s (rules=PATH names a readable "
			 "file, format in docs/nf.md#firewall)", path, strerror(-rc));
		out->r = NULL;
		out->n = 0;
		return rc;
	}
	rc = nfsl_fw_rules_read(f, path, out, err, errlen);
	fclose(f);
	return rc;
}

void nfsl_fw_rules_free(struct nfsl_fw_rules *rs)
{
	free(rs->r);
	rs->r = NULL;
	rs->n = 0;
}

static void addr_str(const __u32 *a, __u8 len, __u8 fam, char *buf, size_t sz)
{
	__u8 b[16];
	char s[INET6_ADDRSTRLEN];

	if (fam == (NFSL_FW_V4 | NFSL_FW_V6)) {
		snprintf(buf, sz, "any");
		return;
	}
	for (int i = 0; i < 4; i++) {
		b[4 * i] = a[i] >> 24;
		b[4 * i + 1] = a[i] >> 16;
		b[4 * i + 2] = a[i] >> 8;
		b[4 * i + 3] = a[i];
	}
	inet_ntop(fam == NFSL_FW_V4 ? AF_INET : AF_INET6, b, s, sizeof(s));
	snprintf(buf, sz, "%s/%u", s, len);
}

int nfsl_fw_rule_str(const struct nfsl_fw_rule *r, char *buf, size_t len)
{
	char s[64], d[64], p[16];

	addr_str(r->src, r->src_len, r->family, s, sizeof(s));
	addr_str(r->dst, r->dst_len, r->family, d, sizeof(d));
	if (r->proto_any)
		snprintf(p, sizeof(p), "0x00/0x00");
	else
		snprintf(p, sizeof(p), "0x%02X/0xFF", r->proto);
	return snprintf(buf, len, "@%s %s %u : %u %u : %u %s %s", s, d, r->sport_lo, r->sport_hi,
			r->dport_lo, r->dport_hi, p,
			r->action == NFSL_FW_DENY ? "deny" : "allow");
}
