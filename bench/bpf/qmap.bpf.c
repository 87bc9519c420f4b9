// SPDX-License-Identifier: GPL-2.0
/*
 * tc ingress program of bench/exp_xsk.py's 4q hop: picks the TX queue of a
 * frame from nfslice's symmetric flow hash (include/nfsl_flow.h, the hash
 * nfslice-nf's steering uses), then redirects it out of the configured
 * interface. At tc ingress skb->queue_mapping is the recorded RX queue + 1;
 * the transmit path (skb_tx_hash) then picks TX queue (value - 1) % queues,
 * and veth delivers on its peer's RX queue of that number. Frames the
 * parser refuses hash to 0 (queue 0).
 *
 * Configured through qmap_cfg[0] (struct qmap_cfg) before it is attached:
 * exp_xsk.py loads it with bpftool (pinmaps) and writes the map.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "nfsl_flow.h"

struct qmap_cfg {
	__u32 out_ifindex; /* interface the frames leave through */
	__u32 nq;          /* queues to spread over, >= 1 */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct qmap_cfg);
} qmap_cfg SEC(".maps");

SEC("tc")
int qmap(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;
	struct qmap_cfg *cfg;
	struct nfsl_pkt p = {};
	__u32 key = 0, hash = 0;

	cfg = bpf_map_lookup_elem(&qmap_cfg, &key);
	if (!cfg || !cfg->nq)
		return 2; /* TC_ACT_SHOT: not configured */
	if (!nfsl_parse(data, data_end, &p))
		hash = nfsl_flow_hash(data, data_end, &p);
	skb->queue_mapping = nfsl_flow_pick(hash, cfg->nq) + 1;
	return bpf_redirect(cfg->out_ifindex, 0);
}

char LICENSE[] SEC("license") = "GPL";
