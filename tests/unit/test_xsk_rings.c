// SPDX-License-Identifier: GPL-2.0
/*
 * The AF_XDP datapath's rings under concurrency (userspace/lib/xsk, docs/xsk.md):
 * real sockets on a veth in the test's own network namespace, several
 * worker threads receiving, dropping or sending back at once, for each
 * receive architecture. What must hold whatever the interleaving:
 *   - every frame sent into the veth is received exactly once or counted
 *     dropped by the kernel (fill ring empty, RX ring full);
 *   - every UMEM frame is, at the end, in exactly one place: the shared
 *     pool, a worker's cache or a fill ring (nothing lost, nothing twice:
 *     the shared fill/completion rings of rxBisect have one owner at a
 *     time, shRing returns positions in order);
 *   - every transmission completes and its frame comes back.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include "util/log.h"
#include "nfsl_csum.h"
#include "xsk/nfsl_xsk_int.h"

#define IF_A "xr0" /* the NF's interface */
#define IF_B "xr1" /* its peer: frames are sent and received here */
#define FLOWS 64
#define FRAME_LEN 300
#define IN_FLIGHT 64

static void rig(int queues)
{
	char cmd[256];

	cr_assert_eq(unshare(CLONE_NEWNET), 0, "cannot make a network namespace: %s",
		     strerror(errno));
	snprintf(cmd, sizeof(cmd),
		 "ip link add " IF_A " numtxqueues %d numrxqueues %d type veth peer name " IF_B
		 " numtxqueues %d numrxqueues %d && ip link set " IF_A " up && ip link set " IF_B
		 " up",
		 queues, queues, queues, queues);
	cr_assert_eq(system(cmd), 0, "failed: %s", cmd);
	nfsl_log_init(NFSL_LOG_NONE);
}


/* A raw socket on IF_B and a frame template of @flow. */
static int raw_sock(int *ifindex)
{
	struct sockaddr_ll sll = { .sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_ALL) };
	int fd = socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL));

	cr_assert(fd >= 0, "AF_PACKET: %s", strerror(errno));
	*ifindex = sll.sll_ifindex = if_nametoindex(IF_B);
	cr_assert_eq(bind(fd, (struct sockaddr *)&sll, sizeof(sll)), 0);
	return fd;
}

static void frame(__u8 *f, int flow, __u32 seq)
{
	struct ethhdr *eth = (void *)f;
	struct iphdr *ip = (void *)(eth + 1);
	struct udphdr *udp = (void *)(ip + 1);

	memset(f, 0, FRAME_LEN);
	memcpy(eth->h_dest, "\x02\x00\x00\x00\x00\x0a", 6);
	memcpy(eth->h_source, "\x02\x00\x00\x00\x00\x0b", 6);
	eth->h_proto = htons(ETH_P_IP);
	ip->version = 4;
	ip->ihl = 5;
	ip->ttl = 64;
	ip->protocol = IPPROTO_UDP;
	ip->tot_len = htons(FRAME_LEN - sizeof(*eth));
	ip->saddr = htonl(0x0a630102);
	ip->daddr = htonl(0x0a630202);
	ip->check = ~nfsl_csum_fold(nfsl_csum_bytes(ip, sizeof(*ip), 0));
	udp->source = htons(1024 + flow);
	udp->dest = htons(5201);
	udp->len = htons(FRAME_LEN - sizeof(*eth) - sizeof(*ip));
	memcpy(udp + 1, &seq, sizeof(seq));
}

struct run {
	struct nfsl_xsk *x;
	bool fwd;            /* l2fwd back out of IF_A, else drop */
	atomic_bool stop;
	atomic_ullong rx;
};

struct warg {
	struct run *r;
	int id;
};

static void *worker(void *p)
{
	struct warg *a = p;
	struct nfsl_xsk_worker *w = nfsl_xsk_worker(a->r->x, a->id);
	struct nfsl_xsk_desc d[NFSL_XSK_BURST];

	while (!atomic_load(&a->r->stop)) {
		unsigned int n = nfsl_xsk_worker_rx(w, d, NFSL_XSK_BURST);

		if (!n) {
			nfsl_xsk_worker_wait(w, 5);
			continue;
		}
		atomic_fetch_add(&a->r->rx, n);
		if (a->r->fwd)
			nfsl_xsk_worker_tx(w, d, n); /* out = the device it came from */
		else
			nfsl_xsk_worker_drop(w, d, n);
	}
	nfsl_xsk_worker_drain(w, 2000);
	return NULL;
}

