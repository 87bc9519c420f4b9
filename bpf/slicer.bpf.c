// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * nfslice slicer: XDP program on the ingress of every domain interface.
 *
 * Parks the payload of a large UDP/TCP packet in the store and lets the
 * header travel on, marked DSCP 63 and carrying a token (NFSlicer §III-B
 * "slice operation", PayloadPark §3.3 "Split", Alg. 1). The sliced packet
 * stays valid: IP and UDP lengths and the L4 checksum describe it.
 * Slices only what the route sends to a splicer (nfsl_route.h).
 * Returns XDP_PASS for everything except a token of ours arriving from
 * outside at any DSCP (a replay, nfsl_is_replay), which is dropped, and a packet a failed helper left
 * half rewritten (never seen; counted slice_failed). What it passes goes
 * on to the program in its chain map, if any: the steering program of a
 * user-space NF on AF_XDP (bpf/steer.bpf.c, nfslice-nf --name), which so
 * always runs after the slicer, dispatcher or not.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <xdp/xdp_helpers.h>

#include "nfsl_maps.h"
#include "nfsl_alloc.h"
#include "nfsl_events.h"
#include "nfsl_hdr.h"
#include "nfsl_token.h"
#include "nfsl_store.h"
#include "nfsl_route.h"
#include "nfsl_splice.h"
#include "nfsl_kern.h"

/* libxdp dispatcher: the slicer runs last (issue 20 §4, docs/design.md
 * "No way around the splicer"): after every program of a lower priority
 * (the default is 50), and its XDP_PASS ends the chain, so no program
 * after it can XDP_TX or XDP_REDIRECT a sliced header. */
struct {
	__uint(priority, NFSL_SLICER_RUN_PRIO);
	__uint(XDP_PASS, 0);
} XDP_RUN_CONFIG(nfsl_slicer);

/* Entry 0: the program that gets what the slicer passes (tail call); one
 * per domain, pinned as "chain". Empty: the frame goes to the kernel. */
struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} nfsl_chain SEC(".maps");

/*
 * The park log (struct nfsl_park_rec, nfsl_store.h): one entry per slice,
 * in parking order per partition, for the TTL scan of user space
 * (userspace/lib/nfsl/ttl.h), which so reads only the entries that aged past the
 * TTL. Same geometry as the store (resized at attach), pinned as
 * "parklog"; mmapable.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, NFSL_DEF_SLOTS);
	__type(key, __u32);
	__type(value, struct nfsl_park_rec);
} nfsl_parklog SEC(".maps");

/* Counters of the evictions user space makes (struct nfsl_mgr_counters),
 * pinned as "mgr_counters". The slicer never touches them: declared here
 * so that the map exists with its BTF wherever the slicer's maps do. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct nfsl_mgr_counters);
} nfsl_mgr_cnt SEC(".maps");

/* Per-CPU counters of each tenant (struct nfsl_tenant_counters), key the
 * tenant; pinned as "tenant_counters": nfsliced's demand estimate. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, NFSL_MAX_TENANTS);
	__type(key, __u32);
	__type(value, struct nfsl_tenant_counters);
} nfsl_tcnt SEC(".maps");

/* Destination-prefix rules: longest match -> tenant (struct
 * nfsl_tenant_pfx, IPv4 mapped); pinned as "tenant_prefix". */
struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, NFSL_MAX_TENANT_PREFIXES);
	__type(key, struct nfsl_tenant_pfx);
	__type(value, __u32);
} nfsl_tpfx SEC(".maps");

/* Scratch memory of one slice, off the BPF stack (512 bytes, which the
 * slicer's inlined code nearly fills): the L4 options and kept bytes to
 * sum (nfsl_l4_sum), or the key of a prefix lookup (nfsl_tenant_of); and
 * the ingress's index (nfsl_ingress). */
struct nfsl_scratch {
	union {
		__u8 l4[NFSL_L4HDR_MAX + NFSL_KEEP_MAX - sizeof(struct tcphdr)];
		struct nfsl_tenant_pfx pfx;
	};
	__u32 in;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct nfsl_scratch);
} nfsl_scratch SEC(".maps");

static __always_inline struct nfsl_scratch *nfsl_get_scratch(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&nfsl_scratch, &zero);
}

