// SPDX-License-Identifier: GPL-2.0
/* Clocks and CPUs: see util.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <time.h>

#include <stdarg.h>
#include <stdio.h>

#include "util/util.h"

__u64 nfsl_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

int nfsl_errf(char *err, size_t len, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
	return rc;
}

int nfsl_pin_cpu(int cpu)
{
	cpu_set_t set;

	if (cpu < 0 || cpu >= CPU_SETSIZE)
		return -EINVAL;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set) ? -errno : 0;
}
