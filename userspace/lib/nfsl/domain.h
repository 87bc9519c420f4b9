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
/* The slicer's chain map (PROG_ARRAY): the NF steering program that gets
 * what the slicer passes (nfslice-nf --name, bpf/steer.bpf.c). */
#define NFSL_PIN_CHAIN "chain"
/* The slicer's park log (struct nfsl_park_rec) and the counters of the
 * evictions user space makes (struct nfsl_mgr_counters), both read by the
 * TTL scan (ttl.h). A domain attached by an older nfslice has neither
 * until an upgrade or repair loads this build's slicer. */
#define NFSL_PIN_PARKLOG "parklog"
#define NFSL_PIN_MGR_COUNTERS "mgr_counters"
/* The splicer's residency histogram (NFSL_RES_BUCKETS, nfsl_consts.h). */
#define NFSL_PIN_RESIDENCY "residency"
/* The slicer's tenant maps (issue 10 §5, userspace/lib/nfsl/tenant.h): each
 * tenant's allocation state and counters, its prefix and VLAN rules. */
#define NFSL_PIN_TENANT_CURSOR "tenant_cursor"
#define NFSL_PIN_TENANT_COUNTERS "tenant_counters"
#define NFSL_PIN_TENANT_PREFIX "tenant_prefix"
#define NFSL_PIN_TENANT_VLAN "tenant_vlan"
/* Drop events ring buffer (struct nfsl_event), issue 10 §4. */
#define NFSL_PIN_EVENTS "events"
/* The namespace probe (nfsl_netns_probe): a BPF link to the domain's
 * network namespace that tells whether it still exists. */
#define NFSL_PIN_NETNS "netns"
/* The tag of an instance a migration attached holding (holding.h): there
 * only from its attach until it slices. */
#define NFSL_PIN_HOLDING "holding"
/* The slicer's route generation (one __u64, mmapable): its route verdict
 * cache holds entries of the current generation only (route.h). */
#define NFSL_PIN_ROUTE_GEN "route_gen"
/* Every pin a domain directory may hold, all of them ours: the four maps
 * and the splicer every domain has first, then the rest (a domain attached
 * by an older nfslice may lack them). */
extern const char *const nfsl_domain_pins[];
#define NFSL_NR_DOMAIN_PINS 17
#define NFSL_NR_DOMAIN_PINS_ALWAYS 5

/* Serialises attach and detach of every domain on the host. */
#define NFSL_LOCK_FILE "/run/nfslice.lock"
#define NFSL_NAME_MAX 64

struct nfsl_domain {
	char dir[PATH_MAX]; /* pin directory of the domain */
	int store_fd, config_fd, counters_fd, cursor_fd;
	struct nfsl_config cfg;
	/* -1 where the domain has none (attached by an older nfslice) */
	int parklog_fd, mgr_fd;
};

/* bpffs holding the pins: $NFSLICE_BPFFS if set, else /sys/fs/bpf. */
const char *nfsl_bpffs(void);

/*
 * nfsl_bpffs_enter - make nfsl_bpffs() the persistent bpffs of the host.
 * `ip netns exec` runs commands in a fresh mount namespace with its own
 * /sys, where a bpffs mounted by hand vanishes, unpinning libxdp's links
 * and our maps, when the command exits. So move (setns) into the mount
 * namespace, other than ours, whose /sys/fs/bpf is a bpffs, looked for in
 * this order:
 *  1. PID 1's (/proc/1/ns/mnt), the host's: it works whoever started us
 *     (systemd, a daemon, a process orphaned inside `ip netns exec`);
 *  2. the outermost ancestor's (the shell that ran `ip netns exec`);
 *  3. only when PID 1's cannot be read (a sandbox that denies ptrace
 *     access to PID 1) and ours has no bpffs: the lowest-numbered user
 *     process's that has one (the oldest: on a host, its early daemons).
 * The network namespace is unchanged, so domains stay per network
 * namespace. With $NFSLICE_BPFFS set, no namespace is changed. Call
 * before any thread starts. Returns 0; -ENOENT when there is no bpffs at
 * nfsl_bpffs() where we end up, PID 1's namespace included; -EACCES when
 * there is none we could find but PID 1's namespace could not be read
 * (there may be one there); other -errno (setns) on failure.
 */
int nfsl_bpffs_enter(void);

/* SO_NETNS_COOKIE of the calling thread's network namespace. */
int nfsl_netns_cookie(__u64 *cookie);

/* Directory of domains of this network namespace:
 * <bpffs>/nfslice/ns<netns cookie>. Returns 0, -ENOMEDIUM when there is
 * no bpffs, other -errno. */
int nfsl_netns_dir(char *buf, size_t len);

/* Pin directory of domain @name in this network namespace. */
int nfsl_domain_dir(char *buf, size_t len, const char *name);

/* The one rule of domain names (nfsl_name_check), as messages state it:
 * a name is a directory in bpffs, so '.', '..' (and, for one rule, any
 * name starting with '.') cannot be one. */
#define NFSL_NAME_RULE \
	"use 1-63 letters, digits, '_', '-' or '.' ('.' anywhere but first, " \
	"so not '.', '..' or '...')"

/* Check a domain name: 1..63 chars of [A-Za-z0-9_.-], the first not '.'.
 * Returns 0 or -EINVAL. */
int nfsl_name_check(const char *name);

/* nfsl_name_check for an option table's .check (struct nfsl_opt): NULL
 * when @name is valid, else NFSL_NAME_RULE. */
