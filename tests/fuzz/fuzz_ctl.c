// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target: nfsliced's control protocol request parser (issue 17
 * §1.4; docs/manager.md "Control protocol"). The input is the byte stream
 * of one client connection, taken as the daemon takes it (userspace/nfsliced/conn.c):
 * appended in reads of 1-64 bytes (the first input byte picks the size,
 * so lines split across reads are covered), each complete line framed by
 * nfsl_ctl_take_line and checked by nfsl_ctl_req_parse, a connection
 * whose untaken bytes pass NFSL_CTL_REQ_MAX closed. For each line it
 * asserts what the daemon relies on:
 * - a refused request has exit status 2 and a message, and its error
 *   response (nfsl_ctl_error) serialises to one line;
 * - an accepted one names a known op; get and set a valid domain name
 *   (nfsl_name_check) of fewer than NFSL_NAME_MAX bytes; set at least
 *   one change, and its changes survive nfsl_ctl_change_json ->
 *   nfsl_ctl_change_parse unchanged (what nfslice set sends is what the
 *   daemon applies).
 * Nothing here opens a socket or touches a bpffs.
 *
 * Built and run by tests/fuzz/Makefile (make fuzz; make test: 3 s).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/cli.h"
#include "nfsl/ctl.h"

#define CHECK(cond)                                                              \
	do {                                                                     \
		if (!(cond)) {                                                   \
			fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #cond); \
			abort();                                                 \
		}                                                                \
	} while (0)

static void check_line(json_t *msg)
{
	struct nfsl_cfg_change back;
	struct nfsl_ctl_req r;
	char err[512] = "";
	json_t *o;
	int code = nfsl_ctl_req_parse(msg, &r, err, sizeof(err));

	if (code) {
		char *s;

		CHECK(code == NFSL_EXIT_USAGE);
		CHECK(err[0] && memchr(err, '\0', sizeof(err)));
		o = nfsl_ctl_error(code, "%s", err);
		CHECK(o);
		s = json_dumps(o, JSON_COMPACT);
		CHECK(s && !strchr(s, '\n'));
		free(s);
		json_decref(o);
		return;
	}
	CHECK(r.op <= NFSL_CTL_SET && strcmp(nfsl_ctl_op_name(r.op), "?"));
	if (r.op == NFSL_CTL_PING || r.op == NFSL_CTL_LIST)
		return;
	CHECK(memchr(r.name, '\0', sizeof(r.name)) && !nfsl_name_check(r.name));
	if (r.op != NFSL_CTL_SET)
		return;
	CHECK(nfsl_cfg_change_any(&r.changes));
	o = nfsl_ctl_change_json(&r.changes);
	CHECK(o);
	CHECK(!nfsl_ctl_change_parse(o, &back, err, sizeof(err)));
	CHECK(!memcmp(&back, &r.changes, sizeof(back)));
	json_decref(o);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct nfsl_ctl_buf b = {};
	size_t step, off = 0;

	if (!size)
		return 0;
	step = data[0] % 64 + 1;
	data++;
	size--;
	while (off < size) {
		size_t n = size - off < step ? size - off : step;
		json_t *msg;
		int err;

		if (nfsl_ctl_buf_room(&b, n))
			break;
		memcpy(b.data + b.len, data + off, n);
		b.len += n;
		off += n;
		while ((err = nfsl_ctl_take_line(&b, &msg)) != -EAGAIN) {
			CHECK(err == 0 || err == -EBADMSG);
			if (err)
				continue; /* the daemon answers and closes */
			CHECK(json_is_object(msg));
			check_line(msg);
			json_decref(msg);
		}
		CHECK(b.off <= b.len && b.len <= b.cap);
		if (b.len - b.off > NFSL_CTL_REQ_MAX)
			break; /* the daemon refuses the line and closes */
	}
	nfsl_ctl_buf_free(&b);
	return 0;
}
