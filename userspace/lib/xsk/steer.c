// SPDX-License-Identifier: GPL-2.0
/*
 * Steering of frames to the NF's sockets (bpf/steer.bpf.c): its XSKMAP
 * keys and groups, and where it runs. In a slicing domain it goes into
 * the slicer's chain map, so it runs after the slicer on every domain
 * interface (libxdp's dispatcher cannot load here: docs/platform.md);
 * elsewhere it is attached to the NF's interfaces through bpf_links this
 * process owns, so the kernel detaches it when the process dies, SIGKILL
 * included, and the same command starts again (issue 17 §3).
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/if_link.h>
#include <xdp/libxdp.h>

#include "nfsl/domain.h"
#include "util/cli.h"
#include "xsk/nfsl_xsk_int.h"
#include "steer.skel.h"

static int fail(char *err, size_t len, int rc, const char *msg, const char *arg)
{
	snprintf(err, len, msg, arg, strerror(-rc));
	return rc;
}

/* Name of the XDP program on @ifindex, or NULL when there is none. */
static const char *xdp_prog_on(int ifindex, char *buf, size_t len)
{
	struct xdp_multiprog *mp = xdp_multiprog__get_from_ifindex(ifindex);
	struct xdp_program *p;
	const char *name = NULL;

	if (libxdp_get_error(mp) || !mp)
		return NULL;
	p = xdp_multiprog__is_legacy(mp) ? xdp_multiprog__main_prog(mp)
					 : xdp_multiprog__next_prog(NULL, mp);
	if (p) {
		snprintf(buf, len, "%s", xdp_program__name(p));
		name = buf;
	}
	xdp_multiprog__close(mp);
	return name;
}

/*
 * A process other than this one that holds BPF program @id through a
 * file descriptor (the program's own, or a bpf_link's to it: their fdinfo
 * names "prog_id"), or 0 when none does: the program then lives on only
 * through what it is
 * attached to (an interface, a prog array) or a pin, its loader gone.
 * Scans /proc; called only when a steering program is found in place.
 */
static pid_t prog_holder(__u32 id)
{
	DIR *proc = opendir("/proc");
	struct dirent *pe;
	pid_t found = 0;

	while (proc && !found && (pe = readdir(proc))) {
		char path[640], want[32], line[128];
		struct dirent *fe;
		DIR *fds;

		/* Not us: libxdp's look at the interface may still hold it. */
		if (!isdigit((unsigned char)pe->d_name[0]) || atoi(pe->d_name) == getpid())
			continue;
		snprintf(path, sizeof(path), "/proc/%s/fd", pe->d_name);
		fds = opendir(path);
		snprintf(want, sizeof(want), "prog_id:\t%u\n", id);
		while (fds && !found && (fe = readdir(fds))) {
			char link[64];
			ssize_t n = readlinkat(dirfd(fds), fe->d_name, link, sizeof(link) - 1);
			FILE *f;

			if (n <= 0)
				continue;
			link[n] = '\0';
			if (strncmp(link, "anon_inode:bpf", 14))
				continue;
			snprintf(path, sizeof(path), "/proc/%s/fdinfo/%s", pe->d_name, fe->d_name);
			f = fopen(path, "re");
			while (f && fgets(line, sizeof(line), f))
				if (!strcmp(line, want)) {
					found = atoi(pe->d_name);
					break;
				}
			if (f)
				fclose(f);
		}
		if (fds)
			closedir(fds);
	}
	if (proc)
		closedir(proc);
	return found;
}

/*
 * Device @i runs an nfsl_steer program. If no process holds it, it is the
 * steering of an nfslice-nf that died without detaching it (killed while
 * an nfslice before bpf_links attached through netlink): detach it, only
 * that program (XDP_FLAGS_REPLACE), and say so. If one does, that NF is
 * alive: refuse, naming its pid. Returns 0 when the device is free now.
 */
static int take_over_stale(struct nfsl_xsk *x, int i, char *err, size_t errlen)
{
	LIBBPF_OPTS(bpf_xdp_query_opts, q);
	LIBBPF_OPTS(bpf_xdp_attach_opts, a);
	__u32 id, mode;
	pid_t holder;
	int fd, rc;

	if (bpf_xdp_query(x->ifindex[i], 0, &q))
		return fail(err, errlen, -errno, "cannot query the XDP program of %s: %s",
			    x->devname[i]);
	id = q.prog_id;
	mode = q.attach_mode == XDP_ATTACHED_SKB ? XDP_FLAGS_SKB_MODE : XDP_FLAGS_DRV_MODE;
	if (!id)
		return 0; /* gone meanwhile */
	holder = prog_holder(id);
	if (holder) {
		snprintf(err, errlen,
			 "%s already runs the steering program of another nfslice-nf (program "
			 "id %u, held by pid %d): stop that NF first, or give this one other "
			 "interfaces", x->devname[i], id, (int)holder);
		return -EEXIST;
	}
	fd = bpf_prog_get_fd_by_id(id);
	if (fd < 0)
		return errno == ENOENT ? 0 : fail(err, errlen, -errno,
						  "cannot open the stale steering program on %s: %s",
						  x->devname[i]);
	a.old_prog_fd = fd;
	rc = bpf_xdp_detach(x->ifindex[i], mode | XDP_FLAGS_REPLACE, &a);
	close(fd);
	if (rc)
		return fail(err, errlen, rc,
			    "cannot detach the stale steering program on %s (ip link set dev "
			    "IFACE xdp off removes it): %s", x->devname[i]);
	fprintf(stderr,
		"nfsl_xsk: %s: took over from a steering program (id %u) that no process "
		"holds: an nfslice-nf that died without detaching it\n", x->devname[i], id);
	return 0;
}

