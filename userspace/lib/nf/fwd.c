// SPDX-License-Identifier: GPL-2.0
/* fwd: forwarding to a given next hop, and the neighbour table l2fwd
 * checks its frames against (nfsl_nf_fwd.h; docs/nf.md "Forwarding"). */
#include <arpa/inet.h>
#include <errno.h>
#include <stddef.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include "nf/nfsl_nf_fwd.h"
#include "util/params.h"
#include "util/value.h"
#include "nfsl_csum.h"
#include "nfsl_parse.h"

#define NFSL_NEIGH_FILE "/proc/net/arp"
#define ATF_COM 0x02 /* <net/if_arp.h>: the entry is complete */

int nfsl_nf_neigh_load(struct nfsl_nf_neigh *t, const char *path, const char *const *devs,
		       unsigned int ndevs)
{
	char line[256], ip[64], hw[64], mask[32], dev[IF_NAMESIZE + 1];
	unsigned int type, flags;
	FILE *f = fopen(path ? path : NFSL_NEIGH_FILE, "r");

	t->n = 0;
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		struct in_addr a;
		unsigned int m[6];

		if (sscanf(line, "%63s %x %x %63s %31s %16s", ip, &type, &flags, hw, mask,
			   dev) != 6 || !(flags & ATF_COM) || inet_pton(AF_INET, ip, &a) != 1 ||
		    sscanf(hw, "%x:%x:%x:%x:%x:%x", &m[0], &m[1], &m[2], &m[3], &m[4], &m[5]) != 6)
			continue; /* the header line, incomplete entries */
		for (unsigned int d = 0; d < ndevs && t->n < NFSL_NF_NEIGH_MAX; d++) {
			if (strcmp(dev, devs[d]))
				continue;
			for (int k = 0; k < 6; k++)
				t->e[t->n].mac[k] = m[k];
			t->e[t->n].dev = d;
			t->e[t->n].ip = a.s_addr;
			t->n++;
		}
	}
	fclose(f);
	return 0;
}

bool nfsl_nf_neigh_on(const struct nfsl_nf_neigh *t, const __u8 *mac, unsigned int dev)
{
	for (unsigned int i = 0; i < t->n; i++)
		if (t->e[i].dev == dev && !memcmp(t->e[i].mac, mac, 6))
			return true;
	return false;
}

int nfsl_nf_neigh_mac(const struct nfsl_nf_neigh *t, __u32 ip, unsigned int dev, __u8 *mac)
{
	for (unsigned int i = 0; i < t->n; i++) {
		if (t->e[i].dev == dev && t->e[i].ip == ip) {
			memcpy(mac, t->e[i].mac, 6);
			return 0;
		}
	}
	return -ENOENT;
}

/* --------------------------------------------------------------------- */

/* How often worker 0 reads the neighbour table again for a viaD= next
 * hop: a gateway that changes its MAC (a failover) is followed within it. */
#define FWD_REFRESH_NS 1000000000ull

struct fwd_shared {
	/* Next hop of each device: its MAC in the low 6 bytes (memory
	 * order), read and written whole with atomics, since worker 0 may
	 * rewrite it (refresh) while the others send. */
	__u64 dst[2];
	__u8 src[2][6];     /* each device's own MAC */
	__u32 via[2];       /* viaD= (network order); 0: macD= given */
	const char *devs[2];
	char neigh[256];    /* neighbour table file; "": /proc/net/arp */
	__u64 next_ns;      /* worker 0's next refresh (ctx->now_ns) */
	unsigned int ndevs;
};

struct fwd_worker {
	struct nfsl_nf_fwd_counters c;
};

/* The MAC of device @name in this network namespace, through the kernel
 * (SIOCGIFHWADDR): right whatever /sys shows. */
static int dev_mac(const char *name, __u8 *mac)
{
	struct ifreq ifr = {};
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), err = 0;

	if (fd < 0)
		return -errno;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	if (ioctl(fd, SIOCGIFHWADDR, &ifr))
		err = -errno;
	else
		memcpy(mac, ifr.ifr_hwaddr.sa_data, 6);
	close(fd);
	return err;
}

/* fwd's KEY=VALUE options (docs/nf.md), read by nfsl_kv_parse: the next
 * hop per device D (0 or 1) as a MAC or an IPv4 address, and the test
 * hook neigh= (a neighbour table file instead of the kernel's). The values
 * are read below, where the messages can name the device. */
struct fwd_kv {
	const char *mac[2], *via[2], *neigh;
};

