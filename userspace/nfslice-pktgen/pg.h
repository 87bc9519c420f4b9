/* SPDX-License-Identifier: GPL-2.0 */
/*
 * nfslice-pktgen: traffic generator on BPF_PROG_RUN live frames
 * (docs/pktgen.md). One file per job:
 *   main.c     order of the steps, exit status
 *   options.c  option table, help, argument checks -> struct pg_cfg
 *   link.c     the interface and its veth peer (rtnetlink), peer XDP
 *   packet.c   synthetic frames and their per-size fields
 *   mix.c      size mix files and the shuffled size sequence
 *   pcap.c     pcap reader
 *   run.c      BPF program, pacing loop, counters
 *   sock.c     the socket path: frames above a live frame's page
 *   hold.c     keeps the program in the XDP dispatcher (cheap calls)
 *   report.c   text and JSON results
 */
#ifndef PG_H
#define PG_H

#include <signal.h>
#include <stdbool.h>
#include <net/if.h>
#include <netinet/in.h>
#include <linux/types.h>

#include "util/cli.h"
#include "pktgen.h"

#define PG_NAME "nfslice-pktgen"
#define PG_MIN_FRAME 60        /* Ethernet minimum without FCS */
#define PG_MAX_SIZE 65535      /* --size's bound before the MTU's (u16 lengths) */
#define PG_WIRE_OVERHEAD 24    /* FCS 4 + preamble/SFD 8 + inter-frame gap 12 */
#define PG_MIX_MAX 256         /* distinct sizes in a mix file */
#define PG_PCAP_MAX 16384      /* frames of a pcap file */
#define PG_BATCH_MAX 256       /* the kernel's live-frames batch limit */
/* Default batch: a veth's ring holds 256 frames, fewer while its consumer
 * has not yet cleared the slots it took; 64 is as fast and never overflows
 * an idle ring (docs/pktgen.md). */
#define PG_BATCH_DEFAULT 64
/* Paced: a call every 1000 us by default, the finest --burst-us 20. */
#define PG_BURST_US_DEFAULT 1000
#define PG_BURST_US_MIN 20

enum pg_peer_xdp { PG_PEER_AUTO, PG_PEER_OFF, PG_PEER_DROP };

/* How frames leave (docs/pktgen.md "Jumbo frames"). */
enum pg_path {
	PG_PATH_AUTO,   /* option only: live if every frame fits one, else socket */
	PG_PATH_LIVE,   /* BPF_PROG_RUN live frames, up to PKTGEN_MAX_FRAME */
	PG_PATH_SOCKET, /* AF_PACKET sendmmsg (sock.c), up to the MTU + 14 */
};

/* The options as the table leaves them: 0, NULL, -1 or ~0 = not given. */
struct pg_opts {
	const char *dev;
	int proto; /* -1, or index into "udp", "tcp" */
	bool ipv6;
	__u32 size;
	const char *mix;
	__u32 flows;
	__u32 rate;
	__u32 count;
	__u32 duration;
	const char *src_mac;
	const char *dst_mac;
	const char *src_ip;
	const char *dst_ip;
	__u32 src_port;
	__u32 dst_port;
	bool stamp;
	const char *pcap;
	__u32 batch;
	__u32 burst_us;
	__u32 cpu;
	int peer_xdp;
	int path;
	bool json;
	bool has_cpu; /* --cpu given */
};

/* The target interface and, for a veth, its peer. */
struct pg_link {
	int ifindex;
	char name[IF_NAMESIZE];
	char kind[16];            /* rtnetlink link kind: "veth", ... */
	__u32 mtu;
	bool up;
	__u8 mac[6];
	int peer_ifindex;         /* 0: no peer known (not a veth) */
	int peer_nsid;            /* -1: peer in this network namespace */
	bool peer_known;          /* the peer_* fields below are valid */
	char peer_name[IF_NAMESIZE];
	__u8 peer_mac[6];
	__u32 peer_xdp_id;        /* XDP program on the peer, 0: none */
};

/* Headers of the synthetic frames. */
struct pg_pkt {
	bool ipv6;
	bool tcp;
	bool stamp;
	__u8 src_mac[6];
	__u8 dst_mac[6];
	struct in_addr src4, dst4;
	struct in6_addr src6, dst6;
	__u16 sport;              /* host order; flow i uses sport + i */
	__u16 dport;
	__u32 flows;
};

/* A size mix file and the shuffled sequence of sizes made from it. */
struct pg_mix {
	__u32 n;
	__u32 size[PG_MIX_MAX];
	double weight[PG_MIX_MAX];
	unsigned int line[PG_MIX_MAX];
	__u16 *seq;               /* seq_len frame sizes, shuffled */
	__u32 seq_len;
};

