/* SPDX-License-Identifier: GPL-2.0 */
/*
 * nfslice migrate's engine (migrate.c, migrate_copy.c): move a domain to
 * another instance on the same path, in another network namespace or on
 * another host, while traffic flows (issue 10 §7; UNO §3.3.2: start the
 * new instance, move the state, switch, let the old one go; docs/cli.md
 * "Drain mode", "Copy mode").
 *
 * Drain mode: nothing is copied or buffered. The new instance gets its own
 * key, so each instance's tokens pass the other's slicer and splicer
 * untouched (bad_token: not ours); the new one is attached holding (a
 * threshold no frame reaches), the old one stops slicing, the new one
 * starts, and the old splicer stays until its parked payloads are spliced
 * (busy slots at zero) or the wait ends (--wait, default the TTL, else
 * 1 s), then the old domain is detached. The two instances never both
 * slice a packet: a header sliced by one arrives at the other with DSCP
 * 63, which it does not slice again.
 *
 * Copy mode, for an old node that leaves the return path at once: the new
 * instance is attached holding, the old slicer stops, the old store's
 * busy slots (index, generation, payload, metadata, parked time with a
 * clock reference) and every slot's generation are copied into the new
 * store through a checkpoint image in memory (ckpt.h), the old key becomes
 * the new instance's key_old, the new one starts slicing and honours both
 * keys (NFSL_CFG_KEY_OLD), the old domain is detached without a drain.
 * The old headers still in flight then splice on the new instance from
 * the copies. A copy whose header the old splicer spliced after the copy
 * is freed as soon as the old store shows it released; one whose header
 * never comes is freed at its TTL (or when the wait ends). Once no copy is
 * left, the flag is cleared and key_old wiped.
 *
 * The steps run as the CLI's own commands (attach, set, detach) in the
 * right namespace, each a child of @exe that enters it first; the copy
 * and the configuration writes are library calls on both domains' pins.
 * To another host (ssh://HOST, remote.h) every step there is a command
 * run through ssh, the copy-mode import included (nfslice adopt, fed the
 * image on its standard input).
 *
 * Test hook (tests/integration/test_migrate.py, docs/cli.md "Killed
 * migrations"): NFSLICE_TEST_HOOK=kill-holding or stop-holding makes the
 * process raise SIGKILL or SIGSTOP on itself once the new instance is
 * attached holding and tagged (holding.h).
 */
#ifndef NFSL_MIGRATE_H
#define NFSL_MIGRATE_H

#include <stdbool.h>
#include <linux/types.h>
#include "nfsl/ckpt.h"
#include "nfsl/copyin.h"

enum nfsl_migrate_mode {
	NFSL_MIGRATE_DRAIN, /* the old splicer stays until its store is empty */
	NFSL_MIGRATE_COPY,  /* the parked payloads move, the old node goes */
};

/* What to migrate: nfslice migrate's options, as given. */
struct nfsl_migrate_req {
	const char *name;     /* domain name, here and in the target */
	const char *to;       /* a namespace (a name under /run/netns, or a
			       * path) or another host (ssh://[USER@]HOST) */
	const char *nf_ports; /* the new instance's NF ports, comma-separated
			       * (attach --nf-port), or NULL */
	int mode;             /* enum nfsl_migrate_mode */
	__u32 wait_ms;        /* drain: longest drain; copy: longest time the
			       * old key is honoured; ms, when has_wait */
	bool has_wait;        /* else the old TTL, else 1000 ms */
	const char *exe;      /* the CLI run for the steps in a namespace
			       * (attach, set, detach): /proc/self/exe */
	const char *argv0;    /* its argv[0] ("nfslice") */
	int argc;             /* the new instance's interfaces (attach */
	char **argv;          /* IFACE... and any further attach arguments) */
};

/*
 * What a migration did, for the report; times are ns of CLOCK_MONOTONIC.
 * The window with no slicer is t_stop .. t_start; the phases: t0 .. t_stop
 * the new instance attached (lock_ns of it waiting for the host-wide
 * lock), then drain: .. t_drained the drain, .. t_end the old detach;
 * copy: .. t_saved the image, .. t_imported its import (to a host: sent
 * and imported), t_start .. t_detached the old detach, t_start .. t_end
 * the old key honoured.
 */
struct nfsl_migrate_result {
	bool done;        /* the fields below are complete (copy mode: also
			   * when a failure came after the copies ended) */
	__u64 t0, lock_ns, t_stop, t_start, t_end;
	/* drain mode */
	__u32 busy0, busy; /* busy slots at the switch, after the drain */
	__u64 waited_ms, t_drained;
	/* copy mode */
	struct nfsl_ckpt_result saved, imp; /* the image, its import */
	struct nfsl_follow f;               /* how the imported copies ended */
	__u64 t_saved, t_imported, t_detached;
};

/*
 * nfsl_migrate - move domain @r->name of the caller's network namespace to
 * a new instance at @r->to on @r->argv's interfaces, in @r->mode. Returns
 * 0, NFSL_EXIT_USAGE when @r->to names no namespace or is a malformed
 * host, or -1 after a message naming what is left and how to clean up
 * (after the old slicer stopped, copy mode rolls back: the old instance
 * slices again, the new one is detached). @res is filled when
 * @res->done, also with a failure in copy mode (the old detach or adopt's
 * end failed after the copies ended).
 */
int nfsl_migrate(const struct nfsl_migrate_req *r, struct nfsl_migrate_result *res);

#endif /* NFSL_MIGRATE_H */
