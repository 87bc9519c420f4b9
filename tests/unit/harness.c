// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Datapath test harness: one slicing domain per test process (Criterion
 * forks every test), built like the loader builds one: the splicer reuses
 * the slicer's store, config, counters and cursor maps.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <net/if.h>
#include <sched.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <criterion/criterion.h>

#include "slicer.skel.h"
#include "splicer.skel.h"
#include "harness.h"
#include "pkt.h"
#include "ref.h"
#include "nfsl/domain.h"
#include "util/log.h"
#include "util/util.h"

struct harness H;
const __u64 h_key[2] = { 0x8a3f1c5e9b2d4f60ULL, 0x17e4b2a9c6d85f31ULL };
const __u8 h_mac_in[6] = { 2, 0, 0, 0, 0, 2 };

static struct slicer_bpf *h_sl;
static struct splicer_bpf *h_sp;

void h_pin(int cpu)
{
	int err = nfsl_pin_cpu(cpu);

	cr_assert_eq(err, 0, "cannot pin to CPU %d: %s", cpu, strerror(-err));
	H.cpu = cpu;
}

/* Stay on the first CPU we may use: the slicer allocates from that CPU's
 * partition and counts in that CPU's counters. */
static void h_pin_first(void)
{
	cpu_set_t set;

	cr_assert_eq(sched_getaffinity(0, sizeof(set), &set), 0);
	H.nallowed = 0;
	for (int cpu = 0; cpu < H.ncpus; cpu++)
		if (CPU_ISSET(cpu, &set))
			H.allowed[H.nallowed++] = cpu;
	cr_assert_gt(H.nallowed, 0);
	h_pin(H.allowed[0]);
}

/*
 * The slicer slices only what the FIB sends out of a domain interface, so
 * every test process gets its own network namespace with a route: frames
 * enter on H_IF_IN (MAC = the test packets' destination MAC) and 10.0.0.0/24
 * and fd00::/64 (the test packets' destinations) leave through H_IF_OUT.
 * Both are domain interfaces (h_configure); leaving the process removes it
 * all. Criterion runs every test in its own process.
 */
static void h_netns(void)
{
	static const char *const cmds[] = {
		"ip link add " H_IF_IN " type veth peer name " H_IF_INP,
		"ip link add " H_IF_OUT " type veth peer name " H_IF_OUTP,
		"ip link set " H_IF_IN " address " H_MAC_IN " up",
		"ip link set " H_IF_INP " up",
		"ip link set " H_IF_OUT " up",
		"ip link set " H_IF_OUTP " up",
		"ip addr add 10.0.0.254/24 dev " H_IF_OUT,
		"ip -6 addr add fd00::fe/64 dev " H_IF_OUT " nodad",
		"sysctl -qw net.ipv4.conf.all.forwarding=1",
		"sysctl -qw net.ipv6.conf.all.forwarding=1",
	};

	cr_assert_eq(unshare(CLONE_NEWNET), 0, "cannot make a network namespace: %s",
		     strerror(errno));
	for (size_t i = 0; i < ARRAY_SIZE(cmds); i++)
		cr_assert_eq(system(cmds[i]), 0, "failed: %s", cmds[i]);
	H.if_in = if_nametoindex(H_IF_IN);
	H.if_out = if_nametoindex(H_IF_OUT);
	cr_assert(H.if_in && H.if_out);
}

void h_setup(void)
{
	int err;

	h_netns();
	H.ncpus = libbpf_num_possible_cpus();
	cr_assert(H.ncpus > 0 && H.ncpus <= NFSL_MAX_CPUS);
	h_pin_first();
	cr_assert_eq(H_STORE_SLOTS % H.ncpus, 0, "store does not split in %d",
		     H.ncpus);
	nfsl_log_init(NFSL_LOG_WARN);

	h_sl = slicer_bpf__open();
	cr_assert_not_null(h_sl, "cannot open the slicer object");
	bpf_map__set_max_entries(h_sl->maps.nfsl_store, H_STORE_SLOTS);
	bpf_map__set_max_entries(h_sl->maps.nfsl_parklog, H_STORE_SLOTS);
	err = slicer_bpf__load(h_sl);
	cr_assert_eq(err, 0, "slicer does not load: %s", strerror(-err));

	h_sp = splicer_bpf__open();
	cr_assert_not_null(h_sp, "cannot open the splicer object");
	bpf_map__set_max_entries(h_sp->maps.nfsl_store, H_STORE_SLOTS);
	err = bpf_map__reuse_fd(h_sp->maps.nfsl_store,
				bpf_map__fd(h_sl->maps.nfsl_store)) ||
	      bpf_map__reuse_fd(h_sp->maps.nfsl_config,
				bpf_map__fd(h_sl->maps.nfsl_config)) ||
	      bpf_map__reuse_fd(h_sp->maps.nfsl_counters,
				bpf_map__fd(h_sl->maps.nfsl_counters)) ||
	      bpf_map__reuse_fd(h_sp->maps.nfsl_cursor,
				bpf_map__fd(h_sl->maps.nfsl_cursor)) ||
	      bpf_map__reuse_fd(h_sp->maps.nfsl_events,
				bpf_map__fd(h_sl->maps.nfsl_events));
	cr_assert_eq(err, 0, "cannot share the maps");
	err = splicer_bpf__load(h_sp);
	cr_assert_eq(err, 0, "splicer does not load: %s", strerror(-err));

	H.slicer = bpf_program__fd(h_sl->progs.nfsl_slicer);
	H.splicer = bpf_program__fd(h_sp->progs.nfsl_splicer);
	H.store = bpf_map__fd(h_sl->maps.nfsl_store);
	H.config = bpf_map__fd(h_sl->maps.nfsl_config);
	H.counters = bpf_map__fd(h_sl->maps.nfsl_counters);
	H.cursor = bpf_map__fd(h_sl->maps.nfsl_cursor);
	H.parklog = bpf_map__fd(h_sl->maps.nfsl_parklog);
	H.mgr = bpf_map__fd(h_sl->maps.nfsl_mgr_cnt);
	H.tcursor = bpf_map__fd(h_sl->maps.nfsl_tcursor);
	H.tcnt = bpf_map__fd(h_sl->maps.nfsl_tcnt);
	H.tpfx = bpf_map__fd(h_sl->maps.nfsl_tpfx);
	H.tvlan = bpf_map__fd(h_sl->maps.nfsl_tvlan);
	H.events = bpf_map__fd(h_sl->maps.nfsl_events);
	H.retired = bpf_map__fd(h_sp->maps.nfsl_retired);
	H.route_gen = bpf_map__fd(h_sl->maps.nfsl_route_gen);
	h_configure(256, 0, H_STORE_SLOTS / H.ncpus, 2);
}

