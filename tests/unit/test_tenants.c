// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Tenants (issue 10 §5, userspace/lib/nfsl/tenant.h): the slicer's classification
 * (destination prefix, outer VLAN, ingress interface, default) and each
 * tenant's region of the partition under BPF_PROG_TEST_RUN: a tenant's
 * burst never takes, ages or evicts another tenant's payloads, traffic
 * over quota passes unsliced (skipped_quota), a quota change leaves the
 * payloads in slots that change tenant alone; the tenants file parser;
 * weighted max-min with floors against its definition.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <bpf/bpf.h>
#include <criterion/criterion.h>

#include "harness.h"
#include "nfsl_structs.h"
#include "pkt.h"
#include "nfsl/tenant.h"

TestSuite(tenants, .init = h_setup, .fini = h_teardown, .timeout = 60);

#define PART 32 /* slots per CPU partition */

/* Three tenants: 1 "a" [0, 8), 2 "b" [8, 16), default [16, 32); FIFO
 * regions (win_min = PART: the window is the whole region). */
static void ten_config(__u32 flags)
{
	h_configure(256, 0, PART, 1);
	H.cfg.win_min = PART;
	H.cfg.ntenants = 3;
	H.cfg.tenant_flags = flags;
	snprintf(H.cfg.tenants[0].name, 16, "default");
	snprintf(H.cfg.tenants[1].name, 16, "a");
	snprintf(H.cfg.tenants[2].name, 16, "b");
	H.cfg.tenants[1] = (struct nfsl_tenant){ .base = 0, .size = 8, .weight = 1, .name = "a" };
	H.cfg.tenants[2] = (struct nfsl_tenant){ .base = 8, .size = 8, .weight = 1, .name = "b" };
	H.cfg.tenants[0] = (struct nfsl_tenant){ .base = 16, .size = 16, .weight = 1,
						 .name = "default" };
	h_write_config();
}

/* Slice a 400 B UDP packet (@vlans tags, the outer VID 100; IPv6 if @v6);
 * return the slot its token names, or -1 when it passed unsliced (then the
 * output is the input). */
static int slice(int seed, int vlans, bool v6)
{
	struct pkt_spec s = { .size = 400, .proto = PKT_UDP, .seed = seed, .vlans = vlans,
			      .v6 = v6 };
	uint8_t in[PKT_MAX], out[PKT_MAX];
	size_t len = pkt_build(&s, in);
	uint32_t olen, idx;

	cr_assert_eq(h_slice(in, len, out, &olen), V_XDP_PASS);
	if (olen == len) {
		cr_assert(!memcmp(in, out, len), "unsliced packet %d changed", seed);
		return -1;
	}
	memcpy(&idx, out + olen - NFSL_TOKEN_LEN, 4);
	return NFSL_TOKEN_IDX(ntohl(idx));
}

/* Tenant counters summed over CPUs. */
static struct nfsl_tenant_counters tcnt(__u32 t)
{
	struct nfsl_tenant_counters per[NFSL_MAX_CPUS], sum = {};

	cr_assert_eq(bpf_map_lookup_elem(H.tcnt, &t, per), 0);
	for (int c = 0; c < H.ncpus; c++) {
		sum.attempts += per[c].attempts;
		sum.sliced += per[c].sliced;
		sum.skipped_quota += per[c].skipped_quota;
		sum.evicted += per[c].evicted;
	}
	return sum;
}

static void prefix_rule(const char *cidr, __u32 tenant)
{
	struct nfsl_tenant_pfx k;
	char addr[64];
	int len;

	cr_assert_eq(sscanf(cidr, "%63[^/]/%d", addr, &len), 2);
	memset(&k, 0, sizeof(k));
	if (strchr(addr, ':')) {
		cr_assert_eq(inet_pton(AF_INET6, addr, k.addr), 1);
		k.prefixlen = len;
	} else {
		cr_assert_eq(inet_pton(AF_INET, addr, k.addr + 12), 1);
		k.addr[10] = k.addr[11] = 0xff;
		k.prefixlen = 96 + len;
	}
	cr_assert_eq(bpf_map_update_elem(H.tpfx, &k, &tenant, BPF_ANY), 0);
}

