/* SPDX-License-Identifier: GPL-2.0 */
/* Clocks and CPUs, as every nfslice tool uses them. */
#ifndef NFSL_UTIL_H
#define NFSL_UTIL_H

#include <stddef.h>
#include <linux/types.h>

/* CLOCK_MONOTONIC in nanoseconds. */
__u64 nfsl_now_ns(void);

/* nfsl_errf - format a message into @err (@len bytes) for a caller that
 * reports it; returns @rc, for "return nfsl_errf(err, len, -EINVAL, ...);". */
int nfsl_errf(char *err, size_t len, int rc, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* nfsl_pin_cpu - run the calling thread on CPU @cpu only.
 * Returns 0 or -errno (-EINVAL: no such CPU, or not one it may use). */
int nfsl_pin_cpu(int cpu);

#endif /* NFSL_UTIL_H */
