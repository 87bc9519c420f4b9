// SPDX-License-Identifier: GPL-2.0
/*
 * The socket path: synthetic frames larger than a live frame
 * (PKTGEN_MAX_FRAME, one page) up to the MTU + 14, sent through an
 * AF_PACKET SOCK_RAW socket bound to the interface, --batch frames per
 * sendmmsg(2) (docs/pktgen.md "Jumbo frames").
 *
 * BPF_PROG_RUN refuses live mode for data beyond one page, also for a
 * multi-buffer program (net/bpf/test_run.c), so jumbo frames need another
 * way out. A packet socket is the simplest well-kept one: its frames go
 * through dev_queue_xmit() as any skb (a qdisc gives backpressure, a veth
 * peer needs no XDP program). What did not leave is counted twice over:
 * a frame the qdisc or a driver refuses fails with ENOBUFS, and what a
 * device drops without telling the sender (a veth whose peer is down or
 * whose peer's backlog is full) shows in its tx_dropped counter, read
 * before and after the run (run.c).
 *
 * The frames are the live path's: the templates of packet.c, and per frame
 * the same steps as the frame program (pktgen.h: mix cursor, flow, stamp,
 * L4 checksum), written into --batch buffers whose payload stays zero.
 * The stamp's TX time is read when the frame is written, just before its
 * sendmmsg call (live frames are stamped as early: before their batch).
 */
#define _GNU_SOURCE
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <sys/socket.h>

#include "pg.h"
#include "util/util.h"

/* Socket send buffer: a batch of the largest frames in flight. */
#define PG_SOCK_SNDBUF (8 << 20)

/* A size's frame: the template (first flow, no stamp) and its fields. */
struct pg_sock_tmpl {
	__u8 *frame;
	struct pktgen_tmpl f;
};

struct pg_sock {
	const struct pg_cfg *cfg;
	int fd;
	__u32 hdr_len;            /* bytes a frame takes from its template */
	__u32 l4_off;
	__u32 ntmpl;
	struct pg_sock_tmpl *tmpl; /* fixed: 1; mix: one per size of the file */
	__u32 *seq_tmpl;          /* mix: template index of each sequence entry */
	__u32 seq_pos, flow_pos;  /* the cursors (pktgen.h) */
	__u8 *bufs;               /* --batch buffers of max_len bytes */
	__u32 max_len;
	struct iovec *iov;
	struct mmsghdr *msgs;
	struct pktgen_stats st;
};

void pg_sock_close(struct pg_sock *s)
{
	if (!s)
		return;
	if (s->fd >= 0)
		close(s->fd);
	for (__u32 i = 0; s->tmpl && i < s->ntmpl; i++)
		free(s->tmpl[i].frame);
	free(s->tmpl);
	free(s->seq_tmpl);
	free(s->bufs);
	free(s->iov);
	free(s->msgs);
	free(s);
}

static int add_tmpl(struct pg_sock *s, __u32 len)
{
	struct pg_sock_tmpl *t = &s->tmpl[s->ntmpl];

	t->frame = calloc(1, len);
	if (!t->frame)
		return -ENOMEM;
	pg_frame_build(&s->cfg->pkt, len, t->frame, &t->f);
	s->ntmpl++;
	if (len > s->max_len)
		s->max_len = len;
	return 0;
}

static int build_tmpls(struct pg_sock *s)
{
	const struct pg_cfg *cfg = s->cfg;
	const struct pg_mix *m = &cfg->mix;

	if (cfg->mode == PKTGEN_FIXED) {
		s->tmpl = calloc(1, sizeof(*s->tmpl));
		return s->tmpl ? add_tmpl(s, cfg->size) : -ENOMEM;
	}
	s->tmpl = calloc(m->n, sizeof(*s->tmpl));
	s->seq_tmpl = calloc(m->seq_len, sizeof(*s->seq_tmpl));
	if (!s->tmpl || !s->seq_tmpl)
		return -ENOMEM;
	for (__u32 i = 0; i < m->n; i++)
		if (add_tmpl(s, m->size[i]))
			return -ENOMEM;
	for (__u32 i = 0; i < m->seq_len; i++)
		for (__u32 j = 0; j < m->n; j++)
			if (m->seq[i] == m->size[j])
				s->seq_tmpl[i] = j;
	return 0;
}

