/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers of the libFuzzer targets (tests/fuzz/, docs/design.md "Tests"):
 * untrusted bytes handed to parsers that read a file by name.
 */
#ifndef NFSL_FUZZ_H
#define NFSL_FUZZ_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

/*
 * fuzz_file - @n bytes of @d in a new memfd, its name (/proc/self/fd/N)
 * in @path (@plen bytes). Returns the fd (close it when done), or -1.
 */
static inline int fuzz_file(const uint8_t *d, size_t n, char *path, size_t plen)
{
	int fd = memfd_create("fuzz", MFD_CLOEXEC);
	size_t done = 0;

	if (fd < 0)
		return -1;
	while (done < n) {
		ssize_t k = write(fd, d + done, n - done);

		if (k <= 0) {
			close(fd);
			return -1;
		}
		done += (size_t)k;
	}
	lseek(fd, 0, SEEK_SET);
	snprintf(path, plen, "/proc/self/fd/%d", fd);
	return fd;
}

/*
 * fuzz_byte_file - an input read as a parameter byte (*@b, the first)
 * and a file of the rest (fuzz_file). Returns the fd, or -1 (also for an
 * empty input).
 */
static inline int fuzz_byte_file(const uint8_t *d, size_t n, uint8_t *b, char *path, size_t plen)
{
	if (!n)
		return -1;
	*b = d[0];
	return fuzz_file(d + 1, n - 1, path, plen);
}

/* fuzz_check - abort (a crash libFuzzer reports, with the input) unless
 * @cond: a property every input must keep. */
#define fuzz_check(cond)                                                          \
	do {                                                                      \
		if (!(cond)) {                                                    \
			fprintf(stderr, "%s:%d: property broken: %s\n", __FILE__, \
				__LINE__, #cond);                                 \
			abort();                                                  \
		}                                                                 \
	} while (0)

/*
 * FUZZ_MSG_QUIET - a definition of nfsl_msg (userspace/lib/util/cli.c)
 * that formats and prints nothing, for a target whose parser reports
 * through it (pg_err): a run is not its messages. Needs <stdarg.h>.
 */
#define FUZZ_MSG_QUIET                                            \
	int nfsl_msg(const char *prefix, const char *fmt, ...)   \
	{                                                         \
		char buf[1024];                                   \
		va_list ap;                                       \
									  \
		va_start(ap, fmt);                                \
		vsnprintf(buf, sizeof(buf), fmt, ap);             \
		va_end(ap);                                       \
		return -1;                                        \
	}

#endif /* NFSL_FUZZ_H */
