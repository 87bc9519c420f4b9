// SPDX-License-Identifier: GPL-2.0
/* Every slicing domain on the host (domains.h). */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nfsl/domains.h"

static int cmp_entries(const void *a, const void *b)
{
	const struct nfsl_dom_entry *x = a, *y = b;

	if (x->cookie != y->cookie)
		return x->cookie < y->cookie ? -1 : 1;
	return strcmp(x->name, y->name);
}

int nfsl_domain_dir_of(char *buf, size_t len, __u64 cookie, const char *name)
{
	if (nfsl_name_check(name))
		return -EINVAL;
	if (snprintf(buf, len, "%s/nfslice/ns%llu/%s", nfsl_bpffs(), (unsigned long long)cookie,
		     name) >= (int)len)
		return -ENAMETOOLONG;
	return 0;
}

int nfsl_domains_collect(struct nfsl_dom_entry **out, size_t *n)
{
	char top[PATH_MAX];
	struct nfsl_dom_entry *v = NULL;
	size_t cap = 0;
	struct dirent *e;
	DIR *dh;
	int err = 0;

	*out = NULL;
	*n = 0;
	snprintf(top, sizeof(top), "%s/nfslice", nfsl_bpffs());
	dh = opendir(top);
	if (!dh)
		return errno == ENOENT ? 0 : -errno;
	while (!err && (e = readdir(dh))) {
		char nsdir[PATH_MAX + 300], *end;
		unsigned long long cookie;
		struct dirent *f;
		DIR *ndh;

		if (strncmp(e->d_name, "ns", 2))
			continue;
		cookie = strtoull(e->d_name + 2, &end, 10);
		if (*end || end == e->d_name + 2)
			continue;
		snprintf(nsdir, sizeof(nsdir), "%s/%s", top, e->d_name);
		ndh = opendir(nsdir);
		if (!ndh)
			continue;
		while ((f = readdir(ndh))) {
			struct nfsl_dom_entry *x;

			if (f->d_name[0] == '.' || nfsl_name_check(f->d_name))
				continue;
			if (*n == cap) {
				struct nfsl_dom_entry *grown = realloc(v, (cap = cap ? 2 * cap : 8) *
								 sizeof(*grown));
				if (!grown) {
					err = -ENOMEM;
					break;
				}
				v = grown;
			}
			x = &v[*n];
			memset(x, 0, sizeof(*x));
			if (snprintf(x->dir, sizeof(x->dir), "%s/%s", nsdir,
				     f->d_name) >= (int)sizeof(x->dir) ||
			    snprintf(x->name, sizeof(x->name), "%s",
				     f->d_name) >= (int)sizeof(x->name))
				continue;
			x->cookie = cookie;
			(*n)++;
		}
		closedir(ndh);
	}
	closedir(dh);
	if (err) {
		free(v);
		*n = 0;
		return err;
	}
	qsort(v, *n, sizeof(*v), cmp_entries);
	*out = v;
	return 0;
}
