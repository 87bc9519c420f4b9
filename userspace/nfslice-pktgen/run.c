// SPDX-License-Identifier: GPL-2.0
/*
 * The run: load userspace/nfslice-pktgen/pktgen.bpf.c for the configured frames, then call
 * BPF_PROG_RUN in live-frames mode until --count frames or --duration
 * seconds are done; frames above a live frame's page go through the
 * socket path instead (sock.c), under the same pacing loop.
 *
 * Each call runs the program on `repeat` frames, --batch of them per page
 * pool cycle (the kernel flushes the transmit queue after each batch), all
 * on the calling CPU with bottom halves off. Unpaced (--rate 0), calls of
 * PG_CHUNK frames follow each other; paced, a call is made whenever
 * --burst-us worth of frames (default 1 ms) is due by CLOCK_MONOTONIC since the start,
 * and the thread sleeps (clock_nanosleep, absolute) until the next burst
 * is due in between: no busy waiting, and since the schedule is absolute,
 * a late wake-up is made up by the next call. A burst leaves at the speed
 * the CPU makes frames, in batches of --batch.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "pg.h"
#include "pktgen.skel.h"
#include "util/util.h"

#define NSEC 1000000000ULL
/*
 * Frames per call when not paced (and the most per paced call): about 1 ms
 * at full speed, so --duration ends on time and signals are seen soon; the
 * cost of a call (page pool setup, ~10 us) stays below 1%.
 */
#define PG_CHUNK 8192
/*
 * Paced, a call is made once --burst-us worth of frames is due (at least
 * one frame); by default 1 ms: 20 frames per call at 20000 pps, 1000 at 1
 * Mpps. A call costs ~20 us besides its frames once the program is held in
 * the dispatcher (hold.c), so 1 ms pacing costs ~2% of a CPU whatever the
 * rate (pacing by --batch instead took 45% of the CPU at 1 Mpps). Finer
 * pacing is nearer a wire's even spacing (a receiver's ring meets bursts
 * of rate x burst-us frames) and dearer: docs/pktgen.md "Pacing".
 */
/* When the program could not be held: a call waits ~25 ms. */
#define PG_CHUNK_UNHELD (1 << 18)
#define PG_CALLS_UNHELD 20

static volatile sig_atomic_t stopping;

void pg_stop(void)
{
	stopping = 1;
}

/* The way out: live frames of the frame program, or the socket (sock.c). */
struct pg_out {
	int prog_fd;
	struct bpf_test_run_opts *o;
	struct pg_sock *sock;
	volatile const struct pktgen_stats *st;
};

/* Send @n frames; 0 or a negative errno (-EINTR: a signal ended it). */
static int send_frames(struct pg_out *out, __u64 n)
{
	if (out->sock)
		return pg_sock_send(out->sock, n, &stopping);
	out->o->repeat = n;
	return bpf_prog_test_run_opts(out->prog_fd, out->o);
}

static void sleep_until(__u64 t)
{
	struct timespec ts = { .tv_sec = t / NSEC, .tv_nsec = t % NSEC };

	/* EINTR: the loop looks at `stopping` and the clock again. */
	clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
}

/* Frames due @dt ns after the start at @rate pps. */
static __u64 frames_due(__u64 dt, __u32 rate)
{
	return (unsigned __int128)dt * rate / NSEC;
}

/* Time after the start at which frame @n is due. */
static __u64 time_due(__u64 n, __u32 rate)
{
	return ((unsigned __int128)n * NSEC + rate - 1) / rate;
}

/*
 * The template frame (data_in of every call) and the program's
 * configuration and maps' sizes, before load.
 */
static int prepare(const struct pg_cfg *cfg, struct pktgen_bpf *skel,
		   __u8 *frame, __u32 *frame_len, struct pktgen_tmpl *tmpl)
{
	struct pktgen_tmpl t;
	__u32 max = 0;

	skel->rodata->cfg_mode = cfg->mode;
	skel->rodata->cfg_ifindex = cfg->link.ifindex;
	skel->rodata->cfg_tgid = getpid();
	switch (cfg->mode) {
	case PKTGEN_PCAP:
		skel->rodata->cfg_seq_len = cfg->pcap.n;
		*frame_len = cfg->pcap.frames[0].len;
		memcpy(frame, cfg->pcap.frames[0].data, *frame_len);
		bpf_map__set_max_entries(skel->maps.frames, cfg->pcap.n);
		bpf_map__set_max_entries(skel->maps.tmpls, 1);
		return 0;
	case PKTGEN_MIX:
		skel->rodata->cfg_seq_len = cfg->mix.seq_len;
		for (__u32 i = 0; i < cfg->mix.n; i++)
			if (cfg->mix.size[i] > max)
				max = cfg->mix.size[i];
		/* Every size's fields, by frame length (tmpl[len]). */
		for (__u32 i = 0; i < cfg->mix.n; i++)
			pg_frame_build(&cfg->pkt, cfg->mix.size[i], frame,
				       &tmpl[cfg->mix.size[i]]);
		pg_frame_build(&cfg->pkt, max, frame, &t);
		*frame_len = max;
		bpf_map__set_max_entries(skel->maps.tmpls, cfg->mix.seq_len);
		break;
	case PKTGEN_FIXED:
		pg_frame_build(&cfg->pkt, cfg->size, frame, &t);
		*frame_len = cfg->size;
		skel->rodata->cfg_l4_sum = t.l4_sum;
		bpf_map__set_max_entries(skel->maps.tmpls, 1);
		break;
	}
	/* Synthetic frames: the bytes every run restores (userspace/nfslice-pktgen/pktgen.bpf.c). */
	skel->rodata->cfg_head_len = *frame_len < PKTGEN_HEAD_LEN ? *frame_len
								  : PKTGEN_HEAD_LEN;
	memcpy((void *)skel->rodata->cfg_head, frame, skel->rodata->cfg_head_len);
	skel->rodata->cfg_flows = cfg->pkt.flows;
	skel->rodata->cfg_sport = cfg->pkt.sport;
	skel->rodata->cfg_ipv6 = cfg->pkt.ipv6;
	skel->rodata->cfg_udp = !cfg->pkt.tcp;
	skel->rodata->cfg_stamp = cfg->pkt.stamp;
	return 0;
}

