// SPDX-License-Identifier: GPL-2.0
/*
 * qos: srTCM (RFC 2697), color-blind (nfsl_nf_qos.h; docs/nf.md "QoS
 * meter").
 *
 * The meter follows the RFC's description literally: tokens are whole
 * bytes, arriving one at a time CIR times a second (the k-th at k/CIR s
 * after the meter started), each into Tc while Tc < CBS, else into Te
 * while Te < EBS, else lost; both buckets start full. Between two packets
 * the arrivals are counted from the clock without a division by CIR: the
 * fraction of the next token, in units of 1/10^9 token (ns x bytes/s), is
 * carried from packet to packet, so no token is created or lost by
 * rounding however the packets are spaced.
 *
 * Marking never writes DSCP 63 (NFSL_DSCP_SLICED): the splicer restores a
 * sliced packet's original DSCP only when the NF left 63 there, so any
 * other value, ours, survives the splice; the options refuse 63.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nf/nfsl_nf_qos.h"
#include "util/params.h"
#include "util/value.h"
#include "nfsl_consts.h"
#include "nfsl_parse.h"
#include "nfsl_hdr.h"

#define QOS_NS 1000000000ull

enum { QOS_GREEN, QOS_YELLOW, QOS_RED };

struct qos_shared {
	__u64 cir, cbs, ebs; /* the aggregate: bytes/s, bytes, bytes */
	__u8 yellow_dscp, red_dscp;
	bool red_mark;       /* red=mark, else drop */
	unsigned int nworkers;
};

struct qos_meter {
	__u64 cir, cbs, ebs; /* this worker's share */
	__u64 tc, te;        /* tokens, bytes */
	__u64 frac;          /* the next token's part, 1/10^9 token */
	__u64 last_ns;
	__u64 full_ns;       /* a gap this long fills both buckets */
	bool started;
};

struct qos_worker {
	struct qos_meter m;
	struct nfsl_nf_qos_counters c;
};

/* ---------------------------------------------------------------------
 * The meter
 * --------------------------------------------------------------------- */

static void qos_meter_init(struct qos_meter *m, __u64 cir, __u64 cbs, __u64 ebs)
{
	*m = (struct qos_meter){ .cir = cir, .cbs = cbs, .ebs = ebs, .tc = cbs, .te = ebs };
	/* ceil((CBS + EBS) 10^9 / CIR): < 2^33 x 10^9 / 1 fits */
	m->full_ns = ((cbs + ebs) * QOS_NS + cir - 1) / cir;
}

/* Tokens that arrived by @now (RFC 2697 §3: Tc first, then Te). The clock
 * starts at the first packet, with both buckets full. */
static void qos_meter_fill(struct qos_meter *m, __u64 now)
{
	__u64 dt, x, add;

	if (!m->started) {
		m->started = true;
		m->last_ns = now;
		return;
	}
	if (now <= m->last_ns)
		return;
	dt = now - m->last_ns;
	m->last_ns = now;
	if (dt >= m->full_ns) {
		/* dt x CIR could overflow; the buckets are full either way,
		 * and only the fraction is carried on: dt x CIR mod 10^9 */
		m->tc = m->cbs;
		m->te = m->ebs;
		m->frac = (m->frac + (dt % QOS_NS) * (m->cir % QOS_NS) % QOS_NS) % QOS_NS;
		return;
	}
	/* dt < full_ns: dt x CIR < (CBS + EBS) 10^9 + CIR < 2^63 */
	x = dt * m->cir + m->frac;
	add = x / QOS_NS;
	m->frac = x % QOS_NS;
	if (m->tc < m->cbs) {
		__u64 room = m->cbs - m->tc;

		if (add <= room) {
			m->tc += add;
			return;
		}
		m->tc = m->cbs;
		add -= room;
	}
	m->te = m->ebs - m->te <= add ? m->ebs : m->te + add;
}

