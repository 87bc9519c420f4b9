/* SPDX-License-Identifier: GPL-2.0 */
/* What every nfslice command-line tool does alike: messages and stop signals. */
#ifndef NFSL_CLI_H
#define NFSL_CLI_H

/*
 * nfsl_msg - print PREFIX, the formatted message and a newline on stderr.
 * Returns -1, so that "return tool_err(...);" reports and fails at once.
 */
int nfsl_msg(const char *prefix, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * nfsl_catch_stop_signals - call @handler on SIGINT, SIGTERM and SIGHUP.
 * Without SA_RESTART: a blocking call (BPF_PROG_RUN, ppoll, a sleep)
 * returns EINTR, so a tool stops early and still reports.
 */
void nfsl_catch_stop_signals(void (*handler)(int));

#endif /* NFSL_CLI_H */
