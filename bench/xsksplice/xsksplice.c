// SPDX-License-Identifier: GPL-2.0
/*
 * nfslice-bench-xsksplice - ns per frame of nfsl_xsk_splice (userspace/lib/xsk/
 * splice.c), the AF_XDP engine's inline splice, on maps made as nfslice
 * attach makes a domain's (an mmapable store; the config map mmapable as
 * attach makes it now, or not, as an older nfslice made it):
 *   ordinary   1514 B DSCP-0 UDP frames with random payloads (a ring of
 *              256): about half of their trailers pass the token
 *              pre-check and go on to the MAC (issue 17 §3)
 *   sliced     a 58 B sliced header (keep 0) with a token of the domain's
 *              key; its 1472 B payload put back; the slot re-armed and
 *              the header copied back before each call (~5 ns)
 *   carried    the same, with the token check made on receive carried
 *              to the splice (nfsl_xsk_splice_tok: no second MAC), as the
 *              AF_XDP worker does when an NF read orig_len (issue 18 item 6)
 *   release    the same header dropped: nfsl_xsk_release frees its slot
 *              (slot re-armed before each call)
 *   rel_carried the same with the receive check carried
 *              (nfsl_xsk_release_tok)
 *   forged     the same header, DSCP 63, one MAC bit wrong: the MAC
 *              (no key_old), then the config-change check (a load from
 *              the mmap, or the rate limiter's clock read without it)
 *   reread     one bpf(2) lookup of the config: what each pre-checked
 *              trailer cost before issue 17 (a re-read per token under
 *              neither key)
 * The payload and checksums of the sliced header are synthetic: the
 * splice is checked to return SPLICED with the full length, not byte for
 * byte (tests/unit xsk_splice/same_as_tc does that). Output: median
 * [p25 .. p75] ns per frame over --reps blocks of --frames calls, and the
 * config re-reads the splice made; --json for a JSON object.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>

#include "nfsl/domain.h"
#include "util/json_writer.h"
#include "nfsl_splice.h"
#include "xsk/nfsl_xsk_splice.h"

#define SLOTS 64
#define ROOM 2048
#define MTU 1500
#define FULL 1514 /* Ethernet + IPv4 + UDP + 1472 B payload */
#define HDR 42
#define RING 256
#define MAX_REPS 201

enum row { ORDINARY, SLICED, CARRIED, RELEASE, REL_CARRIED, FORGED, REREAD, NROWS };
static const char *const row_name[] = { "ordinary", "sliced",  "carried", "release",
					"rel_carried", "forged", "reread" };

static __u64 now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (__u64)t.tv_sec * 1000000000ull + t.tv_nsec;
}