static void vlan_rule(__u32 vid, __u32 tenant)
{
	__u32 v = tenant + 1;

	cr_assert_eq(bpf_map_update_elem(H.tvlan, &vid, &v, BPF_ANY), 0);
}

/* Is @idx in tenant @t's region of this CPU's partition? */
static bool in_region(int idx, __u32 t)
{
	__u32 base = h_part_base() + H.cfg.tenants[t].base;

	return idx >= 0 && (__u32)idx >= base && (__u32)idx < base + H.cfg.tenants[t].size;
}

Test(tenants, classified_by_prefix_then_vlan_then_interface)
{
	ten_config(NFSL_TEN_PREFIX | NFSL_TEN_VLAN);
	/* No rule matches: the ingress interface's tenant (default). */
	cr_expect(in_region(slice(1, 0, false), 0), "no rule: default");
	/* The ingress interface's tenant. */
	H.cfg.ifaces[0].tenant = 2;
	h_write_config();
	cr_expect(in_region(slice(2, 0, false), 2), "dev rule: b");
	/* The outer VLAN's rule over the interface's. */
	vlan_rule(100, 1);
	cr_expect(in_region(slice(3, 1, false), 1), "vlan 100: a");
	cr_expect(in_region(slice(4, 0, false), 2), "untagged: the interface's");
	/* The longest destination prefix over the VLAN's; IPv4 mapped. */
	prefix_rule("10.0.0.0/8", 0);
	cr_expect(in_region(slice(5, 1, false), 0), "10/8: default over vlan a");
	prefix_rule("10.0.0.2/32", 2);
	cr_expect(in_region(slice(6, 1, false), 2), "10.0.0.2/32: b over 10/8");
	prefix_rule("fd00::/16", 1);
	cr_expect(in_region(slice(7, 0, true), 1), "fd00::/16: a");
	/* A rule naming a tenant that does not exist: default. */
	prefix_rule("10.0.0.2/32", 7);
	cr_expect(in_region(slice(8, 0, false), 0), "tenant 7 of 3: default");
	/* Flags off: rules are not looked up. */
	H.cfg.tenant_flags = 0;
	h_write_config();
	cr_expect(in_region(slice(9, 1, false), 2), "no rule flags: the interface's");
	cr_expect_eq(tcnt(1).sliced, 2);
	cr_expect_eq(tcnt(2).sliced, 4);
	cr_expect_eq(tcnt(0).sliced, 3);
}

/* The slicer searches its ingress once (bpf/slicer.bpf.c nfsl_ingress)
 * and reads the NF port flag, the MAC and the tenant from that one entry:
 * here the last of a full table, the egress the one before it. */
Test(tenants, ingress_last_of_a_full_table)
{
	struct nfsl_iface in, out;
	struct nfsl_counters c;
	__u32 i;

	ten_config(0);
	in = H.cfg.ifaces[0];
	out = H.cfg.ifaces[1];
	for (i = 0; i < NFSL_MAX_IFACES - 2; i++)
		H.cfg.ifaces[i] = (struct nfsl_iface){ .ifindex = 100000 + i, .tenant = 1 };
	H.cfg.ifaces[NFSL_MAX_IFACES - 2] = out;
	H.cfg.ifaces[NFSL_MAX_IFACES - 1] = in;
	H.cfg.ifaces[NFSL_MAX_IFACES - 1].tenant = 2;
	H.cfg.nifaces = NFSL_MAX_IFACES;
	h_write_config();
	cr_expect(in_region(slice(1, 0, false), 2), "the ingress's tenant: b");
	cr_expect(in_region(slice(2, 0, true), 2), "IPv6 too");
	/* The same entry an NF port: nothing is sliced there. */
	H.cfg.ifaces[NFSL_MAX_IFACES - 1].flags = NFSL_IF_NF_PORT;
	h_write_config();
	cr_expect_eq(slice(3, 0, false), -1, "NF port: passed unsliced");
	/* One entry short: the ingress is none of the domain's. */
	H.cfg.ifaces[NFSL_MAX_IFACES - 1].flags = 0;
	H.cfg.nifaces = NFSL_MAX_IFACES - 1;
	h_write_config();
	cr_expect_eq(slice(4, 0, false), -1, "not a domain interface: passed unsliced");
	h_counters(&c);
	cr_expect_eq(c.sliced, 2);
	cr_expect_eq(c.skipped_route, 1); /* the NF port counts nothing */
	cr_expect_eq(c.unparsed + c.skipped_l2 + c.skipped_local + c.slice_failed, 0);
	cr_expect_eq(tcnt(2).sliced, 2);
	cr_expect_eq(tcnt(2).attempts, 2);
	cr_expect_eq(tcnt(1).attempts, 0);
	cr_expect_eq(tcnt(0).attempts, 0);
}

