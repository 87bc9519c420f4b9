// SPDX-License-Identifier: GPL-2.0
/*
 * nfsliced's messages (nfsliced.h mgr_log): the bottom of the daemon, used
 * by every other file of it and using none, so that no two of its files
 * depend on each other.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "nfsliced.h"

const char *const mgr_levels[] = { "err", "warning", "notice", "info", "debug", NULL };
static int max_level = MGR_INFO;
static bool journal;

void mgr_log_setup(int level)
{
	max_level = level;
	/* systemd sets JOURNAL_STREAM when stderr goes to the journal. */
	journal = getenv("JOURNAL_STREAM") != NULL;
}

void mgr_log(int level, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	if (level > max_level)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (journal)
		fprintf(stderr, "<%d>%s\n", level, msg);
	else
		fprintf(stderr, MGR_NAME ": %s: %s\n", mgr_levels[level - MGR_ERR], msg);
}
