// SPDX-License-Identifier: GPL-2.0
/*
 * nfslice upgrade: replace the slicer and splicer of a running domain with
 * this build's programs (issue 10 §6), reusing the pinned store, key,
 * configuration, counters, cursors and chain map.
 *
 * Never two slicers in series: on an interface the kernel holds one XDP
 * program, and XDP_FLAGS_REPLACE swaps the old for the new in one step
 * (bpf_xdp_attach with old_prog_fd: it fails, changing nothing, if another
 * program took the hook meanwhile). Never a slicer without a splicer:
 * every splicer is replaced first, in place (tc filter replace, the same
 * handle and priority), and the new splicer reads the tokens of the old
 * slicer (same store, key and token format), so at every moment each
 * interface has exactly one slicer and one splicer.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/if_link.h>

#include "nfslice.h"
#include "util/json_writer.h"
#include "netdev.h"
#include "util/util.h"
#include "slicer.skel.h"
#include "splicer.skel.h"

/* Load this build's splicer on the domain's maps. */
static int load_splicer_new(const struct nfsl_domain *d, struct splicer_bpf **out)
{
	struct splicer_bpf *sp = splicer_bpf__open();
	int err;

	if (!sp)
		return -errno;
	err = use_splicer_maps(sp, d->dir, d->cfg.slots);
	if (!err)
		err = splicer_bpf__load(sp);
	if (err) {
		splicer_bpf__destroy(sp);
		return err;
	}
	*out = sp;
	return 0;
}

/* Swap the slicer on @ifc for a fresh instance of this build's, in one
 * step. Returns 0, or -errno (-ENOENT: no slicer of ours there). */
static int replace_xdp(const struct nfsl_iface *ifc, const struct nfsl_domain *d,
		       __u32 *old_id, __u32 *new_id)
{
	__u32 mode = ifc->flags & NFSL_IF_SKB_MODE ? XDP_FLAGS_SKB_MODE : XDP_FLAGS_DRV_MODE;
	LIBBPF_OPTS(bpf_xdp_attach_opts, o);
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);
	struct slicer_bpf *sl;
	int old_fd = -1, err;

	err = bpf_xdp_query_id(ifc->ifindex, mode, old_id);
	if (err)
		return err;
	if (!*old_id)
		return -ENOENT;
	old_fd = bpf_prog_get_fd_by_id(*old_id);
	if (old_fd < 0)
		return -errno;
	/* Ours, not a dispatcher or somebody else's program. */
	if (bpf_obj_get_info_by_fd(old_fd, &info, &len) ||
	    strcmp(info.name, NFSL_SLICER_PROG)) {
		close(old_fd);
		return -ENOENT;
	}
	sl = slicer_bpf__open();
	if (!sl) {
		close(old_fd);
		return -errno;
	}
	err = use_slicer_maps(sl, d->dir, d->cfg.slots);
	if (!err)
		err = slicer_bpf__load(sl);
	if (!err) {
		o.old_prog_fd = old_fd;
		err = bpf_xdp_attach(ifc->ifindex, bpf_program__fd(sl->progs.nfsl_slicer),
				     XDP_FLAGS_REPLACE | mode, &o);
	}
	if (!err) {
		memset(&info, 0, sizeof(info));
		len = sizeof(info);
		if (!bpf_obj_get_info_by_fd(bpf_program__fd(sl->progs.nfsl_slicer), &info, &len))
			*new_id = info.id;
	}
	slicer_bpf__destroy(sl); /* the kernel keeps the attached program */
	close(old_fd);
	return err;
}

/* Pin the new splicer in place of the old one: pin beside, rename over
 * (the pin never goes missing for repair or detach). */
static int repin_splicer(const char *dir, struct bpf_program *prog)
{
	char path[PATH_MAX + 32], tmp[PATH_MAX + 40];
	int err;

	snprintf(path, sizeof(path), "%s/%s", dir, NFSL_PIN_SPLICER);
	snprintf(tmp, sizeof(tmp), "%s_new", path); /* bpffs refuses names with a dot */
	unlink(tmp);
	err = bpf_program__pin(prog, tmp);
	if (err)
		return err;
	if (rename(tmp, path)) {
		err = -errno;
		unlink(tmp);
	}
	return err;
}

struct upgrade_opts {
	char *name;
	bool json;
};

/* --json: what was replaced and how long each step took (ns, CLOCK_MONOTONIC). */
static void upgrade_report(const char *name, int nsplicers, int nslicers, const __u64 t[5])
{
	struct json_writer jw;

	jsonw_init(&jw, stdout);
	jsonw_start_object(&jw);
	jsonw_string_field(&jw, "name", name);
	jsonw_uint_field(&jw, "splicers", nsplicers);
	jsonw_uint_field(&jw, "slicers", nslicers);
	jsonw_uint_field(&jw, "lock_ns", t[4] - t[0]);
	jsonw_uint_field(&jw, "load_ns", t[1] - t[0]);
	jsonw_uint_field(&jw, "splicers_ns", t[2] - t[1]);
	jsonw_uint_field(&jw, "slicers_ns", t[3] - t[2]);
	jsonw_uint_field(&jw, "total_ns", t[3] - t[0]);
	jsonw_end_object(&jw);
}

