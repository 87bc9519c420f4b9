/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A slicing domain as user space sees it: where its pins live, its maps,
 * its configuration, its summed counters and its store occupancy. Used by
 * the nfslice CLI, the benchmarks and later user-space parts (manager,
 * AF_XDP engine).
 */
#ifndef NFSL_DOMAIN_H
#define NFSL_DOMAIN_H

#include <limits.h>
#include <stddef.h>
#include "nfsl_structs.h"

/* Pin file names inside a domain directory. */
#define NFSL_PIN_STORE "store"
#define NFSL_PIN_CONFIG "config"
#define NFSL_PIN_COUNTERS "counters"
#define NFSL_PIN_CURSOR "cursor"
#define NFSL_PIN_SPLICER "splicer"
/* Serialises attach and detach of every domain on the host. */
#define NFSL_LOCK_FILE "/run/nfslice.lock"
#define NFSL_NAME_MAX 64

struct nfsl_domain {
	char dir[PATH_MAX]; /* pin directory of the domain */
	int store_fd, config_fd, counters_fd, cursor_fd;
	struct nfsl_config cfg;
};

/* bpffs holding the pins: $NFSLICE_BPFFS if set, else /sys/fs/bpf. */
const char *nfsl_bpffs(void);

/*
 * nfsl_bpffs_enter - make nfsl_bpffs() the persistent bpffs of the host.
 * `ip netns exec` runs commands in a fresh mount namespace with its own
 * /sys, where a bpffs mounted by hand vanishes, unpinning libxdp's links
 * and our maps, when the command exits. So when an ancestor process (the
 * shell that ran `ip netns exec`) sits in another mount namespace whose
 * /sys/fs/bpf is a bpffs, move into that mount namespace (setns). The
 * network namespace is unchanged, so domains stay per network namespace.
 * With $NFSLICE_BPFFS set, no namespace is changed. Call before any thread
 * starts. Returns 0, -ENOENT when nfsl_bpffs() is no bpffs, other -errno.
 */
int nfsl_bpffs_enter(void);

/* Directory of domains of this network namespace:
 * <bpffs>/nfslice/ns<netns cookie>. Returns 0, -ENOMEDIUM when there is
 * no bpffs, other -errno. */
int nfsl_netns_dir(char *buf, size_t len);

/* Pin directory of domain @name in this network namespace. */
int nfsl_domain_dir(char *buf, size_t len, const char *name);

/* Check a domain name: 1..63 chars of [A-Za-z0-9_.-]. Returns 0 or -EINVAL. */
int nfsl_name_check(const char *name);

/*
 * nfsl_domain_open - open the pinned maps of domain @name and read its
 * config. Returns 0, -ENOENT if the domain is not attached in this network
 * namespace, other -errno on failure.
 */
int nfsl_domain_open(struct nfsl_domain *d, const char *name);
void nfsl_domain_close(struct nfsl_domain *d);

/* Sum the per-CPU counters into @sum. Returns 0 or -errno. */
int nfsl_domain_counters(const struct nfsl_domain *d, struct nfsl_counters *sum);
/* The same from the fd of a counters map (a domain's, or one loaded by a
 * test or benchmark). */
int nfsl_counters_sum(int counters_fd, struct nfsl_counters *sum);

/*
 * nfsl_config_init - a domain configuration as attach writes it: @slots
 * split evenly into @ncpus per-CPU partitions (rounded down to a multiple
 * of @ncpus), a fresh random SipHash key, no interfaces yet. Returns 0,
 * -EINVAL when @ncpus is not 1..NFSL_MAX_CPUS or @slots < @ncpus, or the
 * -errno of getrandom.
 */
int nfsl_config_init(struct nfsl_config *cfg, __u32 threshold, __u32 keep,
		     __u32 slots, __u32 expiry, int ncpus);

/* Count busy slots (expiry count != 0) through an mmap of the store.
 * Returns 0 or -errno. */
int nfsl_domain_busy_slots(const struct nfsl_domain *d, __u32 *busy);

/* Counter names in struct order (the NFSL_COUNTERS list). */
extern const char *const nfsl_counter_names[];
#define NFSL_NR_COUNTERS (sizeof(struct nfsl_counters) / sizeof(__u64))

#endif /* NFSL_DOMAIN_H */
