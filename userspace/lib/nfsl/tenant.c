// SPDX-License-Identifier: GPL-2.0
/* Tenants of a domain: file, layout, rules, state, max-min (tenant.h). */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "nfsl/cfg.h"
#include "nfsl/tenant.h"
#include "util/value.h"

#define TEN_DEFAULT "default"

_Static_assert(NFSL_MAX_SLOTS == 1048576, "NFSL_QUOTA_RULE states NFSL_MAX_SLOTS");

int nfsl_quota_parse(const char *v, struct nfsl_quota *q)
{
	size_t n = strlen(v);
	__u64 slots;
	int rc;

	memset(q, 0, sizeof(*q));
	if (n && v[n - 1] == '%') {
		q->pct = true;
		return nfsl_parse_percent(v, &q->frac);
	}
	rc = nfsl_parse_u64(v, 0, NFSL_MAX_SLOTS, &slots);
	q->slots = (__u32)slots;
	return rc;
}

/* ADDR/LEN (nfsl_parse_prefix: no host bits, -ERANGE) as the map's key:
 * IPv4 as v4-mapped IPv6 (::ffff:0:0/96). */
static int parse_prefix(const char *v, struct nfsl_tenant_pfx *k)
{
	struct nfsl_prefix p;
	int rc = nfsl_parse_prefix(v, AF_UNSPEC, &p);

	if (rc)
		return rc == -ERANGE ? rc : -EINVAL;
	memset(k, 0, sizeof(*k));
	if (p.addr.af == AF_INET6) {
		memcpy(k->addr, p.addr.b, 16);
		k->prefixlen = p.len;
	} else {
		memcpy(k->addr + 12, p.addr.b, 4);
		k->addr[10] = k->addr[11] = 0xff;
		k->prefixlen = 96 + p.len;
	}
	return 0;
}

static bool name_ok(const char *s)
{
	size_t n = strlen(s);

	if (!n || n > 15)
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && !strchr("_.-", *s))
			return false;
	return true;
}