#define FWD_KOFF(f) offsetof(struct fwd_kv, f)
static const struct nfsl_opt fwd_keys[] = {
	{ "mac0", NFSL_OPT_STR, FWD_KOFF(mac[0]), .metavar = "MAC" },
	{ "mac1", NFSL_OPT_STR, FWD_KOFF(mac[1]), .metavar = "MAC" },
	{ "via0", NFSL_OPT_STR, FWD_KOFF(via[0]), .metavar = "IPv4" },
	{ "via1", NFSL_OPT_STR, FWD_KOFF(via[1]), .metavar = "IPv4" },
	{ "neigh", NFSL_OPT_STR, FWD_KOFF(neigh), .metavar = "PATH" },
	{ NULL },
};

static int fwd_init(void **shared, const struct nfsl_nf_conf *conf, char *err, size_t errlen)
{
	struct nfsl_nf_neigh *nt = NULL;
	struct fwd_kv k = {};
	struct fwd_shared *sh;
	int rc = -EINVAL;

	if (nfsl_kv_parse(fwd_keys, conf->kv, &k, err, errlen))
		return -EINVAL;
	if (!conf->devs || conf->ndevs < 1 || conf->ndevs > 2) {
		snprintf(err, errlen, "fwd runs on one or two devices");
		return -EINVAL;
	}
	sh = calloc(1, sizeof(*sh));
	if (!sh) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (unsigned int d = 0; d < conf->ndevs; d++) {
		char kmac[] = "mac0", kvia[] = "via0";
		const char *mac, *via;
		struct in_addr a;
		struct nfsl_ip vip;

		kmac[3] = kvia[3] = '0' + d;
		mac = k.mac[d];
		via = k.via[d];
		rc = dev_mac(conf->devs[d], sh->src[d]);
		if (rc) {
			snprintf(err, errlen, "cannot read the MAC address of %s: %s",
				 conf->devs[d], strerror(-rc));
			goto fail;
		}
		rc = -EINVAL;
		if (!mac == !via) {
			snprintf(err, errlen, "give the next hop on %s: fwd.%s=IPv4 (its MAC "
				 "from the neighbour table) or fwd.%s=MAC, one of them",
				 conf->devs[d], kvia, kmac);
			goto fail;
		}
		if (mac) {
			if (nfsl_parse_mac(mac, (__u8 *)&sh->dst[d])) {
				snprintf(err, errlen, "%s=%s: give a MAC as 02:00:00:00:00:01",
					 kmac, mac);
				goto fail;
			}
			continue;
		}
		if (nfsl_parse_ip(via, AF_INET, &vip)) {
			snprintf(err, errlen, "%s=%s: give an IPv4 address (for an IPv6 next "
				 "hop, give %s=MAC from ip -6 neigh)", kvia, via, kmac);
			goto fail;
		}
		a = vip.v4;
		if (!nt) {
			nt = malloc(sizeof(*nt));
			rc = nt ? nfsl_nf_neigh_load(nt, k.neigh, conf->devs,
						     conf->ndevs) : -ENOMEM;
			if (rc) {
				snprintf(err, errlen, "cannot read the neighbour table: %s",
					 strerror(-rc));
				goto fail;
			}
			rc = -EINVAL;
		}
		sh->via[d] = a.s_addr;
		if (nfsl_nf_neigh_mac(nt, a.s_addr, d, (__u8 *)&sh->dst[d])) {
			rc = -ENOENT;
			snprintf(err, errlen, "%s=%s: no neighbour %s on %s: make the kernel "
				 "resolve it first (ping -c1 %s) or give %s=MAC", kvia, via,
				 via, conf->devs[d], via, kmac);
			goto fail;
		}
	}
	free(nt);
	sh->ndevs = conf->ndevs;
	for (unsigned int d = 0; d < conf->ndevs; d++)
		sh->devs[d] = conf->devs[d];
	snprintf(sh->neigh, sizeof(sh->neigh), "%s", k.neigh ?: "");
	sh->next_ns = 0;
	*shared = sh;
	return 0;
fail:
	free(nt);
	free(sh);
	return rc;
}

/* Worker 0, once a FWD_REFRESH_NS: the viaD= next hops' MACs from the
 * neighbour table again (an entry gone or incomplete keeps the last MAC).
 * Returns how many changed. */
static unsigned int fwd_refresh(struct fwd_shared *sh, __u64 now)
{
	struct nfsl_nf_neigh *nt;
	unsigned int changed = 0;

	if (now < sh->next_ns || (!sh->via[0] && !sh->via[1]))
		return 0;
	sh->next_ns = now + FWD_REFRESH_NS;
	nt = malloc(sizeof(*nt));
	if (!nt || nfsl_nf_neigh_load(nt, sh->neigh[0] ? sh->neigh : NULL, sh->devs,
				      sh->ndevs)) {
		free(nt);
		return 0;
	}
	for (unsigned int d = 0; d < sh->ndevs; d++) {
		__u64 mac = 0;

		if (!sh->via[d] || nfsl_nf_neigh_mac(nt, sh->via[d], d, (__u8 *)&mac))
			continue;
		if (mac != __atomic_load_n(&sh->dst[d], __ATOMIC_RELAXED)) {
			__atomic_store_n(&sh->dst[d], mac, __ATOMIC_RELAXED);
			changed++;
		}
	}
	free(nt);
	return changed;
}

