/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The guards of a domain (guard.c, bpf/guard.bpf.c; issue 19 §1): a TCX
 * egress program on every interface of the domain's network namespace
 * that is neither a domain interface nor an NF port, and a netfilter
 * program at LOCAL_IN (IPv4, IPv6), which drop a sliced header of ours
 * that would leave unspliced or be delivered locally (escaped_dropped).
 * The object is loaded once per domain, its programs pinned in
 * <domain dir>/guard/ (tc, tc_l3, nf); each attachment is a BPF link
 * pinned there too (if<ifindex>, nf4, nf6, fw4, fw6), so it outlives the process
 * that made it and goes when its pin is removed. All in the caller's
 * network namespace.
 */
#ifndef NFSL_GUARD_H
#define NFSL_GUARD_H

#include <stdbool.h>
#include <net/if.h>
#include <linux/types.h>

#include "nfsl_structs.h"

/* The guards' directory inside a domain directory. */
#define NFSL_PIN_GUARD "guard"

/* Which guard an interface gets, by its link type (ARPHRD_*). */
enum nfsl_guard_kind {
	NFSL_GUARD_NONE, /* no guard can parse its packets: see nfsl_guard_kind */
	NFSL_GUARD_ETH,  /* Ethernet header (ARPHRD_ETHER, ARPHRD_LOOPBACK) */
	NFSL_GUARD_L3,   /* IP from the first byte (ipip, gre, sit, wg, tun) */
	NFSL_GUARD_IFB,  /* an ifb: it hands every packet back to the device it
			  * was redirected from, whose guard applies; none */
};

/* A namespace holds at most this many guarded interfaces per domain. */
#define NFSL_GUARD_MAX 256

/* The netfilter guards: local delivery and routing, IPv4 and IPv6. */
enum nfsl_guard_nf {
	NFSL_GUARD_IN4, /* LOCAL_IN, IPv4 */
	NFSL_GUARD_IN6,
	NFSL_GUARD_FW4, /* FORWARD, IPv4 */
	NFSL_GUARD_FW6,
	NFSL_GUARD_NF_NR,
};

/* The guards as the kernel shows them (nfsl_guard_state). */
struct nfsl_guard_state {
	bool loaded;          /* the programs are pinned */
	__u32 nf[NFSL_GUARD_NF_NR]; /* link ids of the netfilter guards; 0: missing */
	unsigned int nguarded, nmissing, nbare;
	struct {
		__u32 ifindex;
		char name[IF_NAMESIZE];
		enum nfsl_guard_kind kind;
		__u32 link_id; /* 0: missing */
	} ifs[NFSL_GUARD_MAX]; /* every interface that needs a guard */
	unsigned int nifs;
};

/* The guard kind of interface @ifindex (its ARPHRD type). */
enum nfsl_guard_kind nfsl_guard_kind(int ifindex);

/* Name of @k for messages and JSON: "eth", "l3", "none". */
const char *nfsl_guard_kind_name(enum nfsl_guard_kind k);

struct bpf_program;

/* struct nf_hook_state as BPF_PROG_TEST_RUN of a netfilter program takes
 * it as ctx_in (Linux >= 6.5): only hook (NF_INET_*) and pf (NFPROTO_*)
 * may be set. For the unit tests and the benchmark. */
struct nfsl_nf_test_state {
	__u8 hook, pf;
	__u8 pad[6];
	void *in, *out, *sk, *net, *okfn;
};

/*
 * nfsl_nf_prog_type - make @prog, opened but not loaded, a netfilter
 * program (BPF_PROG_TYPE_NETFILTER, Linux >= 6.4): libbpf 1.1 knows no
 * SEC("netfilter"). 0 or -errno.
 */
int nfsl_nf_prog_type(struct bpf_program *prog);

/*
 * nfsl_guard_load - load the guard object of the domain at @dir (its maps
 * the domain's pins, the store sized @slots) and pin its programs in
 * @dir/guard/, unless they are pinned already. 0, or -errno (-EOPNOTSUPP:
 * the kernel has no netfilter programs, Linux < 6.4, or no TCX).
 */
int nfsl_guard_load(const char *dir, __u32 slots);

/*
 * nfsl_guard_sync - bring the guards of the domain at @dir (configured as
 * @cfg) in line with the interfaces the calling thread's network
 * namespace has now: a guard linked on the egress of each interface that
 * is neither in @cfg nor guarded yet (an Ethernet or L3 one by its link
 * type; none for other link types, said on stderr), the
 * guards of interfaces gone or now in @cfg unpinned, the netfilter guards
 * linked if missing. Each guard added is printed unless @quiet. Returns
 * how many links were added or removed, or -errno (printed).
 */
int nfsl_guard_sync(const char *dir, const struct nfsl_config *cfg, bool quiet);

/* nfsl_guard_state - the guards of the domain at @dir (configured as
 * @cfg) as the kernel shows them now, into @st. */
void nfsl_guard_state(const char *dir, const struct nfsl_config *cfg,
		      struct nfsl_guard_state *st);

/* nfsl_guard_remove - unpin every guard link and program of the domain at
 * @dir, and the directory (the links detach with their last reference).
 * 0 or the first -errno. */
int nfsl_guard_remove(const char *dir);

/*
 * nfsl_guard_release - unpin the netfilter guards of the domain at
 * @dir (nf4, nf6, fw4, fw6) and wait up to 1 s for its namespace probe to say the
 * namespace is gone. A netfilter link holds its network namespace: one no
 * /run/netns name and no process holds any more can exit only without
 * them, and nfslice gc (nfsliced's too) calls this for such a domain
 * before it asks the probe. Returns true when the namespace is gone now.
 */
bool nfsl_guard_release(const char *dir);

#endif /* NFSL_GUARD_H */