/* One key=value of tenant @t on line @ln. */
static int parse_kv(struct nfsl_tenant_spec *sp, __u32 t, char *kv, const char *path, int ln,
		    char *err, size_t errlen)
{
	char *v = strchr(kv, '=');
	__u64 x;
	int rc;

	if (!v) {
		snprintf(err, errlen, "%s:%d: '%s' is not KEY=VALUE (keys: quota, weight, min, "
			 "dev, vlan, dst)", path, ln, kv);
		return -EINVAL;
	}
	*v++ = '\0';
	if (!strcmp(kv, "quota")) {
		if (!t) {
			snprintf(err, errlen, "%s:%d: the default tenant takes no quota: it gets "
				 "what the others leave", path, ln);
			return -EINVAL;
		}
		if (nfsl_quota_parse(v, &sp->t[t].quota))
			goto bad_quota;
		sp->t[t].has_quota = true;
	} else if (!strcmp(kv, "min")) {
		if (nfsl_quota_parse(v, &sp->t[t].min))
			goto bad_quota;
	} else if (!strcmp(kv, "weight")) {
		if (nfsl_parse_u64(v, 1, 1000, &x)) {
			snprintf(err, errlen, "%s:%d: weight=%s: give an integer 1-1000", path, ln,
				 v);
			return -EINVAL;
		}
		sp->t[t].weight = x;
	} else if (!strcmp(kv, "dev")) {
		if (sp->ndevs >= NFSL_MAX_IFACES || nfsl_parse_ifname(v)) {
			snprintf(err, errlen, "%s:%d: dev=%s: an interface name, at most %d "
				 "dev= rules", path, ln, v, NFSL_MAX_IFACES);
			return -EINVAL;
		}
		for (__u32 i = 0; i < sp->ndevs; i++)
			if (!strcmp(sp->devs[i].name, v)) {
				snprintf(err, errlen, "%s:%d: dev=%s is given twice", path, ln, v);
				return -EINVAL;
			}
		snprintf(sp->devs[sp->ndevs].name, IF_NAMESIZE, "%s", v);
		sp->devs[sp->ndevs++].tenant = t;
	} else if (!strcmp(kv, "vlan")) {
		if (nfsl_parse_u64(v, 1, 4094, &x)) {
			snprintf(err, errlen, "%s:%d: vlan=%s: give a VLAN ID 1-4094", path, ln, v);
			return -EINVAL;
		}
		if (sp->vlan[x]) {
			snprintf(err, errlen, "%s:%d: vlan=%llu is given twice", path, ln,
				 (unsigned long long)x);
			return -EINVAL;
		}
		sp->vlan[x] = t + 1;
		sp->has_vlan = true;
	} else if (!strcmp(kv, "dst")) {
		if (sp->npfx >= NFSL_MAX_TENANT_PREFIXES) {
			snprintf(err, errlen, "%s:%d: more than %d dst= prefixes", path, ln,
				 NFSL_MAX_TENANT_PREFIXES);
			return -EINVAL;
		}
		rc = parse_prefix(v, &sp->pfx[sp->npfx].key);
		if (rc) {
			snprintf(err, errlen, "%s:%d: dst=%s: %s", path, ln, v,
				 rc == -ERANGE ? "host bits set after the prefix length "
						 "(e.g. 10.1.0.0/16, not 10.1.2.3/16)"
					       : "give ADDR/LEN, IPv4 or IPv6");
			return -EINVAL;
		}
		for (__u32 i = 0; i < sp->npfx; i++)
			if (!memcmp(&sp->pfx[i].key, &sp->pfx[sp->npfx].key,
				    sizeof(struct nfsl_tenant_pfx))) {
				snprintf(err, errlen, "%s:%d: dst=%s is given twice", path, ln, v);
				return -EINVAL;
			}
		sp->pfx[sp->npfx++].tenant = t;
	} else {
		snprintf(err, errlen, "%s:%d: unknown key '%s' (keys: quota, weight, min, dev, "
			 "vlan, dst)", path, ln, kv);
		return -EINVAL;
	}
	return 0;
bad_quota:
	snprintf(err, errlen, "%s:%d: %s=%s: give " NFSL_QUOTA_RULE, path, ln, kv, v);
	return -EINVAL;
}

/* What a non-regular file is, for the message. */
static const char *file_kind(mode_t m)
{
	return S_ISFIFO(m) ? "a FIFO" : S_ISCHR(m) ? "a character device" :
	       S_ISBLK(m) ? "a block device" : S_ISDIR(m) ? "a directory" :
	       S_ISSOCK(m) ? "a socket" : "not a regular file";
}

/*
 * The tenants file @path into @buf (NFSL_TENANTS_MAX_BYTES + 1 bytes),
 * NUL-terminated; *@len its bytes. A regular file only: opened
 * non-blocking, so a FIFO with no writer does not hang the open, and
 * refused by fstat before any read (/dev/zero would never end).
 */
static int read_tenants_file(const char *path, char *buf, size_t *len, char *err,
			     size_t errlen)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY), rc = 0;
	struct stat st;
	ssize_t n;

	if (fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "cannot read the tenants file %s: %s", path, strerror(-rc));
		return rc;
	}
	if (fstat(fd, &st)) {
		rc = -errno;
		snprintf(err, errlen, "cannot read the tenants file %s: %s", path, strerror(-rc));
	} else if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "the tenants file %s is %s: give a regular text file, "
			 "one tenant per line (NAME quota=Q ...)", path, file_kind(st.st_mode));
		rc = -EINVAL;
	} else if (st.st_size > NFSL_TENANTS_MAX_BYTES) {
		snprintf(err, errlen, "the tenants file %s has %lld bytes, more than the %d a "
			 "tenants file may have (%d tenants, one line each): give the tenants "
			 "file", path, (long long)st.st_size, NFSL_TENANTS_MAX_BYTES,
			 NFSL_MAX_TENANTS);
		rc = -EINVAL;
	}
	for (*len = 0; !rc && *len <= NFSL_TENANTS_MAX_BYTES; *len += n) {
		n = read(fd, buf + *len, NFSL_TENANTS_MAX_BYTES + 1 - *len);
		if (n < 0) {
			rc = -errno;
			snprintf(err, errlen, "cannot read the tenants file %s: %s", path,
				 strerror(-rc));
		}
		if (n <= 0)
			break;
	}
	if (!rc && *len > NFSL_TENANTS_MAX_BYTES) { /* grew since the fstat */
		snprintf(err, errlen, "the tenants file %s has more than %d bytes: give the "
			 "tenants file", path, NFSL_TENANTS_MAX_BYTES);
		rc = -EINVAL;
	}
	close(fd);
	if (!rc)
		buf[*len] = '\0';
	return rc;
}