/* Color-blind marking of a packet of @bytes at @now (RFC 2697 §4). */
static int qos_meter_color(struct qos_meter *m, __u64 now, __u64 bytes)
{
	qos_meter_fill(m, now);
	if (m->tc >= bytes) {
		m->tc -= bytes;
		return QOS_GREEN;
	}
	if (m->te >= bytes) {
		m->te -= bytes;
		return QOS_YELLOW;
	}
	return QOS_RED;
}

/* ---------------------------------------------------------------------
 * Options
 * --------------------------------------------------------------------- */

/*
 * qos_parse_amount - "N[k|M|G][unit]": a decimal integer, an optional SI
 * prefix (x 10^3, 10^6, 10^9) and one of @units ("" first: the default,
 * bytes); "bit" divides by 8 and must leave a whole number. Result in
 * bytes (or bytes/s), at most @max; false if not one.
 */
static bool qos_parse_amount(const char *s, bool bits_ok, __u64 max, __u64 *v)
{
	size_t k = strspn(s, "0123456789");
	__u64 x, mul = 1;
	const char *p = s + k;
	char num[24];

	if (!k || k >= sizeof(num))
		return false;
	memcpy(num, s, k);
	num[k] = '\0';
	if (nfsl_parse_u64(num, 0, UINT64_MAX, &x))
		return false;
	if (*p == 'k')
		mul = 1000, p++;
	else if (*p == 'M')
		mul = 1000000, p++;
	else if (*p == 'G')
		mul = 1000000000, p++;
	if (x > UINT64_MAX / mul)
		return false;
	x *= mul;
	if (bits_ok && !strcmp(p, "bit")) {
		if (x % 8)
			return false;
		x /= 8;
	} else if (*p && strcmp(p, "B")) {
		return false;
	}
	if (x > max)
		return false;
	*v = x;
	return true;
}

/* cir=: bytes/s, or bit/s with "bit"; > 0. */
static int qos_cir(const char *arg, void *field)
{
	return qos_parse_amount(arg, true, NFSL_NF_QOS_MAX_CIR, field) && *(__u64 *)field ? 0
												: -EINVAL;
}

/* cbs=, ebs=: bytes. */
static int qos_burst_size(const char *arg, void *field)
{
	return qos_parse_amount(arg, false, NFSL_NF_QOS_MAX_BURST, field) ? 0 : -EINVAL;
}

/* The options as given. */
struct qos_kv {
	__u64 cir, cbs, ebs, yellow_dscp, red_dscp;
	int red; /* index into red_modes[] */
	bool have_cir, have_cbs, have_ebs;
};

static const char *const red_modes[] = { "drop", "mark", NULL };

#define KOFF(f) offsetof(struct qos_kv, f)
#define KGIVEN(f) NFSL_GIVEN(struct qos_kv, f)
#define DSCP_BAD(key, def)                                                             \
	": give a DSCP 0..62 (RFC 2474; 63 marks sliced packets and the splicer would " \
	"restore the original), e.g. " key "=" #def
_Static_assert(NFSL_NF_QOS_DEF_YELLOW_DSCP == 12 && NFSL_NF_QOS_DEF_RED_DSCP == 14,
	       "DSCP_BAD's examples");
