// SPDX-License-Identifier: GPL-2.0
/*
 * Prints "SIZE RING": sizeof(struct nfsl_event) and NFSL_EVENTS_BYTES, as
 * the compiler sees them (test_docs.py checks the ring's record count the
 * docs and nfsl_consts.h state against them).
 */
#include <stdio.h>

#include "nfsl_structs.h"

int main(void)
{
	printf("%zu %u\n", sizeof(struct nfsl_event), NFSL_EVENTS_BYTES);
	return 0;
}