static __u64 now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000ull + t.tv_nsec / 1000000;
}

/* Frames the kernel dropped at the sockets (fill ring empty, RX ring full). */
static __u64 xsk_dropped(struct nfsl_xsk *x)
{
	struct nfsl_xsk_kstats ks = {};
	struct xdp_statistics st;
	socklen_t len;

	for (int i = 0; i < x->nsocks; i++) {
		len = sizeof(st);
		if (!getsockopt(x->socks[i].fd, SOL_XDP, XDP_STATISTICS, &st, &len))
			ks.rx_dropped += st.rx_dropped;
	}
	return ks.rx_dropped;
}

/* Every frame of the UMEM exactly once in pool, caches and fill rings. */
static void check_frames(struct nfsl_xsk *x)
{
	__u8 *seen = calloc(x->nframes, 1);
	__u64 buf[256], total = 0;
	__u32 n;

	cr_assert(seen);
	while ((n = nfsl_xsk_pool_get(&x->pool, buf, 256))) {
		for (__u32 i = 0; i < n; i++) {
			cr_assert_lt(buf[i] / NFSL_XSK_FRAME, x->nframes);
			cr_assert_eq(seen[buf[i] / NFSL_XSK_FRAME]++, 0, "frame %llu twice (pool)",
				     (unsigned long long)buf[i]);
		}
		total += n;
	}
	for (int i = 0; i < x->nworkers; i++) {
		struct nfsl_xsk_cache *c = &x->workers[i].cache;

		for (__u32 k = c->bot; k != c->top; k++) {
			__u64 a = c->f[k & c->mask];

			cr_assert_eq(seen[a / NFSL_XSK_FRAME]++, 0, "frame %llu twice (cache %d)",
				     (unsigned long long)a, i);
			total++;
		}
	}
	for (int g = 0; g < x->ngroups; g++) {
		struct xsk_ring_prod *f = &x->groups[g].fill;
		__u32 cons = __atomic_load_n(f->consumer, __ATOMIC_ACQUIRE);
		__u32 prod = __atomic_load_n(f->producer, __ATOMIC_ACQUIRE);

		for (__u32 k = cons; k != prod; k++) {
			__u64 a = *xsk_ring_prod__fill_addr(f, k);

			cr_assert_eq(seen[a / NFSL_XSK_FRAME]++, 0, "frame %llu twice (fill %d)",
				     (unsigned long long)a, g);
			total++;
		}
	}
	cr_expect_eq(total, x->nframes, "%llu of %u frames accounted for",
		     (unsigned long long)total, x->nframes);
	free(seen);
}

/*
 * Send @count frames of FLOWS flows into IF_A with @nworkers workers
 * running @rx; each frame is received once or dropped by the kernel; then
 * every frame is back.
 */
