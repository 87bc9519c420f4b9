// SPDX-License-Identifier: GPL-2.0
/*
 * nfslice-bench-nf - what the NFs of userspace/lib/nf cost per packet, in ns, run as
 * nfslice-nf runs them (bursts of 64, one worker), on four kinds of frame:
 *   full-64     64 B UDP frames
 *   full-1514   1514 B UDP frames
 *   sliced      1514 B packets sliced: headers + a 16 B token (a 74 B
 *               frame) with orig_len 1500 (what the datapath gives)
 *   same-size   unsliced 74 B frames: a sliced header's size
 * NFSlicer §VI-C's yardstick is sliced against same-size: an NF that only
 * reads headers should process a sliced 1514 B packet as fast as a small
 * one (target: >= 90% of the rate, i.e. a cost ratio <= 1.11).
 *
 * Each round resets the frames' first 128 bytes from pristine copies (NFs
 * rewrite headers in place: NAT, LB, QoS marks), times the NF, and times
 * the reset alone; the result is the difference, median over the rounds,
 * and the ratio the median of the per-round ratios.
 * Frames cycle over FLOWS 5-tuples. Output: one line per NF and kind, and
 * the sliced/same-size ratio; --json for a JSON object.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nfsl_csum.h"
#include "nf/nfsl_nf.h"
#include "util/util.h"

#define BURST 64
#define FLOWS 1024
#define NFRAMES (BURST * 64) /* 64 bursts per round */
#define ROUNDS 201
#define RESET 128

enum kind { FULL64, FULL1514, SLICED, SAME, NKINDS };
static const char *const kind_name[] = { "full-64", "full-1514", "sliced", "same-size" };
static const unsigned int kind_len[] = { 64, 1514, 74, 74 };


/* Ethernet/IPv4/UDP frame @len of flow @i (10.1.x.y:port -> 10.2.0.z:5201). */
static void frame(__u8 *f, unsigned int len, unsigned int i, bool sliced)
{
	__u8 *ip = f + 14, *udp = ip + 20;
	__u32 src = htonl(0x0a010000 + i), dst = htonl(0x0a020000 + (i % 7));

	memset(f, 0, len);
	memcpy(f, "\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01\x08\x00", 14);
	ip[0] = 0x45;
	ip[1] = sliced ? 63 << 2 : 0;
	*(__u16 *)(ip + 2) = htons(len - 14);
	ip[8] = 64;
	ip[9] = IPPROTO_UDP;
	memcpy(ip + 12, &src, 4);
	memcpy(ip + 16, &dst, 4);
	*(__u16 *)(ip + 10) = ~nfsl_csum_fold(nfsl_csum_bytes(ip, 20, 0));
	*(__u16 *)udp = htons(1024 + i % 50000);
	*(__u16 *)(udp + 2) = htons(5201);
	*(__u16 *)(udp + 4) = htons(len - 34);
}

struct bench {
	const struct nfsl_nf_ops *ops[NFSL_NF_MAX_CHAIN];
	void *shared[NFSL_NF_MAX_CHAIN], *mine[NFSL_NF_MAX_CHAIN];
	int n;
};

static __u8 *frames[NKINDS], *pristine[NKINDS];

static void reset(enum kind k)
{
	unsigned int stride = 2048;

	for (unsigned int i = 0; i < NFRAMES; i++)
		memcpy(frames[k] + i * stride, pristine[k] + i * stride, RESET);
}

/* ns per packet of one round: the chain over every burst. */
static double round_ns(struct bench *b, enum kind k, bool run)
{
	struct nfsl_nf_pkt p[BURST];
	struct nfsl_nf_ctx ctx = { .worker = 0, .nworkers = 1, .ndevs = 2 };
	__u64 t0, t1;

	t0 = nfsl_now_ns();
	reset(k);
	for (unsigned int i = 0; i < NFRAMES && run; i += BURST) {
		for (unsigned int j = 0; j < BURST; j++)
			p[j] = (struct nfsl_nf_pkt){ .data = frames[k] + (i + j) * 2048,
						     .len = kind_len[k], .in = 0, .out = 1,
						     .orig_len = k == SLICED ? 1500 : kind_len[k] - 14 };
		ctx.now_ns = t0;
		for (int c = 0; c < b->n; c++)
			b->ops[c]->burst(b->shared[c], b->mine[c], p, BURST, &ctx);
	}
	t1 = nfsl_now_ns();
	return (double)(t1 - t0) / NFRAMES;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *d, int n)
{
	qsort(d, n, sizeof(d[0]), cmp);
	return d[n / 2];
}