const char *nfsl_name_opt_check(const char *name);

/*
 * nfsl_map_value_check - is the value of map @fd @want bytes (per CPU, for
 * a per-CPU map)? 0, -EPROTO when not (a domain made by a build whose
 * structs differ), or -errno.
 */
int nfsl_map_value_check(int fd, __u32 want);

/*
 * nfsl_domain_open - open the pinned maps of domain @name and read its
 * config. Returns 0, -ENOENT if the domain is not attached in this network
 * namespace, -EPROTO if its maps have another build's layout (config,
 * counters, store or cursor values of another size: reading them would
 * overrun this build's structs), other -errno on failure.
 */
int nfsl_domain_open(struct nfsl_domain *d, const char *name);
/* The same for the domain whose pins are in @dir (any namespace's). */
int nfsl_domain_open_dir(struct nfsl_domain *d, const char *dir);
/* Close the fds; safe after a failed open (which closed them already). */
void nfsl_domain_close(struct nfsl_domain *d);

/*
 * nfsl_domain_remove - unlink every pin of the domain at @dir (ours only:
 * maps, splicer, namespace probe), the directory, and its parents
 * ns<cookie> and nfslice once empty. Its keys go to its retired list
 * first (retired.h), so that a domain attached again under its name
 * knows the headers it signed. Programs still attached stay. Returns
 * 0, or the first -errno (-ENOTEMPTY: a file that is not ours is there).
 * (remove.c: it uses retired.c, which uses this file.)
 */
int nfsl_domain_remove(const char *dir);

/*
 * nfsl_netns_probe_create - pin in @dir a namespace probe for the calling
 * thread's network namespace (an sk_lookup program that passes every
 * lookup, linked to the namespace; it holds no reference on it).
 * nfsl_netns_probe - read the probe of the domain at @dir: 1 the namespace
 * lives (*@ino: its nsfs inode, as stat(2) shows /proc/PID/ns/net), 0 it
 * is gone (the kernel detached the link when it exited), -ENOENT the
 * domain has no probe (attached by an older nfslice, or an attach killed
 * before it), other -errno.
 */
int nfsl_netns_probe_create(const char *dir);
int nfsl_netns_probe(const char *dir, __u64 *ino);

/* Take the host-wide lock on attach, detach, repair and gc
 * (NFSL_LOCK_FILE), waiting for it. Returns its fd (close releases it) or
 * -errno. */
int nfsl_domains_lock(void);

/* The reason of a failed nfsl_domains_lock @err (-errno) for a message:
 * strerror, and for -EACCES/-EPERM the fix (the lock file is root's, mode
 * 0600: root, or CAP_DAC_OVERRIDE for another user). A static string. */
const char *nfsl_lock_strerror(int err);

/* Why a user other than root needs CAP_DAC_OVERRIDE, for messages. */
#define NFSL_DAC_WHY                                                              \
	"as a user other than root: the lock file " NFSL_LOCK_FILE ", the bpffs "     \
	"directories and the pins are root's and private (mode 0600/0700: the pins " \
	"hold the MAC key)"

/* Sum the per-CPU counters into @sum. Returns 0 or -errno. */
int nfsl_domain_counters(const struct nfsl_domain *d, struct nfsl_counters *sum);
/* The same from the fd of a counters map (a domain's, or one loaded by a
 * test or benchmark). */
int nfsl_counters_sum(int counters_fd, struct nfsl_counters *sum);

/*
 * nfsl_config_init - a domain configuration as attach writes it: @slots
 * split evenly into @ncpus per-CPU partitions (rounded down to a multiple
 * of @ncpus), a fresh random SipHash key, no interfaces yet, the route
 * verdict cache on with its default age (NFSL_DEF_ROUTE_CACHE_MS). Returns 0,
 * -EINVAL when @ncpus is not 1..NFSL_MAX_CPUS or @slots < @ncpus, or the
 * -errno of getrandom.
 */
int nfsl_config_init(struct nfsl_config *cfg, __u32 threshold, __u32 keep,
		     __u32 slots, __u32 expiry, int ncpus);

/*
 * nfsl_config_split - once @cfg's interfaces are in: one store partition
 * per CPU for what leaves through domain interfaces, and one more per NF
 * port (PayloadPark §6.2.3's static slices per NF server), numbered in
 * ifaces[] order into each NF port's part; each CPU's share of the slots
 * is split evenly (rounded down). Returns 0, or -ENOSPC when a partition
 * would get no slot.
 */
int nfsl_config_split(struct nfsl_config *cfg);

/*
 * nfsl_domain_mgr_counters - read the counters of the evictions user
 * space made (the TTL scan) into @c: all zero for a domain that has no
 * such map yet. Returns 0 or -errno.
 */
int nfsl_domain_mgr_counters(const struct nfsl_domain *d, struct nfsl_mgr_counters *c);

/* Count busy slots (expiry count != 0) through an mmap of the store.
 * Returns 0 or -errno. */
int nfsl_domain_busy_slots(const struct nfsl_domain *d, __u32 *busy);

/* Counter names in struct order (the NFSL_COUNTERS list). */
extern const char *const nfsl_counter_names[];
#define NFSL_NR_COUNTERS (sizeof(struct nfsl_counters) / sizeof(__u64))
/* The same for struct nfsl_mgr_counters (NFSL_MGR_COUNTERS), without
 * the reserved words. */
extern const char *const nfsl_mgr_counter_names[];

#endif /* NFSL_DOMAIN_H */