int nfsl_tenants_parse(const char *path, struct nfsl_tenant_spec *sp, char *err, size_t errlen)
{
	char line[NFSL_TENANTS_MAX_LINE + 1], *buf;
	size_t len = 0, at = 0;
	int ln = 0, rc;

	memset(sp, 0, sizeof(*sp));
	snprintf(sp->t[0].name, sizeof(sp->t[0].name), TEN_DEFAULT);
	sp->t[0].weight = 1;
	sp->n = 1;
	buf = malloc(NFSL_TENANTS_MAX_BYTES + 1);
	if (!buf) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	rc = read_tenants_file(path, buf, &len, err, errlen);
	while (!rc && at < len) {
		char *save = NULL, *tok, *hash, *nl = memchr(buf + at, '\n', len - at);
		size_t ll = (nl ? (size_t)(nl - buf) : len) - at;
		__u32 t;

		ln++;
		/* Text only: a NUL or a control byte means a binary file
		 * (UTF-8 in comments is fine). */
		for (size_t k = 0; k < ll; k++) {
			unsigned char c = buf[at + k];

			if (c < 0x20 && c != '\t' && c != '\r') {
				snprintf(err, errlen, "%s:%d: byte 0x%02x at column %zu is not "
					 "text: a tenants file is text lines (NAME quota=Q ...), "
					 "not a binary file", path, ln, c, k + 1);
				rc = -EINVAL;
				goto out;
			}
		}
		if (ll > NFSL_TENANTS_MAX_LINE) {
			snprintf(err, errlen, "%s:%d: line longer than %d bytes: split the "
				 "rules over fewer dst= prefixes or shorter comments", path, ln,
				 NFSL_TENANTS_MAX_LINE);
			rc = -EINVAL;
			goto out;
		}
		memcpy(line, buf + at, ll);
		line[ll] = '\0';
		at += ll + 1;
		hash = strchr(line, '#');
		if (hash)
			*hash = '\0';
		tok = strtok_r(line, " \t\r", &save);
		if (!tok)
			continue;
		if (!name_ok(tok)) {
			snprintf(err, errlen, "%s:%d: tenant name '%s': 1-15 of A-Z a-z 0-9 _ . -",
				 path, ln, tok);
			rc = -EINVAL;
			goto out;
		}
		for (t = 0; t < sp->n; t++)
			if (!strcmp(sp->t[t].name, tok))
				break;
		if (t && t < sp->n) {
			snprintf(err, errlen, "%s:%d: tenant '%s' is declared twice", path, ln, tok);
			rc = -EINVAL;
			goto out;
		}
		if (t == sp->n) {
			if (sp->n >= NFSL_MAX_TENANTS) {
				snprintf(err, errlen, "%s:%d: more than %d tenants (default "
					 "included)", path, ln, NFSL_MAX_TENANTS);
				rc = -EINVAL;
				goto out;
			}
			snprintf(sp->t[t].name, sizeof(sp->t[t].name), "%s", tok);
			sp->t[t].weight = 1;
			sp->n++;
		}
		while ((tok = strtok_r(NULL, " \t\r", &save)))
			if ((rc = parse_kv(sp, t, tok, path, ln, err, errlen)))
				goto out;
		if (t && !sp->t[t].has_quota) {
			snprintf(err, errlen, "%s:%d: tenant '%s' has no quota: add quota=N%% or "
				 "quota=SLOTS", path, ln, sp->t[t].name);
			rc = -EINVAL;
			goto out;
		}
	}
	/* A file that declares nobody (empty, comments only, or default
	 * alone) would attach as if --tenants were not given. */
	if (!rc && sp->n < 2) {
		snprintf(err, errlen, "the tenants file %s declares no tenant: add a line "
			 "NAME quota=N%% [dev=IFACE] [vlan=VID] [dst=PREFIX] for each tenant "
			 "(nfslice tenants; docs/manager.md \"Tenants\"), or give no --tenants",
			 path);
		rc = -EINVAL;
	}
out:
	free(buf);
	return rc;
}