Test(tenants, burst_never_evicts_another_tenant)
{
	struct nfsl_slot before[8], after;
	struct nfsl_tenant_counters a, b;
	struct nfsl_counters c;
	int idx[8];

	ten_config(NFSL_TEN_VLAN);
	vlan_rule(100, 1);
	/* Tenant a parks 8 payloads (its whole region), held by the NF. */
	for (int k = 0; k < 8; k++) {
		idx[k] = slice(k, 1, false);
		cr_assert(in_region(idx[k], 1), "a's payload %d in slot %d", k, idx[k]);
		h_slot_read(idx[k], &before[k]);
	}
	/* Tenant b (untagged: interface 0 is b's) bursts 20 regions' worth
	 * (expiry 1: it evicts its own payloads every turn). */
	H.cfg.ifaces[0].tenant = 2;
	h_write_config();
	for (int k = 0; k < 160; k++)
		cr_assert(in_region(slice(100 + k, 0, false), 2), "b's packet %d", k);
	for (int k = 0; k < 8; k++) {
		h_slot_read(idx[k], &after);
		cr_expect(!memcmp(&before[k], &after, sizeof(after)),
			  "a's payload %d (slot %d) touched by b's burst", k, idx[k]);
	}
	/* Over a's quota: a's next packet passes unsliced (its payloads are
	 * young on a's own clock), never taking b's or default's slots. */
	H.cfg.expiry = 50;
	h_write_config();
	cr_expect_eq(slice(999, 1, false), -1, "a over quota: unsliced");
	a = tcnt(1);
	b = tcnt(2);
	cr_expect(a.attempts == 9 && a.sliced == 8 && a.skipped_quota == 1 && a.evicted == 0,
		  "a: attempts %llu sliced %llu skipped_quota %llu evicted %llu",
		  a.attempts, a.sliced, a.skipped_quota, a.evicted);
	cr_expect(b.attempts == 160 && b.sliced == 160 && b.skipped_quota == 0 &&
			  b.evicted == 152,
		  "b: attempts %llu sliced %llu skipped_quota %llu evicted %llu", b.attempts,
		  b.sliced, b.skipped_quota, b.evicted);
	h_counters(&c);
	cr_expect(c.sliced == 168 && c.evicted == 152 && c.skipped_quota == 1 &&
			  c.skipped_full == 0,
		  "domain: sliced %llu evicted %llu skipped_quota %llu", c.sliced, c.evicted,
		  c.skipped_quota);
}

