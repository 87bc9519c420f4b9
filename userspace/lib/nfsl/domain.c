// SPDX-License-Identifier: GPL-2.0
/* Slicing domain lookup in bpffs, counters and occupancy: see domain.h. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <linux/magic.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "nfsl/domain.h"
#include "nfsl_store.h"

#ifndef SO_NETNS_COOKIE
#define SO_NETNS_COOKIE 71
#endif

const char *const nfsl_counter_names[] = {
#define NFSL_X_NAME(name) #name,
	NFSL_COUNTERS(NFSL_X_NAME)
#undef NFSL_X_NAME
};

const char *const nfsl_mgr_counter_names[] = {
#define NFSL_X_NAME(name) #name,
	NFSL_MGR_COUNTERS(NFSL_X_NAME)
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

/* Kernel threads share no mount namespace a user put a bpffs in. */
static bool is_kthread(pid_t pid)
{
	char path[64], buf[512], *p;
	unsigned int flags = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "r");
	if (!f)
		return true;
	/* Field 9 (flags), after the ')' closing the command name. */
	if (fgets(buf, sizeof(buf), f) && (p = strrchr(buf, ')')))
		sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %u", &flags);
	fclose(f);
	return flags & 0x00200000; /* PF_KTHREAD */
}

/*
 * Is @pid in another mount namespace than @self, one whose /sys/fs/bpf is
 * a bpffs? 1 yes, 0 no, -errno when its namespace cannot be read (another
 * user namespace, no ptrace access: PID 1 in some sandboxes).
 */
static int other_mntns_bpffs(pid_t pid, const struct stat *self)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%d/ns/mnt", pid);
	if (stat(path, &st))
		return -errno;
	if (st.st_ino == self->st_ino && st.st_dev == self->st_dev)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/root/sys/fs/bpf", pid);
	return is_bpffs(path);
}

static int enter_mntns(pid_t pid)
{
	char path[64];
	int fd, err = 0;

	snprintf(path, sizeof(path), "/proc/%d/ns/mnt", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (setns(fd, CLONE_NEWNS))
		err = -errno;
	close(fd);
	return err;
}

/* Lowest-numbered user process in another mount namespace with a bpffs at
 * /sys/fs/bpf: the oldest, on a host its early daemons. 0 when none. */
static pid_t scan_mntns_bpffs(const struct stat *self)
{
	pid_t best = 0;
	struct dirent *e;
	DIR *dh = opendir("/proc");

	if (!dh)
		return 0;
	while ((e = readdir(dh))) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);

		if (*end || pid <= 1 || (best && pid >= best) || pid == getpid() ||
		    is_kthread(pid))
			continue;
		if (other_mntns_bpffs(pid, self) == 1)
			best = pid;
	}
	closedir(dh);
	return best;
}

int nfsl_bpffs_enter(void)
{
	bool pid1_unknown = false;
	struct stat self;
	pid_t best = 0;
	int r, err;

	if (getenv("NFSLICE_BPFFS"))
		return is_bpffs(nfsl_bpffs()) ? 0 : -ENOENT;
	if (stat("/proc/self/ns/mnt", &self))
		return -errno;
	/* 1. PID 1's mount namespace: the host's, whoever started us
	 * (systemd, a daemon, an orphan of `ip netns exec`). */
	r = other_mntns_bpffs(1, &self);
	if (r == 1)
		best = 1;
	pid1_unknown = r < 0;
	/* 2. The outermost ancestor in another mount namespace with a
	 * bpffs (the shell that ran `ip netns exec`). */
	for (pid_t pid = getppid(); best != 1 && pid > 1; pid = parent_of(pid)) {
		r = other_mntns_bpffs(pid, &self);
		if (r < 0)
			break;
		if (r == 1)
			best = pid;
	}
	/* 3. Only where PID 1 cannot be read: the oldest process that sees
	 * a bpffs, unless our own /sys/fs/bpf is one. */
	if (!best && pid1_unknown && !is_bpffs(nfsl_bpffs()))
		best = scan_mntns_bpffs(&self);
	if (best) {
		err = enter_mntns(best);
		if (err)
			return err;
	}
	if (is_bpffs(nfsl_bpffs()))
		return 0;
	return pid1_unknown ? -EACCES : -ENOENT;
}

