// SPDX-License-Identifier: GPL-2.0
/* The splicer's residency histogram (residency.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "nfsl/residency.h"

int nfsl_domain_residency(const char *dir, struct nfsl_residency *h)
{
	int ncpus = libbpf_num_possible_cpus(), fd, err = 0;
	char path[PATH_MAX + 32];
	struct nfsl_residency *per;
	__u32 zero = 0;

	memset(h, 0, sizeof(*h));
	if (ncpus < 0)
		return ncpus;
	snprintf(path, sizeof(path), "%s/%s", dir, NFSL_PIN_RESIDENCY);
	fd = bpf_obj_get(path);
	if (fd < 0)
		return -errno;
	per = calloc(ncpus, sizeof(*per));
	if (!per) {
		close(fd);
		return -ENOMEM;
	}
	/* struct nfsl_residency is a multiple of 8 bytes: no per-CPU padding. */
	if (bpf_map_lookup_elem(fd, &zero, per))
		err = -errno;
	for (int c = 0; !err && c < ncpus; c++) {
		for (int k = 0; k < NFSL_RES_BUCKETS; k++)
			h->bucket[k] += per[c].bucket[k];
		h->sum_us += per[c].sum_us;
	}
	free(per);
	close(fd);
	return err;
}
