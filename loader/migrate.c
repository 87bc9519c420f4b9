// SPDX-License-Identifier: GPL-2.0
/*
 * nfslice migrate: move a domain to another instance on the same path, in
 * another network namespace, while traffic flows (issue 10 §7, drain mode;
 * UNO §3.3.2: start the new instance, switch, let the old one drain).
 *
 * Nothing is copied or buffered. The new instance gets its own key, so
 * each instance's tokens pass the other's slicer and splicer untouched
 * (bad_token: not ours); the new one is attached holding (a threshold no
 * frame reaches), the old one stops slicing, the new one starts, and the
 * old splicer stays until its parked payloads are spliced (busy slots at
 * zero) or the wait ends (--wait, default the TTL, else 1 s), then the old
 * domain is detached. The two instances never both slice a packet: a
 * header sliced by one arrives at the other with DSCP 63, which it does not
 * slice again.
 *
 * The steps run as this program's own commands (attach, set, detach) in the
 * right namespace, each a child that enters it first.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>

#include "nfslice.h"
#include "cfg.h"
#include "domains.h"
#include "json_writer.h"
#include "netns.h"
#include "util.h"

struct migrate_opts {
	char *name;
	char *to;       /* target namespace: a name under /run/netns, or a path */
	char *nf_ports; /* in the target */
	__u32 wait_ms;
	bool json;
};

#define HOLD_THRESHOLD 65535 /* no frame is this long: attached, not slicing */

static const struct migrate_opts migrate_defaults = {
	.name = "default",
	.wait_ms = UINT32_MAX,
};

/* Run "nfslice ARGS..." (argv[0] is the subcommand) in the namespace @ns
 * (NULL: ours), its standard output discarded (its errors go to our
 * stderr). Returns its exit status, or -1 when it could not run. */
static int sub(const char *ns, char *const argv[])
{
	char *args[32] = { "nfslice" };
	int st, n = 1;
	pid_t pid;

	for (; argv[n - 1] && n < 31; n++)
		args[n] = argv[n - 1];
	args[n] = NULL;
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		if (ns) {
			int fd = open(ns, O_RDONLY | O_CLOEXEC);

			if (fd < 0 || setns(fd, CLONE_NEWNET)) {
				fprintf(stderr, "nfslice: cannot enter %s: %s\n", ns, strerror(errno));
				_exit(1);
			}
		}
		int null = open("/dev/null", O_WRONLY | O_CLOEXEC);

		if (null >= 0)
			dup2(null, STDOUT_FILENO);
		execv("/proc/self/exe", args);
		_exit(127);
	}
	if (waitpid(pid, &st, 0) < 0)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The threshold of the domain at @dir, in place (cfg.h): a map write,
 * so the switch between the instances takes microseconds. */
static int set_threshold(const char *dir, __u32 threshold)
{
	struct nfsl_cfg_change c = { .has_threshold = true, .threshold = threshold };
	char err[256];
	int rc = nfsl_config_change(dir, &c, NULL, NULL, err, sizeof(err));

	return rc ? nfsl_err("%s: %s", dir, *err ? err : strerror(-rc)) : 0;
}

/* Pin directory of domain @name in the namespace @ns opens. */
static int target_dir(const char *ns, const char *name, char *dir, size_t len)
{
	__u64 cookie;
	int back, rc = nfsl_netns_enter(ns, &back);

	if (rc)
		return rc;
	rc = nfsl_netns_cookie(&cookie);
	nfsl_netns_return(back);
	return rc ? rc : nfsl_domain_dir_of(dir, len, cookie, name);
}

