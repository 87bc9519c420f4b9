// SPDX-License-Identifier: GPL-2.0
/* Options of nfslice-bench-datapath and its --help (bench/datapath.h). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "datapath.h"

static int parse_sizes(struct opts *o, const char *arg)
{
	char *dup = strdup(arg), *tok, *save = NULL, *end;
	int err = 0;

	if (!dup)
		return -ENOMEM;
	o->nsizes = 0;
	for (tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		unsigned long v = strtoul(tok, &end, 10);

		if (*end || v < 64 || v > 1514 || o->nsizes == MAX_SIZES) {
			pr_err("--sizes: '%s' is not a frame size in 64..1514 B "
			       "(at most %d sizes)",
			       tok, MAX_SIZES);
			err = -EINVAL;
			goto out;
		}
		o->sizes[o->nsizes++] = v;
	}
	if (!o->nsizes) {
		pr_err("--sizes: no size given");
		err = -EINVAL;
	}
out:
	free(dup);
	return err;
}

/* --programs: measure these, plus what they are compared with. */
static int parse_programs(struct opts *o, const char *arg)
{
	char *dup = strdup(arg), *tok, *save = NULL;
	int err = 0, k, i;

	if (!dup)
		return -ENOMEM;
	memset(o->sel, 0, sizeof(o->sel));
	for (tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		for (k = 0; k < B_NR; k++)
			if (!(benches[k].flags & BF_LIVE) && !strcmp(tok, benches[k].name))
				break;
		if (k == B_NR) {
			pr_err("--programs: unknown program '%s' (see --help)", tok);
			err = -EINVAL;
			goto out;
		}
		o->sel[k] = true;
	}
	/* Close over bias, baselines (sliced: bare copy/store; unsliced: the
	 * parser) and live-frames partners. */
	for (i = 0; i < 3; i++) {
		for (k = 0; k < B_NR; k++) {
			const struct bench_desc *d = &benches[k];

			if (!o->sel[k])
				continue;
			if (d->bias >= 0)
				o->sel[d->bias] = true;
			if (d->baseline >= 0)
				o->sel[d->baseline] = true;
			if (d->live >= 0)
				o->sel[d->live] = true;
			if (k == B_SLICER_COARSE || k == B_SLICER_NOLOG) {
				/* what the comparisons need */
				o->sel[B_SLICER] = true;
				o->sel[B_SLICER_COARSE] = true;
				o->sel[B_SLICER_NOLOG] = true;
				o->sel[B_XDP_CLOCK] = true;
				o->sel[B_XDP_CLOCK_COARSE] = true;
			}
			if (k == B_SLICER) {
				o->sel[B_XDP_PARSE] = true;
				o->sel[B_XDP_COPY] = true; /* its slot, hot */
			}
			if (k == B_LIVE_SLICER)
				o->sel[B_LIVE_PARSE] = true;
			if (k == B_SLICER_TENANTS || k == B_SPLICER_EV)
				o->sel[k == B_SPLICER_EV ? B_SPLICER : B_SLICER] = true;
			if (k == B_SLICER_SKIP_EV)
				o->sel[B_SLICER_SKIP] = true; /* its comparison */
			if (k == B_SLICER_REPLAY63 || k == B_SLICER_NOCACHE)
				o->sel[B_SLICER] = true; /* its comparison */
			if (k == B_SPLICER)
				o->sel[B_TC_PARSE] = true;
			if (k == B_SPLICER_NORES)
				o->sel[B_SPLICER] = true; /* the comparison */
		}
	}
out:
	free(dup);
	return err;
}

static int parse_uint(const char *name, const char *arg, unsigned int lo, unsigned int hi,
		      unsigned int *v)
{
	char *end;
	unsigned long x;

	errno = 0;
	x = strtoul(arg, &end, 10);
	if (errno || *end || !*arg || x < lo || x > hi) {
		pr_err("--%s: '%s' is not a number in %u..%u", name, arg, lo, hi);
		return -EINVAL;
	}
	*v = x;
	return 0;
}