/*
 * nfsl_ingress - index of the packet's ingress interface in cfg->ifaces[]
 * (nfsl_iface_idx: NFSL_MAX_IFACES when it is none of the domain's),
 * searched once per packet for the NF port check, the route check and the
 * tenant. Written to the scratch memory and read back, which the verifier
 * reads as an unknown scalar: carried as the search's own result, a known
 * index on each of its 17 exits, the entry reads made it precise and the
 * slicer's states multiplied past the 1M instruction limit. The array
 * lookup is inlined by the verifier: no helper call.
 */
static __always_inline __u32 nfsl_ingress(struct xdp_md *ctx, const struct nfsl_config *cfg)
{
	struct nfsl_scratch *sc = nfsl_get_scratch();

	if (!sc)
		return NFSL_MAX_IFACES;
	sc->in = nfsl_iface_idx(cfg, ctx->ingress_ifindex);
	return *(volatile __u32 *)&sc->in;
}

/* VLAN rules: outer VID -> tenant + 1, 0 = no rule; pinned as
 * "tenant_vlan". */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, NFSL_VLAN_IDS);
	__type(key, __u32);
	__type(value, __u32);
} nfsl_tvlan SEC(".maps");

/* The tenant of the longest destination prefix rule matching the IP
 * header at @l3 (IPv6 if @v6), plus one; 0 when none does. The address is
 * loaded with bpf_xdp_load_bytes: @l3 is an argument the verifier knows
 * nothing of. */
static __always_inline __u32 nfsl_tenant_pfx(struct xdp_md *ctx, __u32 l3, __u32 v6)
{
	struct nfsl_scratch *sc = nfsl_get_scratch();
	struct nfsl_tenant_pfx *k;
	__u32 *t;

	if (!sc)
		return 0;
	k = &sc->pfx;
	k->prefixlen = 128;
	if (v6) {
		if (bpf_xdp_load_bytes(ctx, l3 + offsetof(struct ipv6hdr, daddr), k->addr, 16))
			return 0;
	} else {
		__builtin_memset(k->addr, 0, 10);
		k->addr[10] = k->addr[11] = 0xff;
		if (bpf_xdp_load_bytes(ctx, l3 + offsetof(struct iphdr, daddr), k->addr + 12, 4))
			return 0;
	}
	t = bpf_map_lookup_elem(&nfsl_tpfx, k);
	return t ? *t + 1 : 0;
}

/*
 * nfsl_tenant_of - the tenant of a packet (issue 10 §5): the longest
 * destination prefix rule matching its IP header at @l3, else the rule of
 * its outer VLAN (@pkt bits 8-19; bit 0: IPv6), else the tenant of its
 * ingress interface cfg->ifaces[@in] (nfsl_iface.tenant; @in from
 * nfsl_iface_idx); always 0 (the default) in a domain without tenants or
 * for a rule naming a tenant that is not there. Each lookup only when such
 * rules exist (config tenant_flags).
 * A global function, verified once (see nfsl_alloc_slot): its result is
 * an unknown scalar to the caller whether tenants exist or not, so the
 * slicer's paths do not split on a known tenant 0 (a constant key of an
 * array lookup is tracked precisely). Scalars only: the verifier forgets
 * what a stack pointer handed to a global function points at.
 */
__noinline __u32 nfsl_tenant_of(struct xdp_md *ctx, const struct nfsl_config *cfg, __u32 in,
				__u32 l3, __u32 pkt)
{
	__u32 flags, vid = (pkt >> 8) & (NFSL_VLAN_IDS - 1), tenant = 0, *t, r;

	if (!cfg || !cfg->ntenants)
		return 0;
	if (in < NFSL_MAX_IFACES)
		tenant = cfg->ifaces[in].tenant;
	flags = cfg->tenant_flags;
	if ((flags & NFSL_TEN_PREFIX) && (r = nfsl_tenant_pfx(ctx, l3, pkt & 1))) {
		tenant = r - 1;
	} else if ((flags & NFSL_TEN_VLAN) && vid) {
		t = bpf_map_lookup_elem(&nfsl_tvlan, &vid);
		if (t && *t)
			tenant = *t - 1;
	}
	if (tenant >= cfg->ntenants || tenant >= NFSL_MAX_TENANTS)
		tenant = 0;
	return tenant;
}

