// SPDX-License-Identifier: GPL-2.0
/*
 * nfslice-nf - run an NF on AF_XDP sockets with one of the receive
 * architectures of Pismenny's thesis (userspace/lib/xsk/nfsl_xsk.h, docs/xsk.md).
 *
 * Steps: parse the options (exit 2 on a bad one), open the datapath
 * (UMEM, sockets, steering), start the workers, report every --stats-
 * interval, and on SIGINT/SIGTERM or after --duration shut down without
 * loss: sockets out of the XSKMAP first (new frames take the kernel path),
 * the frames already received processed and sent, transmissions
 * completed, slots of headers still held freed, then everything closed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util/cli.h"
#include "nfsl/domain.h"
#include "util/log.h"
#include "nf/nfsl_nf_nat.h"
#include "nf.h"
#include "util/params.h"
#include "util/util.h"
#include "util/value.h"

static volatile sig_atomic_t stopping;
/* a worker could not run on --cpu: exit 1 */
static atomic_int pin_failed;
/* 0 run, 1 steering stopped: finish what is queued, then exit */
static atomic_int phase;

#define OFF(f) offsetof(struct nf_opts, f)

static const char *const rx_choices[] = { "privring", "smallpriv", "shring", "rxbisect", NULL };

static const struct nfsl_opt table[] = {
	{"dev", NFSL_OPT_STR, OFF(dev), .metavar = "IFACE[,IFACE]",
	 .help = "interfaces the NF serves, one or two (required)"},
	{"workers", NFSL_OPT_U32, OFF(workers), 1, NFSL_XSK_MAX_WORKERS, .metavar = "N",
	 .help = "worker threads (default 1)"},
	{"rx", NFSL_OPT_ENUM, OFF(rx), .choices = rx_choices, .metavar = "ARCH",
	 .help = "privring, smallpriv, shring or rxbisect (default privring)"},
	{"nf", NFSL_OPT_STR, OFF(nf), .metavar = "NF[,NF...]",
	 .help = "NF or chain: rxdrop, l2fwd, fw, nat, lb, qos, fwd (default l2fwd; docs/nf.md)"},
	{"name", NFSL_OPT_STR, OFF(name), .metavar = "DOMAIN", .check = nfsl_name_opt_check,
	 .help = "inline: the interfaces' slicing domain (default: none)"},
	{"ax", NFSL_OPT_U32, OFF(ax), 64, 65536, .metavar = "N",
	 .help = "fill ring (Ax) entries, a power of two (default 256)"},
	{"bx", NFSL_OPT_U32, OFF(bx), 64, 65536, .metavar = "N",
	 .help = "RX ring (Bx) entries per socket, a power of two (default 2048)"},
	{"frames", NFSL_OPT_U32, OFF(frames), 64, 1U << 22, .metavar = "N",
	 .help = "UMEM frames of 2048 bytes (default: as many as the rings hold)"},
	{"stats-interval", NFSL_OPT_DURATION, OFF(interval), 1, 3600, .unit = NFSL_S,
	 .metavar = "SECONDS",
	 .help = "report every SECONDS (default: at exit only)"},
	{"duration", NFSL_OPT_DURATION, OFF(duration), 1, 86400, .unit = NFSL_S,
	 .metavar = "SECONDS",
	 .help = "stop after SECONDS (default: at SIGINT or SIGTERM)"},
	{"cpu", NFSL_OPT_U32, OFF(cpu), 0, CPU_SETSIZE - 1,
	 .given = NFSL_GIVEN(struct nf_opts, has_cpu), .metavar = "N",
	 .help = "run the workers on CPU N (default: any)"},
	{"stall", NFSL_OPT_STR, OFF(stall), .metavar = "W:AFTER:FOR",
	 .help = "worker W sleeps FOR ms from AFTER ms after the start"},
	{"slow", NFSL_OPT_STR, OFF(slow), .metavar = "W:USEC",
	 .help = "worker W sleeps USEC after each burst (processing variability)"},
	{"json", NFSL_OPT_FLAG, OFF(json), .help = "reports as JSON objects, one per line"},
	{"busy-poll", NFSL_OPT_DURATION, OFF(busy_poll), 0, 1000000, .unit = NFSL_US,
	 .metavar = "USEC",
	 .help = "keep looking for frames USEC before sleeping in poll() (default 0)"},
	{"drop-notice", NFSL_OPT_FLAG, OFF(drop_notice),
	 .help = "park: send sliced headers the NF drops back as drop notices"},
	{"rules", NFSL_OPT_STR, OFF(rules), .metavar = "FILE",
	 .help = "fw: the ACL, first match wins (docs/nf.md \"Firewall\")"},
	{"fw-default", NFSL_OPT_STR, OFF(fw_default), .metavar = "ACTION",
	 .help = "fw: allow or deny what no rule matches (default allow)"},
	{"ext-ip", NFSL_OPT_STR, OFF(ext_ip), .metavar = "ADDR",
	 .help = "nat: the external IPv4 address (required with nat)"},
	{"starting-port", NFSL_OPT_STR, OFF(start_port), .metavar = "PORT",
	 .help = "nat: first external port to allocate (default 1024)"},
	{"max-flows", NFSL_OPT_STR, OFF(max_flows), .metavar = "N",
	 .help = "nat: flows per worker at most (default 65536)"},
	{"expire", NFSL_OPT_STR, OFF(expire), .metavar = "SECONDS",
	 .help = "nat: idle time after which a flow ends (default 10)"},
	{"backends", NFSL_OPT_STR, OFF(backends), .metavar = "FILE",
	 .help = "lb: the backends, one per line (docs/nf.md \"Load balancer\")"},
	{"cir", NFSL_OPT_STR, OFF(cir), .metavar = "RATE",
	 .help = "qos: committed information rate (docs/nf.md \"QoS meter\")"},
	{"cbs", NFSL_OPT_STR, OFF(cbs), .metavar = "BYTES",
	 .help = "qos: committed burst size"},
	{"ebs", NFSL_OPT_STR, OFF(ebs), .metavar = "BYTES",
	 .help = "qos: excess burst size"},
	{"nf-opt", NFSL_OPT_STR, OFF(nf_opt), .metavar = "NF.KEY=VAL,...",
	 .help = "any other NF option, e.g. nat.lan_net=10.0.0.0/8,qos.red=mark"},
	{NULL},
};

