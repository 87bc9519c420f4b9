// SPDX-License-Identifier: GPL-2.0
/* The control protocol of nfsliced: framing and codec (ctl.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>

#include "util/cli.h"
#include "nfsl/ctl.h"
#include "util/util.h"

const char *nfsl_ctl_path(void)
{
	const char *p = getenv("NFSLICE_SOCKET");

	return p && *p ? p : NFSL_CTL_SOCKET;
}

int nfsl_ctl_connect(const char *path, int timeout_ms)
{
	struct timeval tv = { .tv_sec = timeout_ms / 1000, .tv_usec = timeout_ms % 1000 * 1000 };
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd, err;

	if (!path)
		path = nfsl_ctl_path();
	if (strlen(path) >= sizeof(a.sun_path))
		return -ENAMETOOLONG;
	strcpy(a.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* A Unix connect waits for room in the listener's backlog (a daemon
	 * that accepts nothing) for the send timeout, then fails EAGAIN. */
	if (timeout_ms > 0 && setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv))) {
		err = -errno;
		close(fd);
		return err;
	}
	if (connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		err = errno == EAGAIN || errno == EINPROGRESS ? -ETIMEDOUT : -errno;
		close(fd);
		return err;
	}
	return fd;
}

/* Wait until @fd is ready for @events, by @deadline_ns (0: no limit).
 * Returns 0, -ETIMEDOUT or -errno. */
static int wait_fd(int fd, short events, __u64 deadline_ns)
{
	struct pollfd p = { .fd = fd, .events = events };
	int ms = -1, n;

	if (deadline_ns) {
		__u64 now = nfsl_now_ns();

		if (now >= deadline_ns)
			return -ETIMEDOUT;
		ms = (deadline_ns - now + 999999) / 1000000;
	}
	n = poll(&p, 1, ms);
	if (n < 0)
		return errno == EINTR ? 0 : -errno;
	return n ? 0 : -ETIMEDOUT;
}

int nfsl_ctl_send(int fd, json_t *msg, __u64 deadline_ns)
{
	char *s = json_dumps(msg, JSON_COMPACT);
	size_t len, off = 0;
	int err = 0;

	if (!s)
		return -ENOMEM;
	len = strlen(s);
	s[len++] = '\n'; /* json_dumps' NUL becomes the line's end */
	while (off < len) {
		ssize_t n = send(fd, s + off, len - off, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN) {
				err = wait_fd(fd, POLLOUT, deadline_ns);
				if (err)
					break;
				continue;
			}
			err = -errno;
			break;
		}
		off += n;
	}
	free(s);
	return err;
}

int nfsl_ctl_buf_room(struct nfsl_ctl_buf *b, size_t want)
{
	if (b->off) {
		memmove(b->data, b->data + b->off, b->len - b->off);
		b->len -= b->off;
		b->off = 0;
	}
	if (b->cap - b->len < want) {
		size_t cap = b->cap ? b->cap : 8192;
		char *p;

		while (cap - b->len < want)
			cap *= 2;
		p = realloc(b->data, cap);
		if (!p)
			return -ENOMEM;
		b->data = p;
		b->cap = cap;
	}
	return 0;
}

int nfsl_ctl_take_line(struct nfsl_ctl_buf *b, json_t **msg)
{
	char *start = b->data + b->off;
	char *nl = b->len > b->off ? memchr(start, '\n', b->len - b->off) : NULL;
	json_t *v;

	if (!nl)
		return -EAGAIN;
	/* The line without its newline: a NUL in it is an error (JSON
	 * has none), not the line's end. */
	v = json_loadb(start, nl - start, 0, NULL);
	b->off += nl - start + 1;
	if (b->off == b->len)
		b->off = b->len = 0;
	if (!json_is_object(v)) {
		json_decref(v);
		return -EBADMSG;
	}
	*msg = v;
	return 0;
}

