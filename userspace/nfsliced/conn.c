// SPDX-License-Identifier: GPL-2.0
/*
 * nfsliced's control socket clients (nfsliced.h; docs/manager.md
 * "Connections"). The event loop must never wait for one client: the TTL
 * scans run in the same loop, and a payload parked longer than its TTL
 * stays parked while the loop waits. So every client socket is
 * non-blocking with its own buffers:
 * - in: bytes read, not yet taken as requests; a line longer than
 *   NFSL_CTL_REQ_MAX gets an error and the connection is closed;
 * - out: answers not yet sent; while more than OUT_HIGH bytes wait (a
 *   client that sends and does not read), its requests are not taken and
 *   its socket not read, so it holds up only itself;
 * - requests are taken in order, each answered before the next is taken
 *   (a set goes to the worker, and its client waits for that answer);
 * - a client that makes no progress (no byte read from it or sent to it)
 *   for --idle-timeout seconds is closed, so half-sent lines and readers
 *   that stopped reading free their place among MAX_CLIENTS.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "nfsliced.h"
#include "util/cli.h"
#include "util/util.h"

#define MAX_CLIENTS 64
_Static_assert(MAX_CLIENTS <= MGR_CONN_TAG_MIN, "a tag holds the slot below MGR_CONN_TAG_MIN");
/* Unsent answer bytes past which a client's requests wait. */
#define OUT_HIGH (64 * 1024)
/* Requests of one client per turn of the loop: the others, and the TTL
 * timer, get theirs in between. */
#define TURN_REQS 16
#define READ_CHUNK (16 * 1024)

struct conn {
	int fd;                      /* -1: slot free */
	unsigned long serial;        /* names the client to the worker */
	struct nfsl_ctl_buf in, out; /* out: data[off, len) not sent yet */
	__u64 last_ns;               /* last byte read from it or sent to it */
	struct mgr_job *job;         /* its request with the worker, or NULL */
	__u32 events;                /* what epoll watches for it */
	bool eof;                    /* it shut its writing side */
	bool closing;                /* close once out is sent */
	bool again;                  /* stopped with requests left (budget) */
};

static struct conn conns[MAX_CLIENTS];
static int ep = -1, lfd = -1;
static unsigned long next_serial = 1;
static __u64 idle_ns;
static unsigned int idle_s;

/* A client's epoll tag: its serial (from 1) and its slot, so that an
 * event of a client closed earlier in the same batch never reaches the
 * client accepted into its slot since. */
static __u64 tag_of(const struct conn *c)
{
	return (__u64)c->serial * MGR_CONN_TAG_MIN + (c - conns);
}

static size_t pending(const struct nfsl_ctl_buf *b)
{
	return b->len - b->off;
}

static void drop(struct conn *c)
{
	epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	nfsl_ctl_buf_free(&c->in);
	nfsl_ctl_buf_free(&c->out);
	/* Nobody to answer: the worker skips it if it has not begun. */
	if (c->job)
		atomic_store(&c->job->cancelled, true);
	c->job = NULL;
	c->fd = -1;
}

/* Append @msg as one line to @c's output. */
static void queue(struct conn *c, json_t *msg)
{
	char *s = msg ? json_dumps(msg, JSON_COMPACT) : NULL;
	size_t len = s ? strlen(s) : 0;

	if (!s || nfsl_ctl_buf_room(&c->out, len + 1)) {
		mgr_log(MGR_WARNING, "out of memory answering a client: closing it");
		free(s);
		c->closing = true;
		return;
	}
	memcpy(c->out.data + c->out.len, s, len);
	c->out.data[c->out.len + len] = '\n';
	c->out.len += len + 1;
	free(s);
}

static void __attribute__((format(printf, 3, 4)))
queue_error(struct conn *c, int code, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	json_t *r;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	r = nfsl_ctl_error(code, "%s", msg);
	queue(c, r);
	json_decref(r);
}

static void log_answer(const struct nfsl_ctl_req *r, json_t *resp)
{
	atomic_fetch_add(&mgr_requests, 1);
	mgr_log(MGR_DEBUG, "op %s: %s", nfsl_ctl_op_name(r->op),
		json_is_true(json_object_get(resp, "ok")) ? "ok" :
		json_string_value(json_object_get(resp, "error")));
}