/*
 * The parking clock: CLOCK_MONOTONIC to the ns. The coarse clock ticks
 * once a jiffy (4 ms at HZ=250), too coarse for a 10 ms TTL and a
 * residency in us; and the parked time tells one parking of a slot from
 * another (nfsl_slot_evict), which a clock that ticks slower than slices
 * cannot. Its price per packet: docs/benchmarks.md "Parking clock and
 * park log". The benchmark builds the slicer with the coarse clock and
 * without the log (bench/bpf/slicer_coarse.bpf.c) to measure them.
 */
#ifndef NFSL_PARK_CLOCK
#define NFSL_PARK_CLOCK() bpf_ktime_get_ns()
#endif
#ifndef NFSL_PARK_LOG
#define NFSL_PARK_LOG 1
#endif

/*
 * nfsl_is_replay - is the packet entering the domain a header this domain
 * sliced, sent back in (issue 17 §1.1)? Such a header must never reach a
 * splicer, whatever its DSCP, ports or addresses: re-marked or rewritten,
 * it would take its parked payload somewhere else. The splicers honour a
 * token at any DSCP (an NF may re-mark), so this check does too.
 * Every DSCP: a token naming no slot of the store is not ours
 * (nfsl_token_in_store), without a MAC.
 * DSCP 63: the MAC decides. Under the domain's own key only: a header a
 * previous instance sliced (key_old, copy-mode migration) may enter one
 * of this instance's domain interfaces on its way to the splicer that
 * holds its copy (docs/cli.md "Copy mode").
 * Any other DSCP: only a token naming a slot of the store whose live
 * payload has the token's generation goes on to the MAC (~55 ns). Random
 * trailing bytes of ordinary traffic pass that pre-filter with a chance of
 * about 2^-33 (a 32-bit generation to match), so they pay the token read
 * and, for ~1/2 x slots/2^20 of them, one slot read (bench: docs/
 * benchmarks.md "Replay check"). A header whose payload is gone already
 * is dropped as stale by every splicer, so it needs no check here.
 */
#ifndef NFSL_REPLAY_ANY_DSCP
#define NFSL_REPLAY_ANY_DSCP 1 /* 0: DSCP 63 only (the benchmark's baseline) */
#endif
static __always_inline bool nfsl_is_replay(struct xdp_md *ctx,
					   const struct nfsl_pkt *p,
					   const struct nfsl_config *cfg)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct nfsl_token tok, *t;
	struct nfsl_slot *s;
	__u32 off, idx;

	if (!nfsl_splice_token_off(p, &off) ||
	    (!NFSL_REPLAY_ANY_DSCP && p->dscp != NFSL_DSCP_SLICED))
		return false;
	/* Read in place, no helper call (~20 ns each here), where the
	 * token lies in the linear part, as in every single-buffer frame. */
	t = data + (off & 0x3fff); /* the verifier's bound on packet offsets */
	if (off <= 0x3fff && (void *)(t + 1) <= data_end)
		__builtin_memcpy(&tok, t, sizeof(tok));
	else if (bpf_xdp_load_bytes(ctx, off, &tok, sizeof(tok)))
		return false;
	if (!nfsl_token_index(&tok, &idx) || !nfsl_token_in_store(idx, cfg->slots))
		return false;
	if (p->dscp == NFSL_DSCP_SLICED)
		return nfsl_token_verify(&tok, cfg->key);
	s = bpf_map_lookup_elem(&nfsl_store, &idx);
	if (!s || !nfsl_slot_busy(s, nfsl_ntohl(tok.gen)))
		return false;
	return nfsl_token_verify(&tok, cfg->key);
}

/*
 * A checksum field equal to the pseudo-header seed is what a packet in
 * CHECKSUM_PARTIAL state carries (a local socket's packet over veth with TX
 * checksum offload, the kernel default): the device was to compute the
 * rest. Then the payload's sum cannot be derived from the checksum and is
 * computed over the @parked bytes now in the slot (~70 ns, paid by these
 * packets only). A full checksum that happens to equal the seed is told
 * apart by verifying it. Returns true for a partial packet, with *@psum the
 * parked bytes' sum at L4 offset @at.
 */
static __always_inline bool nfsl_partial(__u32 pseudo, __u32 hk, __u32 l4len,
					 const __u8 *payload, __u32 parked,
					 __u32 at, __u16 *psum)
{
	__u16 r;

	if (parked < 1 || parked > NFSL_PAYLOAD_MAX)
		return false;
	r = nfsl_csum_at(nfsl_csum_fold(nfsl_csum_bytes(payload, parked, 0)), at);
	if (nfsl_csum_fold(nfsl_csum_add(nfsl_csum_add(pseudo, nfsl_htons(l4len)),
					 nfsl_csum_add(hk, r))) == 0xffff)
		return false; /* a valid full checksum */
	*psum = r;
	return true;
}