static const struct nf_opts defaults = {
	.workers = 1,
	.rx = NFSL_XSK_PRIVRING,
	.nf = "l2fwd",
};

static const struct nfsl_cmd cmd = {
	.name = "nf",
	.prog = NF_NAME,
	.summary = "run a network function on AF_XDP sockets",
	.description =
		"Receives the UDP and TCP frames of IFACE (and of the second interface, if\n"
		"given) on AF_XDP sockets, runs the NF on them in bursts of 64, and sends\n"
		"what it forwards with AF_XDP. Other frames (ARP, ICMP) take the kernel path.\n"
		"All sockets share one UMEM of 2048-byte frames. --rx chooses how frames\n"
		"are received (Pismenny's thesis): privring, one socket per RX queue with a\n"
		"fill ring as deep as its RX ring (ch. 4); smallpriv, the same with an Ax-entry\n"
		"fill ring; shring, one RX ring per queue shared by every worker, frames\n"
		"returned to the fill ring in reception order (RxArr, §5.1.3); rxbisect, one\n"
		"socket per worker on every queue sharing the queue's Ax-entry fill ring,\n"
		"each with its own Bx-entry RX ring, steered by a symmetric flow hash\n"
		"(§6.1). privring and smallpriv need a queue per worker (veth: numrxqueues).\n"
		"--ax sets the fill ring of smallpriv, shring and rxbisect; --bx the RX rings\n"
		"and privring's fill ring. l2fwd swaps the Ethernet addresses and sends a\n"
		"frame back out of the interface it came from, or out of the other of two\n"
		"(a reflector; on a router use fwd, which sends to the next hop).\n"
		"--stall and --slow emulate an overloaded worker by making it sleep, so it\n"
		"does not take the CPU the others need.\n"
		"\n"
		"With --name, the interfaces belong to a slicing domain (nfslice attach):\n"
		"the NF gets the sliced headers after the slicer, and every frame it sends\n"
		"is spliced first (AF_XDP transmit bypasses the tc splicer); a header\n"
		"whose payload is gone is dropped and counted, and a slot of a header the\n"
		"NF drops is freed at once.\n"
		"\n"
		"Reports per worker rx, tx and drops, the I/O working set (frames posted\n"
		"to the kernel, frames in circulation, distinct frames written in the last\n"
		"100 ms, pool size; thesis §4.2) and the sockets' kernel counters, every\n"
		"--stats-interval and at exit. On SIGINT or SIGTERM the sockets leave the\n"
		"XSKMAP first (frames then take the kernel path), frames already received\n"
		"are processed and sent, then everything is closed.",
	NFSL_CMD_OPTS(table, struct nf_opts, defaults),
	.exit_status = "  0  stopped cleanly\n"
		       "  1  a system error (message on stderr)\n"
		       "  2  bad arguments",
	.see_also = "nfslice(8), nfslice-pktgen(8)",
};

