/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A version-1 checkpoint image as nfslice 0.x wrote it (docs/format.md
 * "Checkpoint file"): the fixed header part, a configuration up to
 * key_old, two allocation clocks, one fixed record holding the age. For
 * the unit tests (test_copy.c, test_ckpt_untrusted.c) and the fuzz seeds
 * (tests/fuzz/mkcorpus.c). No CRC: the caller seals what it changed.
 */
#ifndef NFSL_TEST_CKPT_V1_H
#define NFSL_TEST_CKPT_V1_H

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "nfsl/ckpt.h"

#define CKPT_V1_FIXED offsetof(struct nfsl_ckpt_hdr, clock)
#define CKPT_V1_CFG offsetof(struct nfsl_config, key_old)
/* Where the record lies in the image. */
#define CKPT_V1_REC_OFF (CKPT_V1_FIXED + CKPT_V1_CFG + 2 * sizeof(__u32))
#define CKPT_V1_SIZE (CKPT_V1_REC_OFF + sizeof(struct nfsl_ckpt_slot_v1))

/* The image of @cfg, clocks @seq and record @rec taken at @taken_ns
 * (CLOCK_REALTIME), in a calloc'd buffer of CKPT_V1_SIZE bytes (NULL when
 * out of memory). */
static inline char *ckpt_v1_image(const struct nfsl_config *cfg, const __u32 seq[2],
				  const struct nfsl_ckpt_slot_v1 *rec, __u64 taken_ns)
{
	struct nfsl_ckpt_hdr h = { .version = 1 };
	char *buf = calloc(1, CKPT_V1_SIZE);

	if (!buf)
		return NULL;
	memcpy(h.magic, NFSL_CKPT_MAGIC, 8);
	h.hdr_size = CKPT_V1_FIXED + CKPT_V1_CFG;
	h.cfg_size = CKPT_V1_CFG;
	h.slot_size = sizeof(struct nfsl_slot);
	h.nseq = 2;
	h.nslots = 1;
	h.taken_ns = taken_ns;
	memcpy(buf, &h, CKPT_V1_FIXED);
	memcpy(buf + CKPT_V1_FIXED, cfg, CKPT_V1_CFG);
	memcpy(buf + CKPT_V1_FIXED + CKPT_V1_CFG, seq, 2 * sizeof(__u32));
	memcpy(buf + CKPT_V1_REC_OFF, rec, sizeof(*rec));
	return buf;
}

#endif /* NFSL_TEST_CKPT_V1_H */
