// SPDX-License-Identifier: GPL-2.0
/*
 * Keep the frame program in the kernel's XDP dispatcher for the run.
 *
 * BPF_PROG_RUN of an XDP program with repeat > 1 adds the program to the
 * XDP dispatcher (a patched direct call) before the run and removes it
 * after; each change waits for an RCU grace period, so every call costs
 * ~25 ms of sleep here, whatever its length. A program that is in the
 * dispatcher already is only reference-counted: no change, no wait. So for
 * the run the program is attached (generic XDP, through a BPF link) to the
 * loopback device of a private network namespace made for the purpose:
 * lo stays down there and no frame ever reaches the program that way. The
 * link and the namespace vanish with the process, also when it is killed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/if_link.h>
#include <bpf/bpf.h>

#include "pg.h"

#define NETNS_SELF "/proc/thread-self/ns/net"

/*
 * pg_hold_prog - attach @prog_fd to lo of a new private network namespace.
 * Returns 0 with *@hold set, or a negative errno: the run then goes on
 * with calls that wait for the grace periods (fine unpaced, coarse paced).
 * Must run while the process has one thread.
 */
int pg_hold_prog(int prog_fd, struct pg_hold *hold)
{
	LIBBPF_OPTS(bpf_link_create_opts, opts, .flags = XDP_FLAGS_SKB_MODE);
	int orig, err = 0;

	hold->netns_fd = -1;
	hold->link_fd = -1;
	orig = open(NETNS_SELF, O_RDONLY | O_CLOEXEC);
	if (orig < 0)
		return -errno;
	if (unshare(CLONE_NEWNET)) {
		err = -errno;
		goto out;
	}
	hold->netns_fd = open(NETNS_SELF, O_RDONLY | O_CLOEXEC);
	if (hold->netns_fd < 0)
		err = -errno;
	else
		hold->link_fd = bpf_link_create(prog_fd, 1 /* lo */, BPF_XDP, &opts);
	if (!err && hold->link_fd < 0)
		err = hold->link_fd;
	/* Back home: everything else runs in the caller's namespace. Should
	 * that fail, nothing may go on here: exit (the peer's XDP link and
	 * this one go with the process). */
	if (setns(orig, CLONE_NEWNET)) {
		pg_err("cannot return to the original network namespace: %s",
		       strerror(errno));
		exit(1);
	}
out:
	close(orig);
	if (err)
		pg_unhold_prog(hold);
	return err;
}

void pg_unhold_prog(struct pg_hold *hold)
{
	if (hold->link_fd >= 0)
		close(hold->link_fd);
	if (hold->netns_fd >= 0)
		close(hold->netns_fd);
	hold->link_fd = -1;
	hold->netns_fd = -1;
}