/* The frames of a pcap file. */
struct pg_pcap {
	__u32 n;
	struct pktgen_frame *frames;
};

/* Everything a run needs, resolved and checked. */
struct pg_cfg {
	struct pg_link link;
	struct pg_pkt pkt;
	enum pktgen_mode mode;
	enum pg_path path;        /* PG_PATH_LIVE or PG_PATH_SOCKET */
	__u32 size;               /* PKTGEN_FIXED */
	const char *mix_file;
	struct pg_mix mix;        /* PKTGEN_MIX */
	const char *pcap_file;
	struct pg_pcap pcap;      /* PKTGEN_PCAP */
	double avg_len;           /* mean frame bytes */
	__u32 rate;               /* pps, 0 = as fast as possible */
	__u32 count;              /* 0 = no limit */
	__u32 duration;           /* s, 0 = no limit */
	__u32 batch;
	__u32 burst_us;           /* paced: us between calls */
	int cpu;                  /* -1 = not pinned */
	enum pg_peer_xdp peer_xdp;
	bool json;
};

/* What the peer's XDP looked like and what we did about it. */
enum pg_peer_state {
	PG_PEER_NONE,       /* no veth peer */
	PG_PEER_HAS_XDP,    /* it runs an XDP program: frames are taken */
	PG_PEER_ATTACHED,   /* we attached xdp_pass / xdp_drop for the run */
	PG_PEER_NO_XDP,     /* no XDP program: the veth drops every frame */
	PG_PEER_UNKNOWN,    /* in another namespace, not readable */
	PG_PEER_SKB,        /* socket path: skbs need no XDP program there */
};

struct pg_result {
	struct pktgen_stats st;
	bool drv_stats;           /* the tracepoint programs were attached */
	bool held;                /* the program stayed in the XDP dispatcher */
	bool interrupted;         /* SIGINT / SIGTERM ended the run */
	__u64 elapsed_ns;
	enum pg_peer_state peer;
};

/* "nfslice-pktgen: MESSAGE" on stderr; pg_err returns -1. */
#define pg_err(...) nfsl_msg(PG_NAME ": ", __VA_ARGS__)
#define pg_warn(...) ((void)nfsl_msg(PG_NAME ": warning: ", __VA_ARGS__))

/* options.c */
int pg_parse(int argc, char **argv, struct pg_opts *o);
int pg_resolve(const struct pg_opts *o, struct pg_cfg *cfg);
void pg_cfg_free(struct pg_cfg *cfg);

/* link.c */
int pg_link_get(const char *dev, struct pg_link *l);
int pg_link_tx_dropped(int ifindex, __u64 *out);
struct pg_peer;
int pg_peer_prepare(const struct pg_cfg *cfg, struct pg_peer **peer,
		    enum pg_peer_state *state);
void pg_peer_restore(struct pg_peer *peer);

/* packet.c */
__u32 pg_hdr_len(const struct pg_pkt *pkt);
void pg_frame_build(const struct pg_pkt *pkt, __u32 len, __u8 *buf,
		    struct pktgen_tmpl *t);

/* mix.c */
/*
 * pg_mix_load - the mix file @file into @m: sizes in [@lo, @hi] (@range_why
 * says why, for the message), weights in (0, 1e9], decimal digits
 * (util/value.h). Returns 0, or -1 after a message naming file:line and
 * the fix, @m then empty. pg_mix_sequence - @m's shuffled sequence
 * (m->seq, to free) and its mean frame bytes. Format: mix.c.
 */
int pg_mix_load(const char *file, __u32 lo, __u32 hi, const char *range_why,
		struct pg_mix *m);
int pg_mix_sequence(struct pg_mix *m, double *avg_len);

/* pcap.c */
int pg_pcap_load(const char *file, __u32 max_len, struct pg_pcap *p,
		 double *avg_len);

/* run.c */
int pg_run(const struct pg_cfg *cfg, struct pg_result *res);
void pg_stop(void);

/* sock.c: the socket path. pg_sock_open returns 0 or -1 after a message;
 * pg_sock_send returns 0 or a negative errno (-EINTR: *stop was set). */
struct pg_sock;
int pg_sock_open(const struct pg_cfg *cfg, struct pg_sock **s);
int pg_sock_send(struct pg_sock *s, __u64 n, const volatile sig_atomic_t *stop);
const struct pktgen_stats *pg_sock_stats(const struct pg_sock *s);
void pg_sock_close(struct pg_sock *s);

/* hold.c */
struct pg_hold {
	int netns_fd;
	int link_fd;
};
int pg_hold_prog(int prog_fd, struct pg_hold *hold);
void pg_unhold_prog(struct pg_hold *hold);

/* report.c */
void pg_report(const struct pg_cfg *cfg, const struct pg_result *res);

#endif /* PG_H */