Test(tenants, quota_change_leaves_other_tenants_payloads)
{
	struct nfsl_slot s;
	int held[8], k;

	ten_config(0);
	H.cfg.expiry = 1;
	h_write_config();
	/* Tenant a (interface 0) parks 8 payloads in [0, 8). */
	H.cfg.ifaces[0].tenant = 1;
	h_write_config();
	for (k = 0; k < 8; k++)
		cr_assert(in_region(held[k] = slice(k, 0, false), 1));
	/* Quotas change: b's region now [0, 16), a's [16, 24). b slices 64
	 * packets: it may only use [8, 16) (a's busy slots are not its own,
	 * however old on b's clock), and never takes a's. */
	H.cfg.tenants[2].base = 0;
	H.cfg.tenants[2].size = 16;
	H.cfg.tenants[1].base = 16;
	H.cfg.tenants[1].size = 8;
	H.cfg.tenants[0].base = 24;
	H.cfg.tenants[0].size = 8;
	H.cfg.ifaces[0].tenant = 2;
	h_write_config();
	/* A FIFO region (Alg. 1: one slot tried per packet): every turn of
	 * 16 packets meets a's 8 slots busy (passed unsliced) and parks 8. */
	for (k = 0; k < 64; k++) {
		int idx = slice(200 + k, 0, false);

		if (k % 16 < 8) {
			cr_assert_eq(idx, -1, "b's packet %d took a's slot %d", k, idx);
			continue;
		}
		cr_assert_eq(idx, (int)(h_part_base() + k % 16), "b's packet %d", k);
	}
	cr_expect(tcnt(2).sliced == 32 && tcnt(2).skipped_quota == 32 && tcnt(2).evicted == 24,
		  "b: sliced %llu skipped_quota %llu evicted %llu", tcnt(2).sliced,
		  tcnt(2).skipped_quota, tcnt(2).evicted);
	for (k = 0; k < 8; k++) {
		h_slot_read(held[k], &s);
		cr_expect(NFSL_CTL_EXP(s.ctl) && NFSL_CTL_GEN(s.ctl) == 1 && s.tenant == 1,
			  "a's payload in slot %d lost: ctl %llx tenant %u", held[k],
			  (unsigned long long)s.ctl, s.tenant);
	}
	/* A region beyond the partition is clamped to it. */
	H.cfg.tenants[2].base = PART - 2;
	H.cfg.tenants[2].size = 1000;
	h_write_config();
	for (k = 0; k < 8; k++)
		cr_assert(in_region(slice(300 + k, 0, false), 2) &&
			  h_part_base() + PART - 2 <= (__u32)slice(400 + k, 0, false));
}

Test(tenants, no_tenants_is_the_whole_partition)
{
	h_configure(256, 0, PART, 1);
	H.cfg.win_min = PART;
	h_write_config();
	H.cfg.ifaces[0].tenant = 3; /* ignored: no tenants */
	h_write_config();
	for (int k = 0; k < PART; k++)
		cr_assert_eq(slice(k, 0, false), (int)(h_part_base() + k));
	cr_expect_eq(tcnt(3).attempts, 0);
}

/* --- weighted max-min --- */

static void maxmin(__u32 n, const double *d, const __u32 *w, const __u32 *m, __u32 cap,
		   const __u32 *want)
{
	__u32 out[NFSL_MAX_TENANTS], sum = 0;

	cr_assert_eq(nfsl_maxmin(n, d, w, m, cap, out), 0);
	for (__u32 t = 0; t < n; t++) {
		cr_expect_eq(out[t], want[t], "claimant %u: %u, want %u", t, out[t], want[t]);
		sum += out[t];
	}
	cr_expect_eq(sum, cap);
}

Test(maxmin, satisfied_demands_and_weighted_rest, .init = NULL, .fini = NULL)
{
	/* Everyone satisfied: what is left is shared by weight (2:1:1). */
	maxmin(3, (double[]){ 100, 50, 10 }, (__u32[]){ 2, 1, 1 }, (__u32[]){ 0, 0, 0 }, 400,
	       (__u32[]){ 220, 110, 70 });
	/* Overload, weights 2:1: 2/3 and 1/3. */
	maxmin(2, (double[]){ 1000, 1000 }, (__u32[]){ 2, 1 }, (__u32[]){ 0, 0 }, 300,
	       (__u32[]){ 200, 100 });
	/* A small demand is met; the others split the rest equally. */
	maxmin(3, (double[]){ 10, 1000, 1000 }, (__u32[]){ 1, 1, 1 }, (__u32[]){ 0, 0, 0 },
	       310, (__u32[]){ 10, 150, 150 });
	/* Progressive filling: 60 < 100 (first round's share) closes first,
	 * then 120 < 170 closes, the last takes the rest. */
	maxmin(3, (double[]){ 60, 120, 1000 }, (__u32[]){ 1, 1, 1 }, (__u32[]){ 0, 0, 0 },
	       300, (__u32[]){ 60, 120, 120 });
	/* Floors first: an idle claimant keeps its min. */
	maxmin(2, (double[]){ 0, 1000 }, (__u32[]){ 1, 1 }, (__u32[]){ 30, 0 }, 100,
	       (__u32[]){ 30, 70 });
}

