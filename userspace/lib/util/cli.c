// SPDX-License-Identifier: GPL-2.0
/* Messages, JSON errors and stop signals of the nfslice tools: see cli.h. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/cli.h"
#include "util/json_writer.h"

static bool json_errors;
static char *collected; /* messages so far, "; "-separated */
static char *as_text;   /* the same, each PREFIX MSG\n, for a success */

int nfsl_msg(const char *prefix, const char *fmt, ...)
{
	va_list ap;

	if (json_errors) {
		size_t old = collected ? strlen(collected) : 0;
		char *msg = NULL, *grown;
		int n;

		va_start(ap, fmt);
		n = vasprintf(&msg, fmt, ap);
		va_end(ap);
		if (n < 0)
			return -1;
		grown = realloc(collected, old + (old ? 2 : 0) + n + 1);
		if (grown) {
			sprintf(grown + old, "%s%s", old ? "; " : "", msg);
			collected = grown;
		}
		old = as_text ? strlen(as_text) : 0;
		grown = realloc(as_text, old + strlen(prefix) + n + 2);
		if (grown) {
			sprintf(grown + old, "%s%s\n", prefix, msg);
			as_text = grown;
		}
		free(msg);
		return -1;
	}
	fputs(prefix, stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return -1;
}

int nfsl_warn(const char *prefix, const char *fmt, ...)
{
	va_list ap;

	fputs(prefix, stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return 0;
}

void nfsl_msg_json(bool on)
{
	json_errors = on;
}

int nfsl_msg_json_flush(int code)
{
	struct json_writer w;

	if (!json_errors || !collected)
		return code;
	/* A command that succeeded (or status, damaged: 3) printed its
	 * object: what it said on the way was a warning, for stderr, not an
	 * error object on stdout. */
	if (code != NFSL_EXIT_FAIL && code != NFSL_EXIT_USAGE) {
		fputs(as_text, stderr);
		goto out;
	}
	jsonw_init(&w, stdout);
	jsonw_start_object(&w);
	jsonw_string_field(&w, "error", collected);
	jsonw_int_field(&w, "code", code);
	jsonw_end_object(&w);
	fflush(stdout);
out:
	free(collected);
	free(as_text);
	collected = NULL;
	as_text = NULL;
	return code;
}

bool nfsl_argv_has(int argc, char **argv, const char *opt)
{
	for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], opt))
			return true;
	return false;
}

void nfsl_catch_stop_signals(void (*handler)(int))
{
	struct sigaction sa = {.sa_handler = handler};

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}
