// SPDX-License-Identifier: GPL-2.0
/*
 * The domain, the packets and the store of nfslice-bench-datapath
 * (bench/datapath.h): the four objects loaded and configured as `nfslice
 * attach` does, slots freed as splicers would free them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <net/if.h>
#include <linux/if_ether.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "datapath.h"
#include "nfsl/domain.h"
#include "nfsl_csum.h"
#include "nfsl_parse.h"
#include "nfsl_store.h"

#include "slicer.skel.h"
#include "slicer_nofib.skel.h"
#include "slicer_coarse.skel.h"
#include "slicer_replay63.skel.h"
#include "slicer_nolog.skel.h"
#include "splicer_nores.skel.h"
#include "splicer.skel.h"
#include "bench_xdp.skel.h"
#include "bench_tc.skel.h"

/* Sum of the per-CPU datapath counters. */
int dp_read_counters(struct bench *b, struct nfsl_counters *sum)
{
	int err = nfsl_counters_sum(bpf_map__fd(b->sl->maps.nfsl_counters), sum);

	if (err)
		pr_err("cannot read counters: %s", strerror(-err));
	return err;
}

/* ---- packets ---------------------------------------------------------- */

/*
 * The driver's private network namespace (main() made it): the packets
 * arrive on the veth BENCH_IF_IN, whose MAC they are addressed to, and the
 * FIB forwards their destination 198.18.0.2 (--ipv6: fd00:18::2) out of
 * BENCH_IF_OUT, both domain interfaces, so the slicer slices them as on a
 * router.
 */
#define BENCH_IF_IN "nfbd-in"
#define BENCH_IF_OUT "nfbd-out"
/* ifindex of the first of the absent interfaces that pad the domain's
 * table (--ifaces): none in the fresh namespace has it. */
#define BENCH_IF_ABSENT 100000

int dp_setup_netns(struct bench *b)
{
	static const char *const cmds[] = {
		"ip link add " BENCH_IF_IN " type veth peer name " BENCH_IF_IN "p",
		"ip link add " BENCH_IF_OUT " type veth peer name " BENCH_IF_OUT "p",
		"ip link set " BENCH_IF_IN " address 02:00:00:00:00:02 up",
		"ip link set " BENCH_IF_IN "p up",
		"ip link set " BENCH_IF_OUT " up",
		"ip link set " BENCH_IF_OUT "p up",
		"ip addr add 198.18.0.254/24 dev " BENCH_IF_OUT,
		"ip -6 addr add fd00:18::fe/64 dev " BENCH_IF_OUT " nodad",
		"sysctl -qw net.ipv4.conf.all.forwarding=1",
		"sysctl -qw net.ipv6.conf.all.forwarding=1",
	};

	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		if (system(cmds[i])) {
			pr_err("setting up the private namespace failed: %s", cmds[i]);
			return -1;
		}
	}
	b->if_in = if_nametoindex(BENCH_IF_IN);
	b->if_out = if_nametoindex(BENCH_IF_OUT);
	if (!b->if_in || !b->if_out) {
		pr_err("the private namespace's veths are missing");
		return -1;
	}
	return 0;
}

/* ---- domain setup ----------------------------------------------------- */

