// SPDX-License-Identifier: GPL-2.0
/*
 * Results of a run, as text or as one JSON object (--json).
 *
 * offered   what was asked: --rate, or "as fast as possible"
 * achieved  frames the program returned XDP_TX for, per second of the run
 * driver    what the interface's driver did with them (xdp:xdp_devmap_xmit:
 *           taken, dropped) and frames refused before it
 *           (xdp:xdp_redirect_err)
 * Gbit/s is given twice: L2 counts frame bytes (no FCS); "wire" adds 24 B
 * per frame (FCS 4, preamble + SFD 8, inter-frame gap 12).
 */
#include <arpa/inet.h>
#include <stdio.h>

#include "pg.h"

static const char *peer_text(enum pg_peer_state s)
{
	switch (s) {
	case PG_PEER_NONE:
		return "none";
	case PG_PEER_HAS_XDP:
		return "has_xdp";
	case PG_PEER_ATTACHED:
		return "attached";
	case PG_PEER_NO_XDP:
		return "no_xdp";
	case PG_PEER_UNKNOWN:
		break;
	}
	return "unknown";
}

static const char *mode_text(const struct pg_cfg *cfg)
{
	return cfg->mode == PKTGEN_PCAP ? "pcap" :
	       cfg->mode == PKTGEN_MIX ? "mix" : "fixed";
}

static const char *proto_text(const struct pg_pkt *p)
{
	if (p->tcp)
		return p->ipv6 ? "TCP/IPv6" : "TCP/IPv4";
	return p->ipv6 ? "UDP/IPv6" : "UDP/IPv4";
}

static void addr_text(const struct pg_pkt *p, bool src, char *buf, size_t len)
{
	if (p->ipv6)
		inet_ntop(AF_INET6, src ? &p->src6 : &p->dst6, buf, len);
	else
		inet_ntop(AF_INET, src ? &p->src4 : &p->dst4, buf, len);
}

