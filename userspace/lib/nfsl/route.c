// SPDX-License-Identifier: GPL-2.0
/* The route generation of a domain: see route.h. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>
#include <bpf/bpf.h>

#include "nfsl/route.h"

/* Map the domain's route generation; *@fd_out to close with the unmap. */
static __u64 *gen_map(const char *dir, int *fd_out)
{
	char path[PATH_MAX + 32];
	__u64 *g;
	int fd, err;

	snprintf(path, sizeof(path), "%s/%s", dir, NFSL_PIN_ROUTE_GEN);
	fd = bpf_obj_get(path);
	if (fd < 0)
		return errno = errno ? errno : ENOENT, NULL;
	err = nfsl_map_value_check(fd, sizeof(__u64));
	if (err) {
		close(fd);
		return errno = -err, NULL;
	}
	g = mmap(NULL, sizeof(*g), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (g == MAP_FAILED) {
		err = errno;
		close(fd);
		return errno = err, NULL;
	}
	*fd_out = fd;
	return g;
}

static void gen_unmap(__u64 *g, int fd)
{
	munmap(g, sizeof(*g));
	close(fd);
}

int nfsl_route_gen_bump(const struct nfsl_domain *d, __u64 *gen)
{
	return nfsl_route_gen_bump_at(d->dir, gen);
}

int nfsl_route_gen_bump_at(const char *dir, __u64 *gen)
{
	int fd;
	__u64 *g = gen_map(dir, &fd), v;

	if (!g)
		return -errno;
	v = __atomic_add_fetch(g, 1, __ATOMIC_SEQ_CST);
	gen_unmap(g, fd);
	if (gen)
		*gen = v;
	return 0;
}

int nfsl_route_gen_read(const struct nfsl_domain *d, __u64 *gen)
{
	int fd;
	__u64 *g = gen_map(d->dir, &fd);

	if (!g)
		return -errno;
	*gen = __atomic_load_n(g, __ATOMIC_SEQ_CST);
	gen_unmap(g, fd);
	return 0;
}
