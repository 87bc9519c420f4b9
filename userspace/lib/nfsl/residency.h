/* SPDX-License-Identifier: GPL-2.0 */
/* The splicer's residency histogram of a domain, as user space reads it. */
#ifndef NFSL_RESIDENCY_H
#define NFSL_RESIDENCY_H

#include "nfsl/domain.h"

/*
 * nfsl_domain_residency - sum the per-CPU residency histogram pinned in the
 * domain directory @dir into @h (struct nfsl_residency: counts of spliced
 * payloads by slice-to-splice time, bucket 0 below 1 us, bucket i
 * [2^(i-1), 2^i) us, the last longer; and their sum in us). Returns 0,
 * -ENOENT when the domain has none (attached by an older nfslice: nfslice
 * upgrade adds it), other -errno.
 */
int nfsl_domain_residency(const char *dir, struct nfsl_residency *h);

/* Largest residency of bucket @i in whole us (2^i - 1: bucket i holds
 * [2^(i-1), 2^i) us), a Prometheus histogram's inclusive "le". */
static inline __u64 nfsl_residency_le(unsigned int i)
{
	return (1ull << i) - 1;
}

#endif /* NFSL_RESIDENCY_H */