static const struct option long_opts[] = {
	{"rounds", required_argument, NULL, 'r'},
	{"warmup", required_argument, NULL, 'w'},
	{"iters", required_argument, NULL, 'n'},
	{"sizes", required_argument, NULL, 's'},
	{"proto", required_argument, NULL, 'p'},
	{"lag", required_argument, NULL, 'l'},
	{"live-repeat", required_argument, NULL, 'L'},
	{"no-live", no_argument, NULL, 'N'},
	{"flush", no_argument, NULL, 'F'},
	{"win-min", required_argument, NULL, 'W'},
	{"ifaces", required_argument, NULL, 'I'},
	{"ipv6", no_argument, NULL, '6'},
	{"programs", required_argument, NULL, 'P'},
	{"cpu", required_argument, NULL, 'c'},
	{"json", required_argument, NULL, 'j'},
	{"csv", required_argument, NULL, 'C'},
	{"quiet", no_argument, NULL, 'q'},
	{"calls", no_argument, NULL, 'K'},
	{"help", no_argument, NULL, 'h'},
	{NULL, 0, NULL, 0},
};

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: nfslice-bench-datapath [OPTIONS]\n"
		"Per-packet cost of the nfslice slicer (XDP) and splicer (tc) under\n"
		"BPF_PROG_TEST_RUN, in ns/packet, next to bare baselines: header parse,\n"
		"bpf_xdp_load_bytes of the payload into the store slot the slicer would take\n"
		"next, and bpf_skb_change_tail + bpf_skb_store_bytes of it back. Each packet\n"
		"is one test run (repeat=1); the cost is the program's bpf_stats run_time_ns /\n"
		"run_cnt minus that of an empty program. Needs root. Results: median over\n"
		"rounds in ns/packet, and the ratio to the baseline.\n"
		"\n"
		"  -r, --rounds N       measured rounds (default 21)\n"
		"  -w, --warmup N       discarded warm-up rounds (default 1)\n"
		"  -n, --iters N        packets per block, one block per program and\n"
		"                       packet per round (default 1024); with few, such\n"
		"                       as -n 1 (programs interleaved packet by packet),\n"
		"                       give -r 1000: fewer than 1000 packets per row\n"
		"                       are warned of (a median of a few cold single\n"
		"                       runs is noise)\n"
		"  -s, --sizes LIST     frame sizes in bytes, without FCS (default 64,512,1514)\n"
		"  -p, --proto P        udp, tcp or both (default both)\n"
		"  -l, --lag N          also splice N packets after slicing them, so the\n"
		"                       slot has gone cold (default 1024, 0: off;\n"
		"                       must be below the partition size)\n"
		"  -L, --live-repeat N  packets per live-frames cross-check block (default 256)\n"
		"  -N, --no-live        skip the live-frames cross-check\n"
		"  -F, --flush          evict the store from all caches (clflush) before\n"
		"                       each block: slots come from DRAM, not from L3\n"
		"  -W, --win-min N      smallest hot window of the slicer's store, in slots\n"
		"                       (config win_min; default 0: NFSL_WIN_MIN);\n"
		"                       slicer-cold always uses the whole partition\n"
		"  -I, --ifaces N       interfaces in the domain's table (2..%u, default 2):\n"
		"                       N - 2 absent ones first, then the packets' ingress\n"
		"                       and egress, so that every search walks the table\n"
		"  -6, --ipv6           IPv6 packets (default IPv4)\n"
		"  -P, --programs LIST  measure only these (plus their bias and baselines):\n"
		"                       xdp-empty, xdp-parse, xdp-route, xdp-call, xdp-clock,\n"
		"                       xdp-clock-coarse, xdp-copy,\n"
		"                       xdp-copy-nofence, xdp-copy-warm, xdp-copy-cold,\n"
		"                       slicer, slicer-nofib, slicer-nocache, slicer-cold,\n"
		"                       slicer-coarse,\n"
		"                       slicer-nolog, slicer-tenants, slicer-skip,\n"
		"                       slicer-replay63,\n"
		"                       slicer-skip-events, splicer-nores, splicer-events,\n"
		"                       splicer-foreign, nf-empty, guard-fwd,\n"
		"                       guard-fwd-domain,\n"
		"                       tc-empty, tc-parse, tc-store, splicer,\n"
		"                       tc-store-lag, splicer-lag (default: all)\n"
		"  -c, --cpu N          CPU to pin to (default: the last online CPU)\n"
		"  -j, --json FILE      write all results as JSON\n"
		"  -C, --csv FILE       write all results as CSV\n"
		"  -q, --quiet          no progress on stderr\n"
		"  -K, --calls          no timing: count the calls out of the slicer and the\n"
		"                       splicer for one packet of each case, by kind\n"
		"                       (counting builds, bench/bpf/calls.h)\n"
		"  -h, --help           this text\n",
		NFSL_MAX_IFACES);
}

