// SPDX-License-Identifier: GPL-2.0
/*
 * Results of a run, as text or as one JSON object (--json).
 *
 * offered   what was asked: --rate, or "as fast as possible"
 * achieved  frames the program returned XDP_TX for, per second of the run
 * driver    what the interface's driver did with them (xdp:xdp_devmap_xmit:
 *           taken, dropped) and frames refused before it
 *           (xdp:xdp_redirect_err); on the socket path (sock.c) what the
 *           socket reported: taken by the device, refused (ENOBUFS)
 * Gbit/s is given twice: L2 counts frame bytes (no FCS); "wire" adds 24 B
 * per frame (FCS 4, preamble + SFD 8, inter-frame gap 12).
 */
#include <arpa/inet.h>
#include <math.h>
#include <stdio.h>

#include "util/json_writer.h"
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
	case PG_PEER_SKB:
		return "skb";
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

static void json_mac(struct json_writer *w, const char *key, const __u8 *m)
{
	char buf[18];

	snprintf(buf, sizeof(buf), "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1],
		 m[2], m[3], m[4], m[5]);
	jsonw_string_field(w, key, buf);
}

static void json_u32_or_null(struct json_writer *w, const char *key, bool set,
			     __u32 v)
{
	if (set)
		jsonw_uint_field(w, key, v);
	else
		jsonw_null_field(w, key);
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
	struct json_writer w;

	jsonw_init(&w, stdout);
	jsonw_start_object(&w);
	jsonw_string_field(&w, "dev", cfg->link.name);
	jsonw_int_field(&w, "ifindex", cfg->link.ifindex);
	jsonw_string_field(&w, "peer", cfg->link.peer_known ? cfg->link.peer_name : "");
	jsonw_string_field(&w, "peer_xdp", peer_text(r->peer));
	jsonw_string_field(&w, "mode", mode_text(cfg));
	jsonw_string_field(&w, "path", cfg->path == PG_PATH_SOCKET ? "socket" : "live");
	if (cfg->mode == PKTGEN_PCAP) {
		jsonw_string_field(&w, "pcap", cfg->pcap_file);
		jsonw_uint_field(&w, "pcap_frames", cfg->pcap.n);
	} else {
		json_mac(&w, "src_mac", p->src_mac);
		json_mac(&w, "dst_mac", p->dst_mac);
		addr_text(p, true, src, sizeof(src));
		addr_text(p, false, dst, sizeof(dst));
		jsonw_string_field(&w, "proto", p->tcp ? "tcp" : "udp");
		jsonw_bool_field(&w, "ipv6", p->ipv6);
		jsonw_string_field(&w, "src_ip", src);
		jsonw_string_field(&w, "dst_ip", dst);
		jsonw_uint_field(&w, "src_port", p->sport);
		jsonw_uint_field(&w, "dst_port", p->dport);
		jsonw_uint_field(&w, "flows", p->flows);
		jsonw_bool_field(&w, "stamp", p->stamp);
		if (cfg->mode == PKTGEN_MIX) {
			jsonw_string_field(&w, "mix", cfg->mix_file);
			jsonw_uint_field(&w, "mix_sizes", cfg->mix.n);
			jsonw_uint_field(&w, "mix_sequence", cfg->mix.seq_len);
		} else {
			jsonw_uint_field(&w, "size", cfg->size);
		}
	}
	jsonw_bool_field(&w, "held", r->held);
	jsonw_float_field_fmt(&w, "avg_frame_bytes", "%.2f", cfg->avg_len);
	jsonw_uint_field(&w, "batch", cfg->batch);
	jsonw_uint_field(&w, "burst_us", cfg->burst_us);
	json_u32_or_null(&w, "cpu", cfg->cpu >= 0, cfg->cpu);
	json_u32_or_null(&w, "count", cfg->count, cfg->count);
	json_u32_or_null(&w, "duration_s", cfg->duration, cfg->duration);
	/* rate 0 = as fast as possible: no offered rate */
	jsonw_uint_field(&w, "rate_pps", cfg->rate);
	json_u32_or_null(&w, "offered_pps", cfg->rate, cfg->rate);
	jsonw_float_field_fmt(&w, "offered_gbps_l2", "%.6f",
			      cfg->rate ? gbps(cfg->rate, cfg->avg_len) : NAN);
	jsonw_float_field_fmt(&w, "offered_gbps_wire", "%.6f",
			      cfg->rate ? gbps(cfg->rate, wire) : NAN);
	jsonw_float_field_fmt(&w, "elapsed_s", "%.6f", secs);
	jsonw_uint_field(&w, "runs", r->st.runs);
	jsonw_uint_field(&w, "transmitted", r->st.tx);
	jsonw_uint_field(&w, "errors", r->st.errors);
	jsonw_float_field_fmt(&w, "achieved_pps", "%.1f", pps);
	jsonw_float_field_fmt(&w, "achieved_gbps_l2", "%.6f", gbps(pps, cfg->avg_len));
	jsonw_float_field_fmt(&w, "achieved_gbps_wire", "%.6f", gbps(pps, wire));
	if (r->drv_stats) {
		jsonw_uint_field(&w, "driver_sent", r->st.drv_sent);
		jsonw_uint_field(&w, "driver_dropped", r->st.drv_drops);
		jsonw_uint_field(&w, "redirect_errors", r->st.redir_err);
	} else {
		jsonw_null_field(&w, "driver_sent");
		jsonw_null_field(&w, "driver_dropped");
		jsonw_null_field(&w, "redirect_errors");
	}
	jsonw_bool_field(&w, "interrupted", r->interrupted);
	jsonw_end_object(&w);
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
	case PG_PEER_SKB:
		printf("peer:     %s takes the frames as skbs: no XDP program needed\n",
		       l->peer_known ? l->peer_name : "?");
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
	if (cfg->path == PG_PATH_SOCKET)
		printf("socket:   %llu sent by %s in %llu sendmmsg calls, %llu dropped "
		       "(refused with ENOBUFS, or counted in its tx_dropped)\n",
		       (unsigned long long)r->st.drv_sent, l->name,
		       (unsigned long long)r->st.drv_calls,
		       (unsigned long long)r->st.drv_drops);
	else if (r->drv_stats)
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
	if (cfg->path == PG_PATH_SOCKET && r->st.drv_drops)
		pg_warn("%llu of %llu frames did not leave %s: the socket or the "
			"device's tx_dropped counter reported them dropped (a veth "
			"whose peer is down, a full queue or peer backlog: lower "
			"--rate)", (unsigned long long)r->st.drv_drops,
			(unsigned long long)r->st.tx, cfg->link.name);
	else if (r->drv_stats && (r->st.drv_drops || r->st.redir_err))
		pg_warn("%llu of %llu frames did not leave %s: see 'driver' above "
			"(a veth drops what its peer has no XDP program for, or its "
			"ring cannot hold)",
			(unsigned long long)(r->st.drv_drops + r->st.redir_err),
			(unsigned long long)r->st.tx, cfg->link.name);
}