static int nf_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int nf_err(const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return nfsl_msg(NF_NAME ": ", "%s", buf);
}

static void on_signal(int sig)
{
	stopping = 1;
}

static __u64 now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000ull + t.tv_nsec / 1000000;
}

struct worker_arg {
	struct nfsl_xsk_worker *w;
	__u8 *area;
	struct nfsl_xsk *x;
	const struct nf_chain *chain;
	void *mine[NFSL_NF_MAX_CHAIN]; /* each NF's state for this worker */
	bool orig_len;                 /* a NF of the chain reads it */
	int id, ndevs, nworkers;
	__u32 cpu;
	bool has_cpu; /* --cpu given: pin to cpu */
	__u64 start_ms;
	__u32 busy_poll_us;
	/* --stall, --slow: this worker's share, 0 when not it */
	__u64 stall_from, stall_to;
	__u32 slow_us;
};

/*
 * Run the chain on a burst. With two devices, frames from the first go
 * through it in order and frames from the second (the reply side) in
 * reverse, as on a service chain's return path: a reply must meet lb
 * (its backend's address back to the VIP) before nat (the VIP is what
 * nat recorded as the flow's remote end). With one device, in order.
 */
static void run_chain(struct worker_arg *a, struct nfsl_nf_pkt *pk, unsigned int n,
		      const struct nfsl_nf_ctx *ctx)
{
	const struct nf_chain *c = a->chain;
	struct nfsl_nf_pkt back[NFSL_XSK_BURST];
	unsigned int at[NFSL_XSK_BURST], nb = 0, nf = 0;

	if (a->ndevs == 2 && c->n > 1) {
		/* split: forward frames to the front of pk, replies to back */
		for (unsigned int i = 0; i < n; i++) {
			if (pk[i].in == 1) {
				at[nb] = i;
				back[nb++] = pk[i];
			} else {
				pk[nf++] = pk[i];
			}
		}
	} else {
		nf = n;
	}
	for (int k = 0; k < c->n && nf; k++)
		c->ops[k]->burst(c->shared[k], a->mine[k], pk, nf, ctx);
	for (int k = c->n - 1; k >= 0 && nb; k--)
		c->ops[k]->burst(c->shared[k], a->mine[k], back, nb, ctx);
	if (!nb)
		return;
	/* put them back where they were, so verdicts meet their frames */
	for (unsigned int i = n, f = nf; i-- > 0;) {
		if (nb && at[nb - 1] == i)
			pk[i] = back[--nb];
		else
			pk[i] = pk[--f];
	}
}

