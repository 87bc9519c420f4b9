// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target: the size mix files of nfslice-pktgen --mix
 * (userspace/nfslice-pktgen/mix.c: pg_mix_load, pg_mix_sequence;
 * docs/pktgen.md "Size mixes"). The first byte picks the largest frame
 * (60 + byte x 11 bytes, as the MTU sets it), the rest is the file. A
 * loaded mix holds 1 to PG_MIX_MAX distinct sizes in range with weights
 * in (0, 1e9]; its sequence 1 to PKTGEN_MAX_SEQ of those sizes.
 */
#include <stdarg.h>

#include "fuzz.h"
#include "pg.h"

#define LO 60

/* mix.c's messages (pg_err, pg_warn) formatted, not printed. */
FUZZ_MSG_QUIET

/* The properties of a mix pg_mix_load took, sizes up to @hi. */
static void check_mix(struct pg_mix *m, __u32 hi)
{
	double avg = 0;

	fuzz_check(m->n >= 1 && m->n <= PG_MIX_MAX);
	for (__u32 i = 0; i < m->n; i++) {
		fuzz_check(m->size[i] >= LO && m->size[i] <= hi);
		fuzz_check(m->weight[i] > 0 && m->weight[i] <= 1e9);
		for (__u32 j = 0; j < i; j++)
			fuzz_check(m->size[j] != m->size[i]);
	}
	if (pg_mix_sequence(m, &avg))
		return;
	fuzz_check(m->seq_len >= 1 && m->seq_len <= PKTGEN_MAX_SEQ);
	for (__u32 k = 0; k < m->seq_len; k++)
		fuzz_check(m->seq[k] >= LO && m->seq[k] <= hi);
	fuzz_check(avg >= LO && avg <= hi);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pg_mix m;
	char path[64];
	uint8_t b;
	int fd = fuzz_byte_file(data, size, &b, path, sizeof(path));

	if (fd < 0)
		return 0;
	if (!pg_mix_load(path, LO, LO + b * 11, "fuzz", &m))
		check_mix(&m, LO + b * 11);
	else
		fuzz_check(!m.n && !m.seq);
	free(m.seq);
	close(fd);
	return 0;
}
