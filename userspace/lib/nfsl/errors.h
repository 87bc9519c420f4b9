/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The messages of the engines the nfslice CLI runs (attach, detach,
 * repair, upgrade...): "nfslice: <msg>" on stderr, through nfsl_msg (so
 * collected for the JSON error object under --json), and the explanations
 * of a domain that cannot be opened, each naming the fix.
 */
#ifndef NFSL_ERRORS_H
#define NFSL_ERRORS_H

#include "util/cli.h"

/* Print "nfslice: <msg>" to stderr (under --json: collected for the JSON
 * error object); returns -1 for `return nfsl_err(...);`. */
#define nfsl_err(...) nfsl_msg("nfslice: ", __VA_ARGS__)

/* What nfsl_bpffs_enter returned at start-up (the CLI sets it):
 * nfsl_err_domain explains a missing bpffs with it. */
extern int nfsl_bpffs_state;

/* Explain a failure to find the domain's pins (-ENOMEDIUM: no bpffs,
 * -ENOENT: no domain, -EACCES, -EPROTO: another layout), naming the fix.
 * Returns -1. */
int nfsl_err_domain(int err, const char *name);

/* Take the host-wide lock of attach, detach, repair and gc (domains.h):
 * the lock fd, or -1 after a message. */
int nfsl_lock_domains(void);

#endif /* NFSL_ERRORS_H */
