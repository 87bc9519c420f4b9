/* SPDX-License-Identifier: GPL-2.0 */
/* nfslice repair's engine (repair.c). */
#ifndef NFSL_REPAIR_H
#define NFSL_REPAIR_H

/*
 * nfsl_repair - make domain @name of the caller's network namespace whole
 * again with its own store, configuration and pinned splicer, under the
 * host-wide lock: every missing splicer first, then every missing slicer
 * (the order attach uses), the GRO features off again, be_liberal set
 * again if the domain had set it, the namespace probe of a domain attached
 * by an older nfslice. An interface that is gone cannot come back: repair
 * refuses, and changes nothing. Prints what it did. Returns 0 (also for a
 * whole domain) or -1 after a message.
 */
int nfsl_repair(const char *name);

#endif /* NFSL_REPAIR_H */