static int fill_maps(const struct pg_cfg *cfg, struct pktgen_bpf *skel,
		     const struct pktgen_tmpl *tmpl)
{
	int fd, err = 0;

	if (cfg->mode == PKTGEN_MIX) {
		fd = bpf_map__fd(skel->maps.tmpls);
		for (__u32 i = 0; i < cfg->mix.seq_len && !err; i++)
			err = bpf_map_update_elem(fd, &i, &tmpl[cfg->mix.seq[i]], 0);
	} else if (cfg->mode == PKTGEN_PCAP) {
		fd = bpf_map__fd(skel->maps.frames);
		for (__u32 i = 0; i < cfg->pcap.n && !err; i++)
			err = bpf_map_update_elem(fd, &i, &cfg->pcap.frames[i], 0);
	}
	return err ? pg_err("cannot fill the frame maps: %s", strerror(-err)) : 0;
}

/* Driver counters: optional, the run goes on without them. */
static bool attach_tracepoints(struct pktgen_bpf *skel)
{
	int err = pktgen_bpf__attach(skel);

	if (err)
		pg_warn("cannot attach to the xdp:xdp_devmap_xmit and "
			"xdp:xdp_redirect_err tracepoints (%s): driver drops are not "
			"counted", strerror(-err));
	return !err;
}

static int load(const struct pg_cfg *cfg, struct pktgen_bpf **skelp,
		__u8 *frame, __u32 *frame_len)
{
	struct pktgen_tmpl *tmpl = NULL;
	struct pktgen_bpf *skel;
	int err;

	skel = pktgen_bpf__open();
	if (!skel)
		return pg_err("cannot open the BPF program: %s", strerror(errno));
	tmpl = calloc(PKTGEN_MAX_FRAME + 1, sizeof(*tmpl));
	if (!tmpl) {
		err = pg_err("out of memory");
		goto out;
	}
	err = prepare(cfg, skel, frame, frame_len, tmpl);
	if (err)
		goto out;
	err = pktgen_bpf__load(skel);
	if (err) {
		err = pg_err("cannot load the BPF program: %s (run as root; "
			     "NFSLICE_VERBOSE=1 shows the verifier's log)",
			     strerror(-err));
		goto out;
	}
	err = fill_maps(cfg, skel, tmpl);
out:
	free(tmpl);
	if (err) {
		pktgen_bpf__destroy(skel);
		return err;
	}
	*skelp = skel;
	return 0;
}

static int run_error(const struct pg_cfg *cfg, int err)
{
	if (cfg->path == PG_PATH_SOCKET)
		return pg_err("sending on %s through its AF_PACKET socket failed: %s",
			      cfg->link.name, strerror(-err));
	if (err == -EINVAL || err == -EOPNOTSUPP || err == -524 /* ENOTSUPP */)
		return pg_err("BPF_PROG_RUN in live-frames mode on %s failed: %s "
			      "(needs Linux >= 5.18 and a driver with ndo_xdp_xmit, "
			      "e.g. veth)", cfg->link.name, strerror(-err));
	return pg_err("BPF_PROG_RUN in live-frames mode on %s failed: %s",
		      cfg->link.name, strerror(-err));
}

static int pin_cpu(int cpu)
{
	int err;

	if (cpu < 0)
		return 0;
	err = nfsl_pin_cpu(cpu);
	if (err)
		return pg_err("cannot run on CPU %d: %s", cpu, strerror(-err));
	return 0;
}

/*
 * loop - send until the count or the duration is done. Returns 0 or a
 * negative errno of a call.
 */
static int loop(const struct pg_cfg *cfg, struct pg_out *out,
		struct pg_result *res)
{
	__u64 limit = cfg->count ? cfg->count : UINT64_MAX;
	__u64 t0 = nfsl_now_ns(), end = UINT64_MAX;
	volatile const struct pktgen_stats *st = out->st;
	/* Live frames not held: a call waits ~25 ms, so fewer, longer calls.
	 * A socket call costs no more than its frames. */
	bool cheap = res->held || out->sock;
	__u64 chunk = cheap ? PG_CHUNK : PG_CHUNK_UNHELD;
	__u64 burst = cheap ? (__u64)cfg->rate * cfg->burst_us / 1000000
			    : cfg->rate / PG_CALLS_UNHELD;
	int err = 0;

