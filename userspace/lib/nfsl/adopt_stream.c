// SPDX-License-Identifier: GPL-2.0
/*
 * The byte stream nfslice adopt reads on its standard input (copyin.h;
 * the protocol in loader/adopt.c and docs/format.md): a framed checkpoint
 * image, then the (index, generation) pairs of the copies the old splicer
 * made stale. Apart from adopt.c, so that the fuzz target of
 * tests/fuzz/ links it without the CLI.
 */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "nfsl/copyin.h"

ssize_t nfsl_adopt_read_full(int fd, void *b, size_t n)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r = read(fd, (char *)b + got, n - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (!r)
			break;
		got += (size_t)r;
	}
	return (ssize_t)got;
}

int nfsl_adopt_read_image(int fd, __u64 max, char **buf, size_t *size)
{
	__u64 len;
	ssize_t r = nfsl_adopt_read_full(fd, &len, sizeof(len));

	*buf = NULL;
	if (r != sizeof(len))
		return r < 0 ? (int)r : -EPROTO;
	len = le64toh(len);
	if (len > max)
		return -EPROTO;
	*buf = malloc(len ? len : 1);
	if (!*buf)
		return -ENOMEM;
	r = nfsl_adopt_read_full(fd, *buf, len);
	if (r != (ssize_t)len)
		return r < 0 ? (int)r : -EPROTO;
	*size = len;
	return 0;
}

int nfsl_adopt_drop_stale(int fd, struct nfsl_slot *slots, __u32 nslots,
			  struct nfsl_ckpt_ref *refs, __u32 *n, struct nfsl_follow *f)
{
	__u64 *named = calloc(nslots, sizeof(*named)); /* 1 << 32 | generation */
	__u32 pair[2];

	/* Read to EOF even without memory: the sender must not block. */
	while (nfsl_adopt_read_full(fd, pair, sizeof(pair)) == sizeof(pair))
		if (named && le32toh(pair[0]) < nslots)
			named[le32toh(pair[0])] = 1ull << 32 | le32toh(pair[1]);
	if (!named)
		return -ENOMEM;
	for (__u32 k = 0; k < *n;) {
		struct nfsl_ckpt_ref *r = &refs[k];

		/* refs come from nfsl_ckpt_import into this store: below nslots */
		if (r->index >= nslots || named[r->index] != (1ull << 32 | r->gen)) {
			k++;
			continue;
		}
		switch (nfsl_slot_evict(&slots[r->index], r->gen, r->parked_ns)) {
		case NFSL_EVICT_GONE: /* its own header came here first */
			f->spliced++;
			break;
		case NFSL_EVICT_RACED:
			f->raced++;
			break;
		default:
			f->stale++;
		}
		*r = refs[--*n];
	}
	free(named);
	return 0;
}
