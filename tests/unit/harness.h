/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * Datapath test harness: loads the slicer and the splicer with shared maps
 * (one slicing domain), pins the test to one CPU so the per-CPU partition
 * and counters are deterministic, and runs single packets through
 * BPF_PROG_TEST_RUN (no repeat: a repeated run does not reset the packet).
 */
#ifndef NFSL_TEST_HARNESS_H
#define NFSL_TEST_HARNESS_H

#include <stdbool.h>
#include <stdint.h>

#include "nfsl_structs.h"

/* Return codes of the programs (linux/bpf.h, linux/pkt_cls.h). */
#define V_XDP_DROP 1
#define V_XDP_PASS 2
#define V_TC_OK (-1) /* TC_ACT_UNSPEC: on to the hook's next program */
#define V_TC_SHOT 2

#define H_STORE_SLOTS 64 /* store max_entries in the tests */

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* The fixed MAC key of the test domain. */
extern const __u64 h_key[2];

/* The test namespace's interfaces (see h_netns): frames enter on H_IF_IN,
 * whose MAC is the test packets' destination MAC (pkt.c), and are routed
 * out of H_IF_OUT. */
#define H_IF_IN "nfut-in"
#define H_IF_INP "nfut-inp"
#define H_IF_OUT "nfut-out"
#define H_IF_OUTP "nfut-outp"
#define H_MAC_IN "02:00:00:00:00:02"
extern const __u8 h_mac_in[6];

struct harness {
	int cpu;     /* the CPU the test runs on */
	int ncpus;   /* possible CPUs: partitions */
	int nallowed; /* CPUs the test may run on, before pinning */
	int allowed[NFSL_MAX_CPUS];
	int slicer;  /* program fds */
	int splicer;
	int store, config, counters, cursor; /* map fds */
	int parklog, mgr; /* the slicer's park log and mgr_counters */
	int tcursor, tcnt, tpfx, tvlan; /* the slicer's tenant maps */
	int events; /* the drop events ring buffer (slicer and splicer) */
	int retired; /* the splicer's retired keys (struct nfsl_retired) */
	int route_gen; /* the slicer's route generation (one __u64) */
	int ifindex; /* device of the splicer's skb; 0: loopback */
	int if_in, if_out; /* ingress and egress domain interfaces */
	struct nfsl_config cfg; /* as last written */
	/* Bytes of a frame h_slice puts in the linear part, the rest in
	 * frags (a multi-buffer frame); 0: the whole frame, as far as one
	 * page holds it. */
	uint32_t xdp_linear;
	uint32_t xdp_out_linear; /* the last h_slice's output: its linear part */
};

extern struct harness H;

/* Criterion .init / .fini of every datapath test. */
void h_setup(void);
void h_teardown(void);

/*
 * h_configure - write the domain config and reset the state.
 * @part_slots: slots in each CPU partition (slots = part_slots * ncpus)
 */
void h_configure(uint32_t threshold, uint32_t keep, uint32_t part_slots,
		 uint32_t expiry);
/* Write H.cfg as it is now (tests change single fields), keep the state. */
void h_write_config(void);
/* Zero the store, the park log, the counters and the cursor; flush the
 * route verdict cache (h_route_flush). */
void h_reset(void);
/* Bump the route generation, as nfslice and nfsliced do after a route
 * change: every cached route verdict is gone. */
void h_route_flush(void);

/* Move the test to @cpu (one of H.allowed). */
void h_pin(int cpu);

/* First slot of this CPU's partition. */
uint32_t h_part_base(void);

/* Run the slicer (XDP) on @in; the result goes to @out (PKT_MAX bytes) and
 * *@out_len. Returns the program's verdict. */
int h_slice(const uint8_t *in, uint32_t len, uint8_t *out, uint32_t *out_len);
/* h_slice with @lin bytes of @in in the linear part (0: as many as fit)
 * and an @out of @out_max bytes. */
int h_slice_lin(const uint8_t *in, uint32_t len, uint32_t lin, uint8_t *out,
		uint32_t out_max, uint32_t *out_len);
/* Run the splicer (tc) on the frame @in, on device H.ifindex. */
int h_splice(const uint8_t *in, uint32_t len, uint8_t *out, uint32_t *out_len);
/* Same, but return the test run's error (-errno) instead of asserting it
 * is 0; the verdict goes to *@verdict. */
int h_splice_run(const uint8_t *in, uint32_t len, uint8_t *out,
		 uint32_t *out_len, int *verdict);

/* Replace the domain's key by another, as restore, re-attach or the end
 * of a migration do; the old one goes to the retired list with a grace
 * period ending @until_ns (CLOCK_MONOTONIC; 0: not retired at all). */
void h_retire_key(__u64 until_ns);

/* Sum of the per-CPU counters. */
void h_counters(struct nfsl_counters *c);
/* Expect the counters to be exactly @want; @what names the case. Returns
 * true when they are. */
bool h_expect_counters(const struct nfsl_counters *want, const char *what);

/* Set the MTU of @dev, an interface of the test's namespace, and flush
 * the route verdict cache. */
void h_set_mtu(const char *dev, unsigned int mtu);

void h_slot_read(uint32_t idx, struct nfsl_slot *s);
/* Write slot @idx of the store whole. */
void h_slot_write(uint32_t idx, const struct nfsl_slot *s);
void h_slot_set_ctl(uint32_t idx, uint64_t ctl);

/* The token the domain issues for (@slot, @gen), from the reference SipHash:
 * slot and gen big-endian, then the 8 MAC bytes. */
void h_token(uint32_t slot, uint32_t gen, uint8_t tok[16]);

#endif /* NFSL_TEST_HARNESS_H */