static void fwd_fini(void *shared)
{
	free(shared);
}

static void *fwd_worker_new(void *shared, unsigned int w, unsigned int nworkers)
{
	return calloc(1, sizeof(struct fwd_worker));
}

static void fwd_worker_fini(void *mine)
{
	free(mine);
}

static unsigned int fwd_counter_list(void *mine, const char **names, __u64 *vals,
				     unsigned int max)
{
#define NFSL_X_NAME(name) #name,
	static const char *const all[] = { NFSL_NF_FWD_COUNTERS(NFSL_X_NAME) };
#undef NFSL_X_NAME
	struct fwd_worker *w = mine;
	struct nfsl_nf_fwd_counters c = {};

	if (w) {
#define NFSL_X_COPY(name) c.name = __atomic_load_n(&w->c.name, __ATOMIC_RELAXED);
		NFSL_NF_FWD_COUNTERS(NFSL_X_COPY)
#undef NFSL_X_COPY
	}
	return nfsl_nf_list(all, (const __u64 *)&c, sizeof(c) / sizeof(__u64), names, vals, max);
}

/* Decrement the TTL / hop limit of the IP header at @ip; false when it
 * was 1 or 0 (the packet must not be forwarded, RFC 1812 §5.3.1). The
 * IPv4 header checksum is updated for the 16-bit word TTL|protocol
 * (RFC 1624); IPv6 has none. */
static bool ttl_dec(__u8 *ip, bool v6)
{
	__u8 *ttl = ip + (v6 ? 7 : 8);
	__u16 sum, w;
	__u32 old, new;

	if (*ttl <= 1)
		return false;
	if (v6) {
		(*ttl)--;
		return true;
	}
	/* The 16-bit word TTL|protocol in memory order, zero-extended (a
	 * zero half adds nothing to a ones' complement sum). */
	memcpy(&w, ip + 8, 2);
	old = w;
	(*ttl)--;
	memcpy(&w, ip + 8, 2);
	new = w;
	memcpy(&sum, ip + 10, 2);
	sum = nfsl_csum_update32(sum, old, new);
	memcpy(ip + 10, &sum, 2);
	return true;
}

static void fwd_burst(void *shared, void *mine, struct nfsl_nf_pkt *p, unsigned int n,
		      const struct nfsl_nf_ctx *ctx)
{
	struct fwd_shared *sh = shared;
	struct fwd_worker *me = mine;
	struct nfsl_nf_fwd_counters d = {};

	if (ctx->worker == 0)
		d.next_hop_changed += fwd_refresh(sh, ctx->now_ns);
	for (unsigned int i = 0; i < n; i++) {
		struct nfsl_pkt pk;
		__u64 mac;
		__u16 out;

		if (p[i].out == NFSL_NF_DROP)
			continue;
		if (nfsl_parse(p[i].data, p[i].data + p[i].len, &pk)) {
			d.not_ip++;
			p[i].out = NFSL_NF_DROP;
			continue;
		}
		if (!ttl_dec(p[i].data + pk.l3off, pk.v6)) {
			d.ttl_exceeded++;
			p[i].out = NFSL_NF_DROP;
			continue;
		}
		out = ctx->ndevs == 2 ? p[i].in ^ 1 : p[i].in;
		mac = __atomic_load_n(&sh->dst[out & 1], __ATOMIC_RELAXED);
		memcpy(p[i].data, &mac, 6);
		memcpy(p[i].data + 6, sh->src[out & 1], 6);
		p[i].out = out;
		d.forwarded++;
	}
	if (!me)
		return;
	/* One writer per worker: a plain read, an atomic store for readers. */
#define NFSL_X_ADD(name) __atomic_store_n(&me->c.name, me->c.name + d.name, __ATOMIC_RELAXED);
	NFSL_NF_FWD_COUNTERS(NFSL_X_ADD)
#undef NFSL_X_ADD
}

const struct nfsl_nf_ops nfsl_nf_fwd = {
	.name = "fwd",
	.help = "forward as a router to the next hop of the outgoing device: "
		"mac0=MAC|via0=IPv4 [mac1=MAC|via1=IPv4]; TTL - 1",
	.init = fwd_init,
	.worker = fwd_worker_new,
	.burst = fwd_burst,
	.worker_fini = fwd_worker_fini,
	.counters = fwd_counter_list,
	.fini = fwd_fini,
};
