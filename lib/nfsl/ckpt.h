/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Checkpoint and restore of a domain's parked payloads, key and
 * configuration (issue 10 §7; docs/manager.md "Checkpoint and restore";
 * UNO §3.3.2 moves an NF's state the same way: copy, then switch).
 *
 * The file (version NFSL_CKPT_VERSION, mode 0600: it holds the SipHash key
 * that makes tokens valid):
 *   struct nfsl_ckpt_hdr        magic, version, sizes, counts, CRC-32
 *   __u32 seq[nseq]             each partition's allocation clock
 *                               (struct nfsl_alloc seq), cpu-major
 *   struct nfsl_ckpt_slot[n]    every busy slot: index, its slot struct
 *                               with parked_ns holding the payload's age
 * The CRC-32 (zlib) covers the whole file with the crc field zero. A
 * checkpoint is taken while traffic flows: a slot released or reused
 * while it is copied is left out (its control word is read before and
 * after the copy).
 */
#ifndef NFSL_CKPT_H
#define NFSL_CKPT_H

#include <stddef.h>

#include "domain.h"

#define NFSL_CKPT_MAGIC "NFSLCKPT"
#define NFSL_CKPT_VERSION 1

struct nfsl_ckpt_hdr {
	char magic[8];
	__u32 version;
	__u32 hdr_size;  /* sizeof(struct nfsl_ckpt_hdr) */
	__u32 cfg_size;  /* sizeof(struct nfsl_config) */
	__u32 slot_size; /* sizeof(struct nfsl_slot) */
	__u32 nseq;      /* partitions: ncpus x nparts */
	__u32 nslots;    /* busy slots saved */
	__u64 taken_ns;  /* CLOCK_REALTIME when taken */
	__u32 crc32;
	__u32 pad;
	struct nfsl_config cfg;
};

struct nfsl_ckpt_slot {
	__u32 index;
	__u32 pad;
	struct nfsl_slot slot; /* parked_ns: age in ns when taken */
};

/* What a checkpoint or restore did. */
struct nfsl_ckpt_result {
	__u32 saved;    /* checkpoint: busy slots written */
	__u32 skipped;  /* checkpoint: released or reused while copied */
	__u32 restored; /* restore: slots made busy again */
	__u64 bytes;    /* file size */
};

/*
 * nfsl_ckpt_save - write the domain at pin directory @dir to @path
 * (created 0600 beside and renamed over, so a reader never sees half a
 * file). Returns 0, or -errno with a message in @err.
 */
int nfsl_ckpt_save(const char *dir, const char *path, struct nfsl_ckpt_result *res, char *err,
		   size_t errlen);

/*
 * nfsl_ckpt_restore - load @path into the domain at @dir: the file is
 * checked first (magic, version, sizes of this build's structs, CRC-32,
 * the domain's geometry: slots, partitions, CPUs), then, under the
 * host-wide lock and only if the domain holds no parked payload (its own
 * tokens would stop verifying), each saved slot is written back busy with
 * its generation, its age kept (parked_ns and the partition clock
 * translated), and the saved key, threshold, keep, expiry, TTL and
 * smallest window become the domain's (its interfaces stay). Returns 0;
 * -EBADMSG (not a checkpoint, corrupt, other version), -EINVAL (another
 * geometry), -EBUSY (payloads parked), other -errno; the message in @err.
 */
int nfsl_ckpt_restore(const char *dir, const char *path, struct nfsl_ckpt_result *res,
		      char *err, size_t errlen);

#endif /* NFSL_CKPT_H */
