// SPDX-License-Identifier: GPL-2.0
/*
 * nfslice attach / detach / repair: their options, over the engines of
 * userspace/lib/nfsl (attach.h, detach.h, repair.h).
 */
#include <stddef.h>

#include "nfslice.h"
#include "nfsl/attach.h"
#include "nfsl/cfg.h"
#include "nfsl/detach.h"
#include "nfsl/repair.h"
#include "nfsl/ttl.h"

struct attach_opts {
	const char *name;
	const char *nf_ports; /* comma-separated interface names, or NULL */
	const char *tenants;  /* tenants file (userspace/lib/nfsl/tenant.h), or NULL */
	__u32 threshold, keep, slots, expiry;
	__u32 ttl; /* ms, 0: off */
	__u32 route_cache_age; /* ms */
	int mode; /* index into modes[] */
	int route_cache; /* index into off_on[] */
	bool no_ct_liberal;
	bool events; /* write drop events (NFSL_CFG_EVENTS) */
};

static const char *const modes[] = { "native", "skb", NULL };
static const char *const off_on[] = { "off", "on", NULL };

static const struct attach_opts attach_defaults = {
	.name = "default",
	.threshold = NFSL_DEF_THRESHOLD,
	.keep = NFSL_DEF_KEEP,
	.slots = NFSL_DEF_SLOTS,
	.expiry = NFSL_DEF_EXPIRY,
	.ttl = NFSL_DEF_TTL_MS,
	.route_cache = 1,
	.route_cache_age = NFSL_DEF_ROUTE_CACHE_MS,
};

static int run_attach(void *o, int argc, char **argv)
{
	const struct attach_opts *opt = o;
	const struct nfsl_attach_req r = {
		.name = opt->name,
		.nf_ports = opt->nf_ports,
		.tenants = opt->tenants,
		.threshold = opt->threshold,
		.keep = opt->keep,
		.slots = opt->slots,
		.expiry = opt->expiry,
		.ttl = opt->ttl,
		.route_cache_ms = opt->route_cache ? opt->route_cache_age : 0,
		.mode = opt->mode,
		.no_ct_liberal = opt->no_ct_liberal,
		.events = opt->events,
	};

	return nfsl_attach(&r, argc, argv);
}

struct detach_opts {
	const char *name; /* first: repair reads the same options as a name */
	bool no_drain;
};

static int run_detach(void *o, int argc, char **argv)
{
	const struct detach_opts *opt = o;

	return nfsl_detach(opt->name, opt->no_drain);
}

static int run_repair(void *o, int argc, char **argv)
{
	return nfsl_repair(*(const char **)o);
}

static const struct nfsl_opt attach_table[] = {
	{ "name", NFSL_OPT_STR, offsetof(struct attach_opts, name),
	  .check = nfsl_name_opt_check, .metavar = "NAME",
	  .help = "domain name (default: default); one namespace's names are its own" },
	{ "threshold", NFSL_OPT_U32, offsetof(struct attach_opts, threshold), 0, 65535,
	  .metavar = "BYTES", .help = "slice frames of at least BYTES bytes (default 256)" },
	{ "keep", NFSL_OPT_U32, offsetof(struct attach_opts, keep), 0, NFSL_KEEP_MAX,
	  .metavar = "BYTES", .help = "payload bytes left after the L4 header (default 0, max 192)" },
	{ "slots", NFSL_OPT_U32, offsetof(struct attach_opts, slots), 1, NFSL_MAX_SLOTS,
	  .metavar = "N",
	  .help = "store slots of 2 KiB (default 4096), split into CPUs x (1 + NF ports) "
		  "equal partitions: rounded down to a multiple of their number" },
	{ "expiry", NFSL_OPT_U32, offsetof(struct attach_opts, expiry), 1, NFSL_MAX_EXPIRY,
	  .metavar = "N", .help = "allocator wrap-arounds a busy slot survives (default 2)" },
	{ "ttl", NFSL_OPT_DURATION, offsetof(struct attach_opts, ttl), 0, NFSL_MAX_TTL_MS,
	  .unit = NFSL_MS, .metavar = "MS",
	  .help = "evict payloads parked longer than MS ms, on top of --expiry (default 10, "
		  "0 off; applied by nfsliced's TTL scan or nfslice evict)" },
	{ "route-cache", NFSL_OPT_ENUM, offsetof(struct attach_opts, route_cache),
	  .choices = off_on, .metavar = "off|on",
	  .help = "cache the slicer's route verdicts per flow and CPU (default on): "
		  "off looks every packet up in the FIB (and conntrack), as before" },
	{ "route-cache-age", NFSL_OPT_DURATION, offsetof(struct attach_opts, route_cache_age),
	  1, NFSL_MAX_ROUTE_CACHE_MS, .unit = NFSL_MS, .metavar = "MS",
	  .help = "a cached route verdict is looked up again after MS ms (default 200): "
		  "the longest a route change nfslice or nfsliced did not report goes "
		  "unseen (nfslice set --route-flush reports one)" },
	{ "mode", NFSL_OPT_ENUM, offsetof(struct attach_opts, mode), .choices = modes,
	  .metavar = "MODE", .help = "XDP mode: native or skb (default native)" },
	{ "nf-port", NFSL_OPT_STR, offsetof(struct attach_opts, nf_ports),
	  .metavar = "IFACE[,IFACE]",
	  .help = "links to remote NF servers: sliced headers may leave through "
		  "them (and come back); the slicer there only takes drop notices, "
		  "no splicer" },
	{ "tenants", NFSL_OPT_STR, offsetof(struct attach_opts, tenants), .metavar = "FILE",
	  .help = "partition the store between the tenants FILE declares (quotas, "
		  "rules by dev, vlan, dst prefix; see nfslice tenants)" },
	{ "events", NFSL_OPT_FLAG, offsetof(struct attach_opts, events),
	  .help = "write drop events (stale, too_big, replayed, bad_token, route and "
		  "MTU skips) for nfslice events; nfslice set --events on|off later" },
	{ "no-ct-liberal", NFSL_OPT_FLAG, offsetof(struct attach_opts, no_ct_liberal),
	  .help = "leave net.netfilter.nf_conntrack_tcp_be_liberal as it is "
		  "(default: set it to 1 until detach; sliced TCP through "
		  "conntrack stalls without it)" },
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
		"programs keep running) on the ingress and the splicer (TCX, Linux >= 6.6;\n"
		"else a tc clsact filter) on the egress of every IFACE, all sharing one\n"
		"store of N slots pinned in\n"
		"/sys/fs/bpf/nfslice/ns<netns cookie>/NAME/ (see 'nfslice status').\n"
		"Frames of at least --threshold bytes have their UDP/TCP payload beyond\n"
		"--keep bytes parked; the packet goes on with DSCP 63 and a 16-byte\n"
		"token. Slots are taken FIFO per CPU; a busy slot is evicted after\n"
		"--expiry wrap-arounds (PayloadPark Alg. 1, NFSlicer §III-C), and\n"
		"once parked longer than --ttl ms by the TTL scan of nfsliced or\n"
		"nfslice evict (PayloadPark §3.3's evictor, by time: the slicer\n"
		"logs every slice with its time, CLOCK_MONOTONIC in ns). Every\n"
		"interface the network function may send on must be in the domain.\n"
		"The domain's directory also pins a namespace probe (netns: a BPF link\n"
		"to this network namespace that holds no reference on it), by which\n"
		"nfslice list and gc tell whether the namespace still exists.\n"
		"Errors: unknown interface, name already attached, no bpffs, a\n"
		"capability missing, kernel feature missing; a failed attach leaves\n"
		"nothing behind.",
	.caps = NFSL_CAPS_CHANGE,
	.caps_why = NFSL_CAPS_CHANGE_WHY,
	.opts = attach_table,
	.run = run_attach,
	.opts_size = sizeof(struct attach_opts),
	.defaults = &attach_defaults,
};

