// SPDX-License-Identifier: GPL-2.0
/*
 * Options of nfslice-pktgen: the declared table (userspace/lib/util/params.h parses it
 * and prints --help from it) and the checks across options that turn
 * struct pg_opts into a struct pg_cfg. Every error names the problem and
 * the fix; main() exits 2 after one.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/params.h"
#include "util/value.h"
#include "pg.h"

#define DEF_SRC4 "10.211.1.2"
#define DEF_DST4 "10.211.2.2"
#define DEF_SRC6 "fd00:211:1::2"
#define DEF_DST6 "fd00:211:2::2"
#define DEF_SPORT 1024
#define DEF_DPORT 5201

static const char *const protos[] = { "udp", "tcp", NULL };
static const char *const peer_modes[] = { "auto", "off", "drop", NULL };
/* In the order of enum pg_path. */
static const char *const paths[] = { "auto", "live", "socket", NULL };

#define OFF(f) offsetof(struct pg_opts, f)

static const struct nfsl_opt table[] = {
	{ "dev", NFSL_OPT_STR, OFF(dev), .metavar = "IFACE",
	  .help = "interface to send out of (required)" },
	{ "proto", NFSL_OPT_ENUM, OFF(proto), .choices = protos, .metavar = "PROTO",
	  .help = "udp or tcp (default udp); TCP segments are ACK|PSH" },
	{ "ipv6", NFSL_OPT_FLAG, OFF(ipv6),
	  .help = "IPv6 instead of IPv4" },
	{ "size", NFSL_OPT_U32, OFF(size), PG_MIN_FRAME, PG_MAX_SIZE, .metavar = "BYTES",
	  .help = "frame length without FCS, 60 to MTU+14 (default: 60, or the headers); "
		  "frames above 3072 B go through the socket path (--path)" },
	{ "mix", NFSL_OPT_STR, OFF(mix), .metavar = "FILE",
	  .help = "frame sizes from a mix file of 'SIZE WEIGHT' lines" },
	{ "flows", NFSL_OPT_U32, OFF(flows), 1, 65535, .metavar = "N",
	  .help = "distinct 5-tuples: source ports --src-port to +N-1 (default 1)" },
	{ "rate", NFSL_OPT_U32, OFF(rate), 0, UINT32_MAX, .metavar = "PPS",
	  .help = "frames per second, 0 = as fast as possible (default 0)" },
	{ "count", NFSL_OPT_U32, OFF(count), 1, UINT32_MAX, .metavar = "N",
	  .help = "stop after N frames" },
	{ "duration", NFSL_OPT_DURATION, OFF(duration), 1, 86400, .unit = NFSL_S,
	  .metavar = "SECONDS",
	  .help = "stop after SECONDS seconds" },
	{ "src-mac", NFSL_OPT_STR, OFF(src_mac), .metavar = "MAC",
	  .help = "source MAC (default: IFACE's)" },
	{ "dst-mac", NFSL_OPT_STR, OFF(dst_mac), .metavar = "MAC",
	  .help = "destination MAC (default: the veth peer's, else broadcast)" },
	{ "src-ip", NFSL_OPT_STR, OFF(src_ip), .metavar = "ADDR",
	  .help = "source address (default " DEF_SRC4 ", IPv6 " DEF_SRC6 ")" },
	{ "dst-ip", NFSL_OPT_STR, OFF(dst_ip), .metavar = "ADDR",
	  .help = "destination address (default " DEF_DST4 ", IPv6 " DEF_DST6 ")" },
	{ "src-port", NFSL_OPT_U32, OFF(src_port), 1, 65535, .metavar = "PORT",
	  .help = "first UDP/TCP source port (default 1024)" },
	{ "dst-port", NFSL_OPT_U32, OFF(dst_port), 1, 65535, .metavar = "PORT",
	  .help = "UDP/TCP destination port (default 5201)" },
	{ "stamp", NFSL_OPT_FLAG, OFF(stamp),
	  .help = "sequence number + TX time (ns) in the first 16 payload bytes" },
	{ "pcap", NFSL_OPT_STR, OFF(pcap), .metavar = "FILE",
	  .help = "send the frames of a pcap file, in order, round and round" },
	{ "batch", NFSL_OPT_U32, OFF(batch), 1, PG_BATCH_MAX, .metavar = "N",
	  .help = "frames per live-frames batch or per sendmmsg call, 1-256 (default 64)" },
	{ "burst-us", NFSL_OPT_DURATION, OFF(burst_us), PG_BURST_US_MIN, 1000000, .unit = NFSL_US,
	  .metavar = "USEC",
	  .help = "with --rate: send the frames due every USEC us in one burst, 20 to 1000000 (default 1000)" },
	{ "cpu", NFSL_OPT_U32, OFF(cpu), 0, CPU_SETSIZE - 1,
	  .given = NFSL_GIVEN(struct pg_opts, has_cpu), .metavar = "N",
	  .help = "run on CPU N (default: wherever the scheduler puts it)" },
	{ "peer-xdp", NFSL_OPT_ENUM, OFF(peer_xdp), .choices = peer_modes, .metavar = "MODE",
	  .help = "auto, off or drop: XDP on a veth peer that has none (default auto)" },
	{ "path", NFSL_OPT_ENUM, OFF(path), .choices = paths, .metavar = "PATH",
	  .help = "auto, live or socket: live frames (up to 3072 B) or an AF_PACKET "
		  "socket (any size up to MTU+14); auto: live if every frame fits one "
		  "(default auto)" },
	{ "json", NFSL_OPT_FLAG, OFF(json),
	  .help = "print the result as one JSON object" },
	{ NULL },
};

