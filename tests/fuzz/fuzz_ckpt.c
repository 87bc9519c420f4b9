// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target: checkpoint images, versions 1 and 2 (userspace/lib/nfsl/ckpt.c:
 * nfsl_ckpt_parse, nfsl_ckpt_next, nfsl_ckpt_import; docs/format.md
 * "Checkpoint file"). What nfslice restore reads from a file.
 * Input: one mode byte (FUZZ_RESEAL, FUZZ_TRUSTED, FUZZ_LIVE of
 * ckpt_reseal.h), then the image.
 */
#include "fuzz.h"
#include "ckpt_reseal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct nfsl_ckpt_result res = {};
	struct nfsl_ckpt_ref *refs;
	struct nfsl_ckpt_img img;
	unsigned int mode;
	char err[512], *buf;

	if (!size)
		return 0;
	mode = data[0];
	data++;
	size--;
	/* An exact copy: ASan sees a read past the image. */
	buf = malloc(size ? size : 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	if (mode & FUZZ_RESEAL)
		fuzz_reseal(buf, size);
	if (!nfsl_ckpt_parse(buf, size, mode & FUZZ_TRUSTED ? NFSL_CKPT_TRUSTED : 0, &img, err,
			     sizeof(err))) {
		refs = calloc((size_t)img.nrecs + 1, sizeof(*refs));
		if (refs)
			fuzz_import(&img, mode, refs, &res, NULL, NULL);
		free(refs);
	} else {
		fuzz_check(err[0]); /* every refusal says why */
	}
	free(buf);
	return 0;
}
