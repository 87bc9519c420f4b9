// SPDX-License-Identifier: GPL-2.0
/*
 * The splicer's egress hook: TCX (Linux >= 6.6) where the kernel has it,
 * else a direct-action filter on a tc clsact qdisc.
 *
 * Why TCX first: adding or deleting a qdisc, the clsact one included, goes
 * through qdisc_graft(), which deactivates the device for the swap; what
 * the device transmits meanwhile is dropped (4 datagrams in 10 clsact adds
 * and deletes at 30 kpps here, 20 in 5 attach/detach cycles of a domain;
 * none with the qdisc left in place, docs/platform.md). A TCX attachment
 * grafts nothing: attach, detach, upgrade and migration then lose no
 * packet. Both kinds persist without a process holding them and go with
 * the device.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "nfsl/egress.h"
#include "util/log.h"

/* enum bpf_attach_type of Linux >= 6.6; the build's UAPI headers may be
 * older. */
#define NFSL_TCX_EGRESS 47

/* Id of our splicer among the TCX egress programs of @ifindex, or 0. */
static __u32 tcx_find(int ifindex)
{
	__u32 ids[64], cnt = 64, flags = 0;

	if (bpf_prog_query(ifindex, NFSL_TCX_EGRESS, 0, &flags, ids, &cnt))
		return 0;
	for (__u32 i = 0; i < cnt && i < 64; i++) {
		struct bpf_prog_info info = {};
		__u32 len = sizeof(info);
		int fd = bpf_prog_get_fd_by_id(ids[i]);
		bool ours;

		if (fd < 0)
			continue;
		ours = !bpf_obj_get_info_by_fd(fd, &info, &len) &&
		       !strcmp(info.name, NFSL_SPLICER_PROG);
		close(fd);
		if (ours)
			return ids[i];
	}
	return 0;
}

__u32 nfsl_splicer_attached(int ifindex)
{
	DECLARE_LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex,
			    .attach_point = BPF_TC_EGRESS);
	DECLARE_LIBBPF_OPTS(bpf_tc_opts, opts, .handle = NFSL_TC_HANDLE,
			    .priority = NFSL_TC_PRIO);
	bool quiet = nfsl_quiet_libs;
	__u32 id = tcx_find(ifindex);
	int err;

	if (id)
		return id;
	/* No filter there is an answer, not a warning. */
	nfsl_quiet_libs = true;
	err = bpf_tc_query(&hook, &opts);
	nfsl_quiet_libs = quiet;
	return err ? 0 : opts.prog_id;
}

/* The clsact fallback of nfsl_egress_attach. */
static int clsact_attach(int ifindex, int prog_fd, __u32 *flags)
{
	DECLARE_LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex,
			    .attach_point = BPF_TC_EGRESS);
	DECLARE_LIBBPF_OPTS(bpf_tc_opts, opts, .handle = NFSL_TC_HANDLE,
			    .priority = NFSL_TC_PRIO, .prog_fd = prog_fd);
	int err;

	/* An existing clsact (EEXIST) is used as it is: no warning. */
	nfsl_quiet_libs = true;
	err = bpf_tc_hook_create(&hook);
	nfsl_quiet_libs = false;
	if (!err)
		*flags |= NFSL_IF_CREATED_CLSACT;
	else if (err != -EEXIST)
		return err;
	return bpf_tc_attach(&hook, &opts);
}

int nfsl_egress_attach(int ifindex, int prog_fd, __u32 *flags)
{
	const char *force = getenv("NFSLICE_EGRESS");

	/* NFSLICE_EGRESS=clsact: the fallback on purpose (its tests). */
	if (force && !strcmp(force, "clsact"))
		return clsact_attach(ifindex, prog_fd, flags);
	if (!bpf_prog_attach(prog_fd, ifindex, NFSL_TCX_EGRESS, 0)) {
		*flags |= NFSL_IF_TCX;
		return 0;
	}
	/* EINVAL: no TCX in this kernel (or not for this program type). */
	if (errno != EINVAL)
		return -errno;
	return clsact_attach(ifindex, prog_fd, flags);
}

int nfsl_egress_replace(const struct nfsl_iface *ifc, int prog_fd)
{
	DECLARE_LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifc->ifindex,
			    .attach_point = BPF_TC_EGRESS);
	DECLARE_LIBBPF_OPTS(bpf_tc_opts, opts, .handle = NFSL_TC_HANDLE,
			    .priority = NFSL_TC_PRIO, .prog_fd = prog_fd,
			    .flags = BPF_TC_F_REPLACE);
	LIBBPF_OPTS(bpf_prog_attach_opts, o, .flags = BPF_F_REPLACE);
	__u32 id;
	int err;

	if (!(ifc->flags & NFSL_IF_TCX))
		return bpf_tc_attach(&hook, &opts);
	id = tcx_find(ifc->ifindex);
	if (!id)
		return -ENOENT;
	o.replace_prog_fd = bpf_prog_get_fd_by_id(id);
	if (o.replace_prog_fd < 0)
		return -errno;
	/* One step: the old program runs until the new one does. */
	err = bpf_prog_attach_opts(prog_fd, ifc->ifindex, NFSL_TCX_EGRESS, &o) ? -errno : 0;
	close(o.replace_prog_fd);
	return err;
}

void nfsl_egress_detach(const struct nfsl_iface *ifc)
{
	DECLARE_LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifc->ifindex,
			    .attach_point = BPF_TC_EGRESS);
	DECLARE_LIBBPF_OPTS(bpf_tc_opts, opts, .handle = NFSL_TC_HANDLE,
			    .priority = NFSL_TC_PRIO);
	__u32 id = tcx_find(ifc->ifindex);

	if (id) {
		int fd = bpf_prog_get_fd_by_id(id);

		if (fd >= 0) {
			bpf_prog_detach2(fd, ifc->ifindex, NFSL_TCX_EGRESS);
			close(fd);
		}
	}
	/* A clsact filter too: attached by an older nfslice, or the
	 * fallback. */
	nfsl_quiet_libs = true;
	bpf_tc_detach(&hook, &opts);
	nfsl_quiet_libs = false;
	if (ifc->flags & NFSL_IF_CREATED_CLSACT) {
		/* We made the clsact qdisc: remove it with our filter. */
		hook.attach_point = BPF_TC_INGRESS | BPF_TC_EGRESS;
		bpf_tc_hook_destroy(&hook);
	}
}
