// SPDX-License-Identifier: GPL-2.0
/* The control protocol of nfsliced: framing and codec (ctl.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "ctl.h"

const char *nfsl_ctl_path(void)
{
	const char *p = getenv("NFSLICE_SOCKET");

	return p && *p ? p : NFSL_CTL_SOCKET;
}

int nfsl_ctl_connect(const char *path)
{
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
	if (connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

int nfsl_ctl_send(int fd, json_t *msg)
{
	char *s = json_dumps(msg, JSON_COMPACT);
	size_t len, off = 0;
	int err = 0;

	if (!s)
		return -ENOMEM;
	len = strlen(s);
	s[len++] = '\n'; /* json_dumps' NUL becomes the line's end */
	while (off < len) {
		ssize_t n = send(fd, s + off, len - off, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			break;
		}
		off += n;
	}
	free(s);
	return err;
}

/* Take the first line of @b, if complete, as a JSON object. */
static int take_line(struct nfsl_ctl_buf *b, json_t **msg)
{
	char *nl = b->len ? memchr(b->data, '\n', b->len) : NULL;
	size_t used;
	json_t *v;

	if (!nl)
		return -EAGAIN;
	*nl = '\0';
	used = nl - b->data + 1;
	v = json_loads(b->data, 0, NULL);
	memmove(b->data, b->data + used, b->len - used);
	b->len -= used;
	if (!json_is_object(v)) {
		json_decref(v);
		return -EBADMSG;
	}
	*msg = v;
	return 0;
}

int nfsl_ctl_recv(int fd, struct nfsl_ctl_buf *b, json_t **msg)
{
	for (;;) {
		ssize_t n;
		int err = take_line(b, msg);

		if (err != -EAGAIN)
			return err;
		if (b->len >= NFSL_CTL_LINE_MAX)
			return -EBADMSG;
		if (b->cap - b->len < 4096) {
			size_t cap = b->cap ? 2 * b->cap : 8192;
			char *p = realloc(b->data, cap);

			if (!p)
				return -ENOMEM;
			b->data = p;
			b->cap = cap;
		}
		n = recv(fd, b->data + b->len, b->cap - b->len, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
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

int nfsl_ctl_call(const char *path, json_t *req, json_t **resp)
{
	struct nfsl_ctl_buf b = {};
	int fd = nfsl_ctl_connect(path), err;

	if (fd < 0) {
		json_decref(req);
		return fd;
	}
	err = nfsl_ctl_send(fd, req);
	json_decref(req);
	if (!err)
		err = nfsl_ctl_recv(fd, &b, resp);
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