/*
 * Sum of the L4 header as received (checksum field included) and of the
 * kept payload bytes, and the received checksum. The fixed header is summed
 * in registers from the packet, and so are TCP options and kept bytes up
 * to 40 B in whole words; more, or a part word, go through the scratch
 * map to bpf_csum_diff.
 */
static __always_inline int nfsl_l4_sum(struct xdp_md *ctx,
				       const struct nfsl_pkt *p, __u32 hk_len,
				       __u32 *sum, __u16 *csum)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u8 *l4 = data + p->l4off;
	struct nfsl_scratch *sc;
	__u32 fixed, rest;

	if (p->proto == IPPROTO_UDP) {
		if (l4 + sizeof(struct udphdr) > (__u8 *)data_end)
			return -1;
		fixed = sizeof(struct udphdr);
		*sum = nfsl_csum_words(l4, 2, 0);
		*csum = ((struct udphdr *)l4)->check;
	} else {
		if (l4 + sizeof(struct tcphdr) > (__u8 *)data_end)
			return -1;
		fixed = sizeof(struct tcphdr);
		*sum = nfsl_csum_words(l4, 5, 0);
		*csum = ((struct tcphdr *)l4)->check;
	}
	rest = hk_len - fixed;
	if (!rest)
		return 0;
	/* Whole words up to the largest TCP options (timestamps: 12 B; or
	 * a keep of a few words) are summed in place, in registers: two
	 * helper calls saved, the load into the scratch map and
	 * bpf_csum_diff (~20 ns each here). */
	if (!(rest & 3) && rest <= NFSL_L4HDR_MAX - sizeof(struct tcphdr)) {
		__u8 *o = l4 + fixed;
		__u64 s = *sum;

		NFSL_UNROLL
		for (int i = 0; i < (NFSL_L4HDR_MAX - sizeof(struct tcphdr)) / 4; i++) {
			if (4 * i >= rest)
				break;
			if (o + 4 * i + 4 > (__u8 *)data_end)
				return -1;
			s += nfsl_load32(o + 4 * i);
		}
		s = (s & 0xffffffff) + (s >> 32);
		s = (s & 0xffffffff) + (s >> 32);
		*sum = (__u32)s;
		return 0;
	}
	sc = nfsl_get_scratch();
	if (!sc || rest > sizeof(sc->l4) ||
	    bpf_xdp_load_bytes(ctx, p->l4off + fixed, sc->l4, rest))
		return -1;
	*sum = nfsl_csum_bytes(sc->l4, rest, *sum);
	return 0;
}

/* Rewrite IP and L4 headers of the shrunk packet and write the token. */
static __always_inline int nfsl_write_sliced(struct xdp_md *ctx,
					     const struct nfsl_pkt *p,
					     struct nfsl_token *tok, __u32 tok_off,
					     __u16 csum)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	void *l3 = data + p->l3off, *l4 = data + p->l4off;
	__u32 l3len = tok_off + NFSL_TOKEN_LEN - p->l3off;
	struct nfsl_token *t = data + (tok_off & 0x3fff); /* the verifier's bound */

	if (l3 + (p->v6 ? sizeof(struct ipv6hdr) : sizeof(struct iphdr)) > data_end ||
	    l4 + sizeof(struct tcphdr) > data_end)
		return -1;
	nfsl_ip_rewrite(l3, p->v6, NFSL_DSCP_SLICED, l3len);
	nfsl_l4_rewrite(l4, p->proto, l3len - (p->l4off - p->l3off), csum);
	/* Written in place where it lies in the frame's linear part (every
	 * single-buffer frame): a helper call saved, ~20 ns here. */
	if (tok_off <= 0x3fff && (void *)(t + 1) <= data_end) {
		__builtin_memcpy(t, tok, sizeof(*tok));
		return 0;
	}
	return bpf_xdp_store_bytes(ctx, tok_off, tok, sizeof(*tok));
}

