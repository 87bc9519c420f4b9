// SPDX-License-Identifier: GPL-2.0
/*
 * nfslice attach / detach: load the slicer (XDP, libxdp dispatcher) and the
 * splicer (tc clsact egress) on every interface of a domain, with ONE store
 * pinned in the domain's directory; and undo all of it.
 */
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <xdp/libxdp.h>

#include "nfslice.h"
#include "domain.h"
#include "slicer.skel.h"
#include "splicer.skel.h"

struct attach_opts {
	const char *name;
	__u32 threshold, keep, slots, expiry;
	int mode; /* index into modes[] */
};

static const char *const modes[] = { "native", "skb", NULL };

static const struct attach_opts attach_defaults = {
	.name = "default",
	.threshold = NFSL_DEF_THRESHOLD,
	.keep = NFSL_DEF_KEEP,
	.slots = NFSL_DEF_SLOTS,
	.expiry = NFSL_DEF_EXPIRY,
};

/* Pins of the shared maps, in bpf object order. */
static const char *const map_pins[] = {
	NFSL_PIN_STORE, NFSL_PIN_CONFIG, NFSL_PIN_COUNTERS, NFSL_PIN_CURSOR,
};

/* Point the four maps of @obj at the domain's pins: the first object loaded
 * creates and pins them, every later one reuses them (one store). */
static int use_domain_maps(struct bpf_map *const maps[4], const char *dir,
			   __u32 slots)
{
	char path[PATH_MAX + 32];
	int err;

	for (int i = 0; i < 4; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, map_pins[i]);
		err = bpf_map__set_pin_path(maps[i], path);
		if (err)
			return err;
	}
	return bpf_map__set_max_entries(maps[0], slots);
}

#define SKEL_MAPS(skel)                                                        \
	((struct bpf_map *const[4]){ (skel)->maps.nfsl_store,                  \
				     (skel)->maps.nfsl_config,                 \
				     (skel)->maps.nfsl_counters,               \
				     (skel)->maps.nfsl_cursor })

static int write_config(const char *dir, const struct nfsl_config *cfg)
{
	char path[PATH_MAX + 32];
	__u32 zero = 0;
	int fd, err = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, NFSL_PIN_CONFIG);
	fd = bpf_obj_get(path);
	if (fd < 0)
		return -errno;
	if (bpf_map_update_elem(fd, &zero, cfg, 0))
		err = -errno;
	close(fd);
	return err;
}

static int iface_mtu(const char *ifname, __u32 *mtu)
{
	struct ifreq ifr = {};
	int fd, err = 0;

	fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0)
		return -errno;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	if (ioctl(fd, SIOCGIFMTU, &ifr))
		err = -errno;
	else
		*mtu = ifr.ifr_mtu;
	close(fd);
	return err;
}

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

__u32 nfsl_splicer_attached(int ifindex)
{
	DECLARE_LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex,
			    .attach_point = BPF_TC_EGRESS);
	DECLARE_LIBBPF_OPTS(bpf_tc_opts, opts, .handle = NFSL_TC_HANDLE,
			    .priority = NFSL_TC_PRIO);

	return bpf_tc_query(&hook, &opts) ? 0 : opts.prog_id;
}

static void detach_xdp(int ifindex)
{
	struct xdp_multiprog *mp = xdp_multiprog__get_from_ifindex(ifindex);
	struct xdp_program *p;

	if (libxdp_get_error(mp) || !mp)
		return;
	p = xdp_multiprog__is_legacy(mp) ? xdp_multiprog__main_prog(mp)
					 : xdp_multiprog__next_prog(NULL, mp);
	for (; p; p = xdp_multiprog__next_prog(p, mp)) {
		if (!strcmp(xdp_program__name(p), NFSL_SLICER_PROG)) {
			xdp_program__detach(p, ifindex,
					    xdp_multiprog__attach_mode(mp), 0);
			break;
		}
		if (xdp_multiprog__is_legacy(mp))
			break;
	}
	xdp_multiprog__close(mp);
}

static void detach_tc(const struct nfsl_iface *ifc)
{
	DECLARE_LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifc->ifindex,
			    .attach_point = BPF_TC_EGRESS);
	DECLARE_LIBBPF_OPTS(bpf_tc_opts, opts, .handle = NFSL_TC_HANDLE,
			    .priority = NFSL_TC_PRIO);

	bpf_tc_detach(&hook, &opts);
	if (ifc->flags & NFSL_IF_CREATED_CLSACT) {
		/* We made the clsact qdisc: remove it with our filter. */
		hook.attach_point = BPF_TC_INGRESS | BPF_TC_EGRESS;
		bpf_tc_hook_destroy(&hook);
	}
}

/* Undo everything a (possibly half-done) attach left: programs on the
 * interfaces recorded in @cfg, then the pins and directories. */
