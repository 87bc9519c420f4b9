// SPDX-License-Identifier: GPL-2.0
/* The libbpf/libxdp print hook of the nfslice tools: see log.h. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <bpf/libbpf.h>
#include <xdp/libxdp.h>

#include "util/log.h"

bool nfsl_quiet_libs;
static enum nfsl_log_level log_level = NFSL_LOG_WARN;

static int print(enum nfsl_log_level level, const char *fmt, va_list ap)
{
	if (level > log_level || (nfsl_quiet_libs && log_level < NFSL_LOG_INFO))
		return 0;
	return vfprintf(stderr, fmt, ap);
}

static int print_libbpf(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	return print(level == LIBBPF_WARN   ? NFSL_LOG_WARN :
		     level == LIBBPF_INFO   ? NFSL_LOG_INFO :
					      NFSL_LOG_DEBUG, fmt, ap);
}

static int print_libxdp(enum libxdp_print_level level, const char *fmt, va_list ap)
{
	return print(level == LIBXDP_WARN   ? NFSL_LOG_WARN :
		     level == LIBXDP_INFO   ? NFSL_LOG_INFO :
					      NFSL_LOG_DEBUG, fmt, ap);
}

void nfsl_log_init(enum nfsl_log_level level)
{
	log_level = level;
	if (getenv("NFSLICE_VERBOSE") && log_level < NFSL_LOG_INFO)
		log_level = NFSL_LOG_INFO;
	libbpf_set_print(print_libbpf);
	libxdp_set_print(print_libxdp);
}
