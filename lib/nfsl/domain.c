// SPDX-License-Identifier: GPL-2.0
/* Slicing domain lookup in bpffs, counters and occupancy: see domain.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <linux/magic.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "domain.h"

#ifndef SO_NETNS_COOKIE
#define SO_NETNS_COOKIE 71
#endif

const char *const nfsl_counter_names[] = {
#define NFSL_X_NAME(name) #name,
	NFSL_COUNTERS(NFSL_X_NAME)
#undef NFSL_X_NAME
};

static bool is_bpffs(const char *path)
{
	struct statfs st;

	return !statfs(path, &st) && st.f_type == BPF_FS_MAGIC;
}

/* Parent of @pid from /proc/PID/stat; 0 when unreadable. */
static pid_t parent_of(pid_t pid)
{
	char path[64], buf[512], *p;
	pid_t ppid = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (fgets(buf, sizeof(buf), f) && (p = strrchr(buf, ')')))
		sscanf(p + 2, "%*c %d", &ppid);
	fclose(f);
	return ppid;
}

const char *nfsl_bpffs(void)
{
	const char *env = getenv("NFSLICE_BPFFS");

	return env && *env ? env : "/sys/fs/bpf";
}

int nfsl_bpffs_enter(void)
{
	struct stat self, st;
	char path[64];
	pid_t best = 0;
	int fd, err = 0;

	if (getenv("NFSLICE_BPFFS"))
		return is_bpffs(nfsl_bpffs()) ? 0 : -ENOENT;
	if (stat("/proc/self/ns/mnt", &self))
		return -errno;
	/* Outermost readable ancestor in another mount namespace whose
	 * /sys/fs/bpf is a bpffs. */
	for (pid_t pid = getppid(); pid > 1; pid = parent_of(pid)) {
		snprintf(path, sizeof(path), "/proc/%d/ns/mnt", pid);
		if (stat(path, &st))
			break;
		if (st.st_ino == self.st_ino && st.st_dev == self.st_dev)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/root/sys/fs/bpf", pid);
		if (is_bpffs(path))
			best = pid;
	}
	if (best) {
		snprintf(path, sizeof(path), "/proc/%d/ns/mnt", best);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return -errno;
		if (setns(fd, CLONE_NEWNS))
			err = -errno;
		close(fd);
		if (err)
			return err;
	}
	return is_bpffs(nfsl_bpffs()) ? 0 : -ENOENT;
}

static int netns_cookie(__u64 *cookie)
{
	socklen_t sl = sizeof(*cookie);
	int fd, err = 0;

	fd = socket(AF_UNIX, SOCK_DGRAM, 0);
	if (fd < 0)
		return -errno;
	if (getsockopt(fd, SOL_SOCKET, SO_NETNS_COOKIE, cookie, &sl))
		err = -errno;
	close(fd);
	return err;
}

int nfsl_netns_dir(char *buf, size_t len)
{
	__u64 cookie;
	int err;

	if (!is_bpffs(nfsl_bpffs()))
		return -ENOMEDIUM;
	err = netns_cookie(&cookie);
	if (err)
		return err;
	if (snprintf(buf, len, "%s/nfslice/ns%llu", nfsl_bpffs(),
		     (unsigned long long)cookie) >= (int)len)
		return -ENAMETOOLONG;
	return 0;
}

int nfsl_name_check(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n >= NFSL_NAME_MAX || name[0] == '.')
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.'))
			return -EINVAL;
	}
	return 0;
}

int nfsl_domain_dir(char *buf, size_t len, const char *name)
{
	char ns[PATH_MAX];
	int err;

	if (nfsl_name_check(name))
		return -EINVAL;
	err = nfsl_netns_dir(ns, sizeof(ns));
	if (err)
		return err;
	if (snprintf(buf, len, "%s/%s", ns, name) >= (int)len)
		return -ENAMETOOLONG;
	return 0;
}

static int open_pin(const struct nfsl_domain *d, const char *pin)
{
	char path[PATH_MAX + 32];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", d->dir, pin);
	fd = bpf_obj_get(path);
	return fd < 0 ? -errno : fd;
}