static void run(enum nfsl_xsk_rx rx, int queues, int nworkers, bool fwd, __u32 count)
{
	struct nfsl_xsk_opts o = { .devs = { IF_A }, .ndevs = 1, .workers = nworkers, .rx = rx,
				   .ax = 64, .bx = 256 };
	struct warg args[8];
	pthread_t tid[8];
	struct run r = { .fwd = fwd };
	struct nfsl_xsk_kstats ks;
	struct nfsl_xsk_wset_snap ws;
	__u8 f[FRAME_LEN];
	char err[256];
	int fd, ifindex, rc;
	__u64 deadline, sent = 0, rx_total = 0;

	rig(queues);
	rc = nfsl_xsk_open(&o, &r.x, err, sizeof(err));
	cr_assert_eq(rc, 0, "nfsl_xsk_open: %s", err);
	for (int i = 0; i < nworkers; i++) {
		args[i] = (struct warg){ .r = &r, .id = i };
		cr_assert_eq(pthread_create(&tid[i], NULL, worker, &args[i]), 0);
	}
	fd = raw_sock(&ifindex);
	deadline = now_ms() + 20000;
	for (__u32 i = 0; i < count; i++) {
		frame(f, i % FLOWS, i);
		cr_assert_eq(send(fd, f, FRAME_LEN, 0), FRAME_LEN, "send: %s", strerror(errno));
		sent++;
		/* Paced: at most IN_FLIGHT frames on their way, so the veth's
		 * own ring (256) never overflows and every frame reaches
		 * XDP, where it is received or counted dropped. */
		while (i % 32 == 31 || i == count - 1) {
			rx_total = atomic_load(&r.rx);
			if (rx_total + xsk_dropped(r.x) + IN_FLIGHT >= sent + (i == count - 1) * IN_FLIGHT)
				break;
			cr_assert_lt(now_ms(), deadline,
				     "stuck: %llu of %llu received, %llu dropped by the kernel",
				     (unsigned long long)rx_total, (unsigned long long)sent,
				     (unsigned long long)xsk_dropped(r.x));
			usleep(200);
		}
	}
	atomic_store(&r.stop, true);
	for (int i = 0; i < nworkers; i++)
		pthread_join(tid[i], NULL);
	nfsl_xsk_snapshot(r.x, &ws, &ks);
	rx_total = atomic_load(&r.rx);
	cr_expect_eq(rx_total + ks.rx_dropped, sent,
		     "received %llu + dropped by the kernel %llu != sent %llu",
		     (unsigned long long)rx_total, (unsigned long long)ks.rx_dropped,
		     (unsigned long long)sent);
	if (nworkers > 1 && rx != NFSL_XSK_PRIVRING && rx != NFSL_XSK_SMALLPRIV) {
		/* steering by flow reaches every worker */
		for (int i = 0; i < nworkers; i++)
			cr_expect_gt(nfsl_xsk_worker_stats(nfsl_xsk_worker(r.x, i))->rx, 0,
				     "worker %d received nothing", i);
	}
	if (fwd) {
		__u64 tx = 0;

		for (int i = 0; i < nworkers; i++)
			tx += nfsl_xsk_worker_stats(nfsl_xsk_worker(r.x, i))->tx;
		cr_expect_eq(tx, rx_total, "sent back %llu of %llu", (unsigned long long)tx,
			     (unsigned long long)rx_total);
		for (int g = 0; g < r.x->ngroups; g++)
			cr_expect_eq(atomic_load(&r.x->groups[g].tx_pending), 0,
				     "group %d: transmissions not completed", g);
	}
	if (rx == NFSL_XSK_SHRING) {
		/* every reception position was returned, in order */
		for (int g = 0; g < r.x->ngroups; g++)
			cr_expect_eq(nfsl_xsk_rxarr_head(&r.x->groups[g].rxarr),
				     r.x->groups[g].rx_seq, "group %d: positions not returned", g);
	}
	check_frames(r.x);
	close(fd);
	nfsl_xsk_close(r.x);
}

TestSuite(xsk_rings, .timeout = 60);

struct ring_case {
	enum nfsl_xsk_rx rx;
	int queues, workers;
	bool fwd;
};

/* Each architecture, dropping and sending back; privring and smallpriv
 * with a queue per worker. */
static struct ring_case ring_cases[] = {
	{ NFSL_XSK_RXBISECT, 2, 3, false }, { NFSL_XSK_RXBISECT, 2, 3, true },
	{ NFSL_XSK_SHRING, 2, 3, false },   { NFSL_XSK_SHRING, 2, 3, true },
	{ NFSL_XSK_PRIVRING, 2, 2, true },  { NFSL_XSK_SMALLPRIV, 2, 2, false },
};

ParameterizedTestParameters(xsk_rings, conservation)
{
	return cr_make_param_array(struct ring_case, ring_cases,
				   sizeof(ring_cases) / sizeof(ring_cases[0]));
}

ParameterizedTest(struct ring_case *c, xsk_rings, conservation)
{
	run(c->rx, c->queues, c->workers, c->fwd, 20000);
}