/* One request line of @c: answered now, or handed to the worker. */
static void take(struct conn *c, json_t *msg)
{
	struct nfsl_ctl_req r;
	char err[512];
	json_t *resp;
	int code = nfsl_ctl_req_parse(msg, &r, err, sizeof(err));

	if (code) {
		atomic_fetch_add(&mgr_requests, 1);
		mgr_log(MGR_DEBUG, "request refused: %s", err);
		queue_error(c, code, "%s", err);
		return;
	}
	if (mgr_needs_lock(&r)) {
		struct mgr_job *j = calloc(1, sizeof(*j));

		if (!j) {
			queue_error(c, NFSL_EXIT_FAIL, "nfsliced is out of memory: retry");
			return;
		}
		j->kind = MGR_JOB_REQUEST;
		j->conn = c->serial;
		j->req = r;
		c->job = j;
		mgr_worker_post(j);
		return;
	}
	resp = mgr_handle(&r);
	log_answer(&r, resp);
	queue(c, resp);
	json_decref(resp);
}

/* Send what @c's output holds, as far as its socket takes it. Returns
 * false when @c was dropped (its peer is gone). */
static bool flush(struct conn *c)
{
	while (pending(&c->out)) {
		ssize_t n = send(c->fd, c->out.data + c->out.off, pending(&c->out),
				 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return true;
		if (n < 0) {
			drop(c);
			return false;
		}
		c->out.off += n;
		c->last_ns = nfsl_now_ns();
	}
	c->out.off = c->out.len = 0;
	return true;
}

/* Read what @c sent, up to one line's limit past the untaken bytes. */
static void read_in(struct conn *c)
{
	size_t want;
	ssize_t n;

	if (pending(&c->in) > NFSL_CTL_REQ_MAX)
		return; /* refused by run(); a read of 0 bytes would look like EOF */
	want = NFSL_CTL_REQ_MAX + 1 - pending(&c->in);
	if (want > READ_CHUNK)
		want = READ_CHUNK;
	if (nfsl_ctl_buf_room(&c->in, want)) {
		c->closing = true;
		return;
	}
	n = recv(c->fd, c->in.data + c->in.len, want, MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n < 0) {
		drop(c);
		return;
	}
	if (!n)
		c->eof = true;
	c->in.len += n;
	c->last_ns = nfsl_now_ns();
}

/* Watch @c for what it can do next: read while it may send requests we
 * would take, write while answers wait. */
static void watch(struct conn *c)
{
	bool reading = !c->eof && !c->closing && !c->job && pending(&c->out) < OUT_HIGH &&
		       pending(&c->in) <= NFSL_CTL_REQ_MAX;
	/* RDHUP only with IN: level-triggered, it would fire for ever
	 * while we do not read. HUP (the client closed) comes always. */
	__u32 want = (reading ? EPOLLIN | EPOLLRDHUP : 0) | (pending(&c->out) ? EPOLLOUT : 0);
	struct epoll_event ev = { .events = want, .data.u64 = tag_of(c) };

	if (want != c->events && !epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev))
		c->events = want;
}

/* Take @c's complete requests in order, as far as its budget, its
 * output and its request with the worker allow; then send. */
static void run(struct conn *c)
{
	int budget = TURN_REQS;

	c->again = false;
	while (!c->job && !c->closing && pending(&c->out) < OUT_HIGH) {
		json_t *msg;
		int err;

		if (!budget--) {
			c->again = true;
			break;
		}
		err = nfsl_ctl_take_line(&c->in, &msg);
		if (err == -EAGAIN) {
			if (pending(&c->in) > NFSL_CTL_REQ_MAX) {
				queue_error(c, NFSL_EXIT_USAGE, "request line longer than %d bytes: "
					    "a request is one JSON object on one line "
					    "(docs/manager.md)", NFSL_CTL_REQ_MAX);
				c->closing = true;
			} else if (c->eof) {
				if (pending(&c->in))
					queue_error(c, NFSL_EXIT_USAGE, "request cut short: a "
						    "request ends with a newline");
				c->closing = true;
			}
			break;
		}
		if (err) {
			queue_error(c, NFSL_EXIT_USAGE,
				    "a request is one JSON object on one line (docs/manager.md)");
			c->closing = true;
			break;
		}
		take(c, msg);
		json_decref(msg);
	}
	if (!flush(c))
		return;
	if (c->closing && !pending(&c->out)) {
		drop(c);
		return;
	}
	watch(c);
}