int nfsl_domain_open(struct nfsl_domain *d, const char *name)
{
	__u32 zero = 0;
	int err;

	memset(d, 0, sizeof(*d));
	d->store_fd = d->config_fd = d->counters_fd = d->cursor_fd = -1;
	err = nfsl_domain_dir(d->dir, sizeof(d->dir), name);
	if (err)
		return err;
	if (access(d->dir, F_OK))
		return -ENOENT;
	if ((d->store_fd = open_pin(d, NFSL_PIN_STORE)) < 0 ||
	    (d->config_fd = open_pin(d, NFSL_PIN_CONFIG)) < 0 ||
	    (d->counters_fd = open_pin(d, NFSL_PIN_COUNTERS)) < 0 ||
	    (d->cursor_fd = open_pin(d, NFSL_PIN_CURSOR)) < 0) {
		err = -ENOENT; /* a half-made domain: detach cleans it */
		goto out;
	}
	if (bpf_map_lookup_elem(d->config_fd, &zero, &d->cfg))
		err = -errno;
out:
	return err;
}

void nfsl_domain_close(struct nfsl_domain *d)
{
	int *fds[] = { &d->store_fd, &d->config_fd, &d->counters_fd, &d->cursor_fd };

	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++) {
		if (*fds[i] >= 0)
			close(*fds[i]);
		*fds[i] = -1;
	}
}

int nfsl_counters_sum(int counters_fd, struct nfsl_counters *sum)
{
	int ncpus = libbpf_num_possible_cpus();
	struct nfsl_counters *per;
	__u32 zero = 0;
	int err = 0;

	if (ncpus < 0)
		return ncpus;
	per = calloc(ncpus, sizeof(*per));
	if (!per)
		return -ENOMEM;
	if (bpf_map_lookup_elem(counters_fd, &zero, per)) {
		err = -errno;
		goto out;
	}
	memset(sum, 0, sizeof(*sum));
	for (int c = 0; c < ncpus; c++) {
		__u64 *dst = (__u64 *)sum, *src = (__u64 *)&per[c];

		for (size_t i = 0; i < NFSL_NR_COUNTERS; i++)
			dst[i] += src[i];
	}
out:
	free(per);
	return err;
}

int nfsl_domain_counters(const struct nfsl_domain *d, struct nfsl_counters *sum)
{
	return nfsl_counters_sum(d->counters_fd, sum);
}

int nfsl_config_init(struct nfsl_config *cfg, __u32 threshold, __u32 keep,
		     __u32 slots, __u32 expiry, int ncpus)
{
	if (ncpus <= 0 || ncpus > NFSL_MAX_CPUS || slots < (__u32)ncpus)
		return -EINVAL;
	memset(cfg, 0, sizeof(*cfg));
	cfg->threshold = threshold;
	cfg->keep = keep;
	cfg->ncpus = ncpus;
	cfg->part_slots = slots / ncpus;
	cfg->slots = cfg->part_slots * ncpus;
	cfg->expiry = expiry;
	if (getrandom(cfg->key, sizeof(cfg->key), 0) != sizeof(cfg->key))
		return errno ? -errno : -EIO;
	return 0;
}

int nfsl_domain_busy_slots(const struct nfsl_domain *d, __u32 *busy)
{
	struct bpf_map_info info = {};
	__u32 ilen = sizeof(info);
	struct nfsl_slot *store;
	size_t len;

	if (bpf_obj_get_info_by_fd(d->store_fd, &info, &ilen))
		return -errno;
	len = (size_t)info.max_entries * sizeof(struct nfsl_slot);
	store = mmap(NULL, len, PROT_READ, MAP_SHARED, d->store_fd, 0);
	if (store == MAP_FAILED)
		return -errno;
	*busy = 0;
	for (__u32 i = 0; i < info.max_entries; i++)
		*busy += NFSL_CTL_EXP(__atomic_load_n(&store[i].ctl, __ATOMIC_RELAXED)) != 0;
	munmap(store, len);
	return 0;
}
