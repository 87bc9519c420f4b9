// SPDX-License-Identifier: GPL-2.0
/* The NFs nfslice-nf can run (nfsl_nf.h). Each NF's file defines its
 * struct nfsl_nf_ops; this list is the one place that names them all. */
#include <string.h>

#include "nf/nfsl_nf.h"

extern const struct nfsl_nf_ops nfsl_nf_rxdrop, nfsl_nf_l2fwd;
extern const struct nfsl_nf_ops nfsl_nf_fw;
extern const struct nfsl_nf_ops nfsl_nf_lb, nfsl_nf_qos;
extern const struct nfsl_nf_ops nfsl_nf_nat;
extern const struct nfsl_nf_ops nfsl_nf_fwd;

const struct nfsl_nf_ops *const nfsl_nf_all[] = {
	&nfsl_nf_rxdrop,
	&nfsl_nf_l2fwd,
	&nfsl_nf_fw,
	&nfsl_nf_nat,
	&nfsl_nf_lb,
	&nfsl_nf_qos,
	&nfsl_nf_fwd,
	NULL,
};

const struct nfsl_nf_ops *nfsl_nf_find(const char *name)
{
	for (int i = 0; nfsl_nf_all[i]; i++)
		if (!strcmp(nfsl_nf_all[i]->name, name))
			return nfsl_nf_all[i];
	return NULL;
}