__u32 nfsl_quota_slots(const struct nfsl_config *cfg, const struct nfsl_quota *q)
{
	__u32 parts = cfg->ncpus * (cfg->nparts ? cfg->nparts : 1);

	if (q->pct)
		return (__u32)floor(q->frac * cfg->part_slots + 1e-9);
	return parts ? q->slots / parts : 0;
}

int nfsl_tenants_layout(struct nfsl_config *cfg, const __u32 *size)
{
	__u32 at = 0, n = cfg->ntenants;

	for (__u32 t = 1; t < n; t++) {
		if (size[t] > cfg->part_slots - at)
			return -ENOSPC;
		cfg->tenants[t].base = at;
		cfg->tenants[t].size = size[t];
		at += size[t];
	}
	cfg->tenants[0].base = at;
	cfg->tenants[0].size = cfg->part_slots - at;
	return 0;
}

/* nfsl_tenants_config on a copy: @cfg changes only when all is well. */
static int tenants_config(struct nfsl_config *cfg, const struct nfsl_tenant_spec *sp, char *err,
			  size_t errlen);

int nfsl_tenants_config(struct nfsl_config *cfg, const struct nfsl_tenant_spec *sp, char *err,
			size_t errlen)
{
	struct nfsl_config c = *cfg;
	int rc = tenants_config(&c, sp, err, errlen);

	if (!rc)
		*cfg = c;
	return rc;
}

static int tenants_config(struct nfsl_config *cfg, const struct nfsl_tenant_spec *sp, char *err,
			  size_t errlen)
{
	__u32 size[NFSL_MAX_TENANTS] = {}, mins = 0;
	double share = 0;

	if (cfg->ntenants) {
		bool same = cfg->ntenants == sp->n;

		for (__u32 t = 0; same && t < sp->n; t++)
			same = !strncmp(cfg->tenants[t].name, sp->t[t].name,
					sizeof(cfg->tenants[t].name));
		if (!same) {
			snprintf(err, errlen, "the tenants are fixed at attach: give the same "
				 "tenants in the same order (quotas, weights, mins and rules may "
				 "change); detach and attach again to change them");
			return -EINVAL;
		}
	}
	for (__u32 t = 1; t < sp->n; t++) {
		size[t] = nfsl_quota_slots(cfg, &sp->t[t].quota);
		share += size[t];
	}
	cfg->ntenants = sp->n;
	if (nfsl_tenants_layout(cfg, size)) {
		snprintf(err, errlen, "the quotas add up to %.0f slots of each partition, which "
			 "has %u: lower them", share, cfg->part_slots);
		return -ENOSPC;
	}
	for (__u32 t = 0; t < sp->n; t++) {
		struct nfsl_tenant *tn = &cfg->tenants[t];

		memcpy(tn->name, sp->t[t].name, sizeof(tn->name));
		tn->weight = sp->t[t].weight ? sp->t[t].weight : 1;
		tn->min = nfsl_quota_slots(cfg, &sp->t[t].min);
		mins += tn->min;
	}
	if (mins > cfg->part_slots) {
		snprintf(err, errlen, "the mins add up to %u slots of each partition, which has "
			 "%u: lower them", mins, cfg->part_slots);
		return -ENOSPC;
	}
	for (__u32 i = 0; i < cfg->nifaces && i < NFSL_MAX_IFACES; i++)
		cfg->ifaces[i].tenant = 0;
	for (__u32 k = 0; k < sp->ndevs; k++) {
		unsigned int ifindex = if_nametoindex(sp->devs[k].name);
		__u32 i = ifindex ? nfsl_iface_idx(cfg, ifindex) : NFSL_MAX_IFACES;

		if (i >= NFSL_MAX_IFACES || (cfg->ifaces[i].flags & NFSL_IF_NF_PORT)) {
			snprintf(err, errlen, "dev=%s: not a domain interface in this network "
				 "namespace (tenants are chosen where packets enter the domain)",
				 sp->devs[k].name);
			return -EINVAL;
		}
		cfg->ifaces[i].tenant = sp->devs[k].tenant;
	}
	cfg->tenant_flags &= NFSL_TEN_DYNAMIC;
	if (sp->npfx)
		cfg->tenant_flags |= NFSL_TEN_PREFIX;
	if (sp->has_vlan)
		cfg->tenant_flags |= NFSL_TEN_VLAN;
	return 0;
}