/* The domain's chain map; every device must be one of its interfaces. */
static int open_chain(struct nfsl_xsk *x, char *err, size_t errlen)
{
	char dir[PATH_MAX], path[PATH_MAX + 32];
	struct nfsl_domain d;
	int rc;

	rc = nfsl_domain_open(&d, x->o.domain);
	if (rc)
		return fail(err, errlen, rc, "cannot open domain %s: %s", x->o.domain);
	for (int i = 0; i < x->ndevs; i++) {
		bool found = false;

		for (__u32 k = 0; k < d.cfg.nifaces; k++)
			found |= d.cfg.ifaces[k].ifindex == x->ifindex[i] &&
				 !(d.cfg.ifaces[k].flags & NFSL_IF_NF_PORT);
		if (!found) {
			snprintf(err, errlen,
				 "%s is not a sliced interface of domain %s: detach the domain and "
				 "attach it again with every interface the NF serves (nfslice "
				 "attach --name %s IFACE...), or run without --name",
				 x->devname[i], x->o.domain, x->o.domain);
			nfsl_domain_close(&d);
			return -EINVAL;
		}
	}
	snprintf(dir, sizeof(dir), "%s", d.dir);
	nfsl_domain_close(&d);
	snprintf(path, sizeof(path), "%s/%s", dir, NFSL_PIN_CHAIN);
	x->chain_fd = bpf_obj_get(path);
	if (x->chain_fd < 0) {
		rc = -errno;
		snprintf(err, errlen,
			 "domain %s has no chain map (%s: %s): it was attached by an older "
			 "nfslice; detach and attach it again",
			 x->o.domain, path, strerror(-rc));
		return rc;
	}
	return 0;
}

/* Start step 1: every socket into the XSKMAP, every (interface, queue)
 * group's sockets and steering mode into the groups map. */
static int maps_fill(struct nfsl_xsk *x, char *err, size_t errlen)
{
	int xsks_fd = bpf_map__fd(x->steer->maps.nfsl_xsks);
	int groups_fd = bpf_map__fd(x->steer->maps.nfsl_groups);

	for (int i = 0; i < x->nsocks; i++) {
		if (bpf_map_update_elem(xsks_fd, &x->socks[i].key, &x->socks[i].fd, 0))
			return fail(err, errlen, -errno, "cannot insert a socket into the XSKMAP%s: %s",
				    "");
	}
	for (int gi = 0; gi < x->ngroups; gi++) {
		struct nfsl_xsk_group *g = &x->groups[gi];
		struct nfsl_steer_key k = { .ifindex = g->ifindex, .queue = g->queue };
		struct nfsl_steer_grp v = { .base = g->socks[0]->key, .nsock = g->nsock };

		if (x->o.port_dev == g->dev + 1) {
			v.mode = NFSL_STEER_DPORT;
			v.start_port = x->o.port_start;
		}

		if (bpf_map_update_elem(groups_fd, &k, &v, 0))
			return fail(err, errlen, -errno, "cannot write the steering groups%s: %s", "");
	}
	return 0;
}

/* Start step 2, inline: chain the program @prog_fd after the domain's
 * slicer, replacing (with a warning) what a previous NF left there. */
static int chain_after_slicer(struct nfsl_xsk *x, int prog_fd, char *err, size_t errlen)
{
	__u32 zero = 0, old;
	int rc;

	rc = open_chain(x, err, errlen);
	if (rc)
		return rc;
	/* A chain entry outlives its NF (the prog array holds the
	 * program): a killed NF's steering finds no socket and passes
	 * every frame to the kernel (tc splicer) until this replaces it.
	 * nfsl_warn: stderr, also under --json. */
	if (!bpf_map_lookup_elem(x->chain_fd, &zero, &old)) {
		pid_t holder = prog_holder(old);

		if (holder)
			nfsl_warn("nfsl_xsk: warning: ",
				  "domain %s already fed the steering program id %u of "
				  "the running pid %d; replacing it (that NF gets no "
				  "more frames)", x->o.domain, old, (int)holder);
		else
			nfsl_warn("nfsl_xsk: ",
				  "domain %s: replacing the steering program id %u of "
				  "an nfslice-nf that is gone", x->o.domain, old);
	}
	if (bpf_map_update_elem(x->chain_fd, &zero, &prog_fd, 0))
		return fail(err, errlen, -errno, "cannot chain the steering program after the slicer of %s: %s",
			    x->o.domain);
	return 0;
}