int nfsl_netns_cookie(__u64 *cookie)
{
	socklen_t sl = sizeof(*cookie);
	int fd, err = 0;

	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
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
	err = nfsl_netns_cookie(&cookie);
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

const char *nfsl_name_opt_check(const char *name)
{
	return nfsl_name_check(name) ? NFSL_NAME_RULE : NULL;
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

/* A pin the domain may lack (attached by an older nfslice): its fd, or
 * -1 when it is not there. */
static int open_pin_opt(const struct nfsl_domain *d, const char *pin)
{
	int fd = open_pin(d, pin);

	return fd == -ENOENT ? -1 : fd;
}

int nfsl_map_value_check(int fd, __u32 want)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);

	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		return -errno;
	return info.value_size == want ? 0 : -EPROTO;
}

/* The four pins every domain has: 0, -ENOENT when one is missing (a
 * half-made domain: detach cleans it), or -EACCES/-EPERM: pins we may not
 * open are no missing domain. */
static int open_core_pins(struct nfsl_domain *d)
{
	int *fds[] = { &d->store_fd, &d->config_fd, &d->counters_fd, &d->cursor_fd };
	const char *pins[] = { NFSL_PIN_STORE, NFSL_PIN_CONFIG, NFSL_PIN_COUNTERS,
			       NFSL_PIN_CURSOR };

	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++) {
		*fds[i] = open_pin(d, pins[i]);
		if (*fds[i] == -EACCES || *fds[i] == -EPERM)
			return *fds[i];
		if (*fds[i] < 0)
			return -ENOENT;
	}
	return 0;
}

/* Open the pinned maps of the domain whose pins are in d->dir. */
static int open_maps(struct nfsl_domain *d)
{
	__u32 zero = 0;
	int err;

	/* Only a directory that is not there is "no domain": EACCES is a
	 * domain we may not open, and says so. Effective ids and
	 * capabilities, as open: access() would take the real uid and drop
	 * CAP_DAC_OVERRIDE. */
	if (faccessat(AT_FDCWD, d->dir, F_OK, AT_EACCESS))
		return errno == ENOENT || errno == ENOTDIR ? -ENOENT : -errno;
	err = open_core_pins(d);
	/* Reading a value into a struct of another size would overrun it:
	 * a domain of another build is refused, not read. */
	if (!err && ((err = nfsl_map_value_check(d->config_fd, sizeof(d->cfg))) ||
		     (err = nfsl_map_value_check(d->counters_fd, sizeof(struct nfsl_counters))) ||
		     (err = nfsl_map_value_check(d->store_fd, sizeof(struct nfsl_slot))) ||
		     (err = nfsl_map_value_check(d->cursor_fd, sizeof(struct nfsl_alloc)))))
		;
	else if (!err && bpf_map_lookup_elem(d->config_fd, &zero, &d->cfg))
		err = -errno;
	if (!err) {
		d->parklog_fd = open_pin_opt(d, NFSL_PIN_PARKLOG);
		d->mgr_fd = open_pin_opt(d, NFSL_PIN_MGR_COUNTERS);
		if (d->parklog_fd < -1 || d->mgr_fd < -1)
			err = d->parklog_fd < -1 ? d->parklog_fd : d->mgr_fd;
	}
	if (err) /* no fd outlives a failed open */
		nfsl_domain_close(d);
	return err;
}

int nfsl_domain_open(struct nfsl_domain *d, const char *name)
{
	int err;

	memset(d, 0, sizeof(*d));
	d->store_fd = d->config_fd = d->counters_fd = d->cursor_fd = -1;
	d->parklog_fd = d->mgr_fd = -1;
	err = nfsl_domain_dir(d->dir, sizeof(d->dir), name);
	return err ? err : open_maps(d);
}

int nfsl_domain_open_dir(struct nfsl_domain *d, const char *dir)
{
	memset(d, 0, sizeof(*d));
	d->store_fd = d->config_fd = d->counters_fd = d->cursor_fd = -1;
	d->parklog_fd = d->mgr_fd = -1;
	if (snprintf(d->dir, sizeof(d->dir), "%s", dir) >= (int)sizeof(d->dir))
		return -ENAMETOOLONG;
	return open_maps(d);
}

void nfsl_domain_close(struct nfsl_domain *d)
{
	int *fds[] = { &d->store_fd, &d->config_fd, &d->counters_fd, &d->cursor_fd,
		       &d->parklog_fd, &d->mgr_fd };

	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++) {
		if (*fds[i] >= 0)
			close(*fds[i]);
		*fds[i] = -1;
	}
}