static int run_migrate(void *p, int argc, char **argv)
{
	const struct migrate_opts *o = p;
	char ns[PATH_MAX], tdir[PATH_MAX], slots[16], keep[16], expiry[16], ttl[16];
	char *att[32] = { "attach", "--name", o->name, "--threshold", "65535", "--slots", slots,
			  "--keep", keep, "--expiry", expiry };
	struct nfsl_domain d;
	struct json_writer jw;
	__u64 t0, t_stop, t_start, t_drained, t_end, waited = 0;
	__u32 busy = 0, busy0 = 0, wait_ms;
	int n = 11, err;

	if (!o->to)
		return nfsl_err("--to NETNS is required: the namespace of the new instance "
				"(a name under /run/netns, or a path)"), NFSL_EXIT_USAGE;
	if (snprintf(ns, sizeof(ns), strchr(o->to, '/') ? "%s" : "/run/netns/%s", o->to) >=
	    (int)sizeof(ns) || access(ns, R_OK))
		return nfsl_err("--to %s: no such network namespace (%s): give a name "
				"'ip netns list' shows, or a path", o->to, ns), NFSL_EXIT_USAGE;
	err = nfsl_domain_open(&d, o->name);
	if (err)
		return nfsl_err_domain(err, o->name);
	snprintf(slots, sizeof(slots), "%u", d.cfg.slots);
	snprintf(keep, sizeof(keep), "%u", d.cfg.keep);
	snprintf(expiry, sizeof(expiry), "%u", d.cfg.expiry);
	snprintf(ttl, sizeof(ttl), "%u", d.cfg.ttl_us / 1000);
	wait_ms = o->wait_ms != UINT32_MAX ? o->wait_ms : d.cfg.ttl_us ? d.cfg.ttl_us / 1000 : 1000;
	if (o->nf_ports) {
		att[n++] = "--nf-port";
		att[n++] = o->nf_ports;
	}
	for (int i = 0; i < argc && n < 30; i++)
		att[n++] = argv[i];
	att[n] = NULL;

	t0 = nfsl_now_ns();
	/* 1. The new instance, attached but holding: its own key. */
	if (sub(ns, att)) {
		nfsl_err("attaching the new instance in %s failed (above); nothing changed", o->to);
		goto fail;
	}
	if (sub(ns, (char *const[]){ "set", "--name", o->name, "--ttl", ttl, NULL })) {
		nfsl_err("setting the new instance's TTL failed; detach it in %s", o->to);
		goto fail;
	}
	err = target_dir(ns, o->name, tdir, sizeof(tdir));
	if (err) {
		nfsl_err("cannot find the new instance's pins: %s; detach it in %s",
			 strerror(-err), o->to);
		goto fail;
	}
	/* 2. The old one stops slicing; 3. the new one starts. */
	t_stop = nfsl_now_ns();
	if (set_threshold(d.dir, HOLD_THRESHOLD)) {
		nfsl_err("stopping the old instance failed; both attached, the old one slicing: "
			 "detach the new one in %s", o->to);
		goto fail;
	}
	if (set_threshold(tdir, d.cfg.threshold)) {
		nfsl_err("starting the new instance failed: the old one splices what it parked "
			 "and slices nothing; set its threshold back (nfslice set --threshold %u)",
			 d.cfg.threshold);
		goto fail;
	}
	t_start = nfsl_now_ns();
	nfsl_domain_busy_slots(&d, &busy0);
	/* 4. The old splicer drains what the old slicer parked. */
	for (;;) {
		if (nfsl_domain_busy_slots(&d, &busy) || !busy)
			break;
		waited = (nfsl_now_ns() - t_start) / 1000000;
		if (waited >= wait_ms)
			break;
		usleep(1000);
	}
	t_drained = nfsl_now_ns();
	nfsl_domain_close(&d);
	if (sub(NULL, (char *const[]){ "detach", "--name", o->name, NULL })) {
		nfsl_err("detaching the old instance failed (above): it slices nothing; "
			 "detach it by hand");
		return -1;
	}
	t_end = nfsl_now_ns();
	if (!o->json) {
		printf("nfslice: domain '%s' moved to %s: unsliced for %.3f ms, %u payloads "
		       "parked at the switch, %u left after %llu ms of drain%s, %.1f ms in all\n",
		       o->name, o->to, (t_start - t_stop) / 1e6, busy0, busy,
		       (unsigned long long)waited, busy ? " (dropped with the old store)" : "",
		       (t_end - t0) / 1e6);
		return 0;
	}
	jsonw_init(&jw, stdout);
	jsonw_start_object(&jw);
	jsonw_string_field(&jw, "name", o->name);
	jsonw_string_field(&jw, "to", o->to);
	jsonw_uint_field(&jw, "unsliced_ns", t_start - t_stop);
	jsonw_uint_field(&jw, "busy_at_switch", busy0);
	jsonw_uint_field(&jw, "busy_left", busy);
	jsonw_uint_field(&jw, "total_ns", t_end - t0);
	/* The phases: new instance attached, drained, old one detached. */
	jsonw_uint_field(&jw, "attach_ns", t_stop - t0);
	jsonw_uint_field(&jw, "drain_ns", t_drained - t_start);
	jsonw_uint_field(&jw, "detach_ns", t_end - t_drained);
	jsonw_end_object(&jw);
	return 0;
fail:
	nfsl_domain_close(&d);
	return -1;
}

#define OFF(f) offsetof(struct migrate_opts, f)
static const struct nfsl_opt migrate_table[] = {
	{ "name", NFSL_OPT_STR, OFF(name), .metavar = "NAME",
	  .help = "domain name, here and in the target (default: default)" },
	{ "to", NFSL_OPT_STR, OFF(to), .metavar = "NETNS",
	  .help = "namespace of the new instance: a name under /run/netns, or a path" },
	{ "nf-port", NFSL_OPT_STR, OFF(nf_ports), .metavar = "IFACE[,IFACE]",
	  .help = "NF ports of the new instance (attach --nf-port)" },
	{ "wait", NFSL_OPT_U32, OFF(wait_ms), 0, 600000, .metavar = "MS",
	  .help = "longest drain of the old instance, ms (default: its TTL, else 1000)" },
	{ "json", NFSL_OPT_FLAG, OFF(json), .help = "print the timings as one JSON object" },
	{ NULL },
};

const struct nfsl_cmd nfsl_cmd_migrate = {
	.name = "migrate",
	.summary = "move a domain to a new instance in another namespace (drain)",
	.args = "IFACE...",
	.min_args = 1,
	.max_args = 16,
	.description =
		"Moves domain NAME of this namespace to a new instance on the same path\n"
		"in namespace NETNS (e.g. one standing in for a smart NIC), attached to\n"
		"IFACE... there, while traffic flows, in drain mode: nothing copied,\n"
		"nothing buffered. The new instance is attached with its own key and a\n"
		"threshold no frame reaches (slots, keep, expiry and TTL as the old\n"
		"one's); the old one stops slicing (threshold 65535); the new one starts\n"
		"(the old threshold); the old splicer splices what the old slicer parked\n"
		"until its store is empty or --wait ms have passed; then the old domain\n"
		"is detached. Tokens of either instance pass the other untouched (not\n"
		"its key: bad_token), and a sliced header is never sliced again, so the\n"
		"two never drop each other's packets. Prints the unsliced window (between\n"
		"stop and start), the payloads parked at the switch and left after the\n"
		"drain (lost with the old store), and the total time; --json adds its\n"
		"phases (attach_ns: the new instance; drain_ns; detach_ns: the old one).",
	.caps = NFSL_CAPS_CHANGE,
	.caps_why = NFSL_CAPS_CHANGE_WHY,
	.opts = migrate_table,
	.run = run_migrate,
	.opts_size = sizeof(struct migrate_opts),
	.defaults = &migrate_defaults,
};
