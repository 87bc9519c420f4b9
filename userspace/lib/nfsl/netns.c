// SPDX-License-Identifier: GPL-2.0
/* The host's nameable network namespaces: see netns.h. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "nfsl/domain.h"
#include "nfsl/netns.h"

#define NETNS_RUN_DIR "/run/netns"

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Add the namespace @path opens (nsfs device @dev) unless listed already;
 * @name its /run/netns name or NULL. */
static int add(struct nfsl_netns_list *l, size_t *cap, const char *path,
	       const char *name, dev_t dev)
{
	struct nfsl_netns *e;
	struct stat st;

	if (stat(path, &st))
		return -errno;
	if (st.st_dev != dev)
		return 0; /* a stale file under /run/netns, no namespace bound */
	if (nfsl_netns_by_ino(l, st.st_ino))
		return 0;
	if (l->n == *cap) {
		size_t ncap = *cap ? 2 * *cap : 16;
		struct nfsl_netns *grown = realloc(l->ns, ncap * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		l->ns = grown;
		*cap = ncap;
	}
	e = &l->ns[l->n++];
	memset(e, 0, sizeof(*e));
	e->ino = st.st_ino;
	snprintf(e->path, sizeof(e->path), "%s", path);
	if (name)
		snprintf(e->name, sizeof(e->name), "%s", name);
	return 0;
}

static int add_run_netns(struct nfsl_netns_list *l, size_t *cap, dev_t dev)
{
	char **names = NULL, path[sizeof(l->ns->path)];
	size_t n = 0, ncap = 0;
	struct dirent *e;
	int err = 0;
	DIR *dh;

	dh = opendir(NETNS_RUN_DIR);
	if (!dh)
		return errno == ENOENT ? 0 : -errno;
	while ((e = readdir(dh))) {
		if (e->d_name[0] == '.')
			continue;
		if (n == ncap) {
			char **grown = realloc(names, (ncap = ncap ? 2 * ncap : 16) *
						      sizeof(*grown));
			if (!grown) {
				err = -ENOMEM;
				break;
			}
			names = grown;
		}
		if (!(names[n] = strdup(e->d_name))) {
			err = -ENOMEM;
			break;
		}
		n++;
	}
	closedir(dh);
	if (!err)
		qsort(names, n, sizeof(*names), cmp_names);
	for (size_t i = 0; i < n; i++) {
		if (!err && snprintf(path, sizeof(path), NETNS_RUN_DIR "/%s",
				     names[i]) < (int)sizeof(path)) {
			int r = add(l, cap, path, names[i], dev);

			if (r == -ENOMEM)
				err = r;
		}
		free(names[i]);
	}
	free(names);
	return err;
}

static int add_processes(struct nfsl_netns_list *l, size_t *cap, dev_t dev)
{
	char path[sizeof(l->ns->path)];
	struct dirent *e;
	DIR *dh;
	int err = 0;

	dh = opendir("/proc");
	if (!dh)
		return -errno;
	while (!err && (e = readdir(dh))) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);
		int r;

		if (*end || pid <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/ns/net", pid);
		r = add(l, cap, path, NULL, dev);
		if (r == -ENOMEM)
			err = r;
		else if (r && r != -ENOENT) /* ENOENT: it exited meanwhile */
			l->unreadable++;
	}
	closedir(dh);
	return err;
}

int nfsl_netns_enter(const char *path, int *back)
{
	int fd, err = 0;

	*back = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (*back < 0)
		return -errno;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || setns(fd, CLONE_NEWNET))
		err = -errno;
	if (fd >= 0)
		close(fd);
	if (err) {
		close(*back);
		*back = -1;
	}
	return err;
}

int nfsl_netns_return(int back)
{
	int err = setns(back, CLONE_NEWNET) ? -errno : 0;

	close(back);
	return err;
}

int nfsl_netns_scan(struct nfsl_netns_list *l)
{
	char own[64];
	struct stat self;
	size_t cap = 0;
	int err;

	memset(l, 0, sizeof(*l));
	snprintf(own, sizeof(own), "/proc/%d/ns/net", getpid());
	if (stat(own, &self))
		return -errno;
	/* Names first: a namespace found as a process's too keeps its name. */
	err = add_run_netns(l, &cap, self.st_dev);
	if (!err)
		err = add(l, &cap, own, NULL, self.st_dev);
	if (!err)
		err = add_processes(l, &cap, self.st_dev);
	if (err) {
		nfsl_netns_free(l);
		return err;
	}
	for (size_t i = 0; i < l->n; i++) {
		int back;

		if (l->ns[i].ino == self.st_ino) {
			nfsl_netns_cookie(&l->ns[i].cookie);
			continue;
		}
		if (nfsl_netns_enter(l->ns[i].path, &back))
			continue;
		if (nfsl_netns_cookie(&l->ns[i].cookie))
			l->ns[i].cookie = 0;
		if (nfsl_netns_return(back)) {
			/* Stranded in another namespace: nothing else is safe. */
			nfsl_netns_free(l);
			return -EIO;
		}
	}
	return 0;
}

void nfsl_netns_free(struct nfsl_netns_list *l)
{
	free(l->ns);
	memset(l, 0, sizeof(*l));
}

const struct nfsl_netns *nfsl_netns_by_ino(const struct nfsl_netns_list *l, __u64 ino)
{
	for (size_t i = 0; i < l->n; i++)
		if (l->ns[i].ino == ino)
			return &l->ns[i];
	return NULL;
}

const struct nfsl_netns *nfsl_netns_by_cookie(const struct nfsl_netns_list *l,
					      __u64 cookie)
{
	for (size_t i = 0; cookie && i < l->n; i++)
		if (l->ns[i].cookie == cookie)
			return &l->ns[i];
	return NULL;
}