/* Start step 2, no domain: attach the program @prog_fd to each interface
 * by a bpf_link of this process, taking over a dead NF's. */
static int attach_links(struct nfsl_xsk *x, int prog_fd, char *err, size_t errlen)
{
	char buf[64];
	int rc;

	for (int i = 0; i < x->ndevs; i++) {
		const char *other = xdp_prog_on(x->ifindex[i], buf, sizeof(buf));
		LIBBPF_OPTS(bpf_link_create_opts, lo, .flags = XDP_FLAGS_DRV_MODE);

		if (other && !strcmp(other, "nfsl_steer")) {
			rc = take_over_stale(x, i, err, errlen);
			if (rc)
				return rc;
			other = xdp_prog_on(x->ifindex[i], buf, sizeof(buf));
		}
		if (other) {
			snprintf(err, errlen,
				 "%s already runs the XDP program %s%s", x->devname[i], other,
				 !strcmp(other, "nfsl_slicer")
					 ? ": it is sliced, so give its domain (--name DOMAIN)"
					 : ": detach it first (xdp-loader unload)");
			return -EEXIST;
		}
		/* A bpf_link, not a netlink attach: it goes with this process. */
		rc = bpf_link_create(prog_fd, x->ifindex[i], BPF_XDP, &lo);
		if (rc < 0)
			return fail(err, errlen, -errno,
				    "cannot attach the steering program to %s: %s", x->devname[i]);
		x->steer_link[i] = rc;
		x->steer_attached = true;
	}
	return 0;
}

int nfsl_xsk_steer_start(struct nfsl_xsk *x, char *err, size_t errlen)
{
	int prog_fd, rc;

	x->steer = steer_bpf__open_and_load();
	if (!x->steer)
		return fail(err, errlen, -errno, "cannot load the steering program%s: %s", "");
	prog_fd = bpf_program__fd(x->steer->progs.nfsl_steer);
	rc = maps_fill(x, err, errlen);
	if (rc)
		return rc;
	rc = x->o.domain ? chain_after_slicer(x, prog_fd, err, errlen)
			 : attach_links(x, prog_fd, err, errlen);
	if (rc)
		return rc;
	x->steering = true;
	return 0;
}

/* Frames from now on go to the kernel: sockets out of the XSKMAP first
 * (bpf_redirect_map then passes), then the program unhooked. */
void nfsl_xsk_steer_stop(struct nfsl_xsk *x)
{
	int xsks_fd = bpf_map__fd(x->steer->maps.nfsl_xsks);
	__u32 zero = 0, id;

	for (int i = 0; i < x->nsocks; i++)
		bpf_map_delete_elem(xsks_fd, &x->socks[i].key);
	if (x->chain_fd >= 0) {
		struct bpf_prog_info info = {};
		__u32 len = sizeof(info);

		/* Only our own entry: another NF may have replaced it. */
		if (!bpf_map_lookup_elem(x->chain_fd, &zero, &id) &&
		    !bpf_obj_get_info_by_fd(bpf_program__fd(x->steer->progs.nfsl_steer),
					    &info, &len) &&
		    id == info.id)
			bpf_map_delete_elem(x->chain_fd, &zero);
	}
	x->steering = false;
}

void nfsl_xsk_steer_close(struct nfsl_xsk *x)
{
	/* Closing the link detaches the program (as the process's death
	 * would). */
	for (int i = 0; i < NFSL_XSK_MAX_DEVS; i++) {
		if (x->steer_link[i] >= 0)
			close(x->steer_link[i]);
		x->steer_link[i] = -1;
	}
	x->steer_attached = false;
	if (x->chain_fd >= 0)
		close(x->chain_fd);
	x->chain_fd = -1;
	steer_bpf__destroy(x->steer);
	x->steer = NULL;
}

int nfsl_xsk_steer_stats(const struct nfsl_xsk *x, struct nfsl_steer_counters *out)
{
	int ncpu = libbpf_num_possible_cpus();
	struct nfsl_steer_counters *v;
	__u32 zero = 0;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	if (!x->steer)
		return -ENOENT;
	if (ncpu < 0)
		return ncpu;
	v = calloc(ncpu, sizeof(*v));
	if (!v)
		return -ENOMEM;
	if (bpf_map_lookup_elem(bpf_map__fd(x->steer->maps.nfsl_steer_stats), &zero, v)) {
		rc = -errno;
		goto out;
	}
	for (int c = 0; c < ncpu; c++) {
#define NFSL_X_ADD(name) out->name += v[c].name;
		NFSL_STEER_COUNTERS(NFSL_X_ADD)
#undef NFSL_X_ADD
	}
out:
	free(v);
	return rc;
}