Test(maxmin, floors_over_capacity, .init = NULL, .fini = NULL)
{
	__u32 out[2];

	cr_expect_eq(nfsl_maxmin(2, (double[]){ 1, 1 }, (__u32[]){ 1, 1 }, (__u32[]){ 60, 50 },
				 100, out),
		     -ENOSPC);
}

/* Random cases against the definition: the sum is the capacity, floors
 * hold, no claimant gets more than its demand while another is short of
 * its own and below its weighted share of the others' (max-min). */
Test(maxmin, random_against_definition, .init = NULL, .fini = NULL)
{
	srand(7);
	for (int r = 0; r < 2000; r++) {
		__u32 n = 1 + rand() % NFSL_MAX_TENANTS, w[NFSL_MAX_TENANTS], m[NFSL_MAX_TENANTS];
		__u32 out[NFSL_MAX_TENANTS], cap = 64 + rand() % 4096, sum = 0, msum = 0;
		double d[NFSL_MAX_TENANTS];

		for (__u32 t = 0; t < n; t++) {
			w[t] = 1 + rand() % 4;
			m[t] = rand() % 3 ? 0 : rand() % (cap / (2 * n) + 1);
			d[t] = rand() % 2 ? rand() % cap : rand() % (cap / n + 1);
			msum += m[t];
		}
		cr_assert_eq(nfsl_maxmin(n, d, w, m, cap, out), 0);
		for (__u32 t = 0; t < n; t++) {
			cr_assert_geq(out[t], m[t]);
			sum += out[t];
		}
		cr_assert_eq(sum, cap, "case %d: sum %u cap %u", r, sum, cap);
		/* Max-min: the level (slots above the floor per weight) of a
		 * claimant short of its demand is the highest; none is above it
		 * by more than the rounding (each share rounded down, the
		 * remainder, at most n slots, to one claimant). */
		for (__u32 i = 0; i < n; i++) {
			if (out[i] + n + 1 >= d[i])
				continue;
			for (__u32 j = 0; j < n; j++)
				cr_assert_leq((double)out[j] - m[j] - n - 1,
					      ((double)out[i] + 1 - m[i]) * w[j] / w[i],
					      "case %d: %u short (%u < %.0f, weight %u, floor %u) while "
					      "%u has %u (floor %u, weight %u, demand %.0f), cap %u n %u",
					      r, i, out[i], d[i], w[i], m[i], j, out[j], m[j], w[j], d[j],
					      cap, n);
		}
		(void)msum;
	}
}

/* --- the tenants file --- */

static int parse_text(const char *text, struct nfsl_tenant_spec *sp, char *err, size_t len)
{
	char path[] = "/tmp/nfsl-tenants-XXXXXX";
	int fd = mkstemp(path), rc;

	cr_assert(fd >= 0);
	cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	rc = nfsl_tenants_parse(path, sp, err, len);
	unlink(path);
	return rc;
}

