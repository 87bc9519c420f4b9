// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target: the pcap files of nfslice-pktgen --pcap
 * (userspace/nfslice-pktgen/pcap.c: pg_pcap_load; docs/pktgen.md). The first byte picks the
 * largest frame (64 + byte x 12 bytes, as the MTU sets it), the rest is
 * the file.
 */
#include <stdarg.h>

#include "fuzz.h"
#include "pg.h"

/* pcap.c's messages (pg_err) formatted, not printed. */
FUZZ_MSG_QUIET

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pg_pcap p;
	char path[64];
	double avg = 0;
	__u32 max;
	uint8_t b;
	int fd = fuzz_byte_file(data, size, &b, path, sizeof(path));

	if (fd < 0)
		return 0;
	max = 64 + b * 12;
	if (!pg_pcap_load(path, max, &p, &avg)) {
		fuzz_check(p.n >= 1 && p.n <= PG_PCAP_MAX);
		for (__u32 i = 0; i < p.n; i++)
			fuzz_check(p.frames[i].len >= 14 && p.frames[i].len <= max &&
				   p.frames[i].len <= PKTGEN_MAX_FRAME);
		fuzz_check(avg >= 14 && avg <= max);
	} else {
		fuzz_check(!p.frames && !p.n);
	}
	free(p.frames);
	close(fd);
	return 0;
}