/*
 * The four kinds' costs into @ns and the median of the per-round ratios
 * sliced / same-size into *@ratio. The kinds take turns within each round
 * (one block each, in a rotating order), so whatever state the machine is
 * in during a round (frequency, another process, where the NF's tables
 * sit in the caches) lands on all of them alike: measured one after the
 * other, the same kind read 26 or 42 ns per packet from block to block.
 */
static void measure(struct bench *b, double ns[NKINDS], double *ratio)
{
	static double d[NKINDS][ROUNDS], q[ROUNDS];

	for (int k = 0; k < NKINDS; k++)
		round_ns(b, k, true); /* warm-up */
	for (int r = 0; r < ROUNDS; r++) {
		for (int i = 0; i < NKINDS; i++) {
			int k = (r + i) % NKINDS;

			d[k][r] = round_ns(b, k, true) - round_ns(b, k, false);
		}
		q[r] = d[SLICED][r] / d[SAME][r];
	}
	for (int k = 0; k < NKINDS; k++)
		ns[k] = median(d[k], ROUNDS);
	*ratio = median(q, ROUNDS);
}

/* A rules file of @n rules for fw: denies of /24s the frames never hit,
 * then allow any; a backends file for lb. Paths in @rules, @backends. */
static int write_files(char *rules, char *backends, unsigned int n)
{
	FILE *f;
	int fd;

	fd = mkstemp(rules);
	if (fd < 0 || !(f = fdopen(fd, "w")))
		return -errno;
	for (unsigned int i = 0; i < n; i++)
		fprintf(f, "172.%u.%u.0/24 any any %u udp deny\n", 16 + i / 65536 % 16,
			i / 256 % 256, 1 + i % 1000);
	fprintf(f, "any any any any any allow\n");
	fclose(f);
	fd = mkstemp(backends);
	if (fd < 0 || !(f = fdopen(fd, "w")))
		return -errno;
	fprintf(f, "10.3.0.1\n10.3.0.2\n10.3.0.3\n");
	fclose(f);
	return 0;
}

static int open_chain(struct bench *b, char *spec, const char *rules, const char *backends)
{
	char kvbuf[4][128], err[256], *save = NULL;
	const char *kv[8];
	struct nfsl_nf_conf conf = { .kv = kv, .nworkers = 1, .ndevs = 2 };

	for (char *nm = strtok_r(spec, ",", &save); nm; nm = strtok_r(NULL, ",", &save)) {
		const struct nfsl_nf_ops *ops = nfsl_nf_find(nm);
		int n = 0;

		if (!ops || b->n == NFSL_NF_MAX_CHAIN) {
			fprintf(stderr, "nfslice-bench-nf: no NF '%s'\n", nm);
			return -1;
		}
		if (!strcmp(nm, "fw"))
			snprintf(kvbuf[n], 128, "rules=%s", rules), kv[n] = kvbuf[n], n++;
		if (!strcmp(nm, "nat"))
			snprintf(kvbuf[n], 128, "ext_ip=10.9.9.9"), kv[n] = kvbuf[n], n++;
		if (!strcmp(nm, "lb")) {
			snprintf(kvbuf[n], 128, "backends=%s", backends), kv[n] = kvbuf[n], n++;
			snprintf(kvbuf[n], 128, "vip=10.2.0.1"), kv[n] = kvbuf[n], n++;
		}
		if (!strcmp(nm, "qos")) {
			snprintf(kvbuf[n], 128, "cir=100G"), kv[n] = kvbuf[n], n++;
			snprintf(kvbuf[n], 128, "cbs=1000000000"), kv[n] = kvbuf[n], n++;
			snprintf(kvbuf[n], 128, "ebs=1000000000"), kv[n] = kvbuf[n], n++;
		}
		kv[n] = NULL;
		b->ops[b->n] = ops;
		if (ops->init && ops->init(&b->shared[b->n], &conf, err, sizeof(err))) {
			fprintf(stderr, "nfslice-bench-nf: %s: %s\n", nm, err);
			return -1;
		}
		b->mine[b->n] = ops->worker ? ops->worker(b->shared[b->n], 0, 1) : NULL;
		b->n++;
	}
	return 0;
}

static void close_chain(struct bench *b)
{
	for (int c = 0; c < b->n; c++) {
		if (b->ops[c]->worker_fini)
			b->ops[c]->worker_fini(b->mine[c]);
		if (b->ops[c]->fini)
			b->ops[c]->fini(b->shared[c]);
	}
	b->n = 0;
}