static int cmp_f(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Ethernet + IPv4 + UDP headers for an IP packet of @l3len bytes. */
static void headers(__u8 *f, __u32 l3len, __u8 dscp)
{
	memset(f, 0, HDR);
	memcpy(f, "\x02\0\0\0\0\x02\x02\0\0\0\0\x01\x08\x00", 14);
	f[14] = 0x45;
	f[15] = dscp << 2;
	f[16] = l3len >> 8;
	f[17] = l3len & 0xff;
	f[22] = 64;
	f[23] = 17;
	memcpy(f + 26, "\x0a\0\0\x01\x0a\0\0\x02", 8);
	f[34] = 0x30, f[35] = 0x39, f[36] = 0x13, f[37] = 0x89; /* 12345 -> 5001 */
	f[38] = (l3len - 20) >> 8;
	f[39] = (l3len - 20) & 0xff;
	f[40] = 0x5a, f[41] = 0xa5; /* any non-zero checksum */
}

int main(int argc, char **argv)
{
	static __u8 ordinary[RING][FULL], buf[ROOM];
	__u8 sliced[HDR + NFSL_TOKEN_LEN], forged[HDR + NFSL_TOKEN_LEN];
	static double ns[NROWS][MAX_REPS];
	unsigned long rereads[NROWS] = {};
	struct nfsl_domain d = { .counters_fd = -1, .cursor_fd = -1 };
	LIBBPF_OPTS(bpf_map_create_opts, mm, .map_flags = BPF_F_MMAPABLE);
	LIBBPF_OPTS(bpf_map_create_opts, plain);
	struct nfsl_xsk_store st;
	struct nfsl_token tok;
	struct nfsl_xsk_tok chk;
	int reps = 51, frames = 20000, json = 0, mmapable = 1, c;
	__u32 zero = 0, len, gen = 7, slot = 3;

	while ((c = getopt(argc, argv, "r:n:jph")) != -1) {
		switch (c) {
		case 'r':
			reps = atoi(optarg);
			break;
		case 'n':
			frames = atoi(optarg);
			break;
		case 'j':
			json = 1;
			break;
		case 'p':
			mmapable = 0;
			break;
		default:
			fprintf(stderr, "usage: nfslice-bench-xsksplice [-r REPS (1..%d)] [-n FRAMES] "
				"[-p: config map not mmapable, as an older nfslice made it] [-j: JSON]\n",
				MAX_REPS);
			return c == 'h' ? 0 : 2;
		}
	}
	if (reps < 1 || reps > MAX_REPS || frames < 1) {
		fprintf(stderr, "nfslice-bench-xsksplice: -r is 1..%d, -n at least 1\n", MAX_REPS);
		return 2;
	}
	srand(1);
	d.cfg.key[0] = 0x0123456789abcdefull;
	d.cfg.key[1] = 0xfedcba9876543210ull;
	d.cfg.expiry = 2;
	d.cfg.slots = SLOTS;
	d.store_fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "nfsl_store", 4, sizeof(struct nfsl_slot),
				    SLOTS, &mm);
	d.config_fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "nfsl_config", 4,
				     sizeof(struct nfsl_config), 1, mmapable ? &mm : &plain);
	if (d.store_fd < 0 || d.config_fd < 0 ||
	    bpf_map_update_elem(d.config_fd, &zero, &d.cfg, BPF_ANY) ||
	    nfsl_xsk_store_open(&st, &d)) {
		fprintf(stderr, "nfslice-bench-xsksplice: cannot make the maps (root?): %s\n",
			strerror(errno));
		return 1;
	}
	for (int i = 0; i < RING; i++) {
		headers(ordinary[i], FULL - 14, 0);
		for (int b = HDR; b < FULL; b++)
			ordinary[i][b] = rand();
	}
	headers(sliced, HDR - 14 + NFSL_TOKEN_LEN, NFSL_DSCP_SLICED);
	nfsl_token_make(&tok, d.cfg.key, slot | (FULL - HDR) << NFSL_TOKEN_IDX_BITS, gen);
	memcpy(sliced + HDR, &tok, sizeof(tok));
	memcpy(forged, sliced, sizeof(forged));
	forged[HDR + 8] ^= 1;
	st.slots[slot].len = FULL - HDR;
	st.slots[slot].csum = 0x1234;
	for (int i = 0; i < FULL - HDR; i++)
		st.slots[slot].payload[i] = rand();
	/* the check a receive makes, once: what "carried" rows carry */
	__atomic_store_n(&st.slots[slot].ctl, NFSL_CTL(gen, 2), __ATOMIC_RELAXED);
	if (nfsl_xsk_orig_len_tok(&st, sliced, sizeof(sliced), &chk) != FULL - 14 || !chk.ours) {
		fprintf(stderr, "nfslice-bench-xsksplice: the receive check failed\n");
		return 1;
	}

	for (int r = 0; r < reps; r++) {
		for (int row = 0; row < NROWS; row++) {
			unsigned long rr0 = st.rereads;
			struct nfsl_config cfg;
			__u64 t0 = now_ns();
			int bad = 0;

			for (int i = 0; i < frames; i++) {
				switch (row) {
				case ORDINARY:
					len = FULL;
					bad |= nfsl_xsk_splice(&st, ordinary[i % RING], &len, ROOM,
							       MTU) != NFSL_XSK_SPLICE_NOT_SLICED;
					break;
				case SLICED:
					__atomic_store_n(&st.slots[slot].ctl, NFSL_CTL(gen, 2),
							 __ATOMIC_RELAXED);
					memcpy(buf, sliced, sizeof(sliced));
					len = sizeof(sliced);
					bad |= nfsl_xsk_splice(&st, buf, &len, ROOM, MTU) !=
						       NFSL_XSK_SPLICE_SPLICED ||
					       len != FULL;
					break;
				case CARRIED:
					__atomic_store_n(&st.slots[slot].ctl, NFSL_CTL(gen, 2),
							 __ATOMIC_RELAXED);
					memcpy(buf, sliced, sizeof(sliced));
					len = sizeof(sliced);
					bad |= nfsl_xsk_splice_tok(&st, buf, &len, ROOM, MTU, &chk) !=
						       NFSL_XSK_SPLICE_SPLICED ||
					       len != FULL;
					break;
				case RELEASE:
				case REL_CARRIED:
					__atomic_store_n(&st.slots[slot].ctl, NFSL_CTL(gen, 2),
							 __ATOMIC_RELAXED);
					bad |= nfsl_xsk_release_tok(&st, sliced, sizeof(sliced),
								    row == REL_CARRIED ? &chk
										       : NULL) != 1;
					break;
				case FORGED:
					len = sizeof(forged);
					bad |= nfsl_xsk_splice(&st, forged, &len, ROOM, MTU) !=
					       NFSL_XSK_SPLICE_NOT_SLICED;
					break;
				default:
					bad |= bpf_map_lookup_elem(d.config_fd, &zero, &cfg);
				}
			}
			ns[row][r] = (double)(now_ns() - t0) / frames;
			rereads[row] += st.rereads - rr0;
			if (bad) {
				fprintf(stderr, "nfslice-bench-xsksplice: %s: a frame came out wrong\n",
					row_name[row]);
				return 1;
			}
		}
	}
	if (json) {
		struct json_writer w;

		jsonw_init(&w, stdout);
		jsonw_start_object(&w);
		jsonw_bool_field(&w, "config_mmapable", st.cfg_map != NULL);
		jsonw_int_field(&w, "frames", frames);
		jsonw_int_field(&w, "reps", reps);
		for (int row = 0; row < NROWS; row++) {
			qsort(ns[row], reps, sizeof(double), cmp_f);
			jsonw_name(&w, row_name[row]);
			jsonw_start_object(&w);
			jsonw_float_field_fmt(&w, "ns_median", "%.1f", ns[row][reps / 2]);
			jsonw_float_field_fmt(&w, "ns_p25", "%.1f", ns[row][reps / 4]);
			jsonw_float_field_fmt(&w, "ns_p75", "%.1f", ns[row][reps * 3 / 4]);
			jsonw_uint_field(&w, "rereads", rereads[row]);
			jsonw_end_object(&w);
		}
		jsonw_end_object(&w);
		putchar('\n');
	} else {
		printf("AF_XDP inline splice, config map %s; %d x %d frames; ns per frame\n",
		       st.cfg_map ? "mmapable" : "not mmapable (rate-limited re-read)", reps,
		       frames);
		for (int row = 0; row < NROWS; row++) {
			qsort(ns[row], reps, sizeof(double), cmp_f);
			printf("  %-11s %7.1f  [%.1f .. %.1f]  config re-reads %lu\n", row_name[row],
			       ns[row][reps / 2], ns[row][reps / 4], ns[row][reps * 3 / 4],
			       rereads[row]);
		}
	}
	nfsl_xsk_store_close(&st);
	return 0;
}
