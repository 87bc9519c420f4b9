/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Every slicing domain on the host, whatever its network namespace: the
 * pin directories <bpffs>/nfslice/ns<netns cookie>/NAME (domain.h). Used
 * by nfslice list and gc and by nfsliced.
 */
#ifndef NFSL_DOMAINS_H
#define NFSL_DOMAINS_H

#include <limits.h>
#include <stddef.h>

#include "nfsl/domain.h"

struct nfsl_dom_entry {
	char dir[PATH_MAX];      /* its pin directory */
	char name[NFSL_NAME_MAX];
	__u64 cookie;            /* its network namespace's cookie */
};

/*
 * nfsl_domains_collect - every domain directory, sorted by cookie, then
 * name, into *@out (*@n entries; free() it). Returns 0 (none: *@n 0), or
 * -errno reading the bpffs.
 */
int nfsl_domains_collect(struct nfsl_dom_entry **out, size_t *n);

/* Pin directory of domain @name of the namespace with @cookie. Returns 0
 * or -ENAMETOOLONG / -EINVAL (bad name). */
int nfsl_domain_dir_of(char *buf, size_t len, __u64 cookie, const char *name);

#endif /* NFSL_DOMAINS_H */