Test(tenantfile, good, .init = NULL, .fini = NULL)
{
	static struct nfsl_tenant_spec sp;
	char err[256] = "";

	cr_assert_eq(parse_text("# two tenants\n"
				"gold quota=40% weight=2 dst=10.1.0.0/16 dst=fd00:1::/48\n"
				"\n"
				"silver quota=100 vlan=7 dev=eth9 # 100 slots\n"
				"default min=5%\n",
				&sp, err, sizeof(err)),
		     0, "%s", err);
	cr_expect_eq(sp.n, 3);
	cr_expect_str_eq(sp.t[1].name, "gold");
	cr_expect(sp.t[1].quota.pct && sp.t[1].quota.frac > 0.3999 && sp.t[1].quota.frac < 0.4001);
	cr_expect_eq(sp.t[1].weight, 2);
	cr_expect(!sp.t[2].quota.pct && sp.t[2].quota.slots == 100);
	cr_expect_eq(sp.vlan[7], 3);
	cr_expect_eq(sp.ndevs, 1);
	cr_expect_eq(sp.devs[0].tenant, 2);
	cr_expect_eq(sp.npfx, 2);
	cr_expect_eq(sp.pfx[0].key.prefixlen, 96 + 16);
	cr_expect(sp.pfx[0].key.addr[10] == 0xff && sp.pfx[0].key.addr[12] == 10 &&
		  sp.pfx[0].key.addr[13] == 1);
	cr_expect_eq(sp.pfx[1].key.prefixlen, 48);
	cr_expect(sp.t[0].min.pct && sp.t[0].min.frac > 0.0499 && sp.t[0].min.frac < 0.0501);
}

Test(tenantfile, errors_name_line_and_fix, .init = NULL, .fini = NULL)
{
	static const struct {
		const char *text, *msg;
	} bad[] = {
		{ "gold weight=2\n", ":1: tenant 'gold' has no quota" },
		{ "default quota=10%\n", ":1: the default tenant takes no quota" },
		{ "\ngold quota=10% dst=10.1.2.3/16\n", ":2: dst=10.1.2.3/16: host bits set" },
		{ "gold quota=10% colour=red\n", "unknown key 'colour'" },
		{ "gold quota=101%\n", "quota=101%: give N% of each partition (0-100)" },
		{ "gold quota=1%\ngold quota=2%\n", ":2: tenant 'gold' is declared twice" },
		{ "gold quota=1% vlan=5000\n", "vlan=5000: give a VLAN ID 1-4094" },
		/* the shared parsers (util/value.h): decimal digits, the kernel's
		 * interface-name rule */
		{ "gold quota=1% vlan=010\n", "vlan=010: give a VLAN ID 1-4094" },
		{ "gold quota=1% weight=0x2\n", "weight=0x2: give an integer 1-1000" },
		{ "gold quota=1% dev=eth0:1\n", "dev=eth0:1: an interface name" },
		{ "gold quota=1% dst=10.1.0.0/016\n", "dst=10.1.0.0/016: give ADDR/LEN" },
		{ "g@ld quota=1%\n", "tenant name 'g@ld'" },
		{ "a quota=1%\nb quota=1%\nc quota=1%\nd quota=1%\ne quota=1%\nf quota=1%\n"
		  "g quota=1%\nh quota=1%\n",
		  ":8: more than 8 tenants" },
	};
	static struct nfsl_tenant_spec sp;

	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		char err[256] = "";

		cr_expect_eq(parse_text(bad[i].text, &sp, err, sizeof(err)), -EINVAL, "case %zu",
			     i);
		cr_expect(strstr(err, bad[i].msg), "case %zu: '%s' does not say '%s'", i, err,
			  bad[i].msg);
	}
}

/* Files that are no tenants file: refused at once (a FIFO without a writer
 * and /dev/zero used to hang the parse), each message naming the fix; an
 * empty or binary file used to attach with the default tenant only. */