static const struct pg_opts defaults = {
	.proto = -1,
	.batch = PG_BATCH_DEFAULT,
	.burst_us = PG_BURST_US_DEFAULT,
	.peer_xdp = PG_PEER_AUTO,
	.path = PG_PATH_AUTO,
};

static const char *const env[] = {
	"NFSLICE_VERBOSE", "when set, show libbpf's details (verifier logs)",
	NULL,
};

static const struct nfsl_cmd cmd = {
	.name = "pktgen",
	.prog = "nfslice-pktgen",
	.min_args = 0,
	.max_args = 0,
	.summary = "send UDP/TCP frames out of an interface from an XDP program",
	.description =
		"Sends synthetic UDP or TCP frames of one size or of a size mix, or\n"
		"the frames of a pcap file, out of IFACE at --rate frames per second\n"
		"or as fast as one CPU can. The frames come from an XDP program run\n"
		"with BPF_PROG_RUN in live-frames mode: each frame it returns XDP_TX\n"
		"for leaves through IFACE (the technique of xdp-trafficgen). A veth\n"
		"takes such frames only while its peer runs an XDP program: with\n"
		"--peer-xdp auto a peer in this namespace without one gets xdp_pass\n"
		"for the run (drop: xdp_drop); a peer elsewhere is left as it is, with\n"
		"a warning if it has none. The kernel takes live frames of one page\n"
		"only: synthetic frames above 3072 B (jumbo frames up to MTU+14, or a\n"
		"mix with such a size) go out through an AF_PACKET socket instead,\n"
		"--batch per sendmmsg call, with the same options and counters; the\n"
		"veth peer needs no XDP program then. The run stops after --count frames or\n"
		"--duration seconds, whichever comes first (give at least one).\n"
		"Sizes are frame bytes without FCS. Rates are reported in pps and in\n"
		"Gbit/s twice: L2 (frame bytes) and on the wire (frame + 24 B: FCS,\n"
		"preamble, inter-frame gap). --pcap replays frames as they are (no\n"
		"header options apply; --rate does; pcap timestamps are ignored).\n"
		"Exit status: 0 done, 1 the run failed, 2 bad arguments.",
	NFSL_CMD_OPTS(table, struct pg_opts, defaults),
	.env = env,
	.see_also = "nfslice(8), nfslice-delay(8)",
};

int pg_parse(int argc, char **argv, struct pg_opts *o)
{
	int first;

	return nfsl_cmd_parse(&cmd, argc, argv, o, &first);
}

/* Options that describe synthetic frames: none applies to --pcap. */
static const char *synthetic_opt(const struct pg_opts *o)
{
	if (o->size)
		return "--size";
	if (o->mix)
		return "--mix";
	if (o->proto >= 0)
		return "--proto";
	if (o->ipv6)
		return "--ipv6";
	if (o->flows)
		return "--flows";
	if (o->stamp)
		return "--stamp";
	if (o->src_mac)
		return "--src-mac";
	if (o->dst_mac)
		return "--dst-mac";
	if (o->src_ip)
		return "--src-ip";
	if (o->dst_ip)
		return "--dst-ip";
	if (o->src_port)
		return "--src-port";
	if (o->dst_port)
		return "--dst-port";
	return NULL;
}