int nfsl_ctl_recv(int fd, struct nfsl_ctl_buf *b, json_t **msg, __u64 deadline_ns)
{
	for (;;) {
		ssize_t n;
		int err = nfsl_ctl_take_line(b, msg);

		if (err != -EAGAIN)
			return err;
		if (b->len - b->off >= NFSL_CTL_LINE_MAX)
			return -EBADMSG;
		err = nfsl_ctl_buf_room(b, 4096);
		if (err)
			return err;
		n = recv(fd, b->data + b->len, b->cap - b->len, MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN) {
				err = wait_fd(fd, POLLIN, deadline_ns);
				if (err)
					return err;
				continue;
			}
			return -errno;
		}
		if (!n)
			return -ENODATA;
		b->len += n;
	}
}

void nfsl_ctl_buf_free(struct nfsl_ctl_buf *b)
{
	free(b->data);
	*b = (struct nfsl_ctl_buf){};
}

int nfsl_ctl_call(const char *path, json_t *req, json_t **resp, int timeout_ms)
{
	__u64 deadline = timeout_ms > 0 ? nfsl_now_ns() + timeout_ms * 1000000ull : 0;
	struct nfsl_ctl_buf b = {};
	int fd = nfsl_ctl_connect(path, timeout_ms), err;

	if (fd < 0) {
		json_decref(req);
		return fd;
	}
	err = nfsl_ctl_send(fd, req, deadline);
	json_decref(req);
	if (!err)
		err = nfsl_ctl_recv(fd, &b, resp, deadline);
	nfsl_ctl_buf_free(&b);
	close(fd);
	return err;
}

json_t *nfsl_ctl_ok(void)
{
	return json_pack("{s:b}", "ok", 1);
}

json_t *nfsl_ctl_error(int code, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return json_pack("{s:b,s:s,s:i}", "ok", 0, "error", msg, "code", code);
}

json_t *nfsl_ctl_config_json(const struct nfsl_config *cfg)
{
	return json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "threshold",
			 (json_int_t)cfg->threshold, "keep", (json_int_t)cfg->keep, "slots",
			 (json_int_t)cfg->slots, "part_slots", (json_int_t)cfg->part_slots,
			 "ncpus", (json_int_t)cfg->ncpus, "nparts",
			 (json_int_t)(cfg->nparts ? cfg->nparts : 1), "expiry",
			 (json_int_t)cfg->expiry, "ttl_ms", (json_int_t)(cfg->ttl_us / 1000),
			 "gen", (json_int_t)cfg->cfg_gen, "events",
			 (json_int_t)!!(cfg->flags & NFSL_CFG_EVENTS));
}

/* The change keys, where they go, and their has_ flags. */
static const struct {
	const char *key;
	size_t val, has;
} change_keys[] = {
	{ "threshold", offsetof(struct nfsl_cfg_change, threshold),
	  offsetof(struct nfsl_cfg_change, has_threshold) },
	{ "keep", offsetof(struct nfsl_cfg_change, keep), offsetof(struct nfsl_cfg_change, has_keep) },
	{ "expiry", offsetof(struct nfsl_cfg_change, expiry),
	  offsetof(struct nfsl_cfg_change, has_expiry) },
	{ "ttl_ms", offsetof(struct nfsl_cfg_change, ttl_ms),
	  offsetof(struct nfsl_cfg_change, has_ttl) },
	{ "events", offsetof(struct nfsl_cfg_change, events),
	  offsetof(struct nfsl_cfg_change, has_events) },
};
#define NR_CHANGE_KEYS (sizeof(change_keys) / sizeof(change_keys[0]))

