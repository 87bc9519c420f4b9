// SPDX-License-Identifier: GPL-2.0
/*
 * nfslice-bench-flowport - the first UDP source port whose flow the AF_XDP
 * steering sends to a given worker: the benchmarks (bench/xsk_rig.py)
 * give each worker or 4q queue flows of its own. The worker is what
 * bpf/steer.bpf.c and shRing's dispatch compute, nfsl_flow_hash and
 * nfsl_flow_pick of include/nfsl_flow.h, over a frame parsed by
 * nfsl_parse: this program holds no copy of the hash.
 *
 *   nfslice-bench-flowport SRC DST DPORT N WANT [AVOID_FROM AVOID_TO]
 *
 * SRC, DST: IPv4 addresses; DPORT: the UDP destination port; N: workers
 * (1..64); WANT: the worker in [0, N). Ports 20000..59999 are tried in
 * order, those in [AVOID_FROM, AVOID_TO) skipped. Prints the port; exit 1
 * when none maps to WANT, 2 on a usage error.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/if_ether.h>

#include "nfsl_flow.h"
#include "util/value.h"

/* A UDP/IPv4 frame with no payload: what the hash and the parser read. */
struct frame {
	struct ethhdr eth;
	struct iphdr ip;
	struct udphdr udp;
} __attribute__((packed));

static int usage(const char *why)
{
	fprintf(stderr, "nfslice-bench-flowport: %s\n"
		"usage: nfslice-bench-flowport SRC DST DPORT N WANT [AVOID_FROM AVOID_TO]\n",
		why);
	return 2;
}

static int number(const char *s, __u64 max, __u64 *v)
{
	return nfsl_parse_u64(s, 0, max, v);
}

int main(int argc, char **argv)
{
	__u64 dport, n, want, avoid_from = 0, avoid_to = 0;
	struct frame f = {};
	struct nfsl_pkt p;

	if (argc != 6 && argc != 8)
		return usage("give SRC DST DPORT N WANT, and optionally AVOID_FROM AVOID_TO");
	if (inet_pton(AF_INET, argv[1], &f.ip.saddr) != 1 ||
	    inet_pton(AF_INET, argv[2], &f.ip.daddr) != 1)
		return usage("SRC and DST are IPv4 addresses (A.B.C.D)");
	if (number(argv[3], 65535, &dport) || number(argv[4], 64, &n) || !n ||
	    number(argv[5], n - 1, &want))
		return usage("DPORT is 0..65535, N 1..64 and WANT 0..N-1, in decimal");
	if (argc == 8 && (number(argv[6], 65535, &avoid_from) ||
			  number(argv[7], 65536, &avoid_to)))
		return usage("AVOID_FROM and AVOID_TO are ports, in decimal");
	f.eth.h_proto = htons(ETH_P_IP);
	f.ip.version = 4;
	f.ip.ihl = 5;
	f.ip.ttl = 64;
	f.ip.protocol = IPPROTO_UDP;
	f.ip.tot_len = htons(sizeof(f.ip) + sizeof(f.udp));
	f.udp.len = htons(sizeof(f.udp));
	f.udp.dest = htons(dport);
	for (__u32 port = 20000; port < 60000; port++) {
		if (port >= avoid_from && port < avoid_to)
			continue;
		f.udp.source = htons(port);
		if (nfsl_parse(&f, &f + 1, &p))
			return usage("the frame does not parse (a bug)");
		if (nfsl_flow_pick(nfsl_flow_hash(&f, &f + 1, &p), n) == want) {
			printf("%u\n", port);
			return 0;
		}
	}
	fprintf(stderr, "nfslice-bench-flowport: no source port for worker %llu of %llu\n",
		(unsigned long long)want, (unsigned long long)n);
	return 1;
}
