/* SPDX-License-Identifier: GPL-2.0 */
/* Commands of the nfslice CLI and the helpers they share. */
#ifndef NFSL_NFSLICE_H
#define NFSL_NFSLICE_H

#include <stdbool.h>
#include <net/if.h>
#include "util/caps.h"
#include "util/cli.h"
#include "util/log.h"
#include "util/params.h"
#include "nfsl/domain.h"

extern const struct nfsl_cmd nfsl_cmd_attach, nfsl_cmd_detach,
	nfsl_cmd_repair, nfsl_cmd_status, nfsl_cmd_stats, nfsl_cmd_list,
	nfsl_cmd_gc, nfsl_cmd_set, nfsl_cmd_upgrade, nfsl_cmd_checkpoint,
	nfsl_cmd_restore, nfsl_cmd_migrate, nfsl_cmd_adopt, nfsl_cmd_evict, nfsl_cmd_tenants,
	nfsl_cmd_events;

/* Print "nfslice: <msg>" to stderr (under --json: collected for the JSON
 * error object); returns -1 for `return nfsl_err(...);`. */
#define nfsl_err(...) nfsl_msg("nfslice: ", __VA_ARGS__)

/* What nfsl_bpffs_enter returned at start-up: nfsl_err_domain explains a
 * missing bpffs with it. */
extern int nfsl_bpffs_state;

/* Explain a failure to find the domain's pins (-ENOMEDIUM: no bpffs,
 * -ENOENT: no domain), naming the fix. Returns -1. */
int nfsl_err_domain(int err, const char *name);

/* Capabilities of the commands that change interfaces and pins, and of
 * those that read program ids (BPF_PROG_GET_FD_BY_ID needs CAP_SYS_ADMIN). */
#define NFSL_CAPS_CHANGE (NFSL_CAP(CAP_BPF) | NFSL_CAP(CAP_NET_ADMIN) | NFSL_CAP(CAP_SYS_ADMIN))
#define NFSL_CAPS_CHANGE_WHY \
	"CAP_BPF loads programs and pins maps, CAP_NET_ADMIN attaches them to " \
	"interfaces (XDP, tc) and sets sysctls, CAP_SYS_ADMIN reads the programs " \
	"already attached (libxdp) and enters the host's mount namespace"
#define NFSL_CAPS_READ (NFSL_CAP(CAP_BPF) | NFSL_CAP(CAP_SYS_ADMIN))
#define NFSL_CAPS_READ_WHY \
	"CAP_BPF opens the pinned maps, CAP_SYS_ADMIN reads the attached programs " \
	"by id and enters namespaces"

/* pin_at - pin @map as @dir/@name: created and pinned by the first
 * object loaded, reused by every later one (attach, repair, upgrade).
 * use_domain_maps - point the four shared maps of an object (SKEL_MAPS)
 * at the domain's pins, the store sized @slots. Return 0 or -errno. */
struct bpf_map;
int pin_at(struct bpf_map *map, const char *dir, const char *name);
int use_domain_maps(struct bpf_map *const maps[4], const char *dir, __u32 slots);
#define SKEL_MAPS(skel)                                                        \
	((struct bpf_map *const[4]){ (skel)->maps.nfsl_store,                  \
				     (skel)->maps.nfsl_config,                 \
				     (skel)->maps.nfsl_counters,               \
				     (skel)->maps.nfsl_cursor })
/* use_slicer_maps - the same for a slicer object, with the maps only the
 * slicer has: its chain map, its park log (sized @slots, as the store) and
 * the counters of user space's evictions; created and pinned by the first
 * slicer loaded, a domain attached by an older nfslice included (repair,
 * upgrade). Returns 0 or -errno. */
struct slicer_bpf;
int use_slicer_maps(struct slicer_bpf *sl, const char *dir, __u32 slots);
/* use_splicer_maps - the same for a splicer: the shared maps and its
 * residency histogram (NFSL_PIN_RESIDENCY). */
struct splicer_bpf;
int use_splicer_maps(struct splicer_bpf *sp, const char *dir, __u32 slots);

/*
 * nfsl_detach_locked - detach domain @name of the current network
 * namespace (nfslice detach's engine), the host-wide lock already held by
 * the caller (nfslice gc). @no_drain: do not wait for parked headers.
 * Prints what it did. Returns 0 (also when there is no such domain) or
 * -1 after a message.
 */
int nfsl_detach_locked(const char *name, bool no_drain);

/* Name of the XDP program in the dispatcher, to find ours again. */
#define NFSL_SLICER_PROG "nfsl_slicer"

/* Attach mode of our slicer on @ifindex: "native", "skb", or NULL when it
 * is not attached there; *@prog_id gets its id. */
const char *nfsl_slicer_attached(int ifindex, __u32 *prog_id);

/* Name of the splicer program, to find ours among an egress hook's. */
#define NFSL_SPLICER_PROG "nfsl_splicer"

/* The splicer's egress hook (loader/egress.c): TCX where the kernel has
 * it (NFSL_IF_TCX set in *@flags), else a tc clsact filter
 * (NFSL_IF_CREATED_CLSACT when the qdisc was made for it). 0 or -errno. */
int nfsl_egress_attach(int ifindex, int prog_fd, __u32 *flags);

/* Replace our splicer on @ifc's egress with @prog_fd in one step. 0 or
 * -errno (-ENOENT: no splicer of ours there). */
int nfsl_egress_replace(const struct nfsl_iface *ifc, int prog_fd);

/* Remove our splicer from @ifc's egress (TCX or clsact filter) and the
 * clsact qdisc if attach made it. */
void nfsl_egress_detach(const struct nfsl_iface *ifc);

/* Id of our splicer on @ifindex's egress (TCX or tc), 0 when absent. */
__u32 nfsl_splicer_attached(int ifindex);

/* One interface of a domain as the kernel shows it now, in the caller's
 * network namespace. */
struct nfsl_iface_state {
	char name[IF_NAMESIZE]; /* "" when gone */
	bool gone;              /* no such ifindex: deleted or moved away */
	const char *xdp;        /* slicer mode, NULL when missing */
	__u32 xdp_id, tc_id;    /* program ids, 0 when missing */
};

/* A domain's health: every interface there, every slicer and splicer
 * attached. */
#define NFSL_MAX_PROBLEMS (2 * NFSL_MAX_IFACES + 2)
struct nfsl_health {
	struct nfsl_iface_state ifs[NFSL_MAX_IFACES];
	unsigned int nproblems;
	bool gone;    /* an interface is gone: repair cannot help */
	bool missing; /* a slicer or splicer is missing: repair restores it */
	char problems[NFSL_MAX_PROBLEMS][128];
};

/* Check domain @d (its config and pins) against the kernel, in the
 * caller's network namespace. Returns the number of problems. */
unsigned int nfsl_domain_health(const struct nfsl_domain *d, struct nfsl_health *h);

/* The name of interface @i of @h for messages: "dut0", "ifindex 7". */
const char *nfsl_health_ifname(const struct nfsl_health *h,
			       const struct nfsl_config *cfg, __u32 i, char *buf,
			       size_t len);

#endif /* NFSL_NFSLICE_H */
