/* SPDX-License-Identifier: GPL-2.0 */
/* nfslice detach's engine (detach.c). */
#ifndef NFSL_DETACH_H
#define NFSL_DETACH_H

#include <stdbool.h>
#include "nfsl/domain.h"

/*
 * nfsl_unload - take the programs of @cfg off in the order that never lets
 * a sliced header leave without a splicer: every slicer first (checked
 * gone), then, once the headers in flight have drained (@d given: busy
 * slots at 0, or not falling for 100 ms, at most 2 s), every splicer, and
 * the GRO features back. Returns 0, or -1 when a slicer would not go
 * (printed): then the splicers stay too, and the caller keeps the pins, so
 * a later detach can finish the job.
 */
int nfsl_unload(const struct nfsl_config *cfg, const struct nfsl_domain *d);

/* nfsl_remove_pins - remove the pins and the directories of the domain at
 * @dir (nfsl_domain_remove), printing what could not go. */
void nfsl_remove_pins(const char *dir);

/*
 * nfsl_detach_locked - detach domain @name of the current network
 * namespace, the host-wide lock already held by the caller (nfslice gc).
 * @no_drain: do not wait for parked headers. Prints what it did. Returns 0
 * (also when there is no such domain) or -1 after a message.
 */
int nfsl_detach_locked(const char *name, bool no_drain);

/* nfsl_detach - the same, taking the host-wide lock (nfslice detach). */
int nfsl_detach(const char *name, bool no_drain);

#endif /* NFSL_DETACH_H */