/* Pin the worker to --cpu. Returns false (after a message, the run
 * stopping) when it cannot run there. */
static bool worker_pin(const struct worker_arg *a)
{
	int err;

	if (!a->has_cpu)
		return true;
	err = nfsl_pin_cpu(a->cpu);
	if (!err)
		return true;
	/* main checked the CPU: only a change of the affinity since
	 * (taskset, a cpuset) gets here */
	nf_err("--cpu %u: cannot run worker %d there: %s (give a CPU of "
	       "/sys/devices/system/cpu/online this process may use)",
	       a->cpu, a->id, strerror(-err));
	atomic_store(&pin_failed, 1);
	stopping = 1;
	return false;
}

/* Receive a burst into @d in phase @ph: none while --stall holds this
 * worker (-1), else the frames, looking again for --busy-poll us. */
static int worker_rx(struct worker_arg *a, struct nfsl_xsk_desc *d, int ph)
{
	unsigned int n;

	if (ph == 0 && a->stall_to) {
		__u64 t = now_ms() - a->start_ms;

		if (t >= a->stall_from && t < a->stall_to) {
			usleep(1000);
			return -1;
		}
	}
	n = nfsl_xsk_worker_rx(a->w, d, NFSL_XSK_BURST);
	if (!n && a->busy_poll_us && ph == 0) {
		/* --busy-poll: look again for a little while before
		 * sleeping, so a burst's next frames find a worker
		 * awake and the fill ring refilled */
		__u64 until = nfsl_now_ns() + a->busy_poll_us * 1000ull;

		while (!n && nfsl_now_ns() < until) {
			sched_yield();
			n = nfsl_xsk_worker_rx(a->w, d, NFSL_XSK_BURST);
		}
	}
	return n;
}

/* Run the chain on the @n frames of @d, then send what it forwards and
 * free what it drops. */
static void worker_burst(struct worker_arg *a, struct nfsl_xsk_desc *d, unsigned int n,
			 struct nfsl_nf_ctx *ctx)
{
	struct nfsl_xsk_desc out[NFSL_XSK_BURST], drop[NFSL_XSK_BURST];
	struct nfsl_nf_pkt pk[NFSL_XSK_BURST];
	unsigned int nout = 0, ndrop = 0;

	/* Default verdict: on, out of the other device of two (a bump
	 * in the wire), else back out of the same one. */
	for (unsigned int i = 0; i < n; i++) {
		__u8 *f = a->area + d[i].addr;

		pk[i] = (struct nfsl_nf_pkt){
			.data = f, .len = d[i].len, .in = d[i].dev,
			.out = a->ndevs == 2 ? d[i].dev ^ 1 : d[i].dev,
			/* inline: the token check tx or drop take over */
			.orig_len = a->orig_len ? nfsl_xsk_frame_orig_len(a->x, &d[i]) : 0,
		};
	}
	ctx->now_ns = nfsl_now_ns();
	run_chain(a, pk, n, ctx);
	for (unsigned int i = 0; i < n; i++) {
		d[i].len = pk[i].len;
		if (pk[i].out == NFSL_NF_DROP || pk[i].out >= a->ndevs) {
			drop[ndrop++] = d[i];
		} else {
			d[i].out = pk[i].out;
			out[nout++] = d[i];
		}
	}
	if (ndrop)
		nfsl_xsk_worker_drop(a->w, drop, ndrop);
	if (nout)
		nfsl_xsk_worker_tx(a->w, out, nout);
}

static void *worker(void *p)
{
	struct worker_arg *a = p;
	struct nfsl_xsk_desc d[NFSL_XSK_BURST];
	struct nfsl_nf_ctx ctx = { .worker = a->id, .nworkers = a->nworkers, .ndevs = a->ndevs };
	int idle = 0;

	if (!worker_pin(a))
		return NULL;
	for (;;) {
		int ph = atomic_load(&phase);
		int n = worker_rx(a, d, ph);

		if (n < 0)
			continue; /* stalled */
		if (!n) {
			/* After steering stopped: done once the rings stay
			 * empty for a few waits. */
			if (ph == 1 && ++idle >= 5)
				break;
			nfsl_xsk_worker_wait(a->w, ph == 1 ? 10 : 100);
			continue;
		}
		idle = 0;
		worker_burst(a, d, n, &ctx);
		if (a->slow_us)
			usleep(a->slow_us);
	}
	nfsl_xsk_worker_drain(a->w, 1000);
	return NULL;
}