int dp_parse_opts(struct opts *o, int argc, char **argv)
{
	int c;

	o->rounds = 21;
	o->warmup = 1;
	o->iters = 1024;
	o->lag = 1024;
	o->live_repeat = LIVE_BATCH;
	o->live = true;
	o->udp = o->tcp = true;
	o->cpu = -1;
	o->nifaces = 2;
	o->nsizes = 3;
	o->sizes[0] = 64;
	o->sizes[1] = 512;
	o->sizes[2] = 1514;
	for (c = 0; c < B_NR; c++)
		o->sel[c] = true;

	while ((c = getopt_long(argc, argv, "r:w:n:s:p:l:L:NFW:I:6P:c:j:C:qKh", long_opts, NULL)) != -1) {
		unsigned int v;

		switch (c) {
		case 'r':
			if (parse_uint("rounds", optarg, 1, MAX_ROUNDS, &o->rounds))
				return -1;
			break;
		case 'w':
			if (parse_uint("warmup", optarg, 0, 100, &o->warmup))
				return -1;
			break;
		case 'n':
			if (parse_uint("iters", optarg, 1, 1000000, &o->iters))
				return -1;
			break;
		case 's':
			if (parse_sizes(o, optarg))
				return -1;
			break;
		case 'p':
			o->udp = !strcmp(optarg, "udp") || !strcmp(optarg, "both");
			o->tcp = !strcmp(optarg, "tcp") || !strcmp(optarg, "both");
			if (!o->udp && !o->tcp) {
				pr_err("--proto: '%s' is not udp, tcp or both", optarg);
				return -1;
			}
			break;
		case 'l':
			if (parse_uint("lag", optarg, 0, NFSL_DEF_SLOTS, &o->lag))
				return -1;
			break;
		case 'L':
			if (parse_uint("live-repeat", optarg, 1, NFSL_DEF_SLOTS, &o->live_repeat))
				return -1;
			break;
		case 'N':
			o->live = false;
			break;
		case 'F':
			o->flush = true;
			break;
		case 'W':
			if (parse_uint("win-min", optarg, 0, NFSL_DEF_SLOTS, &o->win_min))
				return -1;
			break;
		case 'I':
			if (parse_uint("ifaces", optarg, 2, NFSL_MAX_IFACES, &o->nifaces))
				return -1;
			break;
		case '6':
			o->v6 = true;
			break;
		case 'P':
			if (parse_programs(o, optarg))
				return -1;
			break;
		case 'c':
			if (parse_uint("cpu", optarg, 0, NFSL_MAX_CPUS - 1, &v))
				return -1;
			o->cpu = v;
			break;
		case 'j':
			o->json = optarg;
			break;
		case 'C':
			o->csv = optarg;
			break;
		case 'q':
			o->quiet = true;
			break;
		case 'K':
			o->calls = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			fprintf(stderr, "Try 'nfslice-bench-datapath --help'.\n");
			return -1;
		}
	}
	if (optind < argc) {
		pr_err("unexpected argument '%s'", argv[optind]);
		return -1;
	}
	if (!o->calls && (unsigned long long)o->rounds * o->iters < 1000)
		fprintf(stderr, "nfslice-bench-datapath: warning: %u rounds x %u packets "
			"per block = %llu packets per row: too few for a median; "
			"give more rounds (-r 1000 with -n 1)\n", o->rounds, o->iters,
			(unsigned long long)o->rounds * o->iters);
	return 0;
}
