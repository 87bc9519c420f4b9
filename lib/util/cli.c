// SPDX-License-Identifier: GPL-2.0
/* Messages and stop signals of the nfslice tools: see cli.h. */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>

#include "cli.h"

int nfsl_msg(const char *prefix, const char *fmt, ...)
{
	va_list ap;

	fputs(prefix, stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return -1;
}

void nfsl_catch_stop_signals(void (*handler)(int))
{
	struct sigaction sa = {.sa_handler = handler};

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}
