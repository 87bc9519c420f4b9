// SPDX-License-Identifier: GPL-2.0
/*
 * Linked into every fuzz target: UndefinedBehaviorSanitizer stops at the
 * first report, so an undefined behaviour is a crash libFuzzer saves and
 * tests/fuzz/run.sh fails on. The checks are compiled recoverable and
 * halted here at run time instead of with -fno-sanitize-recover: clang
 * takes ~30 s per file on nf/lb.c and nf/nat.c with that flag, 2 s
 * without, for the same reports.
 */

/* Read by the UBSan runtime at start-up; UBSAN_OPTIONS still overrides. */
const char *__ubsan_default_options(void);

const char *__ubsan_default_options(void)
{
	return "halt_on_error=1:print_stacktrace=1";
}
