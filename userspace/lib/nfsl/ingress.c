// SPDX-License-Identifier: GPL-2.0
/*
 * The slicer's ingress hook: XDP through the libxdp dispatcher (other XDP
 * programs keep running beside it), one instance of the slicer per
 * interface (libxdp links one program into one dispatcher), all sharing
 * the domain's maps (pins.h). Where the kernel refuses the dispatcher the
 * slicer runs alone, and one loaded instance serves every interface of
 * the domain: the program reads all it knows of an interface from the
 * maps, and each load costs the verifier ~0.35 s (docs/platform.md).
 * See ingress.h.
 */
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/if_link.h>
#include <xdp/libxdp.h>

#include "nfsl/ingress.h"
#include "nfsl/errors.h"
#include "nfsl/pins.h"
#include "util/log.h"
#include "slicer.skel.h"

const char *nfsl_slicer_attached(int ifindex, __u32 *prog_id)
{
	struct xdp_multiprog *mp = xdp_multiprog__get_from_ifindex(ifindex);
	const char *mode = NULL;
	struct xdp_program *p;

	if (libxdp_get_error(mp) || !mp)
		return NULL;
	p = xdp_multiprog__is_legacy(mp) ? xdp_multiprog__main_prog(mp)
					 : xdp_multiprog__next_prog(NULL, mp);
	for (; p; p = xdp_multiprog__next_prog(p, mp)) {
		if (!strcmp(xdp_program__name(p), NFSL_SLICER_PROG)) {
			mode = xdp_multiprog__attach_mode(mp) == XDP_MODE_SKB
				       ? "skb" : "native";
			*prog_id = xdp_program__id(p);
			break;
		}
		if (xdp_multiprog__is_legacy(mp))
			break;
	}
	xdp_multiprog__close(mp);
	return mode;
}

int nfsl_slicer_detach(int ifindex)
{
	struct xdp_multiprog *mp = xdp_multiprog__get_from_ifindex(ifindex);
	struct xdp_program *p;
	__u32 id;
	int err = 0;

	if (!libxdp_get_error(mp) && mp) {
		p = xdp_multiprog__is_legacy(mp) ? xdp_multiprog__main_prog(mp)
						 : xdp_multiprog__next_prog(NULL, mp);
		for (; p; p = xdp_multiprog__next_prog(p, mp)) {
			if (!strcmp(xdp_program__name(p), NFSL_SLICER_PROG)) {
				err = xdp_program__detach(p, ifindex,
							  xdp_multiprog__attach_mode(mp), 0);
				break;
			}
			if (xdp_multiprog__is_legacy(mp))
				break;
		}
		xdp_multiprog__close(mp);
	}
	if (nfsl_slicer_attached(ifindex, &id))
		return err ? err : -EBUSY;
	return 0;
}

static __u32 xdp_flags(int mode)
{
	return mode ? XDP_FLAGS_SKB_MODE : XDP_FLAGS_DRV_MODE;
}

/* An fd of the program attached alone on @ifindex in @mode, our slicer
 * (*@id: its id); -ENOENT when something else is there (a dispatcher,
 * another program, nothing), or -errno. */
static int slicer_alone_fd(int ifindex, int mode, __u32 *id)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);
	int fd, err;

	*id = 0;
	err = bpf_xdp_query_id(ifindex, xdp_flags(mode), id);
	if (err)
		return err;
	if (!*id)
		return -ENOENT;
	fd = bpf_prog_get_fd_by_id(*id);
	if (fd < 0)
		return -errno;
	if (bpf_obj_get_info_by_fd(fd, &info, &len) || strcmp(info.name, NFSL_SLICER_PROG)) {
		close(fd);
		return -ENOENT;
	}
	return fd;
}