static int pin_fd(const char *dir, const char *name)
{
	char path[PATH_MAX + 32];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = bpf_obj_get(path);
	return fd < 0 ? -errno : fd;
}

int nfsl_tenants_write_rules(const char *dir, const struct nfsl_tenant_spec *sp)
{
	struct nfsl_tenant_pfx key, next;
	int pfx = pin_fd(dir, NFSL_PIN_TENANT_PREFIX), vlan = -1, rc = 0;
	void *prev = NULL;

	if (pfx < 0)
		return pfx;
	vlan = pin_fd(dir, NFSL_PIN_TENANT_VLAN);
	if (vlan < 0) {
		rc = vlan;
		goto out;
	}
	/* New rules in (an update replaces a prefix's tenant), then the old
	 * ones that are gone out: a prefix is never without its rule. */
	for (__u32 i = 0; i < sp->npfx; i++)
		if (bpf_map_update_elem(pfx, &sp->pfx[i].key, &sp->pfx[i].tenant, BPF_ANY)) {
			rc = -errno;
			goto out;
		}
	while (!bpf_map_get_next_key(pfx, prev, &next)) {
		bool keep = false;

		for (__u32 i = 0; i < sp->npfx && !keep; i++)
			keep = !memcmp(&sp->pfx[i].key, &next, sizeof(next));
		key = next;
		if (!keep && bpf_map_delete_elem(pfx, &key) && errno != ENOENT) {
			rc = -errno;
			goto out;
		}
		prev = keep ? &key : NULL; /* deleted: start over */
	}
	for (__u32 vid = 0; vid < NFSL_VLAN_IDS; vid++) {
		__u32 v = sp->vlan[vid], old = 0;

		if (!bpf_map_lookup_elem(vlan, &vid, &old) && old == v)
			continue;
		if (bpf_map_update_elem(vlan, &vid, &v, BPF_ANY)) {
			rc = -errno;
			goto out;
		}
	}
out:
	close(pfx);
	if (vlan >= 0)
		close(vlan);
	return rc;
}

/* Tenant changes need a domain with tenants. */
static int has_tenants(const struct nfsl_domain *d, char *err, size_t errlen)
{
	if (d->cfg.ntenants)
		return 0;
	snprintf(err, errlen, "the domain has no tenants: they are declared at attach "
		 "(nfslice attach --tenants FILE)");
	return -EINVAL;
}