Test(tenantfile, not_a_tenants_file, .init = NULL, .fini = NULL, .timeout = 10)
{
	static const struct {
		const char *text;
		size_t len; /* 0: strlen */
		const char *msg;
	} bad[] = {
		{ "", 0, "declares no tenant: add a line NAME quota=N%" },
		{ "# nothing yet\n\n", 0, "declares no tenant" },
		{ "default min=5%\n", 0, "declares no tenant" },
		{ "gold quota=1%\0\n", 15, ":1: byte 0x00 at column 14 is not text" },
		{ "gold quota=1%\nsilver\x01quota=1%\n", 0,
		  ":2: byte 0x01 at column 7 is not text: a tenants file is text lines" },
		{ "\x7f" "ELF\x02\x01\x01", 7, ":1: byte 0x02 at column 5 is not text" },
	};
	static struct nfsl_tenant_spec sp;
	char path[] = "/tmp/nfsl-tenants-XXXXXX", fifo[64], err[512];
	char *big;
	int fd;

	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		size_t len = bad[i].len ? bad[i].len : strlen(bad[i].text);

		strcpy(path, "/tmp/nfsl-tenants-XXXXXX");
		fd = mkstemp(path);
		cr_assert(fd >= 0);
		cr_assert_eq(write(fd, bad[i].text, len), (ssize_t)len);
		close(fd);
		*err = '\0';
		cr_expect_eq(nfsl_tenants_parse(path, &sp, err, sizeof(err)), -EINVAL, "case %zu",
			     i);
		cr_expect(strstr(err, bad[i].msg), "case %zu: '%s' does not say '%s'", i, err,
			  bad[i].msg);
		unlink(path);
	}
	cr_expect_eq(nfsl_tenants_parse("/dev/zero", &sp, err, sizeof(err)), -EINVAL);
	cr_expect(strstr(err, "/dev/zero is a character device: give a regular text file"),
		  "%s", err);
	cr_expect_eq(nfsl_tenants_parse("/tmp", &sp, err, sizeof(err)), -EINVAL);
	cr_expect(strstr(err, "/tmp is a directory"), "%s", err);
	snprintf(fifo, sizeof(fifo), "/tmp/nfsl-tenants-fifo-%d", (int)getpid());
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	cr_expect_eq(nfsl_tenants_parse(fifo, &sp, err, sizeof(err)), -EINVAL);
	cr_expect(strstr(err, "is a FIFO: give a regular text file"), "%s", err);
	unlink(fifo);
	/* Over the size limit, and a line over the line limit. */
	big = malloc(NFSL_TENANTS_MAX_BYTES + 2);
	cr_assert_not_null(big);
	memset(big, '#', NFSL_TENANTS_MAX_BYTES + 1);
	strcpy(path, "/tmp/nfsl-tenants-XXXXXX");
	fd = mkstemp(path);
	cr_assert_eq(write(fd, big, NFSL_TENANTS_MAX_BYTES + 1), NFSL_TENANTS_MAX_BYTES + 1);
	close(fd);
	cr_expect_eq(nfsl_tenants_parse(path, &sp, err, sizeof(err)), -EINVAL);
	cr_expect(strstr(err, "has 65537 bytes, more than the 65536"), "%s", err);
	unlink(path);
	memcpy(big, "gold quota=1% ", 14);
	big[NFSL_TENANTS_MAX_LINE + 1] = '\0';
	cr_expect_eq(parse_text(big, &sp, err, sizeof(err)), -EINVAL);
	cr_expect(strstr(err, ":1: line longer than 4095 bytes"), "%s", err);
	big[NFSL_TENANTS_MAX_LINE] = '\0'; /* at the limit: a comment, fine */
	cr_expect_eq(parse_text(big, &sp, err, sizeof(err)), 0, "%s", err);
	free(big);
}

/* quota= and min= in decimal digits (util/value.h): strtod read
 * quota=0x10 as 16 slots and quota=1e3 as 1000. */