int nfsl_slicer_attach(int ifindex, const char *dir, __u32 slots, int mode, int *alone_fd)
{
	struct xdp_program *prog = NULL;
	struct slicer_bpf *sl;
	int err;

	if (alone_fd && *alone_fd >= 0) {
		/* What libxdp does without its dispatcher: attach if the
		 * interface has no XDP program (the caller checked for
		 * foreign ones). A driver without multi-buffer XDP whose MTU
		 * is too large for one page says -ERANGE. */
		return bpf_xdp_attach(ifindex, *alone_fd,
				      XDP_FLAGS_UPDATE_IF_NOEXIST | xdp_flags(mode), NULL);
	}
	sl = slicer_bpf__open();
	if (!sl)
		return -errno;
	err = nfsl_use_domain_maps(sl->obj, dir, slots);
	if (err)
		goto out;
	prog = xdp_program__from_bpf_obj(sl->obj, "xdp.frags");
	err = libxdp_get_error(prog);
	if (err) {
		prog = NULL;
		goto out;
	}
	nfsl_quiet_libs = true;
	err = xdp_program__attach(prog, ifindex,
				  mode ? XDP_MODE_SKB : XDP_MODE_NATIVE, 0);
	nfsl_quiet_libs = false;
	if (!err && alone_fd) {
		__u32 id;

		*alone_fd = slicer_alone_fd(ifindex, mode, &id);
		if (*alone_fd < 0)
			*alone_fd = -1; /* in a dispatcher: each interface loads its own */
	}
out:
	xdp_program__close(prog);
	slicer_bpf__destroy(sl);
	return err;
}

void nfsl_slicer_warn_legacy(const struct nfsl_config *cfg)
{
	char ifname[IF_NAMESIZE];

	for (__u32 i = 0; i < cfg->nifaces; i++) {
		struct xdp_multiprog *mp;

		if (cfg->ifaces[i].flags & NFSL_IF_NF_PORT)
			continue;
		mp = xdp_multiprog__get_from_ifindex(cfg->ifaces[i].ifindex);
		if (!libxdp_get_error(mp) && mp && xdp_multiprog__is_legacy(mp) &&
		    if_indextoname(cfg->ifaces[i].ifindex, ifname))
			fprintf(stderr,
				"nfslice: note: the kernel refused the libxdp dispatcher on %s, "
				"so the slicer is the only XDP program there "
				"(NFSLICE_VERBOSE=1 shows why)\n", ifname);
		if (!libxdp_get_error(mp))
			xdp_multiprog__close(mp);
	}
}

int nfsl_slicer_check_foreign(int ifindex, const char *ifname)
{
	struct xdp_multiprog *mp = xdp_multiprog__get_from_ifindex(ifindex);
	struct xdp_program *p;
	int err = 0;

	if (libxdp_get_error(mp) || !mp)
		return 0;
	p = xdp_multiprog__is_legacy(mp) ? xdp_multiprog__main_prog(mp) : NULL;
	if (p && strcmp(xdp_program__name(p), NFSL_SLICER_PROG))
		err = nfsl_err("interface '%s' already runs the XDP program '%s' (id %u) "
			       "outside a libxdp dispatcher, so the slicer cannot run "
			       "beside it; remove it first (xdp-loader unload %s --all, "
			       "or ip link set dev %s xdp off)", ifname,
			       xdp_program__name(p), xdp_program__id(p), ifname, ifname);
	xdp_multiprog__close(mp);
	return err;
}

/* A new instance of this build's slicer on the maps of @d: its fd, or
 * -errno. */
static int slicer_load(const struct nfsl_domain *d)
{
	struct slicer_bpf *sl = slicer_bpf__open();
	int fd, err;

	if (!sl)
		return -errno;
	err = nfsl_use_domain_maps(sl->obj, d->dir, d->cfg.slots);
	if (!err)
		err = slicer_bpf__load(sl);
	fd = err ? err : dup(bpf_program__fd(sl->progs.nfsl_slicer));
	if (fd < 0 && !err)
		fd = -errno;
	slicer_bpf__destroy(sl); /* the dup (then the kernel's link) keeps it */
	return fd;
}

int nfsl_slicer_replace(const struct nfsl_iface *ifc, const struct nfsl_domain *d,
			__u32 *old_id, __u32 *new_id, int *new_fd)
{
	int mode = ifc->flags & NFSL_IF_SKB_MODE ? 1 : 0;
	LIBBPF_OPTS(bpf_xdp_attach_opts, o);
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);
	int err;

	/* Ours, not a dispatcher or somebody else's program. */
	o.old_prog_fd = slicer_alone_fd(ifc->ifindex, mode, old_id);
	if (o.old_prog_fd < 0)
		return o.old_prog_fd;
	if (*new_fd < 0)
		*new_fd = slicer_load(d);
	err = *new_fd < 0 ? *new_fd : 0;
	if (!err)
		err = bpf_xdp_attach(ifc->ifindex, *new_fd, XDP_FLAGS_REPLACE | xdp_flags(mode), &o);
	if (!err && !bpf_obj_get_info_by_fd(*new_fd, &info, &len))
		*new_id = info.id;
	close(o.old_prog_fd);
	return err;
}