/* The named options of the NFs: which NF takes each, under which key. */
static const struct {
	const char *nf, *key;
	size_t off;
} nf_opt_map[] = {
	{ "fw", "rules", OFF(rules) },        { "fw", "default", OFF(fw_default) },
	{ "nat", "ext_ip", OFF(ext_ip) },     { "nat", "start_port", OFF(start_port) },
	{ "nat", "max_flows", OFF(max_flows) }, { "nat", "expire", OFF(expire) },
	{ "lb", "backends", OFF(backends) },  { "qos", "cir", OFF(cir) },
	{ "qos", "cbs", OFF(cbs) },           { "qos", "ebs", OFF(ebs) },
};

/* KEY=VALUE strings for NF @name from the named options and --nf-opt
 * (@buf holds them). Returns the count, or -1 after a message. */
static int nf_kv(const struct nf_opts *o, const char *name, const char **kv, char *buf,
		 size_t buflen)
{
	size_t used = 0;
	int n = 0;

	for (size_t i = 0; i < sizeof(nf_opt_map) / sizeof(nf_opt_map[0]); i++) {
		const char *v = *(char *const *)((const char *)o + nf_opt_map[i].off);
		int len;

		if (!v || strcmp(nf_opt_map[i].nf, name))
			continue;
		len = snprintf(buf + used, buflen - used, "%s=%s", nf_opt_map[i].key, v);
		if (len < 0 || (size_t)len >= buflen - used || n >= NF_MAX_KV - 1)
			return nf_err("options of %s too long", name);
		kv[n++] = buf + used;
		used += len + 1;
	}
	if (o->nf_opt) {
		char copy[1024], *save = NULL;

		snprintf(copy, sizeof(copy), "%s", o->nf_opt);
		for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
			char *dot = strchr(t, '.');
			int len;

			if (!dot || !strchr(dot, '='))
				return nf_err("--nf-opt '%s': give NF.KEY=VALUE, e.g. nat.lan_net=10.0.0.0/8",
					      t);
			if ((size_t)(dot - t) != strlen(name) || strncmp(t, name, dot - t))
				continue;
			len = snprintf(buf + used, buflen - used, "%s", dot + 1);
			if (len < 0 || (size_t)len >= buflen - used || n >= NF_MAX_KV - 1)
				return nf_err("options of %s too long", name);
			kv[n++] = buf + used;
			used += len + 1;
		}
	}
	kv[n] = NULL;
	return n;
}

/* Parse --nf into @c and build each NF's shared state. Returns 0 or -1
 * after a message. */
