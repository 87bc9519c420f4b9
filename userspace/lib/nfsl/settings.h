/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What a domain changes besides its programs (settings.c), in the caller's
 * network namespace, and gives back at detach.
 */
#ifndef NFSL_SETTINGS_H
#define NFSL_SETTINGS_H

#include "nfsl/domain.h"

/* Turn the GRO features that merge sliced datagrams (the splicer cannot
 * splice the aggregates) off on @ifc (@ifname), and remember in its flags
 * which were on. 0 or -1 after a message. */
int nfsl_gro_off(struct nfsl_iface *ifc, const char *ifname);

/* Turn back on the GRO features nfsl_gro_off turned off on @ifc. */
void nfsl_gro_restore(const struct nfsl_iface *ifc);

/* Set nf_conntrack_tcp_be_liberal to 1 in this namespace if it is 0
 * (NFSL_CFG_CT_LIBERAL_SET in @cfg then): sliced TCP segments are shorter
 * than the sequence space they stand for, so strict window tracking marks
 * the receiver's ACKs invalid. 0 or -1 after a message. */
int nfsl_ct_liberal_take(struct nfsl_config *cfg);

/* Restore nf_conntrack_tcp_be_liberal if domain @name (@cfg) set it,
 * unless another domain of the namespace remains (it inherits the duty)
 * or TCP connections are still tracked (a note says so). */
void nfsl_ct_liberal_release(const char *name, const struct nfsl_config *cfg);

#endif /* NFSL_SETTINGS_H */
