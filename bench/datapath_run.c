// SPDX-License-Identifier: GPL-2.0
/*
 * Test runs of nfslice-bench-datapath (bench/datapath.h): one packet, one
 * block of a program on one packet, and the rounds of shuffled blocks.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "datapath.h"
#include "nfsl_parse.h"
#include "nfsl_store.h"
#include "nfsl_token.h"
#include "util/util.h"

#include "slicer.skel.h"
#include "slicer_nofib.skel.h"
#include "slicer_replay63.skel.h"
#include "slicer_coarse.skel.h"
#include "slicer_nolog.skel.h"
#include "splicer_nores.skel.h"
#include "splicer.skel.h"
#include "bench_xdp.skel.h"
#include "bench_tc.skel.h"

static int prog_fd(struct bench *b, int id)
{
	switch (id) {
	case B_XDP_EMPTY:
	case B_LIVE_EMPTY:
		return bpf_program__fd(b->bx->progs.bench_xdp_empty);
	case B_XDP_PARSE:
	case B_LIVE_PARSE:
		return bpf_program__fd(b->bx->progs.bench_xdp_parse);
	case B_XDP_ROUTE:
		return bpf_program__fd(b->bx->progs.bench_xdp_route);
	case B_XDP_CALL:
		return bpf_program__fd(b->bx->progs.bench_xdp_call);
	case B_XDP_CLOCK:
		return bpf_program__fd(b->bx->progs.bench_xdp_clock);
	case B_XDP_CLOCK_COARSE:
		return bpf_program__fd(b->bx->progs.bench_xdp_clock_coarse);
	case B_XDP_COPY:
	case B_LIVE_COPY:
		return bpf_program__fd(b->bx->progs.bench_xdp_copy);
	case B_XDP_COPY_NOFENCE:
		return bpf_program__fd(b->bx->progs.bench_xdp_copy_nofence);
	case B_XDP_COPY_WARM:
		return bpf_program__fd(b->bx->progs.bench_xdp_copy_warm);
	case B_XDP_COPY_COLD:
		return bpf_program__fd(b->bxc->progs.bench_xdp_copy);
	case B_SLICER:
	case B_LIVE_SLICER:
		return bpf_program__fd(b->sl->progs.nfsl_slicer);
	case B_SLICER_NOFIB:
		return bpf_program__fd(b->sn->progs.nfsl_slicer);
	case B_SLICER_COLD:
		return bpf_program__fd(b->slc->progs.nfsl_slicer);
	case B_SLICER_COARSE:
		return bpf_program__fd(b->sco->progs.nfsl_slicer);
	case B_SLICER_NOLOG:
		return bpf_program__fd(b->snl->progs.nfsl_slicer);
	case B_SLICER_TENANTS:
		return bpf_program__fd(b->slt->progs.nfsl_slicer);
	case B_SLICER_NOCACHE:
		return bpf_program__fd(b->snc->progs.nfsl_slicer);
	case B_SLICER_REPLAY63:
		return bpf_program__fd(b->srp->progs.nfsl_slicer);
	case B_SLICER_SKIP:
	case B_SLICER_SKIP_EV:
		return bpf_program__fd(b->sks->progs.nfsl_slicer);
	case B_NF_EMPTY:
	case B_GUARD_FWD:
	case B_GUARD_FWD_DOMAIN:
		return dp_guard_fd(b, id);
	case B_TC_EMPTY:
		return bpf_program__fd(b->bt->progs.bench_tc_empty);
	case B_TC_PARSE:
		return bpf_program__fd(b->bt->progs.bench_tc_parse);
	case B_TC_STORE:
	case B_TC_STORE_LAG:
		return bpf_program__fd(b->bt->progs.bench_tc_store);
	default:
		return bpf_program__fd(b->sp->progs.nfsl_splicer);
	case B_SPLICER_NORES:
		return bpf_program__fd(b->spn->progs.nfsl_splicer);
	}
}

/* splicer-foreign: @iters runs of the splicer @fd on @c's unsliced frame
 * with random last 16 bytes (where a token would lie), each passed
 * untouched; *@dur gets the sum of the runs' durations. 0 or -errno. */