static const struct nfsl_opt qos_keys[] = {
	{ "cir", NFSL_OPT_CUSTOM, KOFF(cir), .parse = qos_cir, .metavar = "RATE",
	  .given = KGIVEN(have_cir),
	  .bad = ": give the committed information rate of IP bytes, 1..2^40 bytes/s: in "
		 "bytes/s with k, M or G for 10^3, 10^6, 10^9 (e.g. cir=1250000 or cir=1250k), "
		 "or in bit/s with 'bit', a multiple of 8 (e.g. cir=10Mbit)" },
	{ "cbs", NFSL_OPT_CUSTOM, KOFF(cbs), .parse = qos_burst_size, .metavar = "BYTES",
	  .given = KGIVEN(have_cbs),
	  .bad = ": give the committed burst size in bytes, 0..2^32-1, with k, M or G for "
		 "10^3, 10^6, 10^9 (e.g. cbs=15000 or cbs=15k); RFC 2697 wants at least the "
		 "largest packet" },
	{ "ebs", NFSL_OPT_CUSTOM, KOFF(ebs), .parse = qos_burst_size, .metavar = "BYTES",
	  .given = KGIVEN(have_ebs),
	  .bad = ": give the excess burst size in bytes, 0..2^32-1, with k, M or G for "
		 "10^3, 10^6, 10^9 (e.g. ebs=15000 or ebs=15k); RFC 2697 wants at least the "
		 "largest packet" },
	{ "yellow_dscp", NFSL_OPT_U64, KOFF(yellow_dscp), 0, NFSL_DSCP_SLICED - 1,
	  .metavar = "DSCP", .bad = DSCP_BAD("yellow_dscp", 12) },
	{ "red", NFSL_OPT_ENUM, KOFF(red), .choices = red_modes, .metavar = "drop|mark",
	  .bad = ": give red=drop (police) or red=mark (re-mark with red_dscp=)" },
	{ "red_dscp", NFSL_OPT_U64, KOFF(red_dscp), 0, NFSL_DSCP_SLICED - 1,
	  .metavar = "DSCP", .bad = DSCP_BAD("red_dscp", 14) },
	{ NULL },
};

static int qos_opts(struct qos_shared *sh, const struct nfsl_nf_conf *conf, char *err,
		    size_t errlen)
{
	struct qos_kv k = { .yellow_dscp = sh->yellow_dscp, .red_dscp = sh->red_dscp,
			    .red = sh->red_mark };

	if (nfsl_kv_parse(qos_keys, conf->kv, &k, err, errlen))
		return -EINVAL;
	if (!k.have_cir || !k.have_cbs || !k.have_ebs) {
		snprintf(err, errlen, "%s= is missing; qos needs cir= (bytes/s, or bit/s with "
			 "'bit'), cbs= and ebs= (bytes), e.g. cir=10Mbit cbs=15000 ebs=30000",
			 !k.have_cir ? "cir" : !k.have_cbs ? "cbs" : "ebs");
		return -EINVAL;
	}
	sh->cir = k.cir;
	sh->cbs = k.cbs;
	sh->ebs = k.ebs;
	sh->yellow_dscp = k.yellow_dscp;
	sh->red_dscp = k.red_dscp;
	sh->red_mark = k.red == 1;
	if (!sh->cbs && !sh->ebs) {
		snprintf(err, errlen, "cbs=0 and ebs=0: every packet would be red; RFC 2697 "
			 "wants at least one > 0, e.g. cbs=15000");
		return -EINVAL;
	}
	if (sh->cir < sh->nworkers) {
		snprintf(err, errlen, "cir=%llu bytes/s split over %u workers leaves a worker "
			 "none; give cir >= %u or fewer workers",
			 (unsigned long long)sh->cir, sh->nworkers, sh->nworkers);
		return -EINVAL;
	}
	return 0;
}

/* ---------------------------------------------------------------------
 * The NF
 * --------------------------------------------------------------------- */

static int qos_init(void **shared, const struct nfsl_nf_conf *conf, char *err, size_t errlen)
{
	struct qos_shared *sh = calloc(1, sizeof(*sh));
	int rc;

	if (!sh) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	sh->yellow_dscp = NFSL_NF_QOS_DEF_YELLOW_DSCP;
	sh->red_dscp = NFSL_NF_QOS_DEF_RED_DSCP;
	sh->nworkers = conf->nworkers ? conf->nworkers : 1;
	rc = qos_opts(sh, conf, err, errlen);
	if (rc) {
		free(sh);
		return rc;
	}
	*shared = sh;
	return 0;
}

static void qos_fini(void *shared)
{
	free(shared);
}

/* Worker @w's share of @x out of @n: x/n, plus one for the first x%n. */
static __u64 qos_share(__u64 x, unsigned int w, unsigned int n)
{
	return x / n + (w < x % n);
}