static int chain_open(struct nf_chain *c, char *spec, const struct nf_opts *o,
		      const char *const *devs, int ndevs)
{
	const char *kv[NF_MAX_KV];
	char kvbuf[2048];
	struct nfsl_nf_conf conf = { .kv = kv, .nworkers = o->workers, .ndevs = ndevs,
				     .devs = devs };
	char *save = NULL, err[256];

	for (char *name = strtok_r(spec, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
		const struct nfsl_nf_ops *ops = nfsl_nf_find(name);
		int rc;

		if (!ops) {
			char all[256] = "";

			for (int i = 0; nfsl_nf_all[i]; i++)
				snprintf(all + strlen(all), sizeof(all) - strlen(all), "%s%s",
					 i ? ", " : "", nfsl_nf_all[i]->name);
			return nf_err("--nf: no NF '%s' (known: %s)", name, all);
		}
		if (c->n == NFSL_NF_MAX_CHAIN)
			return nf_err("--nf: a chain has at most %d NFs", NFSL_NF_MAX_CHAIN);
		c->ops[c->n] = ops;
		if (nf_kv(o, name, kv, kvbuf, sizeof(kvbuf)) < 0)
			return -1;
		rc = ops->init ? ops->init(&c->shared[c->n], &conf, err, sizeof(err)) : 0;
		if (rc)
			return nf_err("--nf %s: %s", name, err);
		c->n++;
	}
	return c->n ? 0 : nf_err("--nf: give at least one NF");
}

/*
 * A NAT with several workers keeps each flow on the worker that allocated
 * its external port: replies on the WAN side are steered by destination
 * port range (nfsl_port_owner). Receive architectures that steer by
 * hardware queue cannot do that. Returns 0 or -1 after a message.
 */
static int nat_steering(const struct nf_chain *c, const struct nf_opts *o,
			struct nfsl_xsk_opts *xo)
{
	for (int k = 0; k < c->n; k++) {
		if (strcmp(c->ops[k]->name, "nat") || o->workers < 2)
			continue;
		if (o->rx == NFSL_XSK_PRIVRING || o->rx == NFSL_XSK_SMALLPRIV)
			return nf_err("--nf nat with %u workers needs --rx rxbisect or shring: with --rx %s a "
				      "reply arrives on whatever queue its sender chose, not at the worker "
				      "holding its flow",
				      o->workers, nfsl_xsk_rx_name(o->rx));
		xo->port_dev = nfsl_nf_nat_wan_dev(c->shared[k]) + 1;
		xo->port_start = nfsl_nf_nat_start_port(c->shared[k]);
	}
	return 0;
}

static void chain_close(struct nf_chain *c)
{
	for (int k = 0; k < c->n; k++)
		if (c->ops[k]->fini)
			c->ops[k]->fini(c->shared[k]);
	c->n = 0;
}

static int split_devs(char *dev, struct nfsl_xsk_opts *xo)
{
	char *comma = strchr(dev, ',');

	xo->devs[0] = dev;
	xo->ndevs = 1;
	if (comma) {
		*comma = '\0';
		xo->devs[1] = comma + 1;
		xo->ndevs = 2;
		if (!*xo->devs[1] || strchr(xo->devs[1], ','))
			return -1;
	}
	return *xo->devs[0] ? 0 : -1;
}

/*
 * cpu_check - --cpu N must name a CPU this process may run on: a worker
 * pinned elsewhere would fail, and running it unpinned would silently
 * change what is measured. Returns 0, or -1 after a message (exit 2).
 */
static int cpu_check(const struct nf_opts *o)
{
	char allowed[256] = "";
	cpu_set_t set;
	size_t used = 0;

	if (!o->has_cpu)
		return 0;
	if (sched_getaffinity(0, sizeof(set), &set))
		return 0; /* cannot tell: the worker reports a failed pin */
	if (CPU_ISSET(o->cpu, &set))
		return 0;
	/* the CPUs we may use, as ranges: "0-1", "0,2-3" */
	for (int c = 0; c < CPU_SETSIZE && used < sizeof(allowed) - 16; c++) {
		int e = c;

		if (!CPU_ISSET(c, &set))
			continue;
		while (e + 1 < CPU_SETSIZE && CPU_ISSET(e + 1, &set))
			e++;
		used += snprintf(allowed + used, sizeof(allowed) - used, "%s%d", used ? "," : "", c);
		if (e > c)
			used += snprintf(allowed + used, sizeof(allowed) - used, "-%d", e);
		c = e;
	}
	return nf_err("--cpu %u: this process cannot run on CPU %u: give one of the CPUs it "
		      "may use, %s (its affinity: taskset; the host's CPUs: "
		      "/sys/devices/system/cpu/online)",
		      o->cpu, o->cpu, allowed);
}

/*
 * --stall / --slow @val: @n ':'-separated numbers (util/value.h: decimal
 * digits, each at most UINT32_MAX) shaped as @shape, the first a worker
 * below @workers, into @v. Returns 0 or -1 after a message (exit 2).
 */
static int worker_fields(const char *opt, const char *val, const char *shape, unsigned int n,
			 __u32 workers, __u64 *v)
{
	int rc = nfsl_parse_u64_fields(val, ':', n, UINT32_MAX, v);

	if (!rc && v[0] < workers)
		return 0;
	return nf_err("--%s '%s': give %s with WORKER below --workers (%u)%s", opt, val, shape,
		      workers, rc == -EDOM ? ", in decimal digits (no leading 0 or 0x)" : "");
}

/* What one run of nfslice-nf holds, from the options to the shutdown. */
struct nf_run {
	struct nf_opts o;
	struct nfsl_xsk_opts xo;
	struct nfsl_xsk *x;
	struct nf_chain chain;
	char chain_spec[256];
	__u64 stall[3], slow[2];
	struct nf_report rep;
	struct worker_arg args[NFSL_XSK_MAX_WORKERS];
	pthread_t tid[NFSL_XSK_MAX_WORKERS];
	int nthreads;
	__u64 start;
};

/* Step 1: the options the table cannot check. Returns 0 or -1 after a
 * message (exit 2). */
static int opts_check(struct nf_run *r)
{
	const struct nf_opts *o = &r->o;

	if (!o->dev)
		return nf_err("--dev IFACE[,IFACE] is required: the interfaces the NF serves");
	if (split_devs(o->dev, &r->xo))
		return nf_err("--dev '%s': give one interface or two separated by a comma",
			      o->dev);
	snprintf(r->chain_spec, sizeof(r->chain_spec), "%s", o->nf); /* strtok writes */
	if (o->stall && worker_fields("stall", o->stall, "WORKER:AFTER_MS:FOR_MS", 3, o->workers,
				      r->stall))
		return -1;
	if (o->slow && worker_fields("slow", o->slow, "WORKER:USEC", 2, o->workers, r->slow))
		return -1;
	return cpu_check(o);
}

/* Step 2: the NFs' shared state and the datapath (UMEM, sockets,
 * steering). Returns 0 or the exit status after a message. */
static int datapath_open(struct nf_run *r)
{
	const struct nf_opts *o = &r->o;
	struct nfsl_xsk_opts *xo = &r->xo;
	char msg[512];
	int err;

	/* Domain pins and libxdp's state live in the host's bpffs, which
	 * `ip netns exec` hides (domain.h). Without --name none is needed. */
	err = nfsl_bpffs_enter();
	if (err && o->name) {
		nf_err("no bpffs at %s, where domain %s would be pinned: %s (mount -t bpf bpf %s)",
		       nfsl_bpffs(), o->name, strerror(-err), nfsl_bpffs());
		return 1;
	}
	nfsl_log_init(NFSL_LOG_NONE);
	if (chain_open(&r->chain, r->chain_spec, o, xo->devs, xo->ndevs) ||
	    nat_steering(&r->chain, o, xo))
		return 2;
	xo->workers = o->workers;
	xo->rx = o->rx;
	xo->ax = o->ax;
	xo->bx = o->bx;
	xo->frames = o->frames;
	xo->domain = o->name;
	xo->drop_notice = o->drop_notice;
	if (o->drop_notice && o->name) {
		nf_err("--drop-notice is for an NF server apart from the slicing host (park); "
		       "with --name the NF frees the slots of dropped headers itself");
		return 2;
	}
	err = nfsl_xsk_open(xo, &r->x, msg, sizeof(msg));
	if (err) {
		nf_err("%s", msg);
		return err == -EINVAL || err == -ENODEV || err == -ENOENT ? 2 : 1;
	}
	return 0;
}

/* Step 3: one thread per worker, each with its NFs' worker state. On a
 * failure to start one, the run stops (the started ones drain). */
static void workers_start(struct nf_run *r)
{
	const struct nf_opts *o = &r->o;
	int err;

	r->rep.o = o;
	r->rep.x = r->x;
	r->start = now_ms();
	for (__u32 i = 0; i < o->workers; i++) {
		struct worker_arg *a = &r->args[i];

		a->w = nfsl_xsk_worker(r->x, i);
		a->area = nfsl_xsk_area(r->x);
		a->x = r->x;
		a->chain = &r->chain;
		a->id = i;
		a->nworkers = o->workers;
		a->ndevs = r->xo.ndevs;
		for (int k = 0; k < r->chain.n; k++) {
			const struct nfsl_nf_ops *ops = r->chain.ops[k];

			a->orig_len |= ops->orig_len;
			a->mine[k] = ops->worker ? ops->worker(r->chain.shared[k], i, o->workers)
						 : NULL;
			r->rep.mine[i][k] = a->mine[k];
		}
		a->cpu = o->cpu;
		a->has_cpu = o->has_cpu;
		a->start_ms = r->start;
		a->busy_poll_us = o->busy_poll;
		if (o->stall && r->stall[0] == i) {
			a->stall_from = r->stall[1];
			a->stall_to = r->stall[1] + r->stall[2];
		}
		if (o->slow && r->slow[0] == i)
			a->slow_us = (__u32)r->slow[1];
		err = pthread_create(&r->tid[i], NULL, worker, a);
		if (err) {
			nf_err("cannot start worker %u: %s", i, strerror(err));
			stopping = 1;
			break;
		}
		r->nthreads++;
	}
}

/* Step 4: sample the working set every 100 ms and report every
 * --stats-interval until a signal or --duration. */
static void report_loop(struct nf_run *r)
{
	const struct nf_opts *o = &r->o;
	__u64 last, next_roll;

	r->rep.chain = o->nf;
	r->rep.nfs = &r->chain;
	last = next_roll = r->start;
	while (!stopping) {
		__u64 t;

		usleep(20 * 1000);
		t = now_ms();
		if (o->duration && t - r->start >= (__u64)o->duration * 1000)
			break;
		if (t >= next_roll) {
			/* rolls the working-set window, records peaks */
			r->rep.elapsed_s = (t - r->start) / 1e3;
			nf_report_sample(&r->rep);
			next_roll = t + 100;
		}
		if (o->interval && t - last >= (__u64)o->interval * 1000) {
			last = t;
			r->rep.elapsed_s = (t - r->start) / 1e3;
			nf_report(&r->rep);
		}
	}
}

/* Step 5: shut down without loss (the kernel path takes new frames
 * first), the final report, then free everything. */
static void workers_stop(struct nf_run *r)
{
	nfsl_xsk_stop_steering(r->x);
	atomic_store(&phase, 1);
	for (int i = 0; i < r->nthreads; i++)
		pthread_join(r->tid[i], NULL);
	r->rep.elapsed_s = (now_ms() - r->start) / 1e3;
	r->rep.final = true;
	nf_report(&r->rep);
}

static void run_close(struct nf_run *r)
{
	nfsl_xsk_close(r->x);
	for (int i = 0; i < r->nthreads; i++)
		for (int k = 0; k < r->chain.n; k++)
			if (r->chain.ops[k]->worker_fini)
				r->chain.ops[k]->worker_fini(r->args[i].mine[k]);
	chain_close(&r->chain);
}

int main(int argc, char **argv)
{
	static struct nf_run r;
	int first, err, rc;

	err = nfsl_cmd_parse(&cmd, argc, argv, &r.o, &first);
	if (err)
		return err > 0 ? 0 : 2;
	nfsl_msg_json(r.o.json);
	rc = opts_check(&r) ? 2 : datapath_open(&r);
	if (!rc) {
		nfsl_catch_stop_signals(on_signal);
		workers_start(&r);
		report_loop(&r);
		workers_stop(&r);
		rc = atomic_load(&pin_failed) ? 1 : 0;
	}
	run_close(&r);
	return nfsl_msg_json_flush(rc);
}
