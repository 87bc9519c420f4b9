// SPDX-License-Identifier: GPL-2.0
/*
 * nfslice-pktgen - send UDP/TCP frames out of an interface from an XDP
 * program run with BPF_PROG_RUN in live-frames mode (docs/pktgen.md).
 *
 * Steps: parse and check the options (exit 2 on a bad one), prepare the
 * veth peer, run, report, and always put the peer back as it was, also
 * after SIGINT/SIGTERM (they end the run early; the result is reported).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/caps.h"
#include "util/log.h"
#include "pg.h"

static void on_signal(int sig)
{
	pg_stop();
}

int main(int argc, char **argv)
{
	struct pg_result res = {};
	struct pg_peer *peer = NULL;
	struct pg_opts opts;
	struct pg_cfg cfg;
	char missing[128];
	int err, rc = 2;

	err = pg_parse(argc, argv, &opts);
	if (err)
		return err > 0 ? 0 : 2;
	/* Our own messages say what failed; libbpf's details on request. */
	nfsl_log_init(NFSL_LOG_NONE);
	if (pg_resolve(&opts, &cfg))
		goto out;
	rc = 1;
	if (nfsl_caps_missing(NFSL_CAP(CAP_BPF) | NFSL_CAP(CAP_NET_ADMIN) |
				      NFSL_CAP(CAP_SYS_ADMIN),
			      missing, sizeof(missing))) {
		pg_err("missing %s: BPF_PROG_RUN of XDP programs and XDP on the veth "
		       "peer need CAP_BPF, CAP_NET_ADMIN and CAP_SYS_ADMIN; run it as "
		       "root (e.g. with sudo)", missing);
		goto out;
	}
	/* The signals interrupt BPF_PROG_RUN and the pacing sleep. */
	nfsl_catch_stop_signals(on_signal);
	if (pg_peer_prepare(&cfg, &peer, &res.peer))
		goto out;
	if (pg_run(&cfg, &res))
		goto out;
	pg_report(&cfg, &res);
	rc = 0;
out:
	pg_peer_restore(peer);
	pg_cfg_free(&cfg);
	return rc;
}
