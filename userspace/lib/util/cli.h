/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What every nfslice command-line tool does alike: messages (as text on
 * stderr, or as one JSON error object under --json), exit codes and stop
 * signals.
 */
#ifndef NFSL_CLI_H
#define NFSL_CLI_H

#include <stdbool.h>

/* Exit codes of every nfslice tool (documented in their --help and man
 * pages). nfslice status adds NFSL_EXIT_DAMAGED. */
enum {
	NFSL_EXIT_OK = 0,
	NFSL_EXIT_FAIL = 1,    /* the operation failed: the message says why */
	NFSL_EXIT_USAGE = 2,   /* bad command line: nothing was done */
	NFSL_EXIT_DAMAGED = 3, /* nfslice status: the domain is damaged */
};

/*
 * nfsl_msg - print PREFIX, the formatted message and a newline on stderr.
 * Under nfsl_msg_json(true), keep the message (without PREFIX) for
 * nfsl_msg_json_flush instead. Returns -1, so that "return tool_err(...);"
 * reports and fails at once.
 */
int nfsl_msg(const char *prefix, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * nfsl_warn - print PREFIX, the formatted message and a newline on stderr
 * at once, --json or not: a warning or a note, never part of the JSON
 * error object (stdout stays the command's JSON). Returns 0.
 */
int nfsl_warn(const char *prefix, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * nfsl_msg_json - with @on, collect error messages for one JSON object
 * instead of printing them (a command's --json).
 * nfsl_msg_json_flush - if messages were collected and @code is a failure
 * (NFSL_EXIT_FAIL, NFSL_EXIT_USAGE), print them as one object on stdout,
 * {"error": "MSG[; MSG...]", "code": @code}, through the JSON writer;
 * otherwise they were warnings of a command that did its work (and printed
 * its own JSON): print them as text on stderr. Returns @code, for "return nfsl_msg_json_flush(rc);".
 */
void nfsl_msg_json(bool on);
int nfsl_msg_json_flush(int code);

/* Does @argv (up to a "--") hold the word @opt, e.g. "--json"? For a
 * tool that must know its output format before it parses its options. */
bool nfsl_argv_has(int argc, char **argv, const char *opt);

/*
 * nfsl_catch_stop_signals - call @handler on SIGINT, SIGTERM and SIGHUP.
 * Without SA_RESTART: a blocking call (BPF_PROG_RUN, ppoll, a sleep)
 * returns EINTR, so a tool stops early and still reports.
 */
void nfsl_catch_stop_signals(void (*handler)(int));

#endif /* NFSL_CLI_H */
