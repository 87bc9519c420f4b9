// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target: nfslice adopt's standard input (loader/adopt.c, read
 * by userspace/lib/nfsl/adopt_stream.c): a little-endian 64-bit length, the image,
 * then (index, generation) pairs of the copies named stale until EOF.
 * The image is parsed as untrusted and imported live into a store of 256
 * slots, as adopt does, then the pairs free what they name.
 * Input: one mode byte (FUZZ_RESEAL of ckpt_reseal.h; FUZZ_LIVE always),
 * then the stream.
 */
#include "fuzz.h"
#include "ckpt_reseal.h"
#include "nfsl/copyin.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct nfsl_ckpt_result res = {};
	struct nfsl_ckpt_ref *refs = NULL;
	struct nfsl_slot *slots = NULL;
	struct nfsl_follow f = {};
	struct nfsl_ckpt_img img;
	struct nfsl_config cfg;
	char err[512], *buf = NULL, path[64];
	size_t isize = 0;
	unsigned int mode;
	__u32 pending;
	int fd;

	if (!size)
		return 0;
	mode = data[0] | FUZZ_LIVE;
	fd = fuzz_file(data + 1, size - 1, path, sizeof(path));
	if (fd < 0)
		return 0;
	/* adopt's bound for a store of 256 slots */
	if (nfsl_adopt_read_image(fd, 256ull * (4 + sizeof(struct nfsl_ckpt_rec) +
						NFSL_PAYLOAD_MAX) + (1 << 20),
				  &buf, &isize))
		goto out;
	if (mode & FUZZ_RESEAL)
		fuzz_reseal(buf, isize);
	if (nfsl_ckpt_parse(buf, isize, 0, &img, err, sizeof(err)))
		goto out;
	refs = calloc((size_t)img.nrecs + 1, sizeof(*refs));
	if (!refs)
		goto out;
	fuzz_import(&img, mode, refs, &res, &slots, &cfg);
	if (!slots)
		goto out;
	pending = res.restored;
	if (!nfsl_adopt_drop_stale(fd, slots, cfg.slots, refs, &pending, &f))
		fuzz_check(pending + f.stale + f.spliced + f.raced == res.restored);
out:
	free(slots);
	free(refs);
	free(buf);
	close(fd);
	return 0;
}
