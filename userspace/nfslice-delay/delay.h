/* SPDX-License-Identifier: GPL-2.0 */
/*
 * nfslice-delay: a constant-delay line on a TAP device (docs/topologies.md,
 * "NF delay"). Every frame read from the TAP device is written back to it
 * DELAY microseconds later, in arrival order. It stands in for the time an
 * NF holds a packet, which sets how long a sliced payload stays parked:
 * PayloadPark §6.2.4 / Fig. 14 size the store by that delay (Little's law,
 * L = rate x delay). This kernel has no netem, so the delay is ours.
 */
#ifndef NFSL_DELAY_H
#define NFSL_DELAY_H

#include <stdbool.h>
#include <linux/types.h>

#include "util/cli.h"

#define DL_NAME "nfslice-delay"
/* Largest frame held, bytes: an MTU-1500 Ethernet frame (1514 B) fits;
 * a read that fills the buffer may have been cut, so it is dropped. */
#define DL_FRAME_MAX 2048
/* Hold-time histogram: 1 us buckets up to 1 s; longer holds count in the
 * last bucket (quantiles then read ">= 1 s"). */
#define DL_HIST_BUCKETS 1000000
/* Frames read per wakeup before due frames are released again. */
#define DL_READ_BURST 64

struct dl_opts {
	const char *dev; /* TAP device */
	__u32 delay_us; /* hold time, us */
	__u32 queue; /* frames the line holds at most */
	__u32 cpu; /* CPU to run on, if has_cpu; else any */
	__u32 duration; /* seconds; 0: until SIGINT/SIGTERM */
	bool json;
	bool has_delay, has_cpu; /* --delay, --cpu given */
};

/* One held frame: when it arrived and when it is due, CLOCK_MONOTONIC ns. */
struct dl_frame {
	__u64 in_ns;
	__u64 due_ns;
	__u32 len;
	__u8 data[DL_FRAME_MAX];
};

/* The line: a FIFO ring. With one constant delay, due times grow in arrival
 * order, so the head is always the next frame to release. */
struct dl_line {
	struct dl_frame *ring;
	__u32 size; /* slots */
	__u32 head; /* oldest frame */
	__u32 count; /* frames held */
};

struct dl_stats {
	__u64 in, out, bytes_out;
	__u64 dropped_full; /* line full when the frame arrived */
	__u64 dropped_big; /* frame of DL_FRAME_MAX bytes or more */
	__u64 write_err; /* write to the TAP device failed */
	__u64 left; /* still held at exit, not sent */
	__u32 max_held; /* most frames held at once */
	__u64 hold_min_ns, hold_max_ns, hold_sum_ns;
	__u64 *hist; /* DL_HIST_BUCKETS counters of hold time, 1 us each */
	double elapsed_s;
};

int dl_line_init(struct dl_line *l, __u32 size);
void dl_line_free(struct dl_line *l);

static inline bool dl_line_full(const struct dl_line *l)
{
	return l->count == l->size;
}

static inline struct dl_frame *dl_line_head(const struct dl_line *l)
{
	return l->count ? &l->ring[l->head] : NULL;
}

/* The free slot after the newest frame; valid while !dl_line_full(). */
static inline struct dl_frame *dl_line_tail(const struct dl_line *l)
{
	return &l->ring[(l->head + l->count) % l->size];
}

static inline void dl_line_push(struct dl_line *l)
{
	l->count++;
}

static inline void dl_line_pop(struct dl_line *l)
{
	l->head = (l->head + 1) % l->size;
	l->count--;
}

int dl_stats_init(struct dl_stats *s);
void dl_stats_free(struct dl_stats *s);
void dl_stats_hold(struct dl_stats *s, __u64 ns);
/* Hold time (us, bucket lower bound) below which a fraction q of the
 * released frames fall; 0 when none was released. */
__u64 dl_stats_quantile_us(const struct dl_stats *s, double q);

/* Attach to TAP device @dev (IFF_TAP | IFF_NO_PI, non-blocking). A missing
 * device is created and lives as long as the fd. Returns the fd or -errno
 * after printing what failed. */
int dl_tap_open(const char *dev);

void dl_report(const struct dl_opts *o, const struct dl_line *l, const struct dl_stats *s);
/* Print "nfslice-delay: MESSAGE"; -1. */
#define dl_err(...) nfsl_msg(DL_NAME ": ", __VA_ARGS__)

#endif /* NFSL_DELAY_H */