static int foreign_block(struct bench *b, const struct bcase *c, int fd, unsigned int iters,
			 __u64 *dur)
{
	static __u8 in[PKT_BUF];
	static __u64 x = 0x9e3779b97f4a7c15ull; /* xorshift64 state */
	unsigned int len;
	__u32 ret, du;
	int err = 0;

	memcpy(in, c->pkt, c->size);
	for (unsigned int i = 0; i < iters && !err; i++) {
		for (unsigned int k = c->size - 16; k < c->size; k += 8) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			memcpy(in + k, &x, 8);
		}
		err = dp_run_once(b, HOOK_TC, fd, in, c->size, &len, &ret, &du);
		*dur += du;
		if (!err && (ret != (__u32)TC_ACT_UNSPEC || len != c->size ||
			     memcmp(b->out, in, len))) {
			pr_err("splicer-foreign: the splicer changed or dropped a %u B frame "
			       "(verdict %u)", c->size, ret);
			err = -EPROTO;
		}
	}
	return err;
}

/* Kernel run-time statistics of a program: total ns and runs so far. */
static int prog_stats(int fd, __u64 *ns, __u64 *cnt)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);

	if (bpf_obj_get_info_by_fd(fd, &info, &len)) {
		pr_err("cannot read program info: %s", strerror(errno));
		return -1;
	}
	*ns = info.run_time_ns;
	*cnt = info.run_cnt;
	return 0;
}


/* ---- one test run ----------------------------------------------------- */

/* Run @fd once on @in; the output lands in b->out. Returns 0 or -errno. */
int dp_run_once(struct bench *b, enum hook hook, int fd, const void *in, unsigned int len,
		unsigned int *out_len, __u32 *retval, __u32 *duration)
{
	/* XDP: the packet arrives on the domain's ingress interface. */
	struct xdp_md md = { .data_end = len, .ingress_ifindex = b->if_in };
	/* clang-format off */
	LIBBPF_OPTS(bpf_test_run_opts, t,
		.data_in = in,
		.data_size_in = len,
		.data_out = b->out,
		.data_size_out = sizeof(b->out),
		.repeat = 1,
	);
	/* clang-format on */
	int err;

	if (hook == HOOK_XDP) {
		t.ctx_in = &md;
		t.ctx_size_in = sizeof(md);
	}
	*out_len = 0;
	*retval = 0;
	err = bpf_prog_test_run_opts(fd, &t);
	if (err)
		return -errno;
	*out_len = t.data_size_out;
	*retval = t.retval;
	if (duration)
		*duration = t.duration;
	return 0;
}

/* Slice the packet of @c (not measured) into @s. */
int dp_slice_one(struct bench *b, struct bcase *c, struct sliced *s)
{
	int fd = bpf_program__fd(b->sl->progs.nfsl_slicer);
	const struct nfsl_token *tok;
	unsigned int len;
	__u32 ret;
	int err;

	err = dp_run_once(b, HOOK_XDP, fd, c->pkt, c->size, &len, &ret, NULL);
	if (err) {
		pr_err("slicer test run failed: %s", strerror(-err));
		return err;
	}
	if (ret != XDP_PASS || len != c->payoff + NFSL_TOKEN_LEN) {
		pr_err("slicer did not slice a %u B packet (ret %u, %u B out): "
		       "is the store full?",
		       c->size, ret, len);
		return -EPROTO;
	}
	memcpy(s->buf, b->out, len);
	s->len = len;
	tok = (const struct nfsl_token *)(s->buf + len - NFSL_TOKEN_LEN);
	s->slot = NFSL_TOKEN_IDX(ntohl(tok->slot));
	s->gen = ntohl(tok->gen);
	if (s->slot >= NFSL_DEF_SLOTS) {
		pr_err("slicer wrote slot %u, beyond the store", s->slot);
		return -EPROTO;
	}
	return 0;
}

void dp_release_sliced(struct bench *b, const struct sliced *s)
{
	nfsl_slot_release(&b->store[s->slot], s->gen);
}

/* ---- blocks ----------------------------------------------------------- */