static void *qos_worker_new(void *shared, unsigned int w, unsigned int nworkers)
{
	struct qos_shared *sh = shared;
	struct qos_worker *me = calloc(1, sizeof(*me));

	if (!me)
		return NULL;
	if (!nworkers)
		nworkers = 1;
	qos_meter_init(&me->m, qos_share(sh->cir, w, nworkers), qos_share(sh->cbs, w, nworkers),
		       qos_share(sh->ebs, w, nworkers));
	return me;
}

static void qos_worker_fini(void *mine)
{
	free(mine);
}

void nfsl_nf_qos_counters(const void *mine, struct nfsl_nf_qos_counters *c)
{
	const struct qos_worker *w = mine;

	memset(c, 0, sizeof(*c));
	if (!w)
		return;
#define NFSL_X_COPY(name) c->name = __atomic_load_n(&w->c.name, __ATOMIC_RELAXED);
	NFSL_NF_QOS_COUNTERS(NFSL_X_COPY)
#undef NFSL_X_COPY
}

/* The counters op of nfsl_nf_ops: names and values for reports. */
static unsigned int qos_counter_list(void *mine, const char **names, __u64 *vals,
				     unsigned int max)
{
#define NFSL_X_NAME(name) #name,
	static const char *const all[] = { NFSL_NF_QOS_COUNTERS(NFSL_X_NAME) };
#undef NFSL_X_NAME
	struct nfsl_nf_qos_counters c;

	nfsl_nf_qos_counters(mine, &c);
	return nfsl_nf_list(all, (const __u64 *)&c, sizeof(c) / sizeof(__u64), names, vals, max);
}

static void qos_burst(void *shared, void *mine, struct nfsl_nf_pkt *p, unsigned int n,
		      const struct nfsl_nf_ctx *ctx)
{
	struct qos_shared *sh = shared;
	struct qos_worker *me = mine;
	struct nfsl_nf_qos_counters d = {};

	if (!me) {
		/* no meter could be allocated: police everything */
		for (unsigned int i = 0; i < n; i++)
			p[i].out = NFSL_NF_DROP;
		return;
	}
	for (unsigned int i = 0; i < n; i++) {
		__u8 *data = p[i].data;
		struct nfsl_pkt pk;
		__u32 l3len, bytes;

		if (p[i].out == NFSL_NF_DROP)
			continue;
		if (nfsl_parse(data, data + p[i].len, &pk)) {
			d.unmetered++;
			continue;
		}
		/* The datapath fills orig_len (ops.orig_len); 0 only where it
		 * could not, and then the frame is not sliced: its own length. */
		l3len = pk.l3end - pk.l3off;
		bytes = p[i].orig_len ? p[i].orig_len : l3len;
		switch (qos_meter_color(&me->m, ctx->now_ns, bytes)) {
		case QOS_GREEN:
			d.green++;
			d.green_bytes += bytes;
			break;
		case QOS_YELLOW:
			d.yellow++;
			d.yellow_bytes += bytes;
			nfsl_ip_rewrite(data + pk.l3off, pk.v6, sh->yellow_dscp, l3len);
			break;
		default:
			d.red++;
			d.red_bytes += bytes;
			if (sh->red_mark)
				nfsl_ip_rewrite(data + pk.l3off, pk.v6, sh->red_dscp, l3len);
			else
				p[i].out = NFSL_NF_DROP;
		}
	}
	/* One writer per worker: a plain read, an atomic store for readers. */
#define NFSL_X_ADD(name) __atomic_store_n(&me->c.name, me->c.name + d.name, __ATOMIC_RELAXED);
	NFSL_NF_QOS_COUNTERS(NFSL_X_ADD)
#undef NFSL_X_ADD
}

const struct nfsl_nf_ops nfsl_nf_qos = {
	.name = "qos",
	.help = "srTCM meter (RFC 2697, color-blind) on original IP lengths: cir=RATE "
		"cbs=BYTES ebs=BYTES [yellow_dscp=12] [red=drop|mark] [red_dscp=14]",
	.orig_len = true,
	.init = qos_init,
	.worker = qos_worker_new,
	.burst = qos_burst,
	.worker_fini = qos_worker_fini,
	.counters = qos_counter_list,
	.fini = qos_fini,
};