static int apply_spec(struct nfsl_domain *d, const void *arg, char *err, size_t errlen)
{
	const struct nfsl_tenant_spec *sp = arg;
	struct nfsl_config c = d->cfg;
	int rc = has_tenants(d, err, errlen);

	if (!rc)
		rc = tenants_config(&c, sp, err, errlen);
	if (rc)
		return rc;
	rc = nfsl_tenants_write_rules(d->dir, sp);
	if (rc) {
		snprintf(err, errlen, "cannot write the tenant rules: %s", strerror(-rc));
		return rc;
	}
	d->cfg = c;
	return 0;
}

int nfsl_tenants_apply(const char *dir, const struct nfsl_tenant_spec *sp, const __u32 *if_gen,
		       struct nfsl_config *out, char *err, size_t errlen)
{
	return nfsl_config_update(dir, if_gen, apply_spec, sp, out, err, errlen);
}

struct resize_arg {
	const __u32 *size;
	int mode;
};

static int apply_resize(struct nfsl_domain *d, const void *arg, char *err, size_t errlen)
{
	const struct resize_arg *r = arg;

	if (has_tenants(d, err, errlen))
		return -EINVAL;
	if (r->size && nfsl_tenants_layout(&d->cfg, r->size)) {
		snprintf(err, errlen, "the quotas add up to more than the %u slots of a "
			 "partition: lower them", d->cfg.part_slots);
		return -ENOSPC;
	}
	if (r->mode == 1)
		d->cfg.tenant_flags |= NFSL_TEN_DYNAMIC;
	else if (!r->mode)
		d->cfg.tenant_flags &= ~NFSL_TEN_DYNAMIC;
	return 0;
}

int nfsl_tenants_resize(const char *dir, const __u32 *size, int mode, const __u32 *if_gen,
			struct nfsl_config *out, char *err, size_t errlen)
{
	struct resize_arg r = { size, mode };

	return nfsl_config_update(dir, if_gen, apply_resize, &r, out, err, errlen);
}

int nfsl_tenants_read(const struct nfsl_domain *d, struct nfsl_tenant_state *st,
		      __u64 *cpu_attempts, __u64 *cpu_sliced, __u32 *cpu_busy)
{
	const struct nfsl_config *cfg = &d->cfg;
	int ncpus = libbpf_num_possible_cpus(), fd = -1, rc = 0;
	__u32 nparts = cfg->nparts ? cfg->nparts : 1, n = cfg->ntenants;
	struct nfsl_tenant_counters *per = NULL;
	struct bpf_map_info info = {};
	__u32 ilen = sizeof(info), *pbusy = NULL;
	struct nfsl_slot *store = MAP_FAILED;
	size_t len = 0;

	if (!n || n > NFSL_MAX_TENANTS)
		return -ENOENT;
	if (ncpus <= 0)
		return ncpus ? ncpus : -EINVAL;
	memset(st, 0, n * sizeof(*st));
	fd = pin_fd(d->dir, NFSL_PIN_TENANT_COUNTERS);
	per = calloc(ncpus, sizeof(*per));
	pbusy = calloc((size_t)cfg->ncpus * nparts * NFSL_MAX_TENANTS, sizeof(*pbusy));
	if (fd < 0 || !per || !pbusy) {
		rc = fd < 0 ? fd : -ENOMEM;
		goto out;
	}
	for (__u32 t = 0; t < n; t++) {
		if (bpf_map_lookup_elem(fd, &t, per)) {
			rc = -errno;
			goto out;
		}
		for (int c = 0; c < ncpus; c++) {
			__u64 *dst = (__u64 *)&st[t].cnt, *src = (__u64 *)&per[c];

			for (size_t i = 0; i < sizeof(per[c]) / sizeof(__u64); i++)
				dst[i] += src[i];
			if (cpu_attempts)
				cpu_attempts[c * NFSL_MAX_TENANTS + t] = per[c].attempts;
			if (cpu_sliced)
				cpu_sliced[c * NFSL_MAX_TENANTS + t] = per[c].sliced;
		}
	}
	if (bpf_obj_get_info_by_fd(d->store_fd, &info, &ilen)) {
		rc = -errno;
		goto out;
	}
	len = (size_t)info.max_entries * sizeof(struct nfsl_slot);
	store = mmap(NULL, len, PROT_READ, MAP_SHARED, d->store_fd, 0);
	if (store == MAP_FAILED) {
		rc = -errno;
		goto out;
	}
	for (__u32 i = 0; i < cfg->slots && i < info.max_entries; i++) {
		__u32 t = store[i].tenant, p = i / cfg->part_slots;

		if (!NFSL_CTL_EXP(__atomic_load_n(&store[i].ctl, __ATOMIC_RELAXED)) || t >= n)
			continue;
		st[t].busy++;
		pbusy[p * NFSL_MAX_TENANTS + t]++;
	}
	/* Partition p = cpu x nparts + dst (nfsl_alloc_slot). */
	for (__u32 p = 0; p < cfg->ncpus * nparts; p++)
		for (__u32 t = 0; t < n; t++) {
			__u32 b = pbusy[p * NFSL_MAX_TENANTS + t];

			if (b > st[t].busy_max)
				st[t].busy_max = b;
			if (cpu_busy)
				cpu_busy[(p / nparts) * NFSL_MAX_TENANTS + t] += b;
		}
out:
	if (store != MAP_FAILED)
		munmap(store, len);
	if (fd >= 0)
		close(fd);
	free(per);
	free(pbusy);
	return rc;
}