	if (burst < 1)
		burst = 1;
	if (burst > chunk)
		burst = chunk;

	if (cfg->duration)
		end = t0 + cfg->duration * NSEC;
	for (;;) {
		__u64 done = st->runs, t = nfsl_now_ns(), n;
		bool last = t >= end;

		if (stopping || done >= limit || (last && !cfg->rate))
			break;
		if (cfg->rate) {
			__u64 due = frames_due((last ? end : t) - t0, cfg->rate);

			if (due > limit)
				due = limit;
			n = due > done ? due - done : 0;
			if (!last && n < burst && due < limit) {
				__u64 want = done + burst < limit ? done + burst : limit;
				__u64 next = t0 + time_due(want, cfg->rate);

				sleep_until(next < end ? next : end);
				continue;
			}
		} else {
			n = limit - done;
		}
		if (n > chunk)
			n = chunk;
		if (n) {
			err = send_frames(out, n);
			if (err == -EINTR) {
				err = 0;
				res->interrupted = true;
				break;
			}
			if (err)
				break;
		}
		if (last)
			break;
	}
	res->elapsed_ns = nfsl_now_ns() - t0;
	if (stopping)
		res->interrupted = true;
	return err;
}

/*
 * The socket path (sock.c): no BPF program; the socket counts what the
 * device refused (ENOBUFS), and the device's tx_dropped counter over the
 * run what it dropped silently (a veth does: peer down, backlog full).
 * Both are driver drops, taken off the frames sent.
 */
static int run_socket(const struct pg_cfg *cfg, struct pg_result *res)
{
	struct pg_out out = {};
	__u64 d0 = 0, d1 = 0;
	int err;

	if (pg_sock_open(cfg, &out.sock))
		return -1;
	out.st = pg_sock_stats(out.sock);
	res->drv_stats = !pg_link_tx_dropped(cfg->link.ifindex, &d0);
	if (!res->drv_stats)
		pg_warn("cannot read the tx_dropped counter of %s: frames it drops "
			"silently are not counted", cfg->link.name);
	err = pin_cpu(cfg->cpu);
	if (!err) {
		err = loop(cfg, &out, res);
		res->st = *pg_sock_stats(out.sock);
		if (res->drv_stats && !pg_link_tx_dropped(cfg->link.ifindex, &d1) &&
		    d1 > d0) {
			__u64 d = d1 - d0 < res->st.drv_sent ? d1 - d0 : res->st.drv_sent;

			res->st.drv_sent -= d;
			res->st.drv_drops += d;
		}
		if (err)
			err = run_error(cfg, err);
	}
	pg_sock_close(out.sock);
	return err;
}

int pg_run(const struct pg_cfg *cfg, struct pg_result *res)
{
	static __u8 frame[PKTGEN_MAX_FRAME];
	struct pg_hold hold = { .netns_fd = -1, .link_fd = -1 };
	struct pktgen_bpf *skel = NULL;
	struct xdp_md md = {};
	struct pg_out out = {};
	__u32 len = 0;
	int err;
	LIBBPF_OPTS(bpf_test_run_opts, o,
		.data_in = frame,
		.ctx_in = &md,
		.ctx_size_in = sizeof(md),
		.flags = BPF_F_TEST_XDP_LIVE_FRAMES,
		.batch_size = cfg->batch,
	);

	/* Wake-ups of the pacer within ~1 us of their time. */
	prctl(PR_SET_TIMERSLACK, 1000UL);
	if (cfg->path == PG_PATH_SOCKET)
		return run_socket(cfg, res);
	err = load(cfg, &skel, frame, &len);
	if (err)
		return err;
	o.data_size_in = len;
	md.data_end = len;
	md.ingress_ifindex = cfg->link.ifindex;
	out.prog_fd = bpf_program__fd(skel->progs.pktgen);
	out.o = &o;
	out.st = &skel->bss->stats;
	res->drv_stats = attach_tracepoints(skel);
	/* NFSLICE_PKTGEN_NOHOLD=1 shows what the hold is worth. */
	err = getenv("NFSLICE_PKTGEN_NOHOLD") ? -ECANCELED :
	      pg_hold_prog(out.prog_fd, &hold);
	res->held = !err;
	if (err)
		pg_warn("cannot keep the program in the XDP dispatcher (%s): every "
			"call waits for two RCU grace periods (~25 ms), so calls are "
			"long and paced runs send 50 ms bursts", strerror(-err));
	err = pin_cpu(cfg->cpu);
	if (err)
		goto out;
	err = loop(cfg, &out, res);
	res->st = skel->bss->stats;
	if (err)
		err = run_error(cfg, err);
out:
	pg_unhold_prog(&hold);
	pktgen_bpf__destroy(skel);
	return err;
}