/* Check the output of a measured run. */
static int check_out(struct bench *b, struct bcase *c, int id, unsigned int len, __u32 ret)
{
	switch (id) {
	case B_XDP_ROUTE:
		/* the route check must say "slice", as for the slicer */
		if (ret != XDP_PASS || b->bx->bss->bench_sink != DP_ROUTE_SLICE)
			goto bad;
		return 0;
	case B_SLICER:
	case B_SLICER_NOFIB:
	case B_SLICER_COLD:
	case B_SLICER_COARSE:
	case B_SLICER_NOLOG:
	case B_SLICER_TENANTS:
	case B_SLICER_NOCACHE:
	case B_SLICER_REPLAY63:
		if (ret != XDP_PASS || len != (c->sliced ? c->payoff + NFSL_TOKEN_LEN : c->size))
			goto bad;
		return 0;
	case B_SLICER_SKIP:
	case B_SLICER_SKIP_EV:
		if (ret != XDP_PASS || len != c->size || memcmp(b->out, c->pkt, len))
			goto bad;
		return 0;
	case B_SPLICER:
	case B_SPLICER_NORES:
	case B_SPLICER_EV:
	case B_SPLICER_LAG:
		if (ret != (__u32)TC_ACT_UNSPEC || len != c->size || memcmp(b->out, c->pkt, len))
			goto bad;
		return 0;
	case B_TC_STORE:
	case B_TC_STORE_LAG:
		if (ret != TC_ACT_OK || len != c->size ||
		    memcmp(b->out + c->payoff, c->pkt + c->payoff, len - c->payoff))
			goto bad;
		return 0;
	default:
		return 0;
	}
bad:
	pr_err("%s gave a wrong result for the %u B %s packet (ret %u, %u B)", benches[id].name,
	       c->size, c->proto == IPPROTO_UDP ? "UDP" : "TCP", ret, len);
	return -EPROTO;
}

/* XDP programs and the slicer on a fresh copy of the packet. */
static int xdp_iter(struct bench *b, struct bcase *c, int id, int fd, __u64 *dur)
{
	const struct nfsl_token *tok;
	unsigned int len;
	__u32 ret, d;
	int err;

	err = dp_run_once(b, HOOK_XDP, fd, c->pkt, c->size, &len, &ret, &d);
	if (err) {
		pr_err("%s test run failed: %s", benches[id].name, strerror(-err));
		return err;
	}
	*dur += d;
	if (check_out(b, c, id, len, ret))
		return -EPROTO;
	if ((id == B_SLICER || id == B_SLICER_NOFIB || id == B_SLICER_COLD ||
	     id == B_SLICER_COARSE || id == B_SLICER_NOLOG || id == B_SLICER_TENANTS ||
	     id == B_SLICER_REPLAY63 || id == B_SLICER_NOCACHE) &&
	    c->sliced) {
		/* Free the slot as a splicer would, outside the measurement. */
		tok = (const struct nfsl_token *)(b->out + len - NFSL_TOKEN_LEN);
		if (NFSL_TOKEN_IDX(ntohl(tok->slot)) >= NFSL_DEF_SLOTS)
			return -EPROTO;
		nfsl_slot_release(&b->store[NFSL_TOKEN_IDX(ntohl(tok->slot))], ntohl(tok->gen));
	}
	return 0;
}

/* One splice (splicer or tc-store) of @s, measured. */
static int splice_iter(struct bench *b, struct bcase *c, int id, int fd, struct sliced *s,
		       __u64 *dur)
{
	unsigned int len;
	__u32 ret, d;
	int err;

	b->bt->bss->bench_slot = s->slot;
	err = dp_run_once(b, HOOK_TC, fd, s->buf, s->len, &len, &ret, &d);
	if (err) {
		pr_err("%s test run failed: %s", benches[id].name, strerror(-err));
		return err;
	}
	*dur += d;
	if (check_out(b, c, id, len, ret))
		return -EPROTO;
	if (id == B_TC_STORE || id == B_TC_STORE_LAG)
		dp_release_sliced(b, s);
	return 0;
}

/*
 * Live frames: the kernel runs the program on a fresh copy of the packet per
 * repeat, back to back, without a syscall in between. A page the program
 * passed comes back to the page pool with its content as the program left
 * it (Documentation/bpf/bpf_prog_run.rst), so a call runs one batch only:
 * every packet of it starts on a newly initialised page.
 */
