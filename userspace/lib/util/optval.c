// SPDX-License-Identifier: GPL-2.0
/*
 * The value of an option (nfsl_opt_value): one parser per type of
 * params.h, behind both the command-line tables (params.c) and the
 * KEY=VALUE tables of the NFs' options (nfsl_kv_parse). Apart from
 * params.c so that a library user of KEY=VALUE lists (the NFs, the fuzz
 * targets) does not pull in getopt, --version and the man pages.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "util/params.h"
#include "util/value.h"

/* The fix for a refused number: its range, and why when it looked hex or octal. */
static void num_why(const struct nfsl_opt *o, int rc, char *why, size_t whylen)
{
	snprintf(why, whylen, "give a whole number of %s from %llu to %llu, in decimal digits%s",
		 o->metavar ? o->metavar : "N", (unsigned long long)o->min,
		 (unsigned long long)o->max, rc == -EDOM ? " (no leading 0 or 0x)" : "");
}

int nfsl_opt_value(const struct nfsl_opt *o, void *field, const char *arg, char *why,
		   size_t whylen)
{
	const char *fam = o->af == AF_INET ? "an IPv4" : o->af == AF_INET6 ? "an IPv6"
									: "an IPv4 or IPv6";
	__u64 v;
	int rc;

	switch (o->type) {
	case NFSL_OPT_STR: {
		const char *rule = o->check ? o->check(arg) : NULL;

		if (rule) {
			snprintf(why, whylen, "%s", rule);
			return -EINVAL;
		}
		*(const char **)field = arg;
		return 0;
	}
	case NFSL_OPT_FLAG:
		*(bool *)field = true;
		return 0;
	case NFSL_OPT_U32:
	case NFSL_OPT_U64:
		rc = nfsl_parse_u64(arg, o->min, o->max, &v);
		if (rc) {
			num_why(o, rc, why, whylen);
			return rc;
		}
		if (o->type == NFSL_OPT_U32)
			*(__u32 *)field = (__u32)v;
		else
			*(__u64 *)field = v;
		return 0;
	case NFSL_OPT_DURATION:
	case NFSL_OPT_DURATION64: {
		const char *u = nfsl_unit_name(o->unit);

		rc = nfsl_parse_duration(arg, o->unit, o->bare, o->min, o->max, &v);
		if (rc) {
			/* The number's message first: a bare number is what
			 * these options took before they took units. */
			num_why(o, rc, why, whylen);
			snprintf(why + strlen(why), whylen - strlen(why),
				 ", or a duration with a unit (ns, us, ms, s, m, h) that is a "
				 "whole number of %s, e.g. 2s", u);
			return rc;
		}
		if (o->type == NFSL_OPT_DURATION)
			*(__u32 *)field = (__u32)v;
		else
			*(__u64 *)field = v;
		return 0;
	}
	case NFSL_OPT_IPADDR:
		rc = nfsl_parse_ip(arg, o->af, field);
		if (rc)
			snprintf(why, whylen, "give %s address (e.g. %s)", fam,
				 o->af == AF_INET6 ? "2001:db8::1" : "192.0.2.1");
		return rc;
	case NFSL_OPT_PREFIX:
		rc = nfsl_parse_prefix(arg, o->af, field);
		if (rc == -ERANGE)
			snprintf(why, whylen, "host bits set after the prefix length (e.g. "
				 "10.1.0.0/16, not 10.1.2.3/16)");
		else if (rc)
			snprintf(why, whylen, "give ADDR/LEN, %s prefix (e.g. %s)", fam + 3,
				 o->af == AF_INET6 ? "2001:db8::/32" : "10.1.0.0/16");
		return rc;
	case NFSL_OPT_MAC:
		rc = nfsl_parse_mac(arg, field);
		if (rc)
			snprintf(why, whylen, "give a MAC address, six hex octets separated by "
				 "':' (e.g. 02:00:00:00:00:01)");
		return rc;
	case NFSL_OPT_IFNAME:
		rc = nfsl_parse_ifname(arg);
		if (rc) {
			snprintf(why, whylen, "give an interface name: " NFSL_IFNAME_RULE);
			return rc;
		}
		*(const char **)field = arg;
		return 0;
	case NFSL_OPT_CUSTOM:
		rc = o->parse(arg, field);
		if (rc)
			snprintf(why, whylen, "give %s", o->metavar ? o->metavar : "a valid value");
		return rc;
	case NFSL_OPT_ENUM: {
		size_t used;

		for (int i = 0; o->choices[i]; i++) {
			if (!strcmp(arg, o->choices[i])) {
				*(int *)field = i;
				return 0;
			}
		}
		used = snprintf(why, whylen, "choose one of");
		for (int i = 0; o->choices[i] && used < whylen; i++)
			used += snprintf(why + used, whylen - used, "%s %s", i ? "," : "",
					 o->choices[i]);
		return -EINVAL;
	}
	}
	snprintf(why, whylen, "no parser for the option's type");
	return -EINVAL;
}

/* "a, b=N, c": the keys of @keys (with their metavar if any), for messages. */
static void kv_keys(const struct nfsl_opt *keys, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (const struct nfsl_opt *o = keys; o->name && used < len; o++)
		used += snprintf(buf + used, len - used, "%s%s%s%s", o == keys ? "" : ", ",
				 o->name, o->metavar ? "=" : "", o->metavar ? o->metavar : "");
}

int nfsl_kv_parse(const struct nfsl_opt *keys, const char *const *kv, void *out,
		  char *err, size_t errlen)
{
	bool given[NFSL_MAX_OPTS] = {};
	char list[256], why[256];

	for (; kv && *kv; kv++) {
		const char *eq = strchr(*kv, '=');
		size_t klen = eq ? (size_t)(eq - *kv) : strlen(*kv);
		const struct nfsl_opt *o;
		size_t i;

		for (o = keys, i = 0; o->name; o++, i++)
			if (strlen(o->name) == klen && !strncmp(o->name, *kv, klen))
				break;
		if (!o->name || !eq != (o->type == NFSL_OPT_FLAG)) {
			kv_keys(keys, list, sizeof(list));
			if (!eq && !o->name) {
				snprintf(err, errlen, "'%s' is not KEY=VALUE: give one of %s", *kv,
					 list);
				return -ENOMSG;
			}
			if (!o->name) {
				snprintf(err, errlen, "unknown option '%.*s': the options are %s",
					 (int)klen, *kv, list);
				return -ENOENT;
			}
			if (eq)
				snprintf(err, errlen, "%s: %s takes no value: give %s alone", *kv,
					 o->name, o->name);
			else
				snprintf(err, errlen, "'%s' is not KEY=VALUE: give %s=%s", *kv,
					 o->name, o->metavar ? o->metavar : "VALUE");
			return -EINVAL;
		}
		if (nfsl_opt_value(o, (char *)out + o->off, eq ? eq + 1 : "", why, sizeof(why))) {
			if (o->bad)
				snprintf(err, errlen, "%s%s", *kv, o->bad);
			else
				snprintf(err, errlen, "%s: %s", *kv, why);
			return -EINVAL;
		}
		if (i < NFSL_MAX_OPTS)
			given[i] = true;
		if (o->given)
			*(bool *)((char *)out + o->given - 1) = true;
	}
	for (size_t i = 0; keys[i].name && i < NFSL_MAX_OPTS; i++) {
		if (keys[i].required && !given[i]) {
			snprintf(err, errlen, "%s= is missing: give %s=%s", keys[i].name, keys[i].name,
				 keys[i].metavar ? keys[i].metavar : "VALUE");
			return -EINVAL;
		}
	}
	return 0;
}