void h_teardown(void)
{
	splicer_bpf__destroy(h_sp);
	slicer_bpf__destroy(h_sl);
	h_sp = NULL;
	h_sl = NULL;
}

void h_configure(uint32_t threshold, uint32_t keep, uint32_t part_slots,
		 uint32_t expiry)
{
	struct nfsl_config *c = &H.cfg;

	cr_assert_leq(part_slots * H.ncpus, H_STORE_SLOTS);
	memset(c, 0, sizeof(*c));
	c->threshold = threshold;
	c->keep = keep;
	c->part_slots = part_slots;
	c->ncpus = H.ncpus;
	c->slots = part_slots * H.ncpus;
	c->expiry = expiry;
	c->nifaces = 2;
	c->ifaces[0].ifindex = H.if_in;
	memcpy(c->ifaces[0].mac, h_mac_in, 6);
	c->ifaces[1].ifindex = H.if_out;
	c->key[0] = h_key[0];
	c->key[1] = h_key[1];
	h_write_config();
	h_reset();
}

void h_write_config(void)
{
	__u32 zero = 0;

	cr_assert_eq(bpf_map_update_elem(H.config, &zero, &H.cfg, BPF_ANY), 0);
}

void h_reset(void)
{
	static struct nfsl_slot empty;
	static struct nfsl_park_rec none;
	static struct nfsl_mgr_counters mgr;
	struct nfsl_counters cnt[NFSL_MAX_CPUS];
	__u64 cur[NFSL_MAX_CPUS];
	__u32 i, zero = 0;

	for (i = 0; i < H_STORE_SLOTS; i++) {
		cr_assert_eq(bpf_map_update_elem(H.store, &i, &empty, BPF_ANY), 0);
		cr_assert_eq(bpf_map_update_elem(H.parklog, &i, &none, BPF_ANY), 0);
	}
	cr_assert_eq(bpf_map_update_elem(H.mgr, &zero, &mgr, BPF_ANY), 0);
	h_route_flush();
	{
		static struct nfsl_retired none_retired;

		cr_assert_eq(bpf_map_update_elem(H.retired, &zero, &none_retired, BPF_ANY), 0);
	}
	/* Per-CPU values: one 8-byte aligned value per possible CPU. */
	memset(cnt, 0, sizeof(cnt));
	memset(cur, 0, sizeof(cur));
	cr_assert_eq(bpf_map_update_elem(H.counters, &zero, cnt, BPF_ANY), 0);
	for (i = 0; i < NFSL_MAX_PARTS; i++)
		cr_assert_eq(bpf_map_update_elem(H.cursor, &i, cur, BPF_ANY), 0);
	for (i = 0; i < NFSL_MAX_PARTS * NFSL_MAX_TENANTS; i++)
		cr_assert_eq(bpf_map_update_elem(H.tcursor, &i, cur, BPF_ANY), 0);
	for (i = 0; i < NFSL_MAX_TENANTS; i++) {
		static struct nfsl_tenant_counters tc[NFSL_MAX_CPUS];

		cr_assert_eq(bpf_map_update_elem(H.tcnt, &i, tc, BPF_ANY), 0);
	}
}

void h_retire_key(__u64 until_ns)
{
	struct nfsl_retired r = {};
	__u32 zero = 0;

	if (until_ns) {
		r.keys[3].key[0] = H.cfg.key[0]; /* any entry counts */
		r.keys[3].key[1] = H.cfg.key[1];
		r.keys[3].until_ns = until_ns;
	}
	cr_assert_eq(bpf_map_update_elem(H.retired, &zero, &r, BPF_ANY), 0);
	H.cfg.key[0] ^= 0x1234567890abcdefull;
	H.cfg.key[1] += 1;
	h_write_config();
}