static void teardown(const char *dir, const struct nfsl_config *cfg)
{
	char path[PATH_MAX + 32];

	for (__u32 i = 0; cfg && i < cfg->nifaces && i < NFSL_MAX_IFACES; i++) {
		detach_xdp(cfg->ifaces[i].ifindex);
		detach_tc(&cfg->ifaces[i]);
	}
	for (size_t i = 0; i < 4; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, map_pins[i]);
		unlink(path);
	}
	snprintf(path, sizeof(path), "%s/%s", dir, NFSL_PIN_SPLICER);
	unlink(path);
	rmdir(dir);
	/* Parents go too once empty (ns<cookie>, then nfslice). */
	snprintf(path, sizeof(path), "%s", dir);
	for (int up = 0; up < 2; up++) {
		char *slash = strrchr(path, '/');

		if (!slash)
			break;
		*slash = '\0';
		if (rmdir(path))
			break;
	}
}

static int mkdir_p(const char *dir)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s", dir);
	for (char *p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(path, 0700) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	return mkdir(path, 0700) && errno != EEXIST ? -errno : 0;
}

static int load_splicer(const char *dir, struct nfsl_config *cfg,
			struct splicer_bpf **out)
{
	char path[PATH_MAX + 32];
	struct splicer_bpf *sp;
	int err;

	sp = splicer_bpf__open();
	if (!sp)
		return -errno;
	err = use_domain_maps(SKEL_MAPS(sp), dir, cfg->slots);
	if (!err)
		err = splicer_bpf__load(sp);
	if (err) {
		nfsl_err("loading the splicer failed (%s): this kernel lacks a feature "
			 "nfslice needs (BTF, BPF atomics, mmapable arrays, bpf_check_mtu: "
			 "Linux >= 5.18); NFSLICE_VERBOSE=1 shows the verifier log",
			 strerror(-err));
		goto out;
	}
	snprintf(path, sizeof(path), "%s/%s", dir, NFSL_PIN_SPLICER);
	err = bpf_program__pin(sp->progs.nfsl_splicer, path);
	if (!err)
		err = write_config(dir, cfg);
out:
	if (err)
		splicer_bpf__destroy(sp);
	else
		*out = sp;
	return err;
}

static int attach_tc(int ifindex, int prog_fd, __u32 *flags)
{
	DECLARE_LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex,
			    .attach_point = BPF_TC_EGRESS);
	DECLARE_LIBBPF_OPTS(bpf_tc_opts, opts, .handle = NFSL_TC_HANDLE,
			    .priority = NFSL_TC_PRIO, .prog_fd = prog_fd);
	int err;

	err = bpf_tc_hook_create(&hook);
	if (!err)
		*flags |= NFSL_IF_CREATED_CLSACT;
	else if (err != -EEXIST)
		return err;
	return bpf_tc_attach(&hook, &opts);
}

/* Each interface gets its own instance of the slicer (libxdp links one
 * program into one dispatcher); all instances share the domain's maps. */
static int attach_xdp(int ifindex, const char *dir, __u32 slots, int mode)
{
	struct xdp_program *prog = NULL;
	struct slicer_bpf *sl;
	int err;

	sl = slicer_bpf__open();
	if (!sl)
		return -errno;
	err = use_domain_maps(SKEL_MAPS(sl), dir, slots);
	if (err)
		goto out;
	prog = xdp_program__from_bpf_obj(sl->obj, "xdp");
	err = libxdp_get_error(prog);
	if (err) {
		prog = NULL;
		goto out;
	}
	nfsl_quiet_libs = true;
	err = xdp_program__attach(prog, ifindex,
				  mode ? XDP_MODE_SKB : XDP_MODE_NATIVE, 0);
	nfsl_quiet_libs = false;
out:
	xdp_program__close(prog);
	slicer_bpf__destroy(sl);
	return err;
}

/* libxdp falls back to a single program per interface when the kernel
 * refuses its dispatcher (e.g. freplace programs not permitted): say so,
 * since other XDP programs then cannot run beside the slicer. */
static void warn_legacy(int argc, char **argv, const int *ifindex)
{
	for (int i = 0; i < argc; i++) {
		struct xdp_multiprog *mp = xdp_multiprog__get_from_ifindex(ifindex[i]);

		if (!libxdp_get_error(mp) && mp && xdp_multiprog__is_legacy(mp))
			fprintf(stderr,
				"nfslice: note: the kernel refused the libxdp dispatcher on %s, "
				"so the slicer is the only XDP program there "
				"(NFSLICE_VERBOSE=1 shows why)\n", argv[i]);
		if (!libxdp_get_error(mp))
			xdp_multiprog__close(mp);
	}
}

