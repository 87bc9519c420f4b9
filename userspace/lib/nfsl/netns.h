/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The network namespaces of the host that user space can name and enter:
 * those bound under /run/netns (`ip netns add`, by name) and those of
 * processes (/proc/PID/ns/net), each with its nsfs inode and netns
 * cookie, so that `nfslice list` can say which namespace a domain's
 * ns<cookie> directory belongs to, and resolve its interfaces inside it.
 * A namespace held only by an open file descriptor or bound elsewhere is
 * not listed; whether it lives is the namespace probe's answer
 * (domain.h, nfsl_netns_probe), not this list's.
 */
#ifndef NFSL_NETNS_H
#define NFSL_NETNS_H

#include <limits.h>
#include <stddef.h>
#include <linux/types.h>

struct nfsl_netns {
	__u64 ino;               /* nsfs inode */
	__u64 cookie;            /* SO_NETNS_COOKIE; 0 when it could not be read */
	char name[NAME_MAX + 1]; /* its name under /run/netns, "" when none */
	char path[64 + NAME_MAX]; /* opens it: /run/netns/NAME or /proc/PID/ns/net */
};

struct nfsl_netns_list {
	struct nfsl_netns *ns;
	size_t n;
	unsigned int unreadable; /* processes whose namespace could not be read */
};

/*
 * nfsl_netns_scan - list the namespaces bound under /run/netns (in name
 * order: the first name of one bound twice), the caller's, and those of
 * every readable process, once each. Cookies are read by entering
 * each namespace (setns, a socket, SO_NETNS_COOKIE) and coming back: needs
 * CAP_SYS_ADMIN, else they stay 0. Returns 0 or -errno.
 */
int nfsl_netns_scan(struct nfsl_netns_list *l);
void nfsl_netns_free(struct nfsl_netns_list *l);

/* The entry with nsfs inode @ino, or cookie @cookie; NULL when none. */
const struct nfsl_netns *nfsl_netns_by_ino(const struct nfsl_netns_list *l, __u64 ino);
const struct nfsl_netns *nfsl_netns_by_cookie(const struct nfsl_netns_list *l,
					      __u64 cookie);

/*
 * nfsl_netns_enter - move the calling thread into the network namespace
 * @path opens; *@back gets an fd of the one it was in, for
 * nfsl_netns_return, which moves back and closes it. Both return 0 or
 * -errno.
 */
int nfsl_netns_enter(const char *path, int *back);
int nfsl_netns_return(int back);

#endif /* NFSL_NETNS_H */
