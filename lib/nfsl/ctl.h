/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The control protocol of nfsliced (docs/manager.md "Control protocol"):
 * one codec for the daemon and the nfslice CLI.
 *
 * A Unix stream socket (NFSL_CTL_SOCKET, mode 0600). The client writes one
 * request, a JSON object on one line, {"op": OP, ...}, and reads one
 * response line: {"ok": true, ...} or {"ok": false, "error": MESSAGE,
 * "code": EXIT STATUS}, the exit status the CLI would give (cli.h).
 * Several requests may follow each other on one connection.
 *
 * Ops (version NFSL_CTL_VERSION):
 *   ping                      {"version", "pid", "domains", "proto"}
 *   list                      {"domains": [{"netns", "name", "dir"}]}
 *   get  netns name           {"config": {...}, "gen"}
 *   set  netns name changes   {"config": {...}, "gen"}: runtime changes,
 *        [if_gen]             nfsl_config_change (cfg.h)
 * netns is the domain's network namespace cookie (SO_NETNS_COOKIE): the
 * daemon lives in one namespace and manages the domains of all.
 */
#ifndef NFSL_CTL_H
#define NFSL_CTL_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>

#include "cfg.h"

#define NFSL_CTL_SOCKET "/run/nfsliced.sock"
#define NFSL_CTL_VERSION 1
/* Longest request or response line, bytes (a list of many domains). */
#define NFSL_CTL_LINE_MAX (1 << 20)

/* Socket path: $NFSLICE_SOCKET if set, else NFSL_CTL_SOCKET. */
const char *nfsl_ctl_path(void);

/*
 * nfsl_ctl_connect - connect to the daemon at @path (NULL: nfsl_ctl_path).
 * Returns the socket fd, or -errno: -ENOENT / -ECONNREFUSED when no
 * daemon runs there (the CLI then works on the pins itself).
 */
int nfsl_ctl_connect(const char *path);

/*
 * nfsl_ctl_send - write @msg as one line on @fd. Returns 0 or -errno
 * (-EPIPE: the peer left).
 * nfsl_ctl_recv - read one line from @fd into *@msg (a JSON object, which
 * the caller json_decref()s). @buf holds partial lines between calls: a
 * caller's struct nfsl_ctl_buf, zeroed before the first call. Returns 0,
 * -ENODATA at end of stream, -EBADMSG for a line that is not a JSON object
 * or longer than NFSL_CTL_LINE_MAX, other -errno.
 */
struct nfsl_ctl_buf {
	char *data;
	size_t len, cap;
};
int nfsl_ctl_send(int fd, json_t *msg);
int nfsl_ctl_recv(int fd, struct nfsl_ctl_buf *buf, json_t **msg);
void nfsl_ctl_buf_free(struct nfsl_ctl_buf *buf);

/*
 * nfsl_ctl_call - one request on a fresh connection: send @req (stolen:
 * decref'd here), wait for the response (*@resp, the caller decrefs).
 * Returns 0 (the response may still say "ok": false), or -errno of the
 * connection (-ENOENT, -ECONNREFUSED: no daemon).
 */
int nfsl_ctl_call(const char *path, json_t *req, json_t **resp);

/* Responses: {"ok": true} to add fields to, and {"ok": false, "error":
 * MSG, "code": CODE}. */
json_t *nfsl_ctl_ok(void);
json_t *nfsl_ctl_error(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A domain's configuration as a JSON object (the fields "get" and
 * "status" show: threshold, keep, slots, expiry, ...). */
json_t *nfsl_ctl_config_json(const struct nfsl_config *cfg);

/*
 * nfsl_ctl_change_parse - the "changes" object of a set request into @c.
 * Known keys: threshold, keep (bytes), expiry (turns), ttl_ms (ms, 0 =
 * off); values whole numbers. Returns 0, or -EINVAL with a message in
 * @err naming the key.
 * nfsl_ctl_change_json - the inverse, for the CLI.
 */
int nfsl_ctl_change_parse(json_t *obj, struct nfsl_cfg_change *c, char *err, size_t errlen);
json_t *nfsl_ctl_change_json(const struct nfsl_cfg_change *c);

#endif /* NFSL_CTL_H */