static __always_inline int nfsl_slice(struct xdp_md *ctx,
				      const struct nfsl_config *cfg,
				      struct nfsl_counters *cnt,
				      const struct nfsl_pkt *p, __u32 in, __u32 parked, __u32 dst,
				      __u64 parked_ns)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u32 tok_off, hk_len, old_l4, new_l4, pseudo, hk;
	__u16 csum, rx_csum, ip_csum, tsum, psum = 0;
	__u8 partial = 0;
	bool udp = p->proto == IPPROTO_UDP;
	struct nfsl_park_rec *rec;
	struct nfsl_token tok;
	struct nfsl_take t;
	struct nfsl_tenant_counters *tc;
	struct nfsl_slot *s;
	__u32 tenant;

	/* Looked up without tenants too: a pointer that may be NULL would
	 * double the verifier's states; counting stays for tenants. */
	tenant = cfg->ntenants ?
		 nfsl_tenant_of(ctx, cfg, in, p->l3off, (__u32)p->vlan << 8 | p->v6) : 0;
	tc = bpf_map_lookup_elem(&nfsl_tcnt, &tenant);
	if (!tc)
		return XDP_PASS;
	if (cfg->ntenants)
		tc->attempts++;
	if (cfg->ntenants ? nfsl_alloc_tenant(cfg, dst, tenant, &t) :
			    nfsl_alloc_slot(cfg, dst, &t)) {
		if (cfg->ntenants) {
			tc->skipped_quota++;
			cnt->skipped_quota++;
		} else {
			cnt->skipped_full++;
		}
		return XDP_PASS;
	}
	s = bpf_map_lookup_elem(&nfsl_store, &t.idx);
	if (!s) { /* unreachable: the allocator found it */
		cnt->slice_failed++;
		return XDP_PASS;
	}
	if (t.claim == NFSL_CLAIM_EVICTED) {
		cnt->evicted++;
		if (cfg->ntenants)
			tc->evicted++;
	}

	tok_off = p->payoff + cfg->keep;
	hk_len = tok_off - p->l4off;
	if (parked < 1 || parked > NFSL_PAYLOAD_MAX ||
	    bpf_xdp_load_bytes(ctx, tok_off, s->payload, parked) ||
	    nfsl_l4_sum(ctx, p, hk_len, &hk, &csum) ||
	    nfsl_pseudo_sum(data, data_end, p, &pseudo, &ip_csum))
		goto abort;
	rx_csum = csum;

	nfsl_token_make(&tok, cfg->key, NFSL_TOKEN_WORD(t.idx, parked), t.gen);
	tsum = nfsl_csum_at(nfsl_csum_fold(nfsl_csum_words(&tok, 4, 0)),
			    tok_off - p->l4off);
	old_l4 = p->l3end - p->l4off;
	new_l4 = hk_len + NFSL_TOKEN_LEN;
	if (udp && csum == 0) {
		/* UDP without checksum stays without */
	} else if (csum == nfsl_csum_seed(pseudo, old_l4) &&
		   nfsl_partial(pseudo, hk, old_l4, s->payload, parked,
				tok_off - p->l4off, &psum)) {
		/* The sender's device has yet to compute the checksum: the
		 * sliced packet gets the seed of its own length. */
		csum = nfsl_csum_seed(pseudo, new_l4);
		partial = NFSL_SLOT_F_PARTIAL;
		/* A seed that is also the header's full checksum (1 in
		 * 65536) would be ambiguous downstream: the next generation
		 * gives another token, hence another sum. */
		if (nfsl_seed_ambiguous(pseudo, hk, rx_csum, old_l4, new_l4, udp, tsum, csum)) {
			if (!nfsl_slot_regen(s, t.gen, &t.gen))
				goto abort;
			nfsl_token_make(&tok, cfg->key, NFSL_TOKEN_WORD(t.idx, parked), t.gen);
			tsum = nfsl_csum_at(nfsl_csum_fold(nfsl_csum_words(&tok, 4, 0)),
					    tok_off - p->l4off);
			if (nfsl_seed_ambiguous(pseudo, hk, rx_csum, old_l4, new_l4, udp, tsum,
						csum)) {
				nfsl_slot_release(s, t.gen);
				cnt->skipped_csum++;
				return XDP_PASS;
			}
		}
	} else {
		csum = nfsl_slice_csum(pseudo, hk, csum, old_l4, new_l4, udp,
				       tsum, &psum);
	}

	nfsl_token_memo_write(s, &tok, cfg->key);
	s->len = parked;
	s->csum = psum;
	s->dscp = p->dscp;
	s->flags = ((tok_off - p->l4off) & 1 ? NFSL_SLOT_F_ODD : 0) |
		   (udp && csum == 0 ? NFSL_SLOT_F_NOCSUM : 0) |
		   (p->v6 ? NFSL_SLOT_F_V6 : 0) |
		   (rx_csum == 0xffff ? NFSL_SLOT_F_L4FFFF : 0) |
		   (ip_csum == 0xffff ? NFSL_SLOT_F_IPFFFF : 0) | partial;
	s->ifindex = ctx->ingress_ifindex;
	s->parked_ns = parked_ns;

	/* Shrink first: if it fails, the packet is still untouched. */
	if (bpf_xdp_adjust_tail(ctx, -(int)(parked - NFSL_TOKEN_LEN)))
		goto abort;
	if (nfsl_write_sliced(ctx, p, &tok, tok_off, csum)) {
		/* Unreachable after the checks above; never pass a half
		 * rewritten packet. */
		nfsl_slot_release(s, t.gen);
		cnt->slice_failed++;
		return XDP_DROP;
	}
	/* Logged once parked for good (an abort logs nothing), after the
	 * slot's parked_ns: the scan checks the one against the other. */
	rec = NFSL_PARK_LOG ? bpf_map_lookup_elem(&nfsl_parklog, &t.log) : NULL;
	if (rec)
		nfsl_park_log_write(rec, t.seq, t.idx, t.gen, parked_ns);
	cnt->sliced++;
	cnt->parked_bytes += parked;
	if (cfg->ntenants)
		tc->sliced++;
	return XDP_PASS;