static const char *const detach_defaults = "default";
static const struct detach_opts detach_opt_defaults = { .name = "default" };

static const struct nfsl_opt repair_table[] = {
	{ "name", NFSL_OPT_STR, 0,
	  .check = nfsl_name_opt_check, .metavar = "NAME", .help = "domain name (default: default)" },
	{ NULL },
};

static const struct nfsl_opt detach_table[] = {
	{ "name", NFSL_OPT_STR, offsetof(struct detach_opts, name),
	  .check = nfsl_name_opt_check, .metavar = "NAME",
	  .help = "domain name (default: default)" },
	{ "no-drain", NFSL_OPT_FLAG, offsetof(struct detach_opts, no_drain),
	  .help = "take the splicers off right after the slicers, without waiting for "
		  "the headers in flight (up to 2 s): the node leaves the return path now "
		  "(migrate --mode copy; their payloads were copied to the new instance)" },
	{ NULL },
};

const struct nfsl_cmd nfsl_cmd_detach = {
	.name = "detach",
	.summary = "detach a slicing domain and remove its pins",
	.description =
		"Removes the slicer and the splicer from every interface of the domain,\n"
		"the clsact qdiscs nfslice created (the fallback of kernels without\n"
		"TCX), and the pinned maps. Payloads still\n"
		"parked are dropped with the store. Sets nf_conntrack_tcp_be_liberal\n"
		"back to 0 if attach had set it, unless TCP connections are still\n"
		"tracked in the namespace (their windows were learned from sliced\n"
		"segments: strict tracking would reset them; a note says so). Also\n"
		"cleans up after an attach that was interrupted. The slicers go first;\n"
		"the splicers stay until the headers sliced before have come back\n"
		"(busy slots at 0 or no longer falling for 100 ms, at most 2 s),\n"
		"unless --no-drain.",
	.caps = NFSL_CAPS_CHANGE,
	.caps_why = NFSL_CAPS_CHANGE_WHY,
	.opts = detach_table,
	.run = run_detach,
	.opts_size = sizeof(struct detach_opts),
	.defaults = &detach_opt_defaults,
};

const struct nfsl_cmd nfsl_cmd_repair = {
	.name = "repair",
	.summary = "re-attach a damaged domain's missing slicers and splicers",
	.description =
		"Makes domain NAME of this network namespace whole again when a slicer\n"
		"or a splicer was removed by hand (ip link set dev IFACE xdp off, tc\n"
		"filter del, tc qdisc del) or the GRO features were turned on again:\n"
		"it re-attaches the missing programs with the domain's own store,\n"
		"configuration and pinned splicer, every splicer before any slicer (as\n"
		"attach), so parked payloads and counters survive. It also sets\n"
		"nf_conntrack_tcp_be_liberal again if the domain had set it, and gives\n"
		"a domain attached by an older nfslice its namespace probe. An\n"
		"interface that is gone cannot be repaired: detach and attach again.\n"
		"A whole domain is left as it is (exit 0).",
	.caps = NFSL_CAPS_CHANGE,
	.caps_why = NFSL_CAPS_CHANGE_WHY,
	.opts = repair_table,
	.run = run_repair,
	.opts_size = sizeof(const char *),
	.defaults = &detach_defaults,
};