static int parse_ip(const char *opt, const char *s, bool v6, struct pg_pkt *p,
		    bool src)
{
	void *dst = v6 ? (src ? (void *)&p->src6 : (void *)&p->dst6)
		       : (src ? (void *)&p->src4 : (void *)&p->dst4);
	struct nfsl_ip ip;
	int rc = nfsl_parse_ip(s, v6 ? AF_INET6 : AF_INET, &ip);

	if (!rc) {
		memcpy(dst, ip.b, v6 ? 16 : 4);
		return 0;
	}
	if (!v6 && rc == -EAFNOSUPPORT)
		return pg_err("%s '%s' is an IPv6 address: add --ipv6 to send IPv6",
			      opt, s);
	return pg_err("%s '%s' is not an %s address: write it like %s", opt, s,
		      v6 ? "IPv6" : "IPv4", v6 ? DEF_DST6 : DEF_DST4);
}

static int resolve_pkt(const struct pg_opts *o, struct pg_cfg *cfg)
{
	struct pg_pkt *p = &cfg->pkt;
	const struct pg_link *l = &cfg->link;

	p->ipv6 = o->ipv6;
	p->tcp = o->proto == 1;
	p->stamp = o->stamp;
	p->flows = o->flows ? o->flows : 1;
	p->sport = o->src_port ? o->src_port : DEF_SPORT;
	p->dport = o->dst_port ? o->dst_port : DEF_DPORT;
	if ((__u32)p->sport + p->flows - 1 > 65535)
		return pg_err("--flows %u from source port %u runs past port 65535: "
			      "lower --flows or --src-port", p->flows, p->sport);
	if (parse_ip("--src-ip", o->src_ip ? o->src_ip : p->ipv6 ? DEF_SRC6 : DEF_SRC4,
		     p->ipv6, p, true) ||
	    parse_ip("--dst-ip", o->dst_ip ? o->dst_ip : p->ipv6 ? DEF_DST6 : DEF_DST4,
		     p->ipv6, p, false))
		return -1;
	if (o->src_mac) {
		if (nfsl_parse_mac(o->src_mac, p->src_mac))
			return pg_err("--src-mac '%s' is not a MAC address: write six hex "
				      "bytes like 02:00:00:00:00:01", o->src_mac);
	} else {
		memcpy(p->src_mac, l->mac, 6);
	}
	if (o->dst_mac) {
		if (nfsl_parse_mac(o->dst_mac, p->dst_mac))
			return pg_err("--dst-mac '%s' is not a MAC address: write six hex "
				      "bytes like 02:00:00:00:00:02", o->dst_mac);
	} else if (l->peer_known) {
		memcpy(p->dst_mac, l->peer_mac, 6);
	} else {
		memset(p->dst_mac, 0xff, 6);
	}
	return 0;
}

static const char *pkt_name(const struct pg_pkt *p)
{
	if (p->tcp)
		return p->ipv6 ? "TCP/IPv6" : "TCP/IPv4";
	return p->ipv6 ? "UDP/IPv6" : "UDP/IPv4";
}

/* The largest frame the run sends. */
static __u32 max_size(const struct pg_cfg *cfg)
{
	__u32 max = cfg->size;

	for (__u32 i = 0; cfg->mode == PKTGEN_MIX && i < cfg->mix.n; i++)
		if (cfg->mix.size[i] > max)
			max = cfg->mix.size[i];
	return max;
}

/*
 * Sizes from --size or --mix, checked against the headers and the MTU
 * (and a live frame's page with --path live), and the path they take:
 * live frames if every frame fits one, else the socket (a mix with one
 * size above a page goes through the socket whole, its sizes interleaved).
 */
