// SPDX-License-Identifier: GPL-2.0
/*
 * Writes the checkpoint seeds of tests/fuzz/corpus/ckpt and corpus/adopt:
 * real images made by nfsl_ckpt_write from stores in memory (version 2,
 * with and without tenants, with and without CRC) and a version 1 image
 * laid out as that version's writer did. `make -C tests/fuzz corpus`
 * runs it; the seeds are committed.
 * Usage: mkcorpus DIR (writes DIR/ckpt/ and DIR/adopt/)
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <endian.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <zlib.h>

#include "nfsl/ckpt.h"
#include "../unit/ckpt_v1.h"
#include "ckpt_reseal.h"

static void die(const char *what)
{
	fprintf(stderr, "mkcorpus: %s\n", what);
	exit(1);
}

static void put(const char *dir, const char *sub, const char *name, unsigned int mode,
		const void *pre, size_t npre, const void *buf, size_t size, const void *post,
		size_t npost)
{
	char path[4096];
	unsigned char m = mode;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s/%s", dir, sub, name);
	f = fopen(path, "wb");
	if (!f || fwrite(&m, 1, 1, f) != 1 || (npre && fwrite(pre, npre, 1, f) != 1) ||
	    fwrite(buf, size, 1, f) != 1 || (npost && fwrite(post, npost, 1, f) != 1) ||
	    fclose(f))
		die(path);
}

static void park(struct nfsl_slot *s, __u32 gen, __u32 born, __u16 len, __u16 tenant)
{
	s->ctl = NFSL_CTL(gen, 2);
	s->born = born;
	s->parked_ns = 1000;
	s->len = len;
	s->tenant = tenant;
	s->ifindex = 7;
	for (int i = 0; i < len; i++)
		s->payload[i] = (__u8)(i * 7);
}

/* An image of @st in memory (*@size bytes, malloc'd). */
static char *image(const struct nfsl_ckpt_store *st, unsigned int flags, size_t *size)
{
	struct nfsl_ckpt_result res;
	char err[256], *buf;
	int fd = memfd_create("img", 0);

	if (fd < 0 || nfsl_ckpt_write(st, fd, flags, &res, err, sizeof(err)))
		die("write");
	*size = res.bytes;
	buf = malloc(*size);
	if (!buf || pread(fd, buf, *size, 0) != (ssize_t)*size)
		die("read");
	close(fd);
	return buf;
}

/* Both seeds of one image: for fuzz_ckpt (mode, image) and fuzz_adopt
 * (mode, length, image, two stale pairs). */
static void both(const char *dir, const char *name, unsigned int mode, const char *buf,
		 size_t size)
{
	__u64 len = htole64(size);
	__u32 pairs[4] = { htole32(1), htole32(3), htole32(15), htole32(2) };

	put(dir, "ckpt", name, mode, NULL, 0, buf, size, NULL, 0);
	put(dir, "adopt", name, mode & ~FUZZ_TRUSTED, &len, sizeof(len), buf, size, pairs,
	    sizeof(pairs));
}

int main(int argc, char **argv)
{
	static struct nfsl_slot slots[64];
	struct nfsl_config cfg = { .ncpus = 2, .nparts = 1, .part_slots = 8, .slots = 16,
				   .expiry = 2, .threshold = 256, .key = { 1, 2 } };
	__u32 seq[4] = { 3, 4, 5, 6 }, tseq[4 * NFSL_MAX_TENANTS];
	struct nfsl_ckpt_store st = { .slots = slots, .cfg = &cfg, .seq = seq };
	char *buf;
	size_t size;

	if (argc != 2)
		die("usage: mkcorpus DIR");
	/* Version 2, no tenants: two payloads. */
	park(&slots[1], 3, 1, 100, 0);
	park(&slots[15], 2, 2, 60, 0);
	slots[7].ctl = NFSL_CTL(9, 0); /* free, of a generation to raise */
	buf = image(&st, 0, &size);
	both(argv[1], "v2-plain", 0, buf, size);
	both(argv[1], "v2-plain-live", FUZZ_LIVE, buf, size);
	free(buf);
	/* Without CRC: a migration's, read trusted. */
	buf = image(&st, NFSL_CKPT_NOCRC, &size);
	both(argv[1], "v2-nocrc-trusted", FUZZ_TRUSTED, buf, size);
	free(buf);
	/* Version 2 with 2 tenants, 2 partitions per CPU. */
	memset(slots, 0, sizeof(slots));
	cfg.nparts = 2;
	cfg.slots = 32;
	cfg.ntenants = 2;
	cfg.tenants[1] = (struct nfsl_tenant){ .base = 0, .size = 3, .weight = 1, .name = "gold" };
	cfg.tenants[0] = (struct nfsl_tenant){ .base = 3, .size = 5, .weight = 1,
					       .name = "default" };
	for (unsigned int i = 0; i < 4 * NFSL_MAX_TENANTS; i++)
		tseq[i] = i;
	st.tseq = tseq;
	park(&slots[1], 5, 0, 300, 1);
	park(&slots[20], 6, 2, 2016, 0);
	buf = image(&st, 0, &size);
	both(argv[1], "v2-tenants", 0, buf, size);
	both(argv[1], "v2-tenants-live", FUZZ_LIVE, buf, size);
	free(buf);
	/* Version 1 (tests/unit/ckpt_v1.h). */
	{
		struct nfsl_ckpt_slot_v1 rec = { .index = 6 };
		struct nfsl_config c1 = { .ncpus = 2, .nparts = 1, .part_slots = 8,
					  .slots = 16, .expiry = 2 };
		__u32 s1[2] = { 500, 7 };

		park(&rec.slot, 5, 490, 120, 0);
		size = CKPT_V1_SIZE;
		buf = ckpt_v1_image(&c1, s1, &rec, 0);
		if (!buf)
			return 1;
		fuzz_reseal(buf, size);
		both(argv[1], "v1", 0, buf, size);
		free(buf);
	}
	return 0;
}