/* A JSON string: quotes, backslashes and control characters escaped. */
static void json_str(const char *key, const char *s)
{
	printf("\"%s\":\"", key);
	for (; *s; s++) {
		unsigned char c = *s;

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	printf("\",");
}

static void json_mac(const char *key, const __u8 *m)
{
	printf("\"%s\":\"%02x:%02x:%02x:%02x:%02x:%02x\",", key, m[0], m[1],
	       m[2], m[3], m[4], m[5]);
}

static void json_u32_or_null(const char *key, bool set, __u32 v)
{
	if (set)
		printf("\"%s\":%u,", key, v);
	else
		printf("\"%s\":null,", key);
}

static double gbps(double pps, double frame_bytes)
{
	return pps * frame_bytes * 8 / 1e9;
}

static void report_json(const struct pg_cfg *cfg, const struct pg_result *r,
			double secs, double pps)
{
	const struct pg_pkt *p = &cfg->pkt;
	double wire = cfg->avg_len + PG_WIRE_OVERHEAD;
	char src[INET6_ADDRSTRLEN], dst[INET6_ADDRSTRLEN];

	printf("{");
	json_str("dev", cfg->link.name);
	printf("\"ifindex\":%d,", cfg->link.ifindex);
	json_str("peer", cfg->link.peer_known ? cfg->link.peer_name : "");
	printf("\"peer_xdp\":\"%s\",\"mode\":\"%s\",", peer_text(r->peer),
	       mode_text(cfg));
	if (cfg->mode == PKTGEN_PCAP) {
		json_str("pcap", cfg->pcap_file);
		printf("\"pcap_frames\":%u,", cfg->pcap.n);
	} else {
		json_mac("src_mac", p->src_mac);
		json_mac("dst_mac", p->dst_mac);
		addr_text(p, true, src, sizeof(src));
		addr_text(p, false, dst, sizeof(dst));
		printf("\"proto\":\"%s\",\"ipv6\":%s,\"src_ip\":\"%s\",\"dst_ip\":\"%s\","
		       "\"src_port\":%u,\"dst_port\":%u,\"flows\":%u,\"stamp\":%s,",
		       p->tcp ? "tcp" : "udp", p->ipv6 ? "true" : "false", src, dst,
		       p->sport, p->dport, p->flows, p->stamp ? "true" : "false");
		if (cfg->mode == PKTGEN_MIX) {
			json_str("mix", cfg->mix_file);
			printf("\"mix_sizes\":%u,\"mix_sequence\":%u,", cfg->mix.n,
			       cfg->mix.seq_len);
		} else {
			printf("\"size\":%u,", cfg->size);
		}
	}
	printf("\"held\":%s,", r->held ? "true" : "false");
	printf("\"avg_frame_bytes\":%.2f,\"batch\":%u,", cfg->avg_len, cfg->batch);
	json_u32_or_null("cpu", cfg->cpu >= 0, cfg->cpu);
	json_u32_or_null("count", cfg->count, cfg->count);
	json_u32_or_null("duration_s", cfg->duration, cfg->duration);
	/* rate 0 = as fast as possible: no offered rate */
	printf("\"rate_pps\":%u,", cfg->rate);
	if (cfg->rate)
		printf("\"offered_pps\":%u,\"offered_gbps_l2\":%.6f,"
		       "\"offered_gbps_wire\":%.6f,", cfg->rate,
		       gbps(cfg->rate, cfg->avg_len), gbps(cfg->rate, wire));
	else
		printf("\"offered_pps\":null,\"offered_gbps_l2\":null,"
		       "\"offered_gbps_wire\":null,");
	printf("\"elapsed_s\":%.6f,\"runs\":%llu,\"transmitted\":%llu,\"errors\":%llu,"
	       "\"achieved_pps\":%.1f,\"achieved_gbps_l2\":%.6f,"
	       "\"achieved_gbps_wire\":%.6f,",
	       secs, (unsigned long long)r->st.runs, (unsigned long long)r->st.tx,
	       (unsigned long long)r->st.errors, pps, gbps(pps, cfg->avg_len),
	       gbps(pps, wire));
	if (r->drv_stats)
		printf("\"driver_sent\":%llu,\"driver_dropped\":%llu,"
		       "\"redirect_errors\":%llu,",
		       (unsigned long long)r->st.drv_sent,
		       (unsigned long long)r->st.drv_drops,
		       (unsigned long long)r->st.redir_err);
	else
		printf("\"driver_sent\":null,\"driver_dropped\":null,"
		       "\"redirect_errors\":null,");
	printf("\"interrupted\":%s}\n", r->interrupted ? "true" : "false");
}

static void report_text(const struct pg_cfg *cfg, const struct pg_result *r,
			double secs, double pps)
{
	const struct pg_pkt *p = &cfg->pkt;
	const struct pg_link *l = &cfg->link;
	double wire = cfg->avg_len + PG_WIRE_OVERHEAD;
	char src[INET6_ADDRSTRLEN], dst[INET6_ADDRSTRLEN];

	if (cfg->mode == PKTGEN_PCAP) {
		printf("%s: %s, %u frames of %s (mean %.1f B), in file order\n",
		       PG_NAME, l->name, cfg->pcap.n, cfg->pcap_file, cfg->avg_len);
	} else {
		addr_text(p, true, src, sizeof(src));
		addr_text(p, false, dst, sizeof(dst));
		printf("%s: %s, %s, ", PG_NAME, l->name, proto_text(p));
		if (cfg->mode == PKTGEN_MIX)
			printf("mix %s (%u sizes, mean %.1f B)", cfg->mix_file,
			       cfg->mix.n, cfg->avg_len);
		else
			printf("%u B frames", cfg->size);
		printf(", %u flow%s, %s%s%s:%u -> %s%s%s:%u%s\n", p->flows,
		       p->flows == 1 ? "" : "s", p->ipv6 ? "[" : "", src,
		       p->ipv6 ? "]" : "", p->sport, p->ipv6 ? "[" : "", dst,
		       p->ipv6 ? "]" : "", p->dport, p->stamp ? ", stamped" : "");
	}
	switch (r->peer) {
	case PG_PEER_ATTACHED:
		printf("peer:     %s, %s attached for the run\n", l->peer_name,
		       cfg->peer_xdp == PG_PEER_DROP ? "xdp_drop" : "xdp_pass");
		break;
	case PG_PEER_HAS_XDP:
		printf("peer:     %s runs XDP program %u\n", l->peer_name,
		       l->peer_xdp_id);
		break;
	case PG_PEER_NO_XDP:
		printf("peer:     %s has no XDP program: the veth drops the frames\n",
		       l->peer_known ? l->peer_name : "?");
		break;
	case PG_PEER_UNKNOWN:
		printf("peer:     in another network namespace, not readable\n");
		break;
	case PG_PEER_NONE:
		break;
	}
	if (cfg->rate)
		printf("offered:  %u pps = %.3f Gbit/s L2, %.3f Gbit/s on the wire "
		       "(+24 B/frame)\n", cfg->rate, gbps(cfg->rate, cfg->avg_len),
		       gbps(cfg->rate, wire));
	else
		printf("offered:  as fast as possible (--rate 0)\n");
	printf("achieved: %llu frames in %.3f s = %.0f pps = %.3f Gbit/s L2, "
	       "%.3f Gbit/s on the wire%s\n", (unsigned long long)r->st.tx, secs,
	       pps, gbps(pps, cfg->avg_len), gbps(pps, wire),
	       r->interrupted ? " (interrupted)" : "");
	if (r->drv_stats)
		printf("driver:   %llu sent, %llu dropped by the driver, %llu refused "
		       "before it\n", (unsigned long long)r->st.drv_sent,
		       (unsigned long long)r->st.drv_drops,
		       (unsigned long long)r->st.redir_err);
	if (r->st.errors)
		printf("errors:   %llu frames the program could not build\n",
		       (unsigned long long)r->st.errors);
}

void pg_report(const struct pg_cfg *cfg, const struct pg_result *r)
{
	double secs = r->elapsed_ns / 1e9;
	double pps = secs > 0 ? r->st.tx / secs : 0;

	if (cfg->json)
		report_json(cfg, r, secs, pps);
	else
		report_text(cfg, r, secs, pps);
	if (r->drv_stats && (r->st.drv_drops || r->st.redir_err))
		pg_warn("%llu of %llu frames did not leave %s: see 'driver' above "
			"(a veth drops what its peer has no XDP program for, or its "
			"ring cannot hold)",
			(unsigned long long)(r->st.drv_drops + r->st.redir_err),
			(unsigned long long)r->st.tx, cfg->link.name);
}