static int run_upgrade(void *p, int argc, char **argv)
{
	const struct upgrade_opts *o = p;
	const char *name = o->name;
	struct splicer_bpf *sp = NULL;
	struct nfsl_health h;
	struct nfsl_domain d;
	char buf[32];
	int err, lock, nsplicers = 0, nslicers = 0;
	/* start, new splicer loaded, splicers swapped, slicers swapped, locked */
	__u64 t[5];

	t[0] = nfsl_now_ns();
	lock = nfsl_domains_lock();
	if (lock < 0)
		return nfsl_err("cannot lock %s: %s", NFSL_LOCK_FILE, nfsl_lock_strerror(lock));
	t[4] = nfsl_now_ns();
	err = nfsl_domain_open(&d, name);
	if (err) {
		nfsl_err_domain(err, name);
		goto out_unlock;
	}
	err = -1;
	/* A damaged domain first gets repaired: upgrade replaces programs, it
	 * does not add missing ones. */
	if (nfsl_domain_health(&d, &h)) {
		for (unsigned int i = 0; i < h.nproblems; i++)
			nfsl_err("domain '%s': %s", name, h.problems[i]);
		nfsl_err("upgrade needs a whole domain: run nfslice repair --name %s first "
			 "(nothing was changed)", name);
		goto out;
	}
	err = load_splicer_new(&d, &sp);
	if (err) {
		nfsl_err("loading the new splicer failed (%s): nothing was changed; "
			 "NFSLICE_VERBOSE=1 shows the verifier log", strerror(-err));
		err = -1;
		goto out;
	}
	t[1] = nfsl_now_ns();
	for (__u32 i = 0; i < d.cfg.nifaces; i++) {
		const struct nfsl_iface *ifc = &d.cfg.ifaces[i];

		if (ifc->flags & NFSL_IF_NF_PORT)
			continue;
		err = nfsl_egress_replace(ifc, bpf_program__fd(sp->progs.nfsl_splicer));
		if (err) {
			nfsl_err("replacing the splicer on %s failed (%s) after %d of the "
				 "domain's splicers were replaced: the old and new splicers "
				 "read the same tokens, so the domain works; run upgrade again",
				 nfsl_health_ifname(&h, &d.cfg, i, buf, sizeof(buf)),
				 strerror(-err), nsplicers);
			err = -1;
			goto out;
		}
		nsplicers++;
	}
	err = repin_splicer(d.dir, sp->progs.nfsl_splicer);
	if (err) {
		nfsl_err("pinning the new splicer failed (%s); it is attached, but "
			 "repair would re-attach the old one", strerror(-err));
		err = -1;
		goto out;
	}
	t[2] = nfsl_now_ns();
	for (__u32 i = 0; i < d.cfg.nifaces; i++) {
		const struct nfsl_iface *ifc = &d.cfg.ifaces[i];
		const char *ifname = nfsl_health_ifname(&h, &d.cfg, i, buf, sizeof(buf));
		__u32 old_id = 0, new_id = 0;

		/* NF ports too: their slicer takes the drop notices. */
		err = replace_xdp(ifc, &d, &old_id, &new_id);
		if (err == -ENOENT) {
			nfsl_err("the XDP program on %s is not nfslice's slicer alone (a "
				 "dispatcher, or another program): upgrade swaps a slicer it "
				 "finds attached by itself; detach and attach instead", ifname);
		} else if (err) {
			nfsl_err("replacing the slicer on %s failed (%s); the old one "
				 "runs there with the new splicer", ifname, strerror(-err));
		}
		if (err) {
			err = -1;
			goto out;
		}
		if (!o->json)
			printf("nfslice: %s: slicer %u -> %u\n", ifname, old_id, new_id);
		nslicers++;
	}
	t[3] = nfsl_now_ns();
	if (o->json)
		upgrade_report(name, nsplicers, nslicers, t);
	else
		printf("nfslice: domain '%s' upgraded: %d splicers, %d slicers replaced; "
		       "store, key and counters kept\n", name, nsplicers, nslicers);
	err = 0;
out:
	splicer_bpf__destroy(sp);
	nfsl_domain_close(&d);
out_unlock:
	close(lock);
	return err ? -1 : 0;
}

static const struct upgrade_opts upgrade_defaults = { .name = "default" };

static const struct nfsl_opt upgrade_table[] = {
	{ "name", NFSL_OPT_STR, offsetof(struct upgrade_opts, name),
	  .check = nfsl_name_opt_check, .metavar = "NAME",
	  .help = "domain name (default: default)" },
	{ "json", NFSL_OPT_FLAG, offsetof(struct upgrade_opts, json),
	  .help = "print the programs replaced and each step's time (lock_ns, load_ns, "
		  "splicers_ns, slicers_ns, total_ns: ns) as one JSON object" },
	{ NULL },
};

const struct nfsl_cmd nfsl_cmd_upgrade = {
	.name = "upgrade",
	.summary = "replace a running domain's programs with this build's",
	.description =
		"Loads this nfslice's slicer and splicer on the domain's pinned store,\n"
		"key, configuration, counters, cursors and chain map, and swaps them in\n"
		"for the running ones: first every splicer (tc filter replace, in\n"
		"place), then every slicer (XDP_FLAGS_REPLACE: one program out, the\n"
		"other in, in one step). So there is never a moment with two slicers in\n"
		"series (the second would drop the first's headers as replayed) nor one\n"
		"with a slicer and no splicer, and payloads parked by the old slicer\n"
		"are spliced by the new splicer. The new programs must read the old\n"
		"ones' store and tokens (the same format); a damaged domain must be\n"
		"repaired first. Not for a slicer inside libxdp's dispatcher (this\n"
		"kernel refuses the dispatcher: docs/platform.md). --json times the\n"
		"steps (loading the new splicer, swapping the splicers, loading and\n"
		"swapping the slicers) in ns; load_ns includes lock_ns, the wait for\n"
		"the host-wide lock, and the domain's health check.",
	.caps = NFSL_CAPS_CHANGE,
	.caps_why = NFSL_CAPS_CHANGE_WHY,
	.opts = upgrade_table,
	.run = run_upgrade,
	.opts_size = sizeof(struct upgrade_opts),
	.defaults = &upgrade_defaults,
};