void mgr_conn_init(int epfd, int listen_fd, unsigned int idle)
{
	ep = epfd;
	lfd = listen_fd;
	idle_s = idle;
	idle_ns = idle * 1000000000ull;
	for (int i = 0; i < MAX_CLIENTS; i++)
		conns[i].fd = -1;
}

void mgr_conn_accept(void)
{
	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP };
		struct conn *c = NULL;

		if (fd < 0)
			return;
		for (int i = 0; i < MAX_CLIENTS && !c; i++)
			if (conns[i].fd < 0)
				c = &conns[i];
		if (!c) {
			char msg[160];
			int n = snprintf(msg, sizeof(msg),
					 "{\"ok\":false,\"error\":\"nfsliced serves %d clients at "
					 "once: retry\",\"code\":%d}\n", MAX_CLIENTS, NFSL_EXIT_FAIL);

			/* Best effort: a new socket has room for one line. */
			if (send(fd, msg, n, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
				/* It left already. */
			}
			close(fd);
			continue;
		}
		*c = (struct conn){ .fd = fd, .serial = next_serial++, .last_ns = nfsl_now_ns(),
				    .events = ev.events };
		ev.data.u64 = tag_of(c);
		if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev)) {
			close(fd);
			c->fd = -1;
		}
	}
}

void mgr_conn_event(__u64 tag, __u32 events)
{
	struct conn *c = &conns[tag % MGR_CONN_TAG_MIN];

	if (c->fd < 0 || tag_of(c) != tag)
		return;
	/* Closed by the client (not only its writing side): nobody reads
	 * an answer, and a request not yet run is not run. */
	if (events & (EPOLLHUP | EPOLLERR)) {
		drop(c);
		return;
	}
	if (events & EPOLLIN) {
		read_in(c);
		if (c->fd < 0)
			return;
	}
	run(c);
}

void mgr_conn_reply(unsigned long serial, json_t *resp)
{
	for (int i = 0; i < MAX_CLIENTS; i++) {
		struct conn *c = &conns[i];

		if (c->fd < 0 || c->serial != serial || !c->job)
			continue;
		log_answer(&c->job->req, resp);
		c->job = NULL;
		if (resp)
			queue(c, resp);
		else
			queue_error(c, NFSL_EXIT_FAIL, "nfsliced is out of memory: retry");
		json_decref(resp);
		c->last_ns = nfsl_now_ns();
		run(c);
		return;
	}
	json_decref(resp); /* its client left */
}

void mgr_conn_tick(__u64 now)
{
	for (int i = 0; i < MAX_CLIENTS; i++) {
		struct conn *c = &conns[i];

		if (c->fd < 0 || c->job || now - c->last_ns < idle_ns)
			continue;
		mgr_log(MGR_INFO, "closing a client idle for %u s%s", idle_s,
			pending(&c->in) ? " in the middle of a request" : "");
		/* One that does not read gets nothing more; the others a
		 * reason, as far as their socket takes it. */
		if (pending(&c->out)) {
			drop(c);
			continue;
		}
		queue_error(c, NFSL_EXIT_FAIL, "no complete request for %u s: connection closed "
			    "(a request is one JSON object on one line; nfsliced --idle-timeout)",
			    idle_s);
		c->closing = true;
		if (flush(c))
			drop(c);
	}
}

bool mgr_conn_again(void)
{
	bool more = false;

	for (int i = 0; i < MAX_CLIENTS; i++) {
		if (conns[i].fd < 0 || !conns[i].again)
			continue;
		run(&conns[i]);
		more |= conns[i].fd >= 0 && conns[i].again;
	}
	return more;
}

void mgr_conn_stop(void)
{
	if (ep < 0)
		return; /* never served: the slots hold no fds */
	for (int i = 0; i < MAX_CLIENTS; i++)
		if (conns[i].fd >= 0)
			drop(&conns[i]);
}
