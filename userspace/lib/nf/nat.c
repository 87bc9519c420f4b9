// SPDX-License-Identifier: GPL-2.0
/*
 * nat: traditional NAPT (RFC 3022) with VigNAT's behaviour (Zaostrovnykh
 * et al., SIGCOMM'17); the interface is in nfsl_nf_nat.h, the user's view
 * in docs/nf.md "NAT".
 *
 * Each worker owns a table of flows indexed by external port: flow i of
 * the worker whose range starts at lo holds port lo + i, so a WAN frame
 * finds its flow by one array index (VigNAT: port = start_port + index of
 * its double-chain allocator). A hash table on the internal 5-tuple finds
 * the flow of a LAN frame. Used flows sit on an LRU list ordered by the
 * last frame seen, oldest first, so expiry looks only at flows that do
 * expire (VigNAT's double chain does the same). Free ports wait on a FIFO
 * list: a freed port is reused last, which keeps late frames of an
 * expired flow away from a new one as long as there are other ports.
 *
 * The NF reads and writes only the IP and L4 headers, with incremental
 * checksum updates (RFC 1624), so it works unchanged on sliced headers
 * and the splicer, updating incrementally from what it finds, puts the
 * payload back with a right checksum (docs/format.md "Checksums without
 * touching the payload").
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <arpa/inet.h>

#include "nfsl_hdr.h"
#include "nf/nfsl_nf_nat.h"
#include "util/params.h"
#include "util/value.h"

#define NAT_NIL UINT32_MAX

/* What init parsed; read-only once traffic runs. Addresses in network
 * order, ports in host order. */
struct nat_conf {
	__be32 ext_ip;     /* external address of every translated flow */
	__be32 lan_net;    /* one device: sources in lan_net/lan_mask are LAN */
	__be32 lan_mask;
	__u16 start_port;  /* first external port (VigNAT --starting-port) */
	__u16 lan, wan;    /* device indexes of the two sides */
	__u32 max_flows;   /* per worker (VigNAT --max-flows) */
	__u64 expire_ns;   /* idle timeout (VigNAT --expire) */
	unsigned int ndevs;
};

/* One flow, at index (external port - lo) of its worker's table. */
struct nat_flow {
	__be32 int_ip;    /* the LAN host */
	__be32 rem_ip;    /* the WAN host it talks to */
	__be16 int_port;
	__be16 rem_port;
	__u8 proto;       /* IPPROTO_UDP or IPPROTO_TCP */
	__u8 used;
	__u32 hnext;      /* next flow of its hash bucket (used) */
	__u32 prev, next; /* LRU list (used) or free list (next only) */
	__u64 last_ns;    /* ctx->now_ns of its last translated frame */
};

struct nat_worker {
	const struct nat_conf *c;
	unsigned int w, nworkers;
	__u32 lo;                 /* first external port of this worker */
	__u32 nports;             /* ports in its range = entries of flows[] */
	__u32 cap;                /* at most this many flows: min(max_flows, nports) */
	__u32 nflows;
	__u32 hmask;              /* buckets - 1 (a power of two) */
	__u32 seed;               /* random: LAN hosts cannot aim at one bucket */
	__u32 lru_head, lru_tail; /* oldest, newest */
	__u32 free_head, free_tail;
	__u32 *bucket;
	struct nat_flow *flows;
	struct nfsl_nf_nat_counters st;
};

/* --- configuration ------------------------------------------------------ */