/* The pins a domain directory may hold, all of them ours. */
const char *const nfsl_domain_pins[] = {
	NFSL_PIN_STORE, NFSL_PIN_CONFIG, NFSL_PIN_COUNTERS, NFSL_PIN_CURSOR,
	NFSL_PIN_SPLICER, NFSL_PIN_NETNS, NFSL_PIN_CHAIN, NFSL_PIN_PARKLOG,
	NFSL_PIN_MGR_COUNTERS, NFSL_PIN_RESIDENCY, NFSL_PIN_TENANT_CURSOR,
	NFSL_PIN_TENANT_COUNTERS, NFSL_PIN_TENANT_PREFIX, NFSL_PIN_TENANT_VLAN,
	NFSL_PIN_EVENTS, NFSL_PIN_HOLDING, NFSL_PIN_ROUTE_GEN,
};
_Static_assert(sizeof(nfsl_domain_pins) / sizeof(nfsl_domain_pins[0]) == NFSL_NR_DOMAIN_PINS,
	       "NFSL_NR_DOMAIN_PINS counts nfsl_domain_pins");

/*
 * The namespace probe: an sk_lookup program that passes every lookup
 * (r0 = SK_PASS, no socket selected: the kernel's own lookup goes on),
 * linked to the network namespace. The kernel detaches a netns link when
 * its namespace exits and then reports netns_ino 0; the link holds no
 * reference on the namespace, so it never keeps one alive.
 */
int nfsl_netns_probe_create(const char *dir)
{
	struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 1 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	LIBBPF_OPTS(bpf_prog_load_opts, po, .expected_attach_type = BPF_SK_LOOKUP);
	char path[PATH_MAX + 32];
	int prog = -1, ns = -1, link = -1, err = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, NFSL_PIN_NETNS);
	prog = bpf_prog_load(BPF_PROG_TYPE_SK_LOOKUP, "nfsl_netns", "GPL", insns,
			     sizeof(insns) / sizeof(insns[0]), &po);
	if (prog < 0) {
		err = -errno;
		goto out;
	}
	ns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	if (ns < 0) {
		err = -errno;
		goto out;
	}
	link = bpf_link_create(prog, ns, BPF_SK_LOOKUP, NULL);
	if (link < 0) {
		err = -errno;
		goto out;
	}
	if (bpf_obj_pin(link, path))
		err = -errno;
out:
	if (link >= 0)
		close(link);
	if (ns >= 0)
		close(ns);
	if (prog >= 0)
		close(prog);
	return err;
}

int nfsl_netns_probe(const char *dir, __u64 *ino)
{
	struct bpf_link_info info = {};
	__u32 len = sizeof(info);
	char path[PATH_MAX + 32];
	int fd, err = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, NFSL_PIN_NETNS);
	fd = bpf_obj_get(path);
	if (fd < 0)
		return -errno;
	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		err = -errno;
	else if (info.type != BPF_LINK_TYPE_NETNS)
		err = -EINVAL;
	close(fd);
	if (err)
		return err;
	*ino = info.netns.netns_ino;
	return *ino != 0;
}

int nfsl_domains_lock(void)
{
	int fd = open(NFSL_LOCK_FILE, O_RDWR | O_CREAT | O_CLOEXEC, 0600);

	if (fd < 0)
		return -errno;
	if (flock(fd, LOCK_EX)) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

const char *nfsl_lock_strerror(int err)
{
	if (err == -EACCES || err == -EPERM)
		return "Permission denied (" NFSL_DAC_WHY "): run as root, or give this "
		       "user CAP_DAC_OVERRIDE besides CAP_BPF, CAP_NET_ADMIN and CAP_SYS_ADMIN";
	return strerror(-err);
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
	cfg->route_cache_us = NFSL_DEF_ROUTE_CACHE_MS * 1000;
	if (getrandom(cfg->key, sizeof(cfg->key), 0) != sizeof(cfg->key))
		return errno ? -errno : -EIO;
	return 0;
}

int nfsl_config_split(struct nfsl_config *cfg)
{
	__u32 total = cfg->part_slots * cfg->ncpus * (cfg->nparts ? cfg->nparts : 1);
	__u32 nparts = 1;

	for (__u32 i = 0; i < cfg->nifaces && i < NFSL_MAX_IFACES; i++) {
		struct nfsl_iface *ifc = &cfg->ifaces[i];

		ifc->part = ifc->flags & NFSL_IF_NF_PORT ? nparts++ : 0;
	}
	if (total / (cfg->ncpus * nparts) == 0)
		return -ENOSPC;
	cfg->nparts = nparts;
	cfg->part_slots = total / (cfg->ncpus * nparts);
	cfg->slots = cfg->part_slots * cfg->ncpus * nparts;
	return 0;
}

int nfsl_domain_mgr_counters(const struct nfsl_domain *d, struct nfsl_mgr_counters *c)
{
	__u32 zero = 0;

	memset(c, 0, sizeof(*c));
	if (d->mgr_fd < 0)
		return 0;
	return bpf_map_lookup_elem(d->mgr_fd, &zero, c) ? -errno : 0;
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