int nfsl_maxmin(__u32 n, const double *demand, const __u32 *weight, const __u32 *min,
		__u32 capacity, __u32 *out)
{
	double want[NFSL_MAX_TENANTS], give[NFSL_MAX_TENANTS], left = capacity;
	bool open[NFSL_MAX_TENANTS];
	__u32 sum = 0, nopen = 0, best = 0;

	if (n > NFSL_MAX_TENANTS)
		return -EINVAL;
	for (__u32 t = 0; t < n; t++) {
		give[t] = min[t];
		left -= min[t];
		want[t] = demand[t] > min[t] ? demand[t] - min[t] : 0;
		open[t] = want[t] > 0;
		nopen += open[t];
	}
	if (left < 0)
		return -ENOSPC;
	/* Progressive filling: each round, the open claimants share what is
	 * left by weight; those whose rest fits take it and close. */
	while (nopen && left > 1e-9) {
		double wsum = 0, unit;
		bool closed = false;

		for (__u32 t = 0; t < n; t++)
			if (open[t])
				wsum += weight[t];
		unit = left / wsum;
		for (__u32 t = 0; t < n; t++)
			if (open[t] && want[t] <= unit * weight[t]) {
				give[t] += want[t];
				left -= want[t];
				open[t] = false;
				nopen--;
				closed = true;
			}
		if (closed)
			continue;
		for (__u32 t = 0; t < n; t++)
			if (open[t]) {
				give[t] += unit * weight[t];
				want[t] -= unit * weight[t];
			}
		left = 0;
	}
	/* What no one wants is shared by weight: no slot stays idle. */
	if (left > 1e-9) {
		double wsum = 0;

		for (__u32 t = 0; t < n; t++)
			wsum += weight[t];
		for (__u32 t = 0; t < n; t++)
			give[t] += left * weight[t] / wsum;
	}
	for (__u32 t = 0; t < n; t++) {
		out[t] = (__u32)floor(give[t] + 1e-9);
		if (out[t] < min[t])
			out[t] = min[t];
		sum += out[t];
		if (weight[t] > weight[best] || (weight[t] == weight[best] && give[t] > give[best]))
			best = t;
	}
	/* Rounding leaves a few slots: to the heaviest claimant. */
	if (sum < capacity)
		out[best] += capacity - sum;
	return 0;
}

double nfsl_tenant_demand(__u64 attempts, __u64 sliced, __u32 busy, double dt_s,
			  double w_default_s)
{
	double lambda, w;

	if (dt_s <= 0)
		return 0;
	lambda = attempts / dt_s;
	w = sliced ? busy / (sliced / dt_s) : w_default_s;
	return lambda * w * NFSL_TENANT_HEADROOM;
}
