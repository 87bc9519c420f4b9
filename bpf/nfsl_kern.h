/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * The kernel's own types, as far as the programs read them (CO-RE: the
 * offsets come from the running kernel's BTF), and the one kfunc that
 * reaches them from a tc context without a helper call.
 */
#ifndef NFSL_KERN_H
#define NFSL_KERN_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct net_device {
	int ifindex;
	unsigned int mtu;
} __attribute__((preserve_access_index));

struct sk_buff {
	unsigned int len;
	struct net_device *dev;
	unsigned char *head;
	unsigned int end; /* sk_buff_data_t: an offset from head on 64-bit */
} __attribute__((preserve_access_index));

struct skb_shared_info {
	unsigned short gso_size;
} __attribute__((preserve_access_index));

struct xdp_buff {
	__u32 flags; /* enum xdp_buff_flags: bit 0 XDP_FLAGS_HAS_FRAGS */
} __attribute__((preserve_access_index));

/* The sk_buff behind a tc program's __sk_buff (Linux >= 6.3). The
 * verifier turns the call into a register move: no call is made. Weak:
 * an older kernel takes bpf_check_mtu. */
extern void *bpf_cast_to_kern_ctx(void *ctx) __ksym __weak;

/*
 * nfsl_skb_fits_mtu - would an IP packet of @l3len bytes fit the MTU of
 * the device @skb leaves through? What bpf_check_mtu(skb, 0, &l3len, 0, 0)
 * answers for a packet that is not GSO (the MTU against the L3 length),
 * read in place: a helper call costs ~20 ns here (SRSO return thunks).
 */
static __always_inline bool nfsl_skb_fits_mtu(struct __sk_buff *skb, __u32 l3len)
{
	struct sk_buff *kskb;

	if (!bpf_cast_to_kern_ctx)
		return !bpf_check_mtu(skb, 0, &l3len, 0, 0);
	kskb = bpf_cast_to_kern_ctx(skb);
	return l3len <= kskb->dev->mtu;
}

/*
 * nfsl_xdp_len - bytes of the XDP frame @ctx whose linear part is @lin
 * bytes long: bpf_xdp_get_buff_len(), called only for a multi-buffer frame
 * (XDP_FLAGS_HAS_FRAGS, Linux >= 5.18), read in place otherwise: the
 * helper call costs ~25 ns per frame here (nfslice-bench-datapath).
 */
static __always_inline __u32 nfsl_xdp_len(struct xdp_md *ctx, __u32 lin)
{
	struct xdp_buff *x;

	if (!bpf_cast_to_kern_ctx)
		return bpf_xdp_get_buff_len(ctx);
	x = bpf_cast_to_kern_ctx(ctx);
	return x->flags & 1 ? bpf_xdp_get_buff_len(ctx) : lin;
}

#endif /* NFSL_KERN_H */