static int check_ifaces(int argc, char **argv, int *ifindex, __u32 *min_mtu)
{
	__u32 prog_id, mtu = 0;

	if (argc > NFSL_MAX_IFACES)
		return nfsl_err("a domain has at most %d interfaces (%d given)",
				NFSL_MAX_IFACES, argc);
	*min_mtu = ~0u;
	for (int i = 0; i < argc; i++) {
		ifindex[i] = if_nametoindex(argv[i]);
		if (!ifindex[i])
			return nfsl_err("unknown interface '%s' in this network namespace "
					"(list them with: ip link)", argv[i]);
		for (int j = 0; j < i; j++)
			if (ifindex[j] == ifindex[i])
				return nfsl_err("interface '%s' is given twice; list each interface once", argv[i]);
		if (nfsl_slicer_attached(ifindex[i], &prog_id))
			return nfsl_err("interface '%s' already belongs to a slicing domain "
					"(see nfslice status); detach that domain first",
					argv[i]);
		if (iface_mtu(argv[i], &mtu))
			return nfsl_err("cannot read the MTU of '%s': %s", argv[i],
					strerror(errno));
		if (mtu < *min_mtu)
			*min_mtu = mtu;
	}
	return 0;
}

static int run_attach(void *o, int argc, char **argv)
{
	struct attach_opts *opt = o;
	struct nfsl_config cfg = {};
	struct splicer_bpf *sp = NULL;
	int ifindex[NFSL_MAX_IFACES];
	char dir[PATH_MAX];
	bool made = false;
	int ncpus, err;

	if (nfsl_require_root())
		return -1;
	err = nfsl_domain_dir(dir, sizeof(dir), opt->name);
	if (err == -EINVAL)
		return nfsl_err_domain(err, opt->name);
	if (err)
		return nfsl_err_domain(err, opt->name);
	if (!access(dir, F_OK))
		return nfsl_err("domain '%s' is already attached in this network namespace "
				"(pins in %s); detach it first: nfslice detach --name %s",
				opt->name, dir, opt->name);
	if (check_ifaces(argc, argv, ifindex, &cfg.max_l3))
		return -1;
	ncpus = libbpf_num_possible_cpus();
	if (ncpus <= 0 || ncpus > NFSL_MAX_CPUS)
		return nfsl_err("cannot use %d CPUs (at most %d)", ncpus, NFSL_MAX_CPUS);
	if (opt->slots < (__u32)ncpus)
		return nfsl_err("--slots %u is too small: each of the %d CPUs allocates "
				"from its own partition, so give at least %d",
				opt->slots, ncpus, ncpus);

	cfg.threshold = opt->threshold;
	cfg.keep = opt->keep;
	cfg.ncpus = ncpus;
	cfg.part_slots = opt->slots / ncpus;
	cfg.slots = cfg.part_slots * ncpus;
	cfg.expiry = opt->expiry;
	if (getrandom(cfg.key, sizeof(cfg.key), 0) != sizeof(cfg.key))
		return nfsl_err("cannot get a random MAC key: %s", strerror(errno));

	err = mkdir_p(dir);
	if (err) {
		nfsl_err("cannot create %s: %s", dir, strerror(-err));
		goto out;
	}
	made = true;
	err = load_splicer(dir, &cfg, &sp);
	if (err)
		goto out;
	for (int i = 0; i < argc; i++) {
		struct nfsl_iface *ifc = &cfg.ifaces[i];

		/* Record the interface before touching it, so a detach after an
		 * interrupted attach still finds it. */
		ifc->ifindex = ifindex[i];
		ifc->flags = opt->mode ? NFSL_IF_SKB_MODE : 0;
		cfg.nifaces = i + 1;
		err = write_config(dir, &cfg);
		if (!err) {
			err = attach_tc(ifindex[i], bpf_program__fd(sp->progs.nfsl_splicer),
					&ifc->flags);
			if (err)
				nfsl_err("attaching the splicer to %s (tc egress) failed: %s",
					 argv[i], strerror(-err));
		}
		if (!err)
			err = write_config(dir, &cfg);
		if (!err) {
			err = attach_xdp(ifindex[i], dir, cfg.slots, opt->mode);
			if (err == -ERANGE)
				nfsl_err("attaching the slicer to %s failed: its MTU (or its veth "
					 "peer's) is too large for XDP without frags; lower it, "
					 "e.g. ip link set dev %s mtu 1500", argv[i], argv[i]);
			else if (err)
				nfsl_err("attaching the slicer to %s (XDP %s) failed: %s%s",
					 argv[i], modes[opt->mode], strerror(-err),
					 opt->mode ? "" : "; try --mode skb if the driver has no native XDP");
		}
		if (err)
			goto out;
	}
	warn_legacy(argc, argv, ifindex);
	printf("nfslice: domain '%s' attached to", opt->name);
	for (int i = 0; i < argc; i++)
		printf(" %s", argv[i]);
	printf(" (%u slots, threshold %u B, keep %u B, expiry %u, XDP %s)\npins: %s\n",
	       cfg.slots, cfg.threshold, cfg.keep, cfg.expiry, modes[opt->mode], dir);
out:
	splicer_bpf__destroy(sp);
	if (err && made)
		teardown(dir, &cfg);
	return err ? -1 : 0;
}

