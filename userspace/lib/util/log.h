/* SPDX-License-Identifier: GPL-2.0 */
/*
 * libbpf's and libxdp's messages, for every tool through one hook (in the
 * manner of xdp-tools' logging.c): the tools report failures in their own
 * words, naming the fix, and show the libraries' details on request
 * (NFSLICE_VERBOSE=1).
 */
#ifndef NFSL_LOG_H
#define NFSL_LOG_H

#include <stdbool.h>

/* What to show, each level including the ones above it. */
enum nfsl_log_level {
	NFSL_LOG_NONE,  /* nothing: the tool says what failed */
	NFSL_LOG_WARN,  /* the libraries' warnings */
	NFSL_LOG_INFO,  /* and their information (verifier logs among it) */
	NFSL_LOG_DEBUG, /* and their debug messages */
};

/*
 * nfsl_log_init - send libbpf's and libxdp's messages of @level and above
 * to stderr; with NFSLICE_VERBOSE set in the environment, those of
 * NFSL_LOG_INFO and above whatever @level says.
 */
void nfsl_log_init(enum nfsl_log_level level);

/* Set while a library probes features whose failures the caller handles
 * itself (libxdp's dispatcher fallback): their warnings would only alarm,
 * so only verbose logging shows them. */
extern bool nfsl_quiet_libs;

#endif /* NFSL_LOG_H */
