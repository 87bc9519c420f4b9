// SPDX-License-Identifier: GPL-2.0
/* The tools' version: see version.h. */
#include "util/version.h"

/* The release this tree is, or leads to. */
#define NFSL_BASE_VERSION "0.1.0"

/* NFSL_GIT_VERSION, from userspace/lib/Makefile at build time; a build that did not
 * make it (outside git, or tests/unit building the library alone) has
 * none. */
#if defined(__has_include)
#if __has_include("nfsl_git_version.h")
#include "nfsl_git_version.h"
#endif
#endif

const char *nfsl_version(void)
{
#ifdef NFSL_GIT_VERSION
	if (NFSL_GIT_VERSION[0])
		return NFSL_BASE_VERSION " (git " NFSL_GIT_VERSION ")";
#endif
	return NFSL_BASE_VERSION;
}

void nfsl_print_version(const char *prog, FILE *f)
{
	fprintf(f, "%s %s\n", prog, nfsl_version());
}