static int conf_err(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int conf_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* The options as given, before the checks across them (nat_parse). */
struct nat_kv {
	struct nfsl_ip ext_ip;
	__u64 start_port, max_flows, lan, wan, expire_ns, expire_ms_ns;
	struct nfsl_prefix lan_net;
	bool have_ip, have_lan, have_wan, have_net, have_exp, have_exp_ms;
};

#define YEAR_S (86400ull * 365)
#define KOFF(f) offsetof(struct nat_kv, f)
#define KGIVEN(f) NFSL_GIVEN(struct nat_kv, f)
/* lan= and wan= (index 5 and 6): their range is the datapath's devices. */
#define DEV_BAD(key, or1, s, n) \
	" is not a device index: give " key "=0" or1 " (the datapath has " #n " device" s ")"
static const struct nfsl_opt nat_keys[] = {
	{ "ext_ip", NFSL_OPT_IPADDR, KOFF(ext_ip), .af = AF_INET, .given = KGIVEN(have_ip),
	  .bad = " is not an IPv4 address: give ext_ip=A.B.C.D, the WAN-side address "
		 "translated flows leave from" },
	{ "start_port", NFSL_OPT_U64, KOFF(start_port), 1, 65535,
	  .bad = " is not a port: give start_port=1..65535, the first external port "
		 "(default 1024)" },
	{ "expire", NFSL_OPT_DURATION64, KOFF(expire_ns), NFSL_S, YEAR_S * NFSL_S,
	  .unit = NFSL_NS, .bare = NFSL_S, .given = KGIVEN(have_exp),
	  .bad = " is not a timeout: give a whole number of seconds from 1 to 31536000, or "
		 "with a unit ms, s, m or h (default expire=10)" },
	{ "expire_ms", NFSL_OPT_DURATION64, KOFF(expire_ms_ns), NFSL_MS, YEAR_S * NFSL_S,
	  .unit = NFSL_NS, .bare = NFSL_MS, .given = KGIVEN(have_exp_ms),
	  .bad = " is not a timeout: give a whole number of milliseconds from 1 to "
		 "31536000000, or with a unit ms, s, m or h" },
	{ "max_flows", NFSL_OPT_U64, KOFF(max_flows), 1, 65536,
	  .bad = " is not a flow count: give max_flows=1..65536, per worker (default 65536)" },
	{ "lan", NFSL_OPT_U64, KOFF(lan), 0, 1, .given = KGIVEN(have_lan) },
	{ "wan", NFSL_OPT_U64, KOFF(wan), 0, 1, .given = KGIVEN(have_wan) },
	{ "lan_net", NFSL_OPT_PREFIX, KOFF(lan_net), .af = AF_INET, .given = KGIVEN(have_net),
	  .bad = " is not an IPv4 prefix: give lan_net=A.B.C.D/N with no host bits (default "
		 "10.0.0.0/8)" },
	{ NULL },
};

/* Parse @conf into @c. Returns 0 or -EINVAL with a message in @err. */
static int nat_parse(struct nat_conf *c, const struct nfsl_nf_conf *conf, char *err,
		     size_t errlen)
{
	struct nfsl_opt keys[sizeof(nat_keys) / sizeof(nat_keys[0])];
	struct nat_kv k = { .start_port = 1024, .max_flows = 65536, .wan = 1 };
	bool two = conf->ndevs == 2;

	*c = (struct nat_conf){
		.ndevs = conf->ndevs,
		/* One device: RFC 1918's 10/8 is the LAN unless lan_net says. */
		.lan_net = htonl(0x0a000000),
		.lan_mask = htonl(0xff000000),
	};
	if (conf->ndevs < 1 || conf->ndevs > 2)
		return conf_err(err, errlen, "runs on one or two devices, not %u", conf->ndevs);
	memcpy(keys, nat_keys, sizeof(keys));
	keys[5].max = keys[6].max = conf->ndevs - 1;
	keys[5].bad = two ? DEV_BAD("lan", " or 1", "s", 2) : DEV_BAD("lan", "", "", 1);
	keys[6].bad = two ? DEV_BAD("wan", " or 1", "s", 2) : DEV_BAD("wan", "", "", 1);
	if (nfsl_kv_parse(keys, conf->kv, &k, err, errlen))
		return -EINVAL;
	if (k.have_exp && k.have_exp_ms) {
		const char *second = "";

		/* the last of the two given names the clash */
		for (const char *const *kv = conf->kv; *kv; kv++)
			if (!strncmp(*kv, "expire=", 7) || !strncmp(*kv, "expire_ms=", 10))
				second = *kv;
		return conf_err(err, errlen,
				"%s: the timeout is already set; give expire=SECONDS or expire_ms=MS, once",
				second);
	}
	c->ext_ip = k.ext_ip.v4.s_addr;
	c->start_port = k.start_port;
	c->max_flows = k.max_flows;
	c->lan = k.lan;
	c->wan = k.wan;
	c->expire_ns = k.have_exp ? k.expire_ns : k.have_exp_ms ? k.expire_ms_ns : 10 * NFSL_S;
	if (k.have_net) {
		c->lan_net = k.lan_net.addr.v4.s_addr;
		c->lan_mask = k.lan_net.len ? htonl(~0u << (32 - k.lan_net.len)) : 0;
	}
	if (!k.have_ip)
		return conf_err(err, errlen,
				"ext_ip is required: give ext_ip=A.B.C.D, the WAN-side address translated flows leave from");
	if (conf->ndevs == 2) {
		if (k.have_net)
			return conf_err(err, errlen,
					"lan_net applies to one device only: with two, the LAN is device lan=%u; drop lan_net",
					c->lan);
		/* Either side given alone makes the other the other device. */
		if (k.have_lan && !k.have_wan)
			c->wan = c->lan ^ 1;
		else if (k.have_wan && !k.have_lan)
			c->lan = c->wan ^ 1;
		if (c->lan == c->wan)
			return conf_err(err, errlen,
					"lan=%u and wan=%u are one device: give lan=0,wan=1 or lan=1,wan=0",
					c->lan, c->wan);
	} else {
		c->lan = c->wan = 0;
	}
	if (conf->nworkers > 65536u - c->start_port)
		return conf_err(err, errlen,
				"start_port=%u leaves %u ports for %u workers: give start_port=%u or lower, or fewer workers",
				c->start_port, 65536u - c->start_port, conf->nworkers,
				65536u - conf->nworkers);
	return 0;
}

static int nat_init(void **shared, const struct nfsl_nf_conf *conf, char *err, size_t errlen)
{
	struct nat_conf *c = malloc(sizeof(*c));
	int rc;

	if (!c) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	rc = nat_parse(c, conf, err, errlen);
	if (rc) {
		free(c);
		return rc;
	}
	*shared = c;
	return 0;
}

static void nat_fini(void *shared)
{
	free(shared);
}

/* --- the flow table ----------------------------------------------------- */

static void *nat_worker_new(void *shared, unsigned int w, unsigned int nworkers)
{
	const struct nat_conf *c = shared;
	struct nat_worker *t;
	__u32 lo, hi, nb = 16;

	if (!c)
		return NULL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	nfsl_nf_nat_port_range(c->start_port, w, nworkers, &lo, &hi);
	if (hi < lo || hi > 65535) { /* more workers than ports: init refuses */
		free(t);
		return NULL;
	}
	t->c = c;
	t->w = w;
	t->nworkers = nworkers;
	t->lo = lo;
	t->nports = hi - lo + 1;
	t->cap = c->max_flows < t->nports ? c->max_flows : t->nports;
	while (nb < t->cap)
		nb <<= 1; /* load factor at most 1 */
	t->hmask = nb - 1;
	if (getrandom(&t->seed, sizeof(t->seed), GRND_NONBLOCK) != sizeof(t->seed))
		t->seed = 0x9e3779b9u * (w + 1); /* no entropy yet: still spreads */
	t->bucket = malloc(nb * sizeof(*t->bucket));
	t->flows = calloc(t->nports, sizeof(*t->flows));
	if (!t->bucket || !t->flows) {
		free(t->bucket);
		free(t->flows);
		free(t);
		return NULL;
	}
	memset(t->bucket, 0xff, nb * sizeof(*t->bucket)); /* all NAT_NIL */
	/* Every port free, in order: the first flow gets lo, then lo + 1... */
	for (__u32 i = 0; i < t->nports; i++)
		t->flows[i].next = i + 1 < t->nports ? i + 1 : NAT_NIL;
	t->free_head = 0;
	t->free_tail = t->nports - 1;
	t->lru_head = t->lru_tail = NAT_NIL;
	return t;
}

static void nat_worker_fini(void *mine)
{
	struct nat_worker *t = mine;

	if (!t)
		return;
	free(t->bucket);
	free(t->flows);
	free(t);
}

/* Bucket of an internal 5-tuple: murmur3's finaliser chained from a
 * random seed, as Linux conntrack seeds jhash, so LAN hosts cannot choose
 * tuples that share a bucket. */
static inline __u32 nat_hash(const struct nat_worker *t, __be32 int_ip, __be16 int_port,
			     __be32 rem_ip, __be16 rem_port, __u8 proto)
{
	__u32 h = nfsl_fmix32(t->seed ^ int_ip);

	h = nfsl_fmix32(h ^ rem_ip);
	h = nfsl_fmix32(h ^ ((__u32)int_port | (__u32)rem_port << 16));
	return nfsl_fmix32(h ^ proto) & t->hmask;
}

static struct nat_flow *nat_lookup(struct nat_worker *t, __be32 int_ip, __be16 int_port,
				   __be32 rem_ip, __be16 rem_port, __u8 proto)
{
	__u32 i = t->bucket[nat_hash(t, int_ip, int_port, rem_ip, rem_port, proto)];

	for (; i != NAT_NIL; i = t->flows[i].hnext) {
		struct nat_flow *f = &t->flows[i];

		if (f->int_ip == int_ip && f->int_port == int_port && f->rem_ip == rem_ip &&
		    f->rem_port == rem_port && f->proto == proto)
			return f;
	}
	return NULL;
}

static void lru_unlink(struct nat_worker *t, struct nat_flow *f)
{
	if (f->prev != NAT_NIL)
		t->flows[f->prev].next = f->next;
	else
		t->lru_head = f->next;
	if (f->next != NAT_NIL)
		t->flows[f->next].prev = f->prev;
	else
		t->lru_tail = f->prev;
}

static void lru_append(struct nat_worker *t, struct nat_flow *f)
{
	__u32 i = f - t->flows;

	f->prev = t->lru_tail;
	f->next = NAT_NIL;
	if (t->lru_tail != NAT_NIL)
		t->flows[t->lru_tail].next = i;
	else
		t->lru_head = i;
	t->lru_tail = i;
}

/* A frame of @f at @now: it becomes the newest. */
static void nat_touch(struct nat_worker *t, struct nat_flow *f, __u64 now)
{
	f->last_ns = now;
	if (t->lru_tail != (__u32)(f - t->flows)) {
		lru_unlink(t, f);
		lru_append(t, f);
	}
}

/* A new flow with the oldest free port, or NULL when the table is full. */
static struct nat_flow *nat_alloc(struct nat_worker *t, __be32 int_ip, __be16 int_port,
				  __be32 rem_ip, __be16 rem_port, __u8 proto, __u64 now)
{
	__u32 i = t->free_head, b;
	struct nat_flow *f;

	if (t->nflows >= t->cap || i == NAT_NIL)
		return NULL;
	f = &t->flows[i];
	t->free_head = f->next;
	if (t->free_head == NAT_NIL)
		t->free_tail = NAT_NIL;
	f->int_ip = int_ip;
	f->int_port = int_port;
	f->rem_ip = rem_ip;
	f->rem_port = rem_port;
	f->proto = proto;
	f->used = 1;
	b = nat_hash(t, int_ip, int_port, rem_ip, rem_port, proto);
	f->hnext = t->bucket[b];
	t->bucket[b] = i;
	f->last_ns = now;
	lru_append(t, f);
	t->nflows++;
	return f;
}

/* Forget @f: out of its bucket and the LRU list, its port to the back of
 * the free list. */
static void nat_free(struct nat_worker *t, struct nat_flow *f)
{
	__u32 i = f - t->flows;
	__u32 *pp = &t->bucket[nat_hash(t, f->int_ip, f->int_port, f->rem_ip, f->rem_port,
					 f->proto)];

	while (*pp != i)
		pp = &t->flows[*pp].hnext;
	*pp = f->hnext;
	lru_unlink(t, f);
	f->used = 0;
	f->next = NAT_NIL;
	if (t->free_tail != NAT_NIL)
		t->flows[t->free_tail].next = i;
	else
		t->free_head = i;
	t->free_tail = i;
	t->nflows--;
}

/*
 * Expire the flows idle for longer than expire_ns at @now (VigNAT: a flow
 * last seen at t is gone at now when t < now - expire). The LRU list is in
 * order of last frame, so this stops at the first flow that stays: O(flows
 * expired). The clock is the datapath's CLOCK_MONOTONIC or a test's; a
 * clock going back expires nothing.
 */
static void nat_expire(struct nat_worker *t, __u64 now)
{
	while (t->lru_head != NAT_NIL) {
		struct nat_flow *f = &t->flows[t->lru_head];

		if (now <= f->last_ns || now - f->last_ns <= t->c->expire_ns)
			break;
		nat_free(t, f);
		t->st.expired++;
	}
}

/* --- translation -------------------------------------------------------- */

/*
 * Rewrite the source (@src) or destination address and port of the IPv4
 * packet @pk in [@data, @end) to @addr, @port (network order), updating
 * the IP header checksum and the L4 checksum incrementally (RFC 1624 Eqn.
 * 3): the address enters both (the L4 one through the pseudo-header), the
 * port only the L4 one. Only the headers are read and written.
 *
 * The L4 checksum field is left as it is for UDP without a checksum (0,
 * RFC 768). If it holds the pseudo-header seed of the packet's own length
 * (CHECKSUM_PARTIAL: a local sender's frame over veth, whose checksum a
 * device is still to compute), it gets the seed of the new pseudo-header,
 * which the completing device (nfslice-nf's TX path, or the splicer for a
 * sliced header) recognises, as Linux's inet_proto_csum_replace4 does.
 * Telling a seed from a full checksum that happens to equal it (1 in
 * 65,536) would take the payload's sum, which a shallow NF never reads: it
 * is taken for a seed (the splicer's rule too, docs/format.md). A full
 * frame then still leaves right (nfslice-nf's TX path completes a seed
 * that does not verify); a sliced header from the wire leaves with a
 * wrong checksum.
 */
static void nat_rewrite(void *data, void *end, const struct nfsl_pkt *pk, bool src,
			__be32 addr, __be16 port)
{
	struct iphdr *iph = data + pk->l3off;
	__u8 *l4 = data + pk->l4off;
	__u8 *csum = l4 + nfsl_l4_csum_off(pk->proto);
	__u8 *a = (__u8 *)iph + (src ? offsetof(struct iphdr, saddr)
				     : offsetof(struct iphdr, daddr));
	__u32 l4len = pk->l3end - pk->l4off, pseudo = 0, old_a, old_p, new_p;
	bool udp = pk->proto == IPPROTO_UDP;
	__u16 c, ip_csum = 0;

	nfsl_pseudo_sum(data, end, pk, &pseudo, &ip_csum);
	old_a = nfsl_load32(a);
	old_p = nfsl_load32(l4);
	memcpy(a, &addr, 4);
	memcpy(l4 + (src ? 0 : 2), &port, 2);
	new_p = nfsl_load32(l4);
	iph->check = nfsl_csum_update32(ip_csum, old_a, addr);

	memcpy(&c, csum, 2);
	if (udp && !c)
		return; /* no checksum */
	if (c == nfsl_csum_seed(pseudo, l4len)) {
		nfsl_pseudo_sum(data, end, pk, &pseudo, &ip_csum);
		c = nfsl_csum_seed(pseudo, l4len);
	} else {
		c = nfsl_csum_update32(c, old_a, addr);
		c = nfsl_csum_final(nfsl_csum_update32(c, old_p, new_p), udp);
	}
	memcpy(csum, &c, 2);
}

/* Is a frame from @in with source @saddr on the LAN side? Two devices: by
 * device; one: by source prefix. */
static inline bool nat_from_lan(const struct nat_conf *c, __u16 in, __be32 saddr)
{
	if (c->ndevs == 2)
		return in == c->lan;
	return (saddr & c->lan_mask) == c->lan_net;
}

/* Translate one frame; returns its verdict. */
static __u16 nat_one(struct nat_worker *t, struct nfsl_nf_pkt *p, __u64 now)
{
	const struct nat_conf *c = t->c;
	void *data = p->data, *end = p->data + p->len;
	struct nfsl_pkt pk = {};
	struct nat_flow *f;
	struct iphdr *iph;
	__be32 saddr, daddr;
	__be16 ports[2];
	__u32 dport;

	if (nfsl_parse(data, end, &pk) || pk.v6) {
		t->st.not_ip++;
		return NFSL_NF_DROP;
	}
	iph = data + pk.l3off;
	saddr = nfsl_load32(&iph->saddr);
	daddr = nfsl_load32(&iph->daddr);
	memcpy(ports, data + pk.l4off, sizeof(ports));

	if (nat_from_lan(c, p->in, saddr)) {
		f = nat_lookup(t, saddr, ports[0], daddr, ports[1], pk.proto);
		if (!f) {
			f = nat_alloc(t, saddr, ports[0], daddr, ports[1], pk.proto, now);
			if (!f) {
				t->st.table_full++;
				return NFSL_NF_DROP;
			}
			t->st.new_flows++;
		}
		nat_touch(t, f, now);
		nat_rewrite(data, end, &pk, true, c->ext_ip, htons(t->lo + (f - t->flows)));
		t->st.translated_out++;
		return c->wan;
	}

	dport = ntohs(ports[1]);
	if (nfsl_nf_nat_port_owner(dport, c->start_port, t->nworkers) != t->w) {
		t->st.misrouted++;
		return NFSL_NF_DROP;
	}
	/* Only the flow's remote end may answer, to ext_ip (VigNAT drops the
	 * rest as spoofing; RFC 4787's address-and-port-dependent
	 * filtering). */
	f = dport >= t->lo && dport - t->lo < t->nports ? &t->flows[dport - t->lo] : NULL;
	if (!f || !f->used || daddr != c->ext_ip || f->rem_ip != saddr ||
	    f->rem_port != ports[0] || f->proto != pk.proto) {
		t->st.unsolicited++;
		return NFSL_NF_DROP;
	}
	nat_touch(t, f, now);
	nat_rewrite(data, end, &pk, false, f->int_ip, f->int_port);
	t->st.translated_in++;
	return c->lan;
}

static void nat_burst(void *shared, void *mine, struct nfsl_nf_pkt *p, unsigned int n,
		      const struct nfsl_nf_ctx *ctx)
{
	struct nat_worker *t = mine;

	if (t)
		nat_expire(t, ctx->now_ns); /* one clock per burst */
	for (unsigned int i = 0; i < n; i++) {
		if (p[i].out == NFSL_NF_DROP)
			continue;
		/* No table (the worker op failed): drop, never pass untranslated. */
		p[i].out = t ? nat_one(t, &p[i], ctx->now_ns) : NFSL_NF_DROP;
	}
}

void nfsl_nf_nat_counters(void *mine, struct nfsl_nf_nat_counters *out)
{
	struct nat_worker *t = mine;

	memset(out, 0, sizeof(*out));
	if (!t)
		return;
#define NFSL_X_COPY(name) out->name = __atomic_load_n(&t->st.name, __ATOMIC_RELAXED);
	NFSL_NF_NAT_COUNTERS(NFSL_X_COPY)
#undef NFSL_X_COPY
}

static unsigned int nat_counter_list(void *mine, const char **names, __u64 *vals,
				     unsigned int max);

const struct nfsl_nf_ops nfsl_nf_nat = {
	.name = "nat",
	.help = "NAPT (RFC 3022, VigNAT): ext_ip=A.B.C.D [start_port=1024] [expire=10] "
		"[max_flows=65536] [lan=0] [wan=1] [lan_net=10.0.0.0/8 with one device]",
	.init = nat_init,
	.worker = nat_worker_new,
	.burst = nat_burst,
	.worker_fini = nat_worker_fini,
	.fini = nat_fini,
	.counters = nat_counter_list,
};

unsigned int nfsl_nf_nat_wan_dev(const void *shared)
{
	const struct nat_conf *c = shared;

	return c->ndevs == 1 ? 0 : c->wan;
}

__u16 nfsl_nf_nat_start_port(const void *shared)
{
	return ((const struct nat_conf *)shared)->start_port;
}

static unsigned int nat_counter_list(void *mine, const char **names, __u64 *vals,
				     unsigned int max)
{
#define NAT_X_NAME(name) #name,
	static const char *const all[] = { NFSL_NF_NAT_COUNTERS(NAT_X_NAME) };
#undef NAT_X_NAME
	struct nfsl_nf_nat_counters c;

	nfsl_nf_nat_counters(mine, &c);
	return nfsl_nf_list(all, (const __u64 *)&c, sizeof(c) / sizeof(__u64), names, vals, max);
}
