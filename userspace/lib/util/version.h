/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The version every nfslice tool prints (--version) and its man page
 * carries: NFSL_BASE_VERSION (version.c, the one place it is written) and,
 * when built from a git checkout, `git describe --tags --always --dirty`
 * of that build (userspace/lib/Makefile generates it; without git the base alone).
 */
#ifndef NFSL_VERSION_H
#define NFSL_VERSION_H

#include <stdio.h>

/* "0.1.0 (git d847ee3-dirty)", or "0.1.0" when built outside git. */
const char *nfsl_version(void);

/* Print "PROG VERSION\n" on @f, as `PROG --version` does. */
void nfsl_print_version(const char *prog, FILE *f);

#endif /* NFSL_VERSION_H */