int pg_sock_open(const struct pg_cfg *cfg, struct pg_sock **sp)
{
	struct sockaddr_ll addr = {
		.sll_family = AF_PACKET,
		.sll_ifindex = cfg->link.ifindex,
	};
	int sndbuf = PG_SOCK_SNDBUF;
	struct pg_sock *s;
	int err;

	s = calloc(1, sizeof(*s));
	if (!s)
		return pg_err("out of memory");
	s->cfg = cfg;
	s->hdr_len = pg_hdr_len(&cfg->pkt);
	s->l4_off = ETH_HLEN + (cfg->pkt.ipv6 ? 40 : 20);
	/* Protocol 0: the socket sends only, it is handed no received frame. */
	s->fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
	if (s->fd < 0) {
		err = pg_err("cannot open an AF_PACKET socket for frames above %u B: "
			     "%s (needs CAP_NET_RAW: run as root)", PKTGEN_MAX_FRAME,
			     strerror(errno));
		goto fail;
	}
	if (bind(s->fd, (struct sockaddr *)&addr, sizeof(addr))) {
		err = pg_err("cannot bind an AF_PACKET socket to %s: %s",
			     cfg->link.name, strerror(errno));
		goto fail;
	}
	/* Best effort: the default buffer holds only ~10 jumbo frames in flight. */
	if (setsockopt(s->fd, SOL_SOCKET, SO_SNDBUFFORCE, &sndbuf, sizeof(sndbuf)))
		setsockopt(s->fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
	if (build_tmpls(s))
		goto oom;
	s->bufs = calloc(cfg->batch, s->max_len);
	s->iov = calloc(cfg->batch, sizeof(*s->iov));
	s->msgs = calloc(cfg->batch, sizeof(*s->msgs));
	if (!s->bufs || !s->iov || !s->msgs)
		goto oom;
	for (__u32 i = 0; i < cfg->batch; i++) {
		s->iov[i].iov_base = s->bufs + (size_t)i * s->max_len;
		s->msgs[i].msg_hdr.msg_iov = &s->iov[i];
		s->msgs[i].msg_hdr.msg_iovlen = 1;
	}
	*sp = s;
	return 0;
oom:
	err = pg_err("out of memory");
fail:
	pg_sock_close(s);
	return err;
}

/* Frame @seq into buffer @i: its size's template head, then the fields
 * that vary (pktgen.h, as the frame program does). */
static void write_frame(struct pg_sock *s, __u32 i, __u64 seq)
{
	const struct pg_cfg *cfg = s->cfg;
	const struct pg_sock_tmpl *t = &s->tmpl[0];
	__u8 *buf = s->iov[i].iov_base;
	__u64 ns = 0;
	__u32 flow;

	if (cfg->mode == PKTGEN_MIX)
		t = &s->tmpl[s->seq_tmpl[pktgen_mix_next(&s->seq_pos, &s->flow_pos,
							 cfg->mix.seq_len,
							 cfg->pkt.flows)]];
	/* The payload of every buffer stays zero: only headers and the stamp
	 * are ever written, and the template restores the headers. */
	memcpy(buf, t->frame, s->hdr_len);
	flow = pktgen_flow_next(&s->flow_pos, cfg->pkt.flows);
	if (cfg->pkt.stamp)
		ns = htobe64(nfsl_now_ns());
	pktgen_l4_finish(buf + s->l4_off, !cfg->pkt.tcp, t->f.l4_sum,
			 htons(cfg->pkt.sport + flow), cfg->pkt.stamp, htobe64(seq), ns);
	s->iov[i].iov_len = t->f.len;
}

/*
 * pg_sock_send - send @n frames, --batch per sendmmsg(2). A frame the
 * device refuses (ENOBUFS: dropped by it or by the veth peer's backlog) is
 * counted in drv_drops and not sent again; sendmmsg returns short of a
 * batch at such a frame without its error, so the frame it stopped at
 * counts as such a drop. Returns 0, -EINTR once *@stop is set (a signal
 * ended the run; the frames not yet taken are not counted), or another
 * negative errno.
 */
int pg_sock_send(struct pg_sock *s, __u64 n, const volatile sig_atomic_t *stop)
{
	while (n) {
		__u32 cnt = n < s->cfg->batch ? n : s->cfg->batch, off = 0;
		bool end = false;

		for (__u32 i = 0; i < cnt; i++)
			write_frame(s, i, s->st.runs + i);
		while (off < cnt) {
			int r = sendmmsg(s->fd, s->msgs + off, cnt - off, 0);

			s->st.drv_calls++;
			if (r < 0 && errno != ENOBUFS && errno != EINTR)
				return -errno;
			if (r > 0) {
				s->st.drv_sent += r;
				off += r;
			}
			end = *stop;
			if (end || off == cnt)
				break;
			if (r < 0 && errno == EINTR)
				continue; /* not our signal: nothing was sent */
			s->st.drv_drops++;
			off++;
		}
		if (end)
			cnt = off;
		s->st.runs += cnt;
		s->st.tx += cnt;
		n -= cnt;
		if (end)
			return -EINTR;
	}
	return 0;
}

const struct pktgen_stats *pg_sock_stats(const struct pg_sock *s)
{
	return &s->st;
}
