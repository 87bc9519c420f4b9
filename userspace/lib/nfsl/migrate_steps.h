/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The steps both modes of a migration share (migrate_steps.c), for
 * migrate.c (drain mode) and migrate_copy.c (copy mode); the engine's
 * public side is migrate.h.
 */
#ifndef NFSL_MIGRATE_STEPS_H
#define NFSL_MIGRATE_STEPS_H

#include <limits.h>
#include <stdbool.h>
#include <linux/types.h>
#include "nfsl/domain.h"
#include "nfsl/migrate.h"
#include "nfsl/remote.h"

/* What the steps share: the old domain, the target, the attach command. */
struct nfsl_migration {
	const struct nfsl_migrate_req *r;
	struct nfsl_domain d; /* the old instance */
	char ns[PATH_MAX], new_dir[PATH_MAX]; /* the target namespace, the new pins */
	bool remote;                        /* the target is another host: */
	struct nfsl_remote rem;             /* every step there a command */
	char *attach_argv[32]; /* nfslice attach ARGS for the new instance */
	char slots[16], keep[16], expiry[16], route_age[16]; /* its values in attach_argv */
	__u32 wait_ms;
};

/* Run "nfslice ARGV..." (ARGV[0] is the subcommand) where the new instance
 * is: its namespace here, or its host; its standard output discarded (its
 * errors go to ours). Returns the exit status, -1 when it could not run. */
int nfsl_mig_run_at_target(const struct nfsl_migration *m, char *const argv[]);

/* Detach the old instance (a child "nfslice detach" here; with
 * "--no-drain" when @no_drain). Returns its exit status, -1 when it could
 * not run. */
int nfsl_mig_detach_old(const struct nfsl_migration *m, bool no_drain);

/* Take the host-wide lock for the switch (the ns waited into *@wait_ns):
 * the lock fd, or -1 after a message. nfsl_mig_unlock releases *@lock
 * when held and sets it to -1. */
int nfsl_mig_lock(__u64 *wait_ns);
void nfsl_mig_unlock(int *lock);

/*
 * 1. The new instance, attached but holding (NFSL_HOLD_THRESHOLD): its own
 * key, the old TTL. Here it is tagged as ours at once (holding.h), so that
 * a kill from now until it slices leaves an instance `nfslice list` names
 * and `nfslice gc` removes; m->new_dir is its pin directory. 0 or -1
 * (printed, naming what to detach).
 */
int nfsl_mig_attach_new(struct nfsl_migration *m);

/* The new instance slices: no longer holding (its tag removed; a failure
 * printed, nothing else). */
void nfsl_mig_started_new(const struct nfsl_migration *m);

#endif /* NFSL_MIGRATE_STEPS_H */