static int live_block(struct bench *b, struct bcase *c, int id, int fd)
{
	/* clang-format off */
	struct xdp_md md = { .data_end = c->size, .ingress_ifindex = b->if_in };
	LIBBPF_OPTS(bpf_test_run_opts, t,
		.data_in = c->pkt,
		.data_size_in = c->size,
		.ctx_in = &md,
		.ctx_size_in = sizeof(md),
		.flags = BPF_F_TEST_XDP_LIVE_FRAMES,
	);
	/* clang-format on */
	struct nfsl_counters before, after;
	unsigned int done, n;
	int err;

	if (id == B_LIVE_SLICER && dp_read_counters(b, &before))
		return -EIO;
	for (done = 0; done < b->o.live_repeat; done += n) {
		n = b->o.live_repeat - done;
		if (n > LIVE_BATCH)
			n = LIVE_BATCH;
		t.repeat = n;
		t.batch_size = n;
		if (bpf_prog_test_run_opts(fd, &t)) {
			err = -errno;
			pr_err("%s live-frames run failed: %s", benches[id].name, strerror(errno));
			return err;
		}
	}
	if (id != B_LIVE_SLICER)
		return 0;
	dp_release_all(b);
	if (dp_reset_alloc(b))
		return -EIO;
	if (dp_read_counters(b, &after))
		return -EIO;
	if (c->sliced && after.sliced - before.sliced != b->o.live_repeat) {
		pr_err("live-frames slicer sliced %llu of %u packets of %u B",
		       (unsigned long long)(after.sliced - before.sliced), b->o.live_repeat,
		       c->size);
		return -EPROTO;
	}
	return 0;
}

/* Turn the drop events flag of the config in map @fd on or off. */
static int set_events(int fd, bool on)
{
	struct nfsl_config cfg;
	__u32 zero = 0;

	if (bpf_map_lookup_elem(fd, &zero, &cfg))
		return -errno;
	cfg.flags = on ? cfg.flags | NFSL_CFG_EVENTS : cfg.flags & ~NFSL_CFG_EVENTS;
	return bpf_map_update_elem(fd, &zero, &cfg, BPF_ANY) ? -errno : 0;
}

/* The events flag a block of bench @id runs with: the skipping slicer's
 * own config, or the domain's for splicer-events (off again after). */
static int block_events(struct bench *b, int id, bool before)
{
	if (id == B_SLICER_SKIP || id == B_SLICER_SKIP_EV)
		return before ? set_events(bpf_map__fd(b->sks->maps.nfsl_config),
					   id == B_SLICER_SKIP_EV) : 0;
	if (id == B_SPLICER_EV)
		return set_events(bpf_map__fd(b->sl->maps.nfsl_config), before);
	return 0;
}

/* After a block of slicer-skip(-events): exactly one event per packet the
 * route check skipped with the flag on, none with it off. */
static int check_events(struct bench *b, struct bcase *c, int id, unsigned int iters)
{
	unsigned long long n0 = b->evn, want;

	if (id != B_SLICER_SKIP && id != B_SLICER_SKIP_EV)
		return 0;
	if (ring_buffer__consume(b->evrb) < 0)
		return -EIO;
	want = id == B_SLICER_SKIP_EV && c->sliced ? iters : 0;
	if (b->evn - n0 != want) {
		pr_err("%s wrote %llu drop events for %u packets of %u B (want %llu)",
		       benches[id].name, b->evn - n0, iters, c->size, want);
		return -EPROTO;
	}
	return 0;
}

