// SPDX-License-Identifier: GPL-2.0
/*
 * The removal of a domain's pins (domain.h, nfsl_domain_remove): above
 * domain.c and retired.c, which it uses both, so that neither of those
 * needs the other's way back (the keys go to the retired list first).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "nfsl/domain.h"
#include "nfsl/guard.h"
#include "nfsl/retired.h"

int nfsl_domain_remove(const char *dir)
{
	char path[PATH_MAX + 32];
	struct nfsl_domain d;
	int err = 0;

	/* Its keys stay known for a grace period: a header an NF releases
	 * after the detach reaches a domain attached again under this name
	 * as stale, not as outside traffic (retired.h). */
	if (!nfsl_domain_open_dir(&d, dir)) {
		if (!nfsl_retire_domain_keys(dir, &d.cfg))
			nfsl_retired_keep_probe(dir);
		nfsl_domain_close(&d);
	}

	/* The guards go with their pins (the links detach): after the
	 * slicers, which detach removed before. */
	err = nfsl_guard_remove(dir);
	for (size_t i = 0; i < NFSL_NR_DOMAIN_PINS; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, nfsl_domain_pins[i]);
		if (unlink(path) && errno != ENOENT && !err)
			err = -errno;
	}
	if (rmdir(dir) && errno != ENOENT && !err)
		err = -errno;
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
	return err;
}