/* Share @sl's maps; @config and @cursor NULL: keep the object's own. */
int dp_reuse_maps(struct bpf_map *store, struct bpf_map *config, struct bpf_map *counters,
		  struct bpf_map *cursor, struct slicer_bpf *sl)
{
	if (bpf_map__reuse_fd(store, bpf_map__fd(sl->maps.nfsl_store)) ||
	    (config && bpf_map__reuse_fd(config, bpf_map__fd(sl->maps.nfsl_config))) ||
	    bpf_map__reuse_fd(counters, bpf_map__fd(sl->maps.nfsl_counters)) ||
	    (cursor && bpf_map__reuse_fd(cursor, bpf_map__fd(sl->maps.nfsl_cursor)))) {
		pr_err("cannot reuse the slicer's maps: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/* A slicer of the bench's own (@what, for messages) on the domain's store
 * and counters, with a config and cursor (and the other maps) of its
 * own, loaded into *@out. */
static int own_slicer(struct bench *b, struct slicer_bpf **out, const char *what)
{
	int err;

	*out = slicer_bpf__open();
	if (!*out)
		return pr_err("cannot open the %s slicer: %s", what, strerror(errno)), -1;
	if (dp_reuse_maps((*out)->maps.nfsl_store, NULL, (*out)->maps.nfsl_counters, NULL, b->sl))
		return -1;
	err = slicer_bpf__load(*out);
	if (err)
		return pr_err("cannot load the %s slicer: %s", what, strerror(-err)), -1;
	return 0;
}

/* slicer-tenants: a third slicer on the store and counters, with a config
 * and cursor of its own: three tenants, the bench packets' destination
 * (198.18.0.2, fd00:18::2) tenant 1's by a /24 (/64) prefix rule, its
 * region half the partition. */
static int setup_tenants(struct bench *b)
{
	struct nfsl_tenant_pfx k = { .prefixlen = 96 + 24,
				     .addr = { [10] = 0xff, [11] = 0xff, 198, 18, 0, 0 } };
	struct nfsl_tenant_pfx k6 = { .prefixlen = 64, .addr = { 0xfd, 0, 0, 0x18 } };
	struct nfsl_config t = b->cfg;
	__u32 zero = 0, one = 1, half = t.part_slots / 2;

	if (own_slicer(b, &b->slt, "tenants"))
		return -1;
	t.ntenants = 3;
	t.tenant_flags = NFSL_TEN_PREFIX;
	t.tenants[1] = (struct nfsl_tenant){ .base = 0, .size = half, .weight = 1, .name = "a" };
	t.tenants[2] = (struct nfsl_tenant){ .base = half, .size = half / 2, .weight = 1,
					     .name = "b" };
	t.tenants[0] = (struct nfsl_tenant){ .base = half + half / 2,
					     .size = t.part_slots - half - half / 2, .weight = 1,
					     .name = "default" };
	if (bpf_map_update_elem(bpf_map__fd(b->slt->maps.nfsl_config), &zero, &t, BPF_ANY) ||
	    bpf_map_update_elem(bpf_map__fd(b->slt->maps.nfsl_tpfx), &k, &one, BPF_ANY) ||
	    bpf_map_update_elem(bpf_map__fd(b->slt->maps.nfsl_tpfx), &k6, &one, BPF_ANY))
		return pr_err("cannot configure the tenants slicer: %s", strerror(errno)), -1;
	return 0;
}

static int ev_count(void *ctx, void *data, size_t size)
{
	(*(unsigned long long *)ctx)++;
	return 0;
}

/* slicer-skip(-events): a slicer on the store and counters with a config,
 * cursor and events ring of its own, whose table ends before the egress
 * (dp_setup_domain): what it would slice leaves the domain, passes unsliced and is
 * counted skipped_route; with the flag (set per block) it is written as a
 * drop event, which the driver drains after each block. */
static int setup_skip(struct bench *b)
{
	struct nfsl_config t = b->cfg;
	__u32 zero = 0;

	if (own_slicer(b, &b->sks, "skipping"))
		return -1;
	t.nifaces--;
	if (bpf_map_update_elem(bpf_map__fd(b->sks->maps.nfsl_config), &zero, &t, BPF_ANY))
		return pr_err("cannot configure the skipping slicer: %s", strerror(errno)), -1;
	b->evrb = ring_buffer__new(bpf_map__fd(b->sks->maps.nfsl_events), ev_count, &b->evn,
				   NULL);
	if (!b->evrb)
		return pr_err("cannot read the drop events: %s", strerror(errno)), -1;
	return 0;
}

/* slicer-nocache: a slicer on the store and counters with a config and
 * cursor of its own, its route verdict cache off (--route-cache off). */
static int setup_nocache(struct bench *b)
{
	struct nfsl_config t = b->cfg;
	__u32 zero = 0;

	if (own_slicer(b, &b->snc, "no-cache"))
		return -1;
	t.route_cache_us = 0;
	if (bpf_map_update_elem(bpf_map__fd(b->snc->maps.nfsl_config), &zero, &t, BPF_ANY))
		return pr_err("cannot configure the no-cache slicer: %s", strerror(errno)), -1;
	return 0;
}

/* Load the four objects and configure the domain as `nfslice attach` does. */
int dp_setup_domain(struct bench *b)
{
	struct nfsl_config *cfg = &b->cfg, cold;
	__u32 zero = 0, part, i, n;
	int err;

	b->ncpus = libbpf_num_possible_cpus();
	if (b->ncpus <= 0 || b->ncpus > NFSL_MAX_CPUS) {
		pr_err("cannot use %d possible CPUs", b->ncpus);
		return -1;
	}
	err = nfsl_config_init(cfg, NFSL_DEF_THRESHOLD, NFSL_DEF_KEEP, NFSL_DEF_SLOTS,
			       NFSL_DEF_EXPIRY, b->ncpus);
	if (err) {
		pr_err("cannot get a random MAC key: %s", strerror(-err));
		return -1;
	}
	/* The domain: frames enter on if_in, the FIB sends them out of
	 * if_out (dp_setup_netns), the last two of its --ifaces entries:
	 * the slicer's searches of the table (bpf/nfsl_route.h) walk the
	 * absent interfaces before them. */
	n = b->o.nifaces;
	cfg->nifaces = n;
	for (i = 0; i < n - 2; i++)
		cfg->ifaces[i].ifindex = BENCH_IF_ABSENT + i;
	cfg->ifaces[n - 2].ifindex = b->if_in;
	memcpy(cfg->ifaces[n - 2].mac, bench_mac_in, ETH_ALEN);
	cfg->ifaces[n - 1].ifindex = b->if_out;
	cfg->win_min = b->o.win_min;

	b->sl = slicer_bpf__open();
	if (!b->sl) {
		pr_err("cannot open the slicer object: %s", strerror(errno));
		return -1;
	}
	bpf_map__set_max_entries(b->sl->maps.nfsl_store, NFSL_DEF_SLOTS);
	err = slicer_bpf__load(b->sl);
	if (err) {
		pr_err("cannot load the slicer: %s", strerror(-err));
		return -1;
	}
	if (bpf_map_update_elem(bpf_map__fd(b->sl->maps.nfsl_config), &zero, cfg, BPF_ANY)) {
		pr_err("cannot write the domain config: %s", strerror(errno));
		return -1;
	}

	/* The slicer without its FIB lookup, on the same maps. */
	b->sn = slicer_nofib_bpf__open();
	if (!b->sn) {
		pr_err("cannot open the slicer-nofib object: %s", strerror(errno));
		return -1;
	}
	if (dp_reuse_maps(b->sn->maps.nfsl_store, b->sn->maps.nfsl_config, b->sn->maps.nfsl_counters,
		       b->sn->maps.nfsl_cursor, b->sl))
		return -1;
	err = slicer_nofib_bpf__load(b->sn);
	if (err) {
		pr_err("cannot load the slicer-nofib: %s", strerror(-err));
		return -1;
	}

	/* The slicer with the coarse clock and no log, and with no log: the
	 * production slicer's maps, cursor included. */
	b->sco = slicer_coarse_bpf__open();
	if (!b->sco || dp_reuse_maps(b->sco->maps.nfsl_store, b->sco->maps.nfsl_config,
				  b->sco->maps.nfsl_counters, b->sco->maps.nfsl_cursor, b->sl) ||
	    (err = slicer_coarse_bpf__load(b->sco))) {
		pr_err("cannot load the slicer-coarse: %s", strerror(b->sco ? -err : errno));
		return -1;
	}
	b->srp = slicer_replay63_bpf__open();
	if (!b->srp || dp_reuse_maps(b->srp->maps.nfsl_store, b->srp->maps.nfsl_config,
				  b->srp->maps.nfsl_counters, b->srp->maps.nfsl_cursor, b->sl) ||
	    (err = slicer_replay63_bpf__load(b->srp))) {
		pr_err("cannot load the slicer-replay63: %s", strerror(b->srp ? -err : errno));
		return -1;
	}
	b->snl = slicer_nolog_bpf__open();
	if (!b->snl || dp_reuse_maps(b->snl->maps.nfsl_store, b->snl->maps.nfsl_config,
				  b->snl->maps.nfsl_counters, b->snl->maps.nfsl_cursor, b->sl) ||
	    (err = slicer_nolog_bpf__load(b->snl))) {
		pr_err("cannot load the slicer-nolog: %s", strerror(b->snl ? -err : errno));
		return -1;
	}

	b->sp = splicer_bpf__open();
	if (!b->sp) {
		pr_err("cannot open the splicer object: %s", strerror(errno));
		return -1;
	}
	if (dp_reuse_maps(b->sp->maps.nfsl_store, b->sp->maps.nfsl_config, b->sp->maps.nfsl_counters,
		       b->sp->maps.nfsl_cursor, b->sl))
		return -1;
	err = splicer_bpf__load(b->sp);
	if (err) {
		pr_err("cannot load the splicer: %s", strerror(-err));
		return -1;
	}
	/* The splicer without its histogram: the same maps. */
	b->spn = splicer_nores_bpf__open();
	if (!b->spn || dp_reuse_maps(b->spn->maps.nfsl_store, b->spn->maps.nfsl_config,
				  b->spn->maps.nfsl_counters, b->spn->maps.nfsl_cursor, b->sl) ||
	    (err = splicer_nores_bpf__load(b->spn))) {
		pr_err("cannot load the splicer-nores: %s", strerror(b->spn ? -err : errno));
		return -1;
	}

	b->bt = bench_tc_bpf__open();
	if (!b->bt) {
		pr_err("cannot open the tc baselines: %s", strerror(errno));
		return -1;
	}
	if (dp_reuse_maps(b->bt->maps.nfsl_store, b->bt->maps.nfsl_config, b->bt->maps.nfsl_counters,
		       b->bt->maps.nfsl_cursor, b->sl))
		return -1;
	err = bench_tc_bpf__load(b->bt);
	if (err) {
		pr_err("cannot load the tc baselines: %s", strerror(-err));
		return -1;
	}

	b->bx = bench_xdp_bpf__open();
	if (!b->bx) {
		pr_err("cannot open the XDP baselines: %s", strerror(errno));
		return -1;
	}
	if (dp_reuse_maps(b->bx->maps.nfsl_store, b->bx->maps.nfsl_config, b->bx->maps.nfsl_counters,
		       b->bx->maps.nfsl_cursor, b->sl))
		return -1;
	err = bench_xdp_bpf__load(b->bx);
	if (err) {
		pr_err("cannot load the XDP baselines: %s", strerror(-err));
		return -1;
	}
	/* The cold pair: a second slicer and a second copy on the same store
	 * and counters, with a config and a cursor of their own whose window
	 * is the whole partition (the FIFO store). */
	if (own_slicer(b, &b->slc, "cold"))
		return -1;
	cold = *cfg;
	cold.win_min = cfg->part_slots;
	if (bpf_map_update_elem(bpf_map__fd(b->slc->maps.nfsl_config), &zero, &cold, BPF_ANY)) {
		pr_err("cannot write the cold config: %s", strerror(errno));
		return -1;
	}
	if (setup_tenants(b) || setup_skip(b) || setup_nocache(b))
		return -1;
	b->bxc = bench_xdp_bpf__open();
	if (!b->bxc) {
		pr_err("cannot open the cold copy: %s", strerror(errno));
		return -1;
	}
	if (dp_reuse_maps(b->bxc->maps.nfsl_store, b->bxc->maps.nfsl_config,
		       b->bxc->maps.nfsl_counters, b->bxc->maps.nfsl_cursor, b->slc))
		return -1;
	err = bench_xdp_bpf__load(b->bxc);
	if (err) {
		pr_err("cannot load the cold copy: %s", strerror(-err));
		return -1;
	}

	/* The warm copy uses the first slot of the next CPU's partition,
	 * which the slicer on this CPU never touches. */
	part = b->o.cpu % b->ncpus;
	b->bx->bss->bench_warm = ((part + 1) % b->ncpus) * cfg->part_slots;

	b->store_len = (size_t)NFSL_DEF_SLOTS * sizeof(struct nfsl_slot);
	b->store = mmap(NULL, b->store_len, PROT_READ | PROT_WRITE, MAP_SHARED,
			bpf_map__fd(b->sl->maps.nfsl_store), 0);
	if (b->store == MAP_FAILED) {
		b->store = NULL;
		pr_err("cannot mmap the store: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/* Free every busy slot, as splicers would; the driver does it between
 * measurements so the slicer always finds a free slot. */
void dp_release_all(struct bench *b)
{
	unsigned int i;

	for (i = 0; i < NFSL_DEF_SLOTS; i++) {
		__u64 ctl = NFSL_READ_ONCE_U64(b->store[i].ctl);

		if (NFSL_CTL_EXP(ctl))
			nfsl_slot_release(&b->store[i], NFSL_CTL_GEN(ctl));
	}
}

/*
 * Put the slicer's allocation state (nfsl_store.h struct nfsl_alloc) back
 * to its start: cursor at the first slot, window at its minimum, as after
 * its window has shrunk back. The expiry clock restarts too, which is
 * harmless with every slot free.
 */
int dp_reset_alloc(struct bench *b)
{
	/* one value per possible CPU, each rounded up to 8 bytes */
	size_t size = (sizeof(struct nfsl_alloc) + 7) & ~(size_t)7;
	__u32 zero = 0;
	int err = 0;
	void *v;

	v = calloc(b->ncpus, size);
	if (!v)
		return -ENOMEM;
	if (bpf_map_update_elem(bpf_map__fd(b->sl->maps.nfsl_cursor), &zero, v, BPF_ANY)) {
		err = -errno;
		pr_err("cannot reset the allocation state: %s", strerror(errno));
	}
	free(v);
	return err;
}

/*
 * Write back and evict the whole store from every cache level (clflush on
 * the user mapping of the map's pages), so the next block finds it in DRAM.
 */
int dp_flush_store(struct bench *b)
{
#if defined(__x86_64__) || defined(__i386__)
	const char *p = (const char *)b->store, *end = p + b->store_len;

	for (; p < end; p += 64)
		__builtin_ia32_clflush(p);
	__builtin_ia32_mfence();
	return 0;
#else
	pr_err("--flush needs x86 (clflush)");
	return -EOPNOTSUPP;
#endif
}