static void usage(void)
{
	printf("Usage: nfslice-bench-nf [--cpu N] [--rules N] [--json] [NF[,NF...] ...]\n"
	       "NF-core cost of userspace/lib/nf's NFs in ns per packet (bursts of 64, one worker) on\n"
	       "full 64 B and 1514 B frames, sliced 1514 B packets (74 B headers with their\n"
	       "original length) and unsliced frames of a sliced header's size; the ratio\n"
	       "sliced / same-size is NFSlicer §VI-C's (target <= 1.11, i.e. >= 90%% of the\n"
	       "rate). Default NFs: fw nat lb qos fw,nat,lb. --rules N: the firewall's ACL\n"
	       "size (default 10000). --cpu N: run on CPU N. Exit 0, 1 on an error, 2 on bad\n"
	       "arguments.\n");
}

int main(int argc, char **argv)
{
	static const char *const defaults[] = { "fw", "nat", "lb", "qos", "fw,nat,lb" };
	char rules[] = "/tmp/nfslice-bench-nf-rules.XXXXXX";
	char backends[] = "/tmp/nfslice-bench-nf-backends.XXXXXX";
	const char *specs[16];
	unsigned int nrules = 10000;
	int nspecs = 0, cpu = -1, rc = 1;
	bool json = false;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage();
			return 0;
		} else if (!strcmp(argv[i], "--json")) {
			json = true;
		} else if ((!strcmp(argv[i], "--cpu") || !strcmp(argv[i], "--rules")) &&
			   i + 1 < argc) {
			char *end;
			long v = strtol(argv[++i], &end, 10);

			if (*end || v < 0 || v > 1000000) {
				fprintf(stderr, "nfslice-bench-nf: %s '%s': give a number\n",
					argv[i - 1], argv[i]);
				return 2;
			}
			if (argv[i - 1][2] == 'c')
				cpu = v;
			else
				nrules = v;
		} else if (argv[i][0] == '-' || nspecs == 16) {
			fprintf(stderr, "nfslice-bench-nf: unknown option '%s' (see --help)\n",
				argv[i]);
			return 2;
		} else {
			specs[nspecs++] = argv[i];
		}
	}
	if (!nspecs)
		for (unsigned int i = 0; i < sizeof(defaults) / sizeof(defaults[0]); i++)
			specs[nspecs++] = defaults[i];
	if (cpu >= 0 && nfsl_pin_cpu(cpu)) {
		fprintf(stderr, "nfslice-bench-nf: --cpu %d: cannot run there\n", cpu);
		return 2;
	}
	for (int k = 0; k < NKINDS; k++) {
		frames[k] = aligned_alloc(4096, NFRAMES * 2048);
		pristine[k] = aligned_alloc(4096, NFRAMES * 2048);
		if (!frames[k] || !pristine[k])
			goto out;
		for (unsigned int i = 0; i < NFRAMES; i++)
			frame(pristine[k] + i * 2048, kind_len[k], i % FLOWS, k == SLICED);
		memcpy(frames[k], pristine[k], NFRAMES * 2048);
	}
	if (write_files(rules, backends, nrules)) {
		fprintf(stderr, "nfslice-bench-nf: cannot write temporary files in /tmp\n");
		goto out;
	}
	if (json)
		printf("{\"rules\":%u,\"burst\":%d,\"results\":[", nrules, BURST);
	else
		printf("NF-core cost, ns/packet (median of %d rounds of %d packets; fw: %u rules)\n"
		       "%-12s %10s %10s %10s %10s %14s\n", ROUNDS, NFRAMES, nrules, "nf",
		       kind_name[0], kind_name[1], kind_name[2], kind_name[3], "sliced/same");
	for (int s = 0; s < nspecs; s++) {
		struct bench b = {};
		char spec[128];
		double ns[NKINDS], ratio;

		snprintf(spec, sizeof(spec), "%s", specs[s]);
		if (open_chain(&b, spec, rules, backends)) {
			close_chain(&b);
			goto out_files;
		}
		measure(&b, ns, &ratio);
		close_chain(&b);
		if (json)
			printf("%s{\"nf\":\"%s\",\"full64_ns\":%.1f,\"full1514_ns\":%.1f,"
			       "\"sliced_ns\":%.1f,\"same_size_ns\":%.1f,\"ratio\":%.3f}",
			       s ? "," : "", specs[s], ns[0], ns[1], ns[2], ns[3], ratio);
		else
			printf("%-12s %10.1f %10.1f %10.1f %10.1f %13.2fx\n", specs[s], ns[0],
			       ns[1], ns[2], ns[3], ratio);
	}
	if (json)
		printf("]}\n");
	rc = 0;
out_files:
	unlink(rules);
	unlink(backends);
out:
	for (int k = 0; k < NKINDS; k++) {
		free(frames[k]);
		free(pristine[k]);
	}
	return rc;
}
