/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Tenants of a domain (issue 10 §5; docs/manager.md "Tenants"): the store
 * partitioned between tenants chosen by ingress interface, outer VLAN or
 * destination prefix, each with a quota: a region of every allocation
 * partition (struct nfsl_tenant) that only its traffic allocates from,
 * with a cursor and a clock of its own (bpf/nfsl_alloc.h nfsl_alloc_tenant).
 * PayloadPark §6.2.3 gives each NF server a static memory slice; here the
 * slices are per tenant, static (the tenants file) or moved by nfsliced
 * toward measured demand by weighted max-min (SuperNIC §4.4 shares NIC
 * memory by DRF over measured demand; with one resource, DRF is weighted
 * max-min). Over-quota traffic passes unsliced (skipped_quota), never
 * dropped; a tenant's burst never evicts another tenant's payloads.
 *
 * Tenants file: one tenant per line, '#' starts a comment:
 *
 *     NAME [quota=Q] [weight=W] [min=Q] [dev=IFACE]... [vlan=VID]... [dst=PREFIX]...
 *
 * NAME: 1-15 of [A-Za-z0-9_.-]; "default" is the tenant of what no rule
 * claims, whose quota is what the others leave (it takes no quota=). Q:
 * "N%" of each partition (decimals allowed) or "N" slots of the store
 * (split evenly over its partitions), in decimal digits (nfsl_quota_parse).
 * W: 1-1000 (default 1). A packet's tenant is its longest matching dst=
 * prefix's, else its outer VLAN's, else its ingress interface's, else
 * default. At most NFSL_MAX_TENANTS
 * tenants with default, NFSL_MAX_TENANT_PREFIXES prefixes.
 */
#ifndef NFSL_TENANT_H
#define NFSL_TENANT_H

#include <stdbool.h>
#include <stddef.h>
#include <net/if.h>

#include "nfsl/domain.h"

/* A quota (or min) as a file gives it: a share of each partition, or
 * slots of the whole store. */
struct nfsl_quota {
	bool pct;     /* share: frac of each partition */
	double frac;  /* 0..1 */
	__u32 slots;  /* slots of the store */
};

/* A tenants file, parsed. Tenant 0 is default. */
struct nfsl_tenant_spec {
	__u32 n; /* tenants, default included (>= 1) */
	struct {
		char name[16];
		bool has_quota;
		struct nfsl_quota quota, min;
		__u32 weight;
	} t[NFSL_MAX_TENANTS];
	__u32 ndevs;
	struct {
		char name[IF_NAMESIZE];
		__u32 tenant;
	} devs[NFSL_MAX_IFACES];
	__u32 npfx;
	struct {
		struct nfsl_tenant_pfx key; /* IPv4 mapped (nfsl_tenant_pfx) */
		__u32 tenant;
	} pfx[NFSL_MAX_TENANT_PREFIXES];
	__u8 vlan[NFSL_VLAN_IDS]; /* tenant + 1; 0 = no rule */
	bool has_vlan;
};

/* Limits of a tenants file: its bytes and a line's. */
#define NFSL_TENANTS_MAX_BYTES 65536
#define NFSL_TENANTS_MAX_LINE 4095

/*
 * nfsl_tenants_parse - read the tenants file @path into @spec. It must be
 * a regular file (a FIFO or a device is refused before any read, so none
 * can hang it) of at most NFSL_TENANTS_MAX_BYTES, text lines of at most
 * NFSL_TENANTS_MAX_LINE bytes (a NUL or a control byte other than tab and
 * CR is refused), and declare at least one tenant besides default.
 * Returns 0, or -EINVAL / -ENOMEM / -errno with a message in @err naming
 * the file, the line and what to fix.
 */
int nfsl_tenants_parse(const char *path, struct nfsl_tenant_spec *spec, char *err, size_t errlen);

/*
 * nfsl_quota_parse - a quota (or min) into @q: "P%" of each partition, P
 * in [0, 100] with a fraction allowed (nfsl_parse_percent: "12.5%"), or
 * "N" slots of the store, N a whole number in [0, NFSL_MAX_SLOTS]
 * (nfsl_parse_u64). Decimal digits only: "0x10", "010", "1e3", "-1" are
 * refused, never read as 16, 8 or 1000. Returns 0 or util/value.h's
 * -EINVAL, -EDOM (hex or octal) or -ERANGE.
 */
int nfsl_quota_parse(const char *v, struct nfsl_quota *q);

/* The spellings nfsl_quota_parse takes, in a printf format ("give " RULE). */
#define NFSL_QUOTA_RULE                                                                    \
	"N%% of each partition (0-100) or N slots of the store (0-1048576), in decimal "   \
	"digits: a whole number of slots, a percentage with a fraction allowed (12.5%%); " \
	"no leading 0, 0x or exponent"

/*
 * nfsl_quota_slots - @q in slots of each partition of @cfg (rounded down).
 */
__u32 nfsl_quota_slots(const struct nfsl_config *cfg, const struct nfsl_quota *q);