Test(tenantfile, quota_spellings, .init = NULL, .fini = NULL)
{
	static const char *const bad[] = { "quota=0x10", "quota=1e3", "quota=010", "quota=-1",
					   "quota=+5", "quota=0x10%", "quota=1e1%", "quota=.5%",
					   "quota=5.%", "quota=1.5", "quota=1048577",
					   "quota=100.5%", "quota=inf", "quota=", "min=0x2" };
	static struct nfsl_tenant_spec sp;
	struct nfsl_quota q;
	char err[512] = "", text[64];

	cr_assert_eq(parse_text("gold quota=12.5% min=0.5%\nsilver quota=1048576 min=0\n", &sp,
				err, sizeof(err)),
		     0, "%s", err);
	cr_expect(sp.t[1].quota.pct && sp.t[1].quota.frac > 0.1249 && sp.t[1].quota.frac < 0.1251);
	cr_expect(sp.t[1].min.pct && sp.t[1].min.frac > 0.00499 && sp.t[1].min.frac < 0.00501);
	cr_expect(!sp.t[2].quota.pct && sp.t[2].quota.slots == 1048576);
	cr_expect(!sp.t[2].min.pct && sp.t[2].min.slots == 0);
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		snprintf(text, sizeof(text), "gold quota=1%%\nsilver %s%s\n",
			 strncmp(bad[i], "min", 3) ? "" : "quota=1 ", bad[i]);
		*err = '\0';
		cr_expect_eq(parse_text(text, &sp, err, sizeof(err)), -EINVAL, "'%s'", bad[i]);
		cr_expect(strstr(err, ":2: ") && strstr(err, bad[i]) &&
			  strstr(err, ": give N% of each partition (0-100) or N slots of the store "
				 "(0-1048576), in decimal digits: a whole number of slots, a "
				 "percentage with a fraction allowed (12.5%); no leading 0, 0x "
				 "or exponent"),
			  "'%s': %s", bad[i], err);
	}
	/* The return codes behind those messages (nfslice set --quota too). */
	cr_expect_eq(nfsl_quota_parse("0x10", &q), -EDOM);
	cr_expect_eq(nfsl_quota_parse("010%", &q), -EDOM);
	cr_expect_eq(nfsl_quota_parse("1e3", &q), -EINVAL);
	cr_expect_eq(nfsl_quota_parse("1048577", &q), -ERANGE);
	cr_expect_eq(nfsl_quota_parse("101%", &q), -ERANGE);
	cr_expect_eq(nfsl_quota_parse("7", &q), 0);
	cr_expect(!q.pct && q.slots == 7);
}

Test(tenantfile, quotas_over_the_partition, .init = NULL, .fini = NULL)
{
	static struct nfsl_tenant_spec sp;
	struct nfsl_config cfg = { .part_slots = 100, .ncpus = 2, .nparts = 1 };
	char err[256] = "";

	cr_assert_eq(parse_text("a quota=60%\nb quota=50%\n", &sp, err, sizeof(err)), 0);
	cr_expect_eq(nfsl_tenants_config(&cfg, &sp, err, sizeof(err)), -ENOSPC);
	cr_expect(strstr(err, "add up to 110 slots of each partition, which has 100"), "%s",
		  err);
	cr_assert_eq(parse_text("a quota=60%\nb quota=60\n", &sp, err, sizeof(err)), 0);
	cr_assert_eq(nfsl_tenants_config(&cfg, &sp, err, sizeof(err)), 0, "%s", err);
	/* 60% of 100; 60 slots of the store over 2 partitions; default the rest. */
	cr_expect(cfg.tenants[1].base == 0 && cfg.tenants[1].size == 60);
	cr_expect(cfg.tenants[2].base == 60 && cfg.tenants[2].size == 30);
	cr_expect(cfg.tenants[0].base == 90 && cfg.tenants[0].size == 10);
	/* The same tenants again, or refused. */
	cr_assert_eq(parse_text("b quota=10%\na quota=10%\n", &sp, err, sizeof(err)), 0);
	cr_expect_eq(nfsl_tenants_config(&cfg, &sp, err, sizeof(err)), -EINVAL);
	cr_expect(strstr(err, "fixed at attach"), "%s", err);
}

Test(littles_law, demand, .init = NULL, .fini = NULL)
{
	/* 1000 attempts/s, 100 parked/s with 5 busy: W = 50 ms, L = 50. */
	cr_expect_float_eq(nfsl_tenant_demand(1000, 100, 5, 1.0, 0.001),
			   50 * NFSL_TENANT_HEADROOM, 1e-9);
	/* Nothing parked: the default residency. */
	cr_expect_float_eq(nfsl_tenant_demand(2000, 0, 0, 2.0, 0.002),
			   2 * NFSL_TENANT_HEADROOM, 1e-9);
	cr_expect_float_eq(nfsl_tenant_demand(5, 5, 5, 0, 1), 0, 1e-12);
}