static int resolve_sizes(const struct pg_opts *o, struct pg_cfg *cfg)
{
	const struct pg_pkt *p = &cfg->pkt;
	__u32 hdr = pg_hdr_len(p), lo = hdr + (p->stamp ? PKTGEN_STAMP_LEN : 0);
	__u32 hi = cfg->link.mtu + 14;
	bool live = o->path == PG_PATH_LIVE;
	char why[288];

	if (lo < PG_MIN_FRAME)
		lo = PG_MIN_FRAME;
	if (hi > PG_MAX_SIZE)
		hi = PG_MAX_SIZE;
	if (live && hi > PKTGEN_MAX_FRAME)
		hi = PKTGEN_MAX_FRAME;
	snprintf(why, sizeof(why),
		 "%s frames%s need at least %u B, and %s (MTU %u) takes at most %u B%s",
		 pkt_name(p), p->stamp ? " with --stamp" : "", lo, cfg->link.name,
		 cfg->link.mtu, hi, live && hi == PKTGEN_MAX_FRAME ?
		 " as live frames (one 4 KiB page each; without --path live larger "
		 "frames go through the socket path)" : "");
	if (lo > hi)
		return pg_err("no frame size fits: %s", why);
	if (o->mix) {
		cfg->mode = PKTGEN_MIX;
		cfg->mix_file = o->mix;
		if (pg_mix_load(o->mix, lo, hi, why, &cfg->mix) ||
		    pg_mix_sequence(&cfg->mix, &cfg->avg_len))
			return -1;
	} else {
		cfg->mode = PKTGEN_FIXED;
		cfg->size = o->size ? o->size : lo;
		if (cfg->size < lo || cfg->size > hi)
			return pg_err("--size %u is out of range: %s", cfg->size, why);
		cfg->avg_len = cfg->size;
	}
	cfg->path = o->path;
	if (cfg->path == PG_PATH_AUTO)
		cfg->path = max_size(cfg) > PKTGEN_MAX_FRAME ? PG_PATH_SOCKET
							     : PG_PATH_LIVE;
	return 0;
}

static int resolve_cpu(const struct pg_opts *o, struct pg_cfg *cfg)
{
	cpu_set_t set;

	cfg->cpu = -1;
	if (!o->has_cpu)
		return 0;
	if (sched_getaffinity(0, sizeof(set), &set))
		return pg_err("cannot read the allowed CPUs: %s", strerror(errno));
	if (!CPU_ISSET(o->cpu, &set))
		return pg_err("--cpu %u is not a CPU this process may run on: "
			      "choose one of 'taskset -pc %d' (see nproc)", o->cpu,
			      (int)getpid());
	cfg->cpu = o->cpu;
	return 0;
}

int pg_resolve(const struct pg_opts *o, struct pg_cfg *cfg)
{
	const char *opt;

	memset(cfg, 0, sizeof(*cfg));
	if (!o->dev)
		return pg_err("--dev IFACE is missing: name the interface to send "
			      "out of (see 'ip link')");
	if (!o->count && !o->duration)
		return pg_err("give --count N or --duration SECONDS (or both): "
			      "a run must be bounded");
	if (o->size && o->mix)
		return pg_err("--size and --mix exclude each other: give one");
	if (o->pcap && (opt = synthetic_opt(o)))
		return pg_err("%s does not apply to --pcap, whose frames are sent as "
			      "they are in the file: drop %s", opt, opt);
	if (o->pcap && o->path == PG_PATH_SOCKET)
		return pg_err("--path socket does not apply to --pcap, whose frames "
			      "go out as live frames: drop --path socket");

	if (pg_link_get(o->dev, &cfg->link))
		return -1;
	cfg->rate = o->rate;
	cfg->count = o->count;
	cfg->duration = o->duration;
	cfg->batch = o->batch;
	cfg->burst_us = o->burst_us;
	cfg->peer_xdp = o->peer_xdp;
	cfg->json = o->json;
	if (resolve_cpu(o, cfg))
		return -1;

	if (o->pcap) {
		cfg->mode = PKTGEN_PCAP;
		cfg->path = PG_PATH_LIVE;
		cfg->pcap_file = o->pcap;
		cfg->pkt.flows = 1;
		return pg_pcap_load(o->pcap, cfg->link.mtu + 18, &cfg->pcap,
				    &cfg->avg_len);
	}
	if (resolve_pkt(o, cfg))
		return -1;
	return resolve_sizes(o, cfg);
}

void pg_cfg_free(struct pg_cfg *cfg)
{
	free(cfg->mix.seq);
	free(cfg->pcap.frames);
	cfg->mix.seq = NULL;
	cfg->pcap.frames = NULL;
}