static int run_detach(void *o, int argc, char **argv)
{
	const char *name = *(const char **)o;
	struct nfsl_domain d;
	int err;

	if (nfsl_require_root())
		return -1;
	err = nfsl_domain_open(&d, name);
	if (err == -ENOENT && d.dir[0] && !access(d.dir, F_OK)) {
		/* Half-made domain (attach killed early): remove its pins. */
		teardown(d.dir, NULL);
		nfsl_domain_close(&d);
		printf("nfslice: removed incomplete domain '%s'\n", name);
		return 0;
	}
	if (err)
		return nfsl_err_domain(err, name);
	teardown(d.dir, &d.cfg);
	nfsl_domain_close(&d);
	printf("nfslice: domain '%s' detached\n", name);
	return 0;
}

static const struct nfsl_opt attach_table[] = {
	{ "name", NFSL_OPT_STR, offsetof(struct attach_opts, name), .metavar = "NAME",
	  .help = "domain name (default: default); one namespace's names are its own" },
	{ "threshold", NFSL_OPT_U32, offsetof(struct attach_opts, threshold), 0, 65535,
	  .metavar = "BYTES", .help = "slice frames of at least BYTES bytes (default 256)" },
	{ "keep", NFSL_OPT_U32, offsetof(struct attach_opts, keep), 0, NFSL_KEEP_MAX,
	  .metavar = "BYTES", .help = "payload bytes left after the L4 header (default 0, max 192)" },
	{ "slots", NFSL_OPT_U32, offsetof(struct attach_opts, slots), 1, NFSL_MAX_SLOTS,
	  .metavar = "N", .help = "store slots of 2 KiB, split among CPUs (default 4096)" },
	{ "expiry", NFSL_OPT_U32, offsetof(struct attach_opts, expiry), 1, NFSL_MAX_EXPIRY,
	  .metavar = "N", .help = "allocator wrap-arounds a busy slot survives (default 2)" },
	{ "mode", NFSL_OPT_ENUM, offsetof(struct attach_opts, mode), .choices = modes,
	  .metavar = "MODE", .help = "XDP mode: native or skb (default native)" },
	{ NULL },
};

const struct nfsl_cmd nfsl_cmd_attach = {
	.name = "attach",
	.args = "IFACE...",
	.min_args = 1,
	.max_args = NFSL_MAX_IFACES,
	.summary = "attach a slicing domain to interfaces",
	.description =
		"Loads the slicer (XDP, through the libxdp dispatcher, so other XDP\n"
		"programs keep running) on the ingress and the splicer (tc clsact) on the\n"
		"egress of every IFACE, all sharing one store of N slots pinned in\n"
		"/sys/fs/bpf/nfslice/ns<netns cookie>/NAME/ (see 'nfslice status').\n"
		"Frames of at least --threshold bytes have their UDP/TCP payload beyond\n"
		"--keep bytes parked; the packet goes on with DSCP 63 and a 16-byte\n"
		"token. Slots are taken FIFO per CPU; a busy slot is evicted after\n"
		"--expiry wrap-arounds (PayloadPark Alg. 1, NFSlicer §III-C). Every\n"
		"interface the network function may send on must be in the domain.\n"
		"Errors: unknown interface, name already attached, no bpffs, not root,\n"
		"kernel feature missing; a failed attach leaves nothing behind.",
	.opts = attach_table,
	.run = run_attach,
	.opts_size = sizeof(struct attach_opts),
	.defaults = &attach_defaults,
};

static const char *const detach_defaults = "default";

static const struct nfsl_opt detach_table[] = {
	{ "name", NFSL_OPT_STR, 0, .metavar = "NAME", .help = "domain name (default: default)" },
	{ NULL },
};

const struct nfsl_cmd nfsl_cmd_detach = {
	.name = "detach",
	.summary = "detach a slicing domain and remove its pins",
	.description =
		"Removes the slicer and the splicer from every interface of the domain,\n"
		"the clsact qdiscs nfslice created, and the pinned maps. Payloads still\n"
		"parked are dropped with the store. Also cleans up after an attach that\n"
		"was interrupted.",
	.opts = detach_table,
	.run = run_detach,
	.opts_size = sizeof(const char *),
	.defaults = &detach_defaults,
};