abort:
	nfsl_slot_release(s, t.gen);
	cnt->slice_failed++;
	return XDP_PASS;
}

/*
 * On an NF port (--nf-port) the slicer slices nothing: sliced headers come
 * back that way from the NF servers and pass on to the splicers. A drop
 * notice (NFSL_ETH_P_NOTICE: an NF server dropped a sliced header, park
 * deployment, PayloadPark §6.2.4) frees the slot its token names at once,
 * if the token is ours and the payload still parked, and goes no further.
 */
static __always_inline int nfsl_nf_port(struct xdp_md *ctx, const struct nfsl_config *cfg,
					struct nfsl_counters *cnt)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct nfsl_pkt p = {};
	struct nfsl_token tok;
	struct nfsl_slot *s;
	__u32 off, idx;
	__u8 ver;

	if ((void *)(eth + 1) + 1 > data_end)
		return XDP_PASS;
	if (eth->h_proto != nfsl_htons(NFSL_ETH_P_NOTICE))
		return XDP_PASS;
	ver = *(__u8 *)(eth + 1) >> 4;
	/* The notice keeps its IP header: its EtherType back, to parse. */
	eth->h_proto = nfsl_htons(ver == 6 ? ETH_P_IPV6 : ETH_P_IP);
	/* Whole length: a notice may come multi-buffer (token in a frag). */
	if ((ver != 4 && ver != 6) ||
	    nfsl_parse_len(data, data_end, bpf_xdp_get_buff_len(ctx), &p) ||
	    !nfsl_splice_token_off(&p, &off) ||
	    bpf_xdp_load_bytes(ctx, off, &tok, sizeof(tok)) || !nfsl_token_index(&tok, &idx))
		goto bad;
	s = bpf_map_lookup_elem(&nfsl_store, &idx);
	/* A notice for a payload a copy-mode migration imported carries
	 * the old instance's token. */
	if (!nfsl_token_ours_cfg(&tok, s, cfg) || !s ||
	    !nfsl_slot_release(s, nfsl_ntohl(tok.gen)))
		goto bad;
	cnt->explicit_drop++;
	return XDP_DROP;
bad:
	cnt->bad_notice++;
	return XDP_DROP;
}

/* A drop event of the frame @ctx (nfsl_events.h): @tok_off, where its
 * token lies (0: none). A global function, verified once. */
__noinline int nfsl_event_xdp(struct xdp_md *ctx, __u32 offs, __u32 tok_off, __u32 info)
{
	struct nfsl_event *e;

	if (!ctx)
		return 0;
	e = nfsl_event_fill(ctx, NFSL_EV_XDP, ctx->ingress_ifindex, bpf_xdp_get_buff_len(ctx), offs,
			    tok_off, info);
	if (e)
		bpf_ringbuf_submit(e, 0);
	return 0;
}