int nfsl_ctl_change_parse(json_t *obj, struct nfsl_cfg_change *c, char *err, size_t errlen)
{
	const char *key;
	json_t *v;

	memset(c, 0, sizeof(*c));
	if (!json_is_object(obj)) {
		snprintf(err, errlen, "\"changes\" must be an object of KEY: NUMBER");
		return -EINVAL;
	}
	json_object_foreach(obj, key, v) {
		size_t i;

		for (i = 0; i < NR_CHANGE_KEYS && strcmp(key, change_keys[i].key); i++)
			;
		if (i == NR_CHANGE_KEYS) {
			snprintf(err, errlen,
				 "unknown change '%s': give threshold, keep, expiry, ttl_ms or "
				 "events", key);
			return -EINVAL;
		}
		if (!json_is_integer(v) || json_integer_value(v) < 0 ||
		    json_integer_value(v) > UINT32_MAX) {
			snprintf(err, errlen, "change '%s' must be a whole number >= 0", key);
			return -EINVAL;
		}
		*(__u32 *)((char *)c + change_keys[i].val) = json_integer_value(v);
		*(bool *)((char *)c + change_keys[i].has) = true;
	}
	return 0;
}

json_t *nfsl_ctl_change_json(const struct nfsl_cfg_change *c)
{
	json_t *o = json_object();

	for (size_t i = 0; o && i < NR_CHANGE_KEYS; i++)
		if (*(const bool *)((const char *)c + change_keys[i].has))
			json_object_set_new(o, change_keys[i].key,
					    json_integer(*(const __u32 *)((const char *)c +
									  change_keys[i].val)));
	return o;
}

static const char *const op_names[] = {
	[NFSL_CTL_PING] = "ping",
	[NFSL_CTL_LIST] = "list",
	[NFSL_CTL_GET] = "get",
	[NFSL_CTL_SET] = "set",
};

int nfsl_ctl_req_parse(json_t *msg, struct nfsl_ctl_req *r, char *err, size_t errlen)
{
	const char *op = json_string_value(json_object_get(msg, "op")), *name;
	json_t *ns, *gen;
	size_t i;

	memset(r, 0, sizeof(*r));
	for (i = 0; op && i < sizeof(op_names) / sizeof(op_names[0]); i++)
		if (!strcmp(op, op_names[i]))
			break;
	if (!op || i == sizeof(op_names) / sizeof(op_names[0])) {
		/* %.64s: the message names the op, whatever its length. */
		snprintf(err, errlen, "unknown op '%.64s': give ping, list, get or set",
			 op ? op : "(none)");
		return NFSL_EXIT_USAGE;
	}
	r->op = i;
	if (r->op == NFSL_CTL_PING || r->op == NFSL_CTL_LIST)
		return 0;
	ns = json_object_get(msg, "netns");
	name = json_string_value(json_object_get(msg, "name"));
	if (!json_is_integer(ns) || !name) {
		snprintf(err, errlen, "give \"netns\" (the namespace's cookie) and \"name\"");
		return NFSL_EXIT_USAGE;
	}
	if (nfsl_name_check(name)) {
		snprintf(err, errlen, "invalid domain name '%.64s': " NFSL_NAME_RULE, name);
		return NFSL_EXIT_USAGE;
	}
	r->netns = json_integer_value(ns);
	snprintf(r->name, sizeof(r->name), "%s", name);
	if (r->op == NFSL_CTL_GET)
		return 0;
	if (nfsl_ctl_change_parse(json_object_get(msg, "changes"), &r->changes, err, errlen))
		return NFSL_EXIT_USAGE;
	if (!nfsl_cfg_change_any(&r->changes)) {
		snprintf(err, errlen, "no change given: \"changes\" is empty");
		return NFSL_EXIT_USAGE;
	}
	gen = json_object_get(msg, "if_gen");
	if (gen && (!json_is_integer(gen) || json_integer_value(gen) < 0 ||
		    json_integer_value(gen) > UINT32_MAX)) {
		snprintf(err, errlen, "\"if_gen\" must be a generation number");
		return NFSL_EXIT_USAGE;
	}
	r->has_if_gen = gen != NULL;
	r->if_gen = gen ? json_integer_value(gen) : 0;
	return 0;
}

const char *nfsl_ctl_op_name(enum nfsl_ctl_op op)
{
	return op < sizeof(op_names) / sizeof(op_names[0]) ? op_names[op] : "?";
}
