/* SPDX-License-Identifier: GPL-2.0 */
/* The checkpoint targets' CRC fix-up: a mutated image whose CRC-32 is made
 * right again reaches the checks behind it (docs/format.md "Checkpoint
 * file": the CRC covers the whole image with its crc field zero). */
#ifndef NFSL_FUZZ_CKPT_RESEAL_H
#define NFSL_FUZZ_CKPT_RESEAL_H

#include <stddef.h>
#include <string.h>
#include <zlib.h>

#include "nfsl/ckpt.h"
#include "fuzz.h"

/* The first input byte's bits, in both checkpoint targets. */
#define FUZZ_RESEAL 0x1  /* rewrite the CRC-32 before parsing */
#define FUZZ_TRUSTED 0x2 /* parse with NFSL_CKPT_TRUSTED (a migration's image) */
#define FUZZ_LIVE 0x4    /* import with NFSL_CKPT_LIVE (copy mode, adopt) */

static inline void fuzz_reseal(char *buf, size_t size)
{
	size_t off = offsetof(struct nfsl_ckpt_hdr, crc32);
	__u32 crc;

	if (size < off + 4)
		return;
	memset(buf + off, 0, 4);
	crc = crc32(0, (const Bytef *)buf, size);
	memcpy(buf + off, &crc, 4);
}

/*
 * fuzz_import - walk and import a parsed image as restore (the image's
 * own geometry, when small) and adopt (a store of 256 slots, refused as
 * adopt refuses when the image has more) do; every property an image
 * from anyone must keep is checked. @refs: room for img->nrecs + 1.
 */
static inline void fuzz_import(const struct nfsl_ckpt_img *img, unsigned int mode,
			       struct nfsl_ckpt_ref *refs, struct nfsl_ckpt_result *res,
			       struct nfsl_slot **slots_out, struct nfsl_config *cfg_out)
{
	struct nfsl_ckpt_clock now = { .mono_ns = 1000000000000ull, .real_ns = 2 };
	struct nfsl_config cfg;
	struct nfsl_ckpt_store st;
	const char *pos = img->recs;
	struct nfsl_ckpt_item it;
	unsigned long sum = 0;
	__u32 nseq;

	/* Every record readable, every payload byte inside the image. */
	for (__u32 k = 0; k < img->nrecs; k++) {
		nfsl_ckpt_next(img, &pos, &it);
		if (it.rec.len) /* ASan: inside the (exact) buffer */
			sum += it.payload[0] + it.payload[it.rec.len - 1];
		fuzz_check(it.rec.index < img->cfg.slots);
	}
	fuzz_check(sum != ~0ul); /* keep the reads */
	if (img->cfg.slots <= 1024 && !(mode & FUZZ_LIVE)) {
		cfg = img->cfg; /* restore: the same geometry */
	} else {
		memset(&cfg, 0, sizeof(cfg));
		cfg.ncpus = 2;
		cfg.nparts = 1;
		cfg.part_slots = 128;
		cfg.slots = 256;
		cfg.expiry = 2;
		if (img->cfg.slots > cfg.slots)
			return; /* adopt refuses it */
	}
	nseq = cfg.ncpus * (cfg.nparts ? cfg.nparts : 1);
	memset(&st, 0, sizeof(st));
	st.cfg = &cfg;
	st.slots = calloc(cfg.slots, sizeof(struct nfsl_slot));
	st.seq = calloc(nseq, sizeof(__u32));
	st.tseq = cfg.ntenants ? calloc((size_t)nseq * NFSL_MAX_TENANTS, sizeof(__u32)) : NULL;
	if (st.slots && st.seq && (!cfg.ntenants || st.tseq)) {
		nfsl_ckpt_import(img, &st, &now, mode & FUZZ_LIVE ? NFSL_CKPT_LIVE : 0, refs, res);
		fuzz_check(res->restored + res->conflicts <= img->nrecs);
		for (__u32 k = 0; k < res->restored; k++)
			fuzz_check(refs[k].index < cfg.slots);
	}
	free(st.seq);
	free(st.tseq);
	if (slots_out && st.slots) {
		*slots_out = st.slots;
		*cfg_out = cfg;
	} else {
		free(st.slots);
	}
}

#endif /* NFSL_FUZZ_CKPT_RESEAL_H */