static __always_inline int nfsl_slicer_run(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct nfsl_config *cfg = nfsl_get_config();
	struct nfsl_counters *cnt = nfsl_get_counters();
	__u32 lin = data_end - data, frame_len, paylen, keep, dst = 0, in;
	struct nfsl_pkt p = {};
	__u64 now;

	if (!cfg || !cnt || !cfg->slots)
		return XDP_PASS; /* domain not configured yet */
	in = nfsl_ingress(ctx, cfg);
	if (in < NFSL_MAX_IFACES && (cfg->ifaces[in].flags & NFSL_IF_NF_PORT))
		return nfsl_nf_port(ctx, cfg, cnt);
	/* A multi-buffer frame (jumbo, or a NIC's header-data split) goes on
	 * past its linear part [data, data_end) into frags: its length is
	 * the whole buffer's, its headers must lie in the linear part. */
	frame_len = nfsl_xdp_len(ctx, lin);
	if (nfsl_parse_len(data, data_end, frame_len, &p)) {
		cnt->unparsed++;
		return XDP_PASS;
	}
	if (nfsl_is_replay(ctx, &p, cfg)) {
		cnt->replayed++;
		if (nfsl_events_on(cfg))
			nfsl_event_xdp(ctx, NFSL_EV_OFFS(&p), p.l3end - NFSL_TOKEN_LEN,
				       NFSL_EV_INFO(&p, NFSL_EV_REPLAYED));
		return XDP_DROP;
	}
	if (p.payoff > lin) { /* L4 options beyond the linear part */
		cnt->unparsed++;
		return XDP_PASS;
	}
	keep = cfg->keep;
	paylen = p.l3end - p.payoff;
	if (frame_len < cfg->threshold || paylen <= keep + NFSL_TOKEN_LEN) {
		cnt->skipped_small++;
		return XDP_PASS;
	}
	if (p.l3end != frame_len) { /* bytes after the IP packet */
		cnt->unparsed++;
		return XDP_PASS;
	}
	/* Headers beyond NFSL_HDR_MAX: the splicer could not parse them. */
	if (paylen - keep > NFSL_PAYLOAD_MAX || p.payoff > NFSL_HDR_MAX) {
		cnt->skipped_big++;
		return XDP_PASS;
	}
	/* The sliced header (headers, kept bytes, token) must lie in the
	 * linear part: the shrink then frees every frag, and the header
	 * leaves linear, as the splicers take it. Headers beyond the linear
	 * part count as unparsed (nfsl_parse_len needs them there). */
	if (p.payoff + keep + NFSL_TOKEN_LEN > lin) {
		cnt->unparsed++;
		return XDP_PASS;
	}
	/* One clock read for the route cache's age and the parking time. */
	now = NFSL_PARK_CLOCK();
	switch (nfsl_route(ctx, cfg, cnt, &p, in, now, &dst)) {
	case NFSL_ROUTE_SLICE:
		break;
	case NFSL_ROUTE_L2:
		cnt->skipped_l2++;
		return XDP_PASS;
	case NFSL_ROUTE_LOCAL:
		cnt->skipped_local++;
		return XDP_PASS;
	case NFSL_ROUTE_MTU:
		cnt->skipped_mtu++;
		if (nfsl_events_on(cfg))
			nfsl_event_xdp(ctx, NFSL_EV_OFFS(&p), 0, NFSL_EV_INFO(&p, NFSL_EV_SKIPPED_MTU));
		return XDP_PASS;
	case NFSL_ROUTE_ERR:
		cnt->slice_failed++;
		return XDP_PASS;
	default:
		cnt->skipped_route++;
		if (nfsl_events_on(cfg))
			nfsl_event_xdp(ctx, NFSL_EV_OFFS(&p), 0,
				       NFSL_EV_INFO(&p, NFSL_EV_SKIPPED_ROUTE));
		return XDP_PASS;
	}
	return nfsl_slice(ctx, cfg, cnt, &p, in, paylen - keep, dst, now);
}

/* Multi-buffer (BPF_F_XDP_HAS_FRAGS): it attaches at any MTU (issue 20). */
SEC("xdp.frags")
int nfsl_slicer(struct xdp_md *ctx)
{
	int act = nfsl_slicer_run(ctx);

	if (act == XDP_PASS)
		bpf_tail_call(ctx, &nfsl_chain, 0); /* returns only if empty */
	return act;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