/*
 * nfsl_tenants_layout - regions of @cfg's tenants from @size[] (slots per
 * partition, tenants 1..ntenants-1; tenant 0's entry is ignored): tenant
 * 1 from slot 0 on, each after the previous, default (0) gets the rest.
 * Returns 0, or -ENOSPC when they add up to more than a partition.
 */
int nfsl_tenants_layout(struct nfsl_config *cfg, const __u32 *size);

/*
 * nfsl_tenants_config - apply @spec to @cfg: names, weights, mins,
 * quotas as regions (nfsl_tenants_layout), each dev= interface's tenant,
 * the rule flags. For a domain that has tenants already (a runtime change)
 * the tenants must be the same, by name and order: their number is fixed
 * at attach (-EINVAL otherwise). Returns 0 or -errno with @err set.
 */
int nfsl_tenants_config(struct nfsl_config *cfg, const struct nfsl_tenant_spec *spec,
			char *err, size_t errlen);

/*
 * nfsl_tenants_write_rules - replace the prefix and VLAN rules of the
 * domain at pin directory @dir with @spec's. Returns 0 or -errno.
 */
int nfsl_tenants_write_rules(const char *dir, const struct nfsl_tenant_spec *spec);

/*
 * nfsl_tenants_apply - @spec on the running domain at @dir, as one
 * runtime change (userspace/lib/nfsl/cfg.h): under the host-wide lock, rules first
 * (a packet classified by new rules into an old region is harmless), then
 * the config with a new generation. @if_gen as nfsl_config_change. *@out
 * gets the config as written. Returns 0, -ESTALE, -EINVAL, -ENOSPC, -ENOENT
 * or other -errno, with @err set.
 */
int nfsl_tenants_apply(const char *dir, const struct nfsl_tenant_spec *spec, const __u32 *if_gen,
		       struct nfsl_config *out, char *err, size_t errlen);

/*
 * nfsl_tenants_resize - set the quotas (slots per partition, @size[t]
 * for t >= 1; default gets the rest) and, when @mode >= 0, the dynamic
 * flag (1 dynamic, 0 static) of the domain at @dir, as one runtime change
 * (lock, @if_gen, generation). Payloads in slots that change tenant stay
 * until spliced, dropped or evicted by the TTL: the new owner never takes
 * a busy slot of another tenant. Returns as nfsl_tenants_apply.
 */
int nfsl_tenants_resize(const char *dir, const __u32 *size, int mode, const __u32 *if_gen,
			struct nfsl_config *out, char *err, size_t errlen);

/* One tenant's state, as `nfslice tenants`, the metrics and the dynamic
 * mode read it. */
struct nfsl_tenant_state {
	struct nfsl_tenant_counters cnt; /* summed over CPUs */
	__u32 busy;                      /* slots holding its payloads */
	__u32 busy_max;                  /* most in one partition */
};

/*
 * nfsl_tenants_read - counters and occupancy of each of @d's tenants into
 * @st[0..ntenants-1] (occupancy by a scan of the store's slots: slot
 * tenant and control word, through an mmap). @cpu_attempts/@cpu_sliced/
 * @cpu_busy, when not NULL, get the same per CPU share: [cpu *
 * NFSL_MAX_TENANTS + t]. Returns 0, -ENOENT (no tenants), other -errno.
 */
int nfsl_tenants_read(const struct nfsl_domain *d, struct nfsl_tenant_state *st,
		      __u64 *cpu_attempts, __u64 *cpu_sliced, __u32 *cpu_busy);

/*
 * nfsl_maxmin - weighted max-min fair shares with floors: @n claimants
 * with demands @demand (slots), weights @weight (>= 1) and floors @min
 * share @capacity slots. Each gets its floor; then, in rounds, every
 * claimant not yet satisfied gets up to its weighted share of what is
 * left, the satisfied leaving theirs to the others (progressive filling);
 * capacity no one demands is shared by weight, so none stays idle.
 * Integer slots, sum exactly @capacity (when the floors fit). Result in
 * @out. Returns 0, or -ENOSPC when the floors exceed @capacity.
 */
int nfsl_maxmin(__u32 n, const double *demand, const __u32 *weight, const __u32 *min,
		__u32 capacity, __u32 *out);

/* Headroom over the Little's-law mean a dynamic quota gets (bursts). */
#define NFSL_TENANT_HEADROOM 1.5

/*
 * nfsl_tenant_demand - slots a tenant needs in one partition by Little's
 * law, L = lambda x W (PayloadPark §6.2.4 sizes the store the same way):
 * lambda = @attempts slice attempts (sliced or not: over-quota traffic
 * counts) in @dt_s seconds; W = @busy / (@sliced / @dt_s), the residency
 * of what it did park, or @w_default_s when it parked nothing. Times
 * NFSL_TENANT_HEADROOM. Returns slots (not rounded).
 */
double nfsl_tenant_demand(__u64 attempts, __u64 sliced, __u32 busy, double dt_s,
			  double w_default_s);

#endif /* NFSL_TENANT_H */