uint32_t h_part_base(void)
{
	__u32 nparts = H.cfg.nparts ? H.cfg.nparts : 1;

	return H.cpu * nparts * H.cfg.part_slots;
}

int h_slice_lin(const uint8_t *in, uint32_t len, uint32_t lin, uint8_t *out,
		uint32_t out_max, uint32_t *out_len)
{
	/* The context's data_end: the linear part's length (the kernel puts
	 * the rest of the data in frags, program with BPF_F_XDP_HAS_FRAGS). */
	struct xdp_md md = { .data_end = lin && lin < len ? lin : len,
			     .ingress_ifindex = H.if_in }, md_out = {};
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = in, .data_size_in = len,
		    .data_out = out, .data_size_out = out_max, .ctx_in = &md,
		    .ctx_size_in = sizeof(md), .ctx_out = &md_out,
		    .ctx_size_out = sizeof(md_out));
	int err = bpf_prog_test_run_opts(H.slicer, &o);

	cr_assert_eq(err, 0, "slicer test run failed: %s", strerror(-err));
	*out_len = o.data_size_out;
	H.xdp_out_linear = md_out.data_end - md_out.data;
	return o.retval;
}

int h_slice(const uint8_t *in, uint32_t len, uint8_t *out, uint32_t *out_len)
{
	return h_slice_lin(in, len, H.xdp_linear, out, PKT_MAX, out_len);
}

int h_splice_run(const uint8_t *in, uint32_t len, uint8_t *out,
		 uint32_t *out_len, int *verdict)
{
	struct __sk_buff skb = { .ifindex = H.ifindex };
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = in, .data_size_in = len,
		    .data_out = out, .data_size_out = PKT_MAX);
	int err;

	if (H.ifindex) { /* the skb's device: MTU of bpf_check_mtu() */
		o.ctx_in = &skb;
		o.ctx_size_in = sizeof(skb);
	}
	err = bpf_prog_test_run_opts(H.splicer, &o);
	*out_len = o.data_size_out;
	*verdict = o.retval;
	return err;
}

int h_splice(const uint8_t *in, uint32_t len, uint8_t *out, uint32_t *out_len)
{
	int err, v;

	err = h_splice_run(in, len, out, out_len, &v);
	cr_assert_eq(err, 0, "splicer test run failed: %s", strerror(-err));
	return v;
}

void h_counters(struct nfsl_counters *c)
{
	cr_assert_eq(nfsl_counters_sum(H.counters, c), 0);
}

bool h_expect_counters(const struct nfsl_counters *want, const char *what)
{
	struct nfsl_counters got;
	bool ok = true;

	h_counters(&got);
#define H_X_CMP(name)                                                          \
	if (got.name != want->name) {                                          \
		cr_expect_fail("%s: counter " #name " is %llu, want %llu",     \
			       what, (unsigned long long)got.name,             \
			       (unsigned long long)want->name);                \
		ok = false;                                                    \
	}
	NFSL_COUNTERS(H_X_CMP)
#undef H_X_CMP
	return ok;
}

void h_slot_read(uint32_t idx, struct nfsl_slot *s)
{
	cr_assert_eq(bpf_map_lookup_elem(H.store, &idx, s), 0,
		     "cannot read slot %u", idx);
}

void h_slot_write(uint32_t idx, const struct nfsl_slot *s)
{
	cr_assert_eq(bpf_map_update_elem(H.store, &idx, s, BPF_ANY), 0,
		     "cannot write slot %u", idx);
}

void h_slot_set_ctl(uint32_t idx, uint64_t ctl)
{
	struct nfsl_slot s;

	h_slot_read(idx, &s);
	s.ctl = ctl;
	h_slot_write(idx, &s);
}

void h_token(uint32_t slot, uint32_t gen, uint8_t tok[16])
{
	uint8_t key[16], msg[8];

	for (int i = 0; i < 8; i++) {
		key[i] = (uint8_t)(h_key[0] >> (8 * i));
		key[8 + i] = (uint8_t)(h_key[1] >> (8 * i));
		msg[i] = (uint8_t)((i < 4 ? slot : gen) >> (8 * (i & 3)));
		tok[i] = (uint8_t)((i < 4 ? slot : gen) >> (8 * (3 - (i & 3))));
	}
	ref_siphash24(key, msg, sizeof(msg), tok + 8);
}

void h_set_mtu(const char *dev, unsigned int mtu)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "ip link set dev %s mtu %u", dev, mtu);
	cr_assert_eq(system(cmd), 0, "failed: %s", cmd);
	h_route_flush();
}

void h_route_flush(void)
{
	__u32 zero = 0;
	__u64 gen;

	cr_assert_eq(bpf_map_lookup_elem(H.route_gen, &zero, &gen), 0);
	gen++;
	cr_assert_eq(bpf_map_update_elem(H.route_gen, &zero, &gen, BPF_ANY), 0);
}