/* Measure bench @id on case @c for round @r (r < 0: warm-up, not kept). */
static int run_block(struct bench *b, struct bcase *c, int id, int r)
{
	const struct bench_desc *d = &benches[id];
	unsigned int iters = b->o.iters, lag = 0, i, n;
	int fd = prog_fd(b, id), err = 0;
	__u64 ns0, cnt0, ns1, cnt1, dur = 0;

	if (id == B_XDP_COPY || id == B_XDP_COPY_NOFENCE || id == B_XDP_COPY_WARM ||
	    id == B_LIVE_COPY)
		b->bx->bss->bench_payoff = c->payoff;
	if (id == B_XDP_COPY_COLD)
		b->bxc->bss->bench_payoff = c->payoff;
	if (d->flags & BF_LAG) {
		lag = b->o.lag;
		for (i = 0; i < lag; i++) {
			err = dp_slice_one(b, c, &b->ring[i]);
			if (err)
				goto out;
		}
	}

	err = block_events(b, id, true);
	if (err)
		goto out;
	if (b->o.flush && id != B_XDP_EMPTY && id != B_TC_EMPTY && id != B_LIVE_EMPTY &&
	    id != B_NF_EMPTY) {
		err = dp_flush_store(b);
		if (err)
			goto out;
	}
	if (prog_stats(fd, &ns0, &cnt0)) {
		err = -EIO;
		goto out;
	}
	if (d->flags & BF_LIVE) {
		err = live_block(b, c, id, fd);
		iters = b->o.live_repeat;
	} else if (d->hook == HOOK_XDP) {
		for (i = 0; i < iters && !err; i++)
			err = xdp_iter(b, c, id, fd, &dur);
	} else if (d->hook == HOOK_NF) {
		err = dp_nf_block(b, c, fd, iters, &dur);
	} else if (id == B_TC_EMPTY || id == B_TC_PARSE) {
		unsigned int len;
		__u32 ret, du;

		for (i = 0; i < iters && !err; i++) {
			err = dp_run_once(b, HOOK_TC, fd, c->tc_in, c->tc_in_len, &len, &ret, &du);
			dur += du;
		}
		if (err)
			pr_err("%s test run failed: %s", d->name, strerror(-err));
	} else if (id == B_SPLICER_FOREIGN) {
		err = foreign_block(b, c, fd, iters, &dur);
	} else if (!c->sliced) {
		/* Splicer on a packet too small to slice: parse and pass. */
		for (i = 0; i < iters && !err; i++) {
			unsigned int len;
			__u32 ret, du;

			err = dp_run_once(b, HOOK_TC, fd, c->pkt, c->size, &len, &ret, &du);
			dur += du;
			if (!err &&
			    (ret != (__u32)TC_ACT_UNSPEC || len != c->size ||
			     memcmp(b->out, c->pkt, len))) {
				pr_err("splicer changed an unsliced %u B packet", c->size);
				err = -EPROTO;
			}
		}
	} else {
		/* Slice (not measured), then splice the packet sliced @lag
		 * packets earlier: 0 = the one just sliced. */
		for (i = 0; i < iters && !err; i++) {
			struct sliced *s = &b->ring[lag ? i % lag : 0];

			if (!lag)
				err = dp_slice_one(b, c, s);
			if (!err)
				err = splice_iter(b, c, id, fd, s, &dur);
			if (!err && lag)
				err = dp_slice_one(b, c, s);
		}
	}
	if (err)
		goto out;
	if (prog_stats(fd, &ns1, &cnt1)) {
		err = -EIO;
		goto out;
	}
	n = cnt1 - cnt0;
	if (n != iters) {
		pr_err("%s ran %u times in a block of %u (is something else running it?)", d->name,
		       n, iters);
		err = -EPROTO;
		goto out;
	}
	err = check_events(b, c, id, iters);
	if (err)
		goto out;
	if (r >= 0) {
		c->raw[id][r] = (double)(ns1 - ns0) / n;
		c->dur[id][r] = (d->flags & BF_LIVE) ? NAN : (double)dur / n;
	}
out:
	if (block_events(b, id, false) && !err)
		err = -EIO;
	if (lag) {
		dp_release_all(b); /* the packets still parked in the ring */
		if (!err && dp_reset_alloc(b))
			err = -EIO;
	}
	return err;
}

/* ---- rounds ----------------------------------------------------------- */

static __u64 rng_state = 0x9e3779b97f4a7c15ULL;

static __u64 rng_next(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

int dp_run_all(struct bench *b)
{
	unsigned int nblocks = b->ncases * B_NR, i, n;
	int total = (int)(b->o.warmup + b->o.rounds), r, err = 0;
	__u64 t0;
	unsigned int *order;

	order = calloc(nblocks, sizeof(*order));
	if (!order)
		return -ENOMEM;
	t0 = nfsl_now_ns();
	for (r = 0; r < total && !err; r++) {
		/* Every applicable block once, in a fresh shuffled order. */
		for (i = 0, n = 0; i < nblocks; i++)
			if (dp_applies(b, &b->cases[i / B_NR], i % B_NR))
				order[n++] = i;
		for (i = n - 1; i > 0; i--) {
			unsigned int j = rng_next() % (i + 1), t = order[i];

			order[i] = order[j];
			order[j] = t;
		}
		for (i = 0; i < n && !err; i++)
			err = run_block(b, &b->cases[order[i] / B_NR], order[i] % B_NR,
					r - (int)b->o.warmup);
		if (!b->o.quiet)
			fprintf(stderr, "\rround %d/%d", r + 1, total);
	}
	if (!b->o.quiet)
		fprintf(stderr, "\n");
	b->elapsed = (nfsl_now_ns() - t0) / 1e9;
	free(order);
	return err;
}

