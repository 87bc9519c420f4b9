/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The control protocol of nfsliced (docs/manager.md "Control protocol"):
 * one codec for the daemon and the nfslice CLI.
 *
 * A Unix stream socket (NFSL_CTL_SOCKET, mode 0600). The client writes one
 * request, a JSON object on one line, {"op": OP, ...}, and reads one
 * response line: {"ok": true, ...} or {"ok": false, "error": MESSAGE,
 * "code": EXIT STATUS}, the exit status the CLI would give (cli.h).
 * Several requests may follow each other on one connection, also in one
 * write: each is answered, in order (docs/manager.md "Connections").
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

#include "nfsl/cfg.h"
#include "nfsl/domain.h"

#define NFSL_CTL_SOCKET "/run/nfsliced.sock"
#define NFSL_CTL_VERSION 1
/* Longest response line a client takes, bytes (a list of many domains). */
#define NFSL_CTL_LINE_MAX (1 << 20)
/* Longest request line the daemon takes, bytes: a request is a few
 * hundred; a longer line gets an error and the connection is closed. */
#define NFSL_CTL_REQ_MAX (64 * 1024)
/* How long a client waits for the daemon by default, ms (nfslice set
 * --timeout). */
#define NFSL_CTL_TIMEOUT_MS 5000

/* Socket path: $NFSLICE_SOCKET if set, else NFSL_CTL_SOCKET. */
const char *nfsl_ctl_path(void);

/*
 * nfsl_ctl_connect - connect to the daemon at @path (NULL: nfsl_ctl_path),
 * waiting at most @timeout_ms for a place in its backlog (0: no limit).
 * Returns the socket fd, or -errno: -ENOENT / -ECONNREFUSED when no
 * daemon runs there (the CLI then works on the pins itself), -ETIMEDOUT.
 */
int nfsl_ctl_connect(const char *path, int timeout_ms);

/*
 * A line buffer: data[off, len) not taken yet; zero it before first use,
 * nfsl_ctl_buf_free() it after.
 */
struct nfsl_ctl_buf {
	char *data;
	size_t off, len, cap;
};

/*
 * nfsl_ctl_send - write @msg as one line on @fd by @deadline_ns
 * (CLOCK_MONOTONIC, nfsl_now_ns(); 0: none). Returns 0 or -errno (-EPIPE:
 * the peer left, -ETIMEDOUT).
 * nfsl_ctl_recv - read one line from @fd into *@msg (a JSON object, which
 * the caller json_decref()s) by @deadline_ns. @buf holds partial lines
 * between calls. Returns 0, -ENODATA at end of stream, -EBADMSG for a line
 * that is not a JSON object or longer than NFSL_CTL_LINE_MAX, -ETIMEDOUT,
 * other -errno.
 */
int nfsl_ctl_send(int fd, json_t *msg, __u64 deadline_ns);
int nfsl_ctl_recv(int fd, struct nfsl_ctl_buf *buf, json_t **msg, __u64 deadline_ns);
void nfsl_ctl_buf_free(struct nfsl_ctl_buf *buf);

/*
 * nfsl_ctl_take_line - the first complete line of @buf as a JSON object
 * into *@msg (the caller decrefs), without I/O: the daemon's framing, and
 * the fuzz target's (tests/fuzz/ctl_fuzz.c). Returns 0, -EAGAIN when no
 * line is complete (nothing taken), -EBADMSG when the line taken is not a
 * JSON object (a NUL byte in it included).
 * nfsl_ctl_buf_room - make room for @want more bytes at data + len
 * (moving the untaken bytes to the front first). Returns 0 or -ENOMEM.
 */
int nfsl_ctl_take_line(struct nfsl_ctl_buf *buf, json_t **msg);
int nfsl_ctl_buf_room(struct nfsl_ctl_buf *buf, size_t want);

/*
 * nfsl_ctl_call - one request on a fresh connection: send @req (stolen:
 * decref'd here), wait for the response (*@resp, the caller decrefs), all
 * within @timeout_ms (0: no limit). Returns 0 (the response may still say
 * "ok": false), or -errno of the connection (-ENOENT, -ECONNREFUSED: no
 * daemon; -ETIMEDOUT: it did not answer in time).
 */
int nfsl_ctl_call(const char *path, json_t *req, json_t **resp, int timeout_ms);

/* A request as the daemon runs it: what nfsl_ctl_req_parse found. */
enum nfsl_ctl_op { NFSL_CTL_PING, NFSL_CTL_LIST, NFSL_CTL_GET, NFSL_CTL_SET };

struct nfsl_ctl_req {
	enum nfsl_ctl_op op;
	__u64 netns;                 /* get, set: the domain's namespace cookie */
	char name[NFSL_NAME_MAX];    /* get, set: the domain's name */
	struct nfsl_cfg_change changes; /* set */
	bool has_if_gen;             /* set: change only at generation if_gen */
	__u32 if_gen;
};

/*
 * nfsl_ctl_req_parse - check request @msg (a JSON object) and fill @r:
 * the op, and for get and set a domain (a valid name, nfsl_name_check),
 * for set its changes (nfsl_ctl_change_parse) and if_gen. Touches nothing
 * outside: whether the domain exists is the daemon's to say. Returns 0,
 * or the exit status the error gives (NFSL_EXIT_USAGE) with the message
 * in @err.
 */
int nfsl_ctl_req_parse(json_t *msg, struct nfsl_ctl_req *r, char *err, size_t errlen);
/* The op's name as requests give it ("ping", ...). */
const char *nfsl_ctl_op_name(enum nfsl_ctl_op op);

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
