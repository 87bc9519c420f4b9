/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Checkpoint and restore of a domain's parked payloads, key and
 * configuration, and the slot import of a copy-mode migration (issue 10
 * §7; docs/cli.md "Checkpoint and restore", "Migration (copy mode)";
 * docs/format.md "Checkpoint file"; UNO §3.3.2 moves an NF's state the
 * same way: copy, then switch).
 *
 * The image (version NFSL_CKPT_VERSION; a file is mode 0600: it holds the
 * SipHash key that makes tokens valid), little-endian, all of this
 * build's struct sizes recorded in the header:
 *   struct nfsl_ckpt_hdr     magic, version, sizes, counts, CRC-32, the
 *                            clock reference, the configuration
 *   __u32 seq[nseq]          each partition's allocation clock (struct
 *                            nfsl_alloc seq), cpu-major
 *   __u32 tseq[ntseq]        each tenant's clock in each partition
 *                            (partition x NFSL_MAX_TENANTS + tenant; none
 *                            without tenants)
 *   zero padding to 8 bytes
 *   records[nslots]          every busy slot: struct nfsl_ckpt_rec, then
 *                            its len payload bytes, zero-padded to 8
 *   __u32 gen[ngen]          every slot's generation, busy or free (last:
 *                            gathered in the same pass as the records)
 *   zero padding to 8 bytes
 * The CRC-32 (zlib) covers the whole image with the crc field zero.
 * Version 1 (fixed 2056-byte records holding the payload's age, no clock
 * reference, no generations, no tenant clocks) is still read.
 * An image is taken while traffic flows: a slot released or reused while
 * it is copied is left out (its control word is read before and after).
 */
#ifndef NFSL_CKPT_H
#define NFSL_CKPT_H

#include <stddef.h>

#include "nfsl/domain.h"

#define NFSL_CKPT_MAGIC "NFSLCKPT"
#define NFSL_CKPT_VERSION 2

/*
 * A clock reference: the source's CLOCK_MONOTONIC (bpf_ktime_get_ns, the
 * clock of a slot's parked_ns) and CLOCK_REALTIME read together, and the
 * kernel's boot id. An importer with the same boot id shares the clock
 * (any namespace of one host): parked times stay as they are. Another
 * host translates through the ages at the reference plus the realtime
 * elapsed since (exact as far as the two hosts' realtime clocks agree).
 */
struct nfsl_ckpt_clock {
	__u64 mono_ns;    /* CLOCK_MONOTONIC, ns */
	__u64 real_ns;    /* CLOCK_REALTIME, ns since the epoch */
	__u8 boot_id[16]; /* /proc/sys/kernel/random/boot_id */
};

struct nfsl_ckpt_hdr {
	char magic[8];
	__u32 version;
	__u32 hdr_size;  /* sizeof(struct nfsl_ckpt_hdr) */
	__u32 cfg_size;  /* sizeof(struct nfsl_config) */
	__u32 slot_size; /* sizeof(struct nfsl_slot) */
	__u32 nseq;      /* partitions: ncpus x nparts */
	__u32 nslots;    /* busy slots saved (records) */
	__u64 taken_ns;  /* CLOCK_REALTIME when taken */
	__u32 crc32;
	__u32 flags;     /* NFSL_CKPT_F_* (version 1: 0) */
	/* Version 2 from here; version 1 has cfg here. */
	struct nfsl_ckpt_clock clock; /* when taken: the records' parked_ns
				       * are on clock.mono_ns's clock */
	__u32 ntseq;     /* tenant clocks: nseq x NFSL_MAX_TENANTS, or 0 */
	__u32 ngen;      /* generations: the source store's slots */
	__u64 body_size; /* bytes after the header */
	struct nfsl_config cfg;
};

/* Header flags. */
/* No CRC (crc32 is 0): an image a migration writes to memory and reads
 * back in the same process (nothing between them to corrupt it; computing
 * and checking it would add ~40 ms at 64k payloads to the unsliced
 * window). Never in a file: nfsl_ckpt_parse refuses it unless trusted. */
#define NFSL_CKPT_F_NOCRC 0x1

/* nfsl_ckpt_write and nfsl_ckpt_parse flags. */
#define NFSL_CKPT_NOCRC 0x1   /* write: no CRC (NFSL_CKPT_F_NOCRC) */
#define NFSL_CKPT_TRUSTED 0x2 /* parse: accept an image without CRC */

/* One busy slot of a version 2 image; its len payload bytes follow. */
struct nfsl_ckpt_rec {
	__u32 index;     /* store index */
	__u32 pad;
	__u64 ctl;       /* control word: generation << 32 | expiry count */
	__u64 parked_ns; /* when parked, on the header's clock.mono_ns clock */
	__u16 len;       /* the slot's fields (struct nfsl_slot) */
	__u16 csum;
	__u8 dscp;
	__u8 flags;
	__u16 tenant;
	__u32 ifindex;
	__u32 born;      /* on its partition's (or tenant's) clock in seq/tseq */
};

/* Version 1's record. */
struct nfsl_ckpt_slot_v1 {
	__u32 index;
	__u32 pad;
	struct nfsl_slot slot; /* parked_ns: age in ns when taken */
};

/* An image checked and laid open (nfsl_ckpt_parse); it points into the
 * buffer it was parsed from. */
struct nfsl_ckpt_img {
	__u32 version;
	struct nfsl_config cfg;       /* an older, shorter one zero-extended */
	struct nfsl_ckpt_clock clock; /* version 1: real_ns only */
	__u32 nseq, ntseq, ngen, nrecs;
	const __u32 *seq, *tseq, *gen; /* NULL where the image has none */
	const char *recs;             /* the first record */
	size_t size;                  /* bytes of the image */
};

/* One record of an image, as nfsl_ckpt_next gives it (either version). */
struct nfsl_ckpt_item {
	struct nfsl_ckpt_rec rec;
	__u64 age_ns;          /* age at the image's clock reference */
	const __u8 *payload;   /* rec.len bytes */
};

/* What a checkpoint, restore or import did. */
struct nfsl_ckpt_result {
	__u32 saved;     /* checkpoint: busy slots written */
	__u32 skipped;   /* checkpoint: released or reused while copied */
	__u32 restored;  /* restore/import: slots made busy again */
	__u32 conflicts; /* import: slots left out, the target's slot busy or
			  * of a generation not older than the saved one
			  * (or beyond its store) */
	__u32 raised;    /* restore/import: free slots whose generation was
			  * raised to the saved one (a header of a payload
			  * gone before the image is stale, not foreign) */
	__u64 bytes;     /* image size */
};

/* Where the slots of a store are, for taking or loading an image. */
struct nfsl_ckpt_store {
	struct nfsl_slot *slots;       /* mapped read-write */
	const struct nfsl_config *cfg; /* its domain's configuration */
	__u32 *seq;                    /* its partitions' clocks (nseq) */
	__u32 *tseq;                   /* its tenants' clocks (nseq x
					* NFSL_MAX_TENANTS), NULL without */
};

/* A payload an import made busy: the target's slot, generation and
 * parked time (its CLOCK_MONOTONIC), to follow it until it is gone. */
struct nfsl_ckpt_ref {
	__u32 index;
	__u32 gen;
	__u64 parked_ns;
};

/* nfsl_ckpt_import flags. */
/* A live target (copy-mode migration): it keeps its key and may hold
 * payloads; a slot is imported only where it is free with an older
 * generation, so no token of the target's key names the imported one. */
#define NFSL_CKPT_LIVE 0x1

/* nfsl_ckpt_clock_now - the clock reference now. Returns 0 or -errno. */
int nfsl_ckpt_clock_now(struct nfsl_ckpt_clock *c);

/*
 * nfsl_ckpt_translate - parked time on clock @dst of a payload parked at
 * @parked_ns on clock @src, @age_ns old at @src's reference: @parked_ns
 * itself when both share CLOCK_MONOTONIC (same boot id), else @dst's
 * monotonic time less the age and the realtime elapsed between the two
 * references (0 if that goes below 0).
 */
__u64 nfsl_ckpt_translate(const struct nfsl_ckpt_clock *src, const struct nfsl_ckpt_clock *dst,
			  __u64 parked_ns, __u64 age_ns);

/*
 * nfsl_ckpt_clocks - read the allocation clocks of a domain's store:
 * @seq[cpu * nparts + part] from the per-CPU cursor map @cursor_fd and,
 * when @tseq is not NULL, @tseq[(cpu * nparts + part) * NFSL_MAX_TENANTS
 * + tenant] from the tenant cursor map @tcursor_fd (-1: zeros). Returns 0
 * or -errno.
 */
int nfsl_ckpt_clocks(const struct nfsl_config *cfg, int cursor_fd, int tcursor_fd, __u32 *seq,
		     __u32 *tseq);

/*
 * nfsl_ckpt_write - write an image of store @st to @fd (from its start;
 * a file or a memfd), with a CRC unless @flags has NFSL_CKPT_NOCRC. Reads
 * each busy slot's control word before and after its copy (traffic may
 * flow). Returns 0, or -errno with a message in @err.
 */
int nfsl_ckpt_write(const struct nfsl_ckpt_store *st, int fd, unsigned int flags,
		    struct nfsl_ckpt_result *res, char *err, size_t errlen);

/*
 * nfsl_ckpt_parse - check the image @buf of @size bytes (magic, version 1
 * or 2, struct sizes, CRC-32 (an image without one only with
 * NFSL_CKPT_TRUSTED in @flags), lengths, every record in bounds) and lay
 * it open in @img. Every count, index and length is checked against the
 * image itself, never against a store it may be imported into: a
 * geometry within attach's limits (NFSL_MAX_CPUS, NFSL_MAX_PARTS,
 * NFSL_MAX_SLOTS) whose slots are part_slots x nseq, each record's index
 * below the image's slots and its length at most NFSL_PAYLOAD_MAX, the
 * configuration restore adopts in the ranges attach takes. An image may
 * come from anyone (a file, another host): nothing nfsl_ckpt_next and
 * nfsl_ckpt_import then read lies outside @buf. Returns 0, or -EBADMSG
 * with a message in @err.
 */
int nfsl_ckpt_parse(const void *buf, size_t size, unsigned int flags, struct nfsl_ckpt_img *img,
		    char *err, size_t errlen);

/* nfsl_ckpt_next - the record at *@pos (start with img->recs) into @it,
 * *@pos moved to the next; only for the img->nrecs records parsed. */
void nfsl_ckpt_next(const struct nfsl_ckpt_img *img, const char **pos,
		    struct nfsl_ckpt_item *it);

/*
 * nfsl_ckpt_import - make the payloads of @img busy again in store @st,
 * each in the slot of its index with its generation, metadata and
 * payload, its parked time translated from the image's clock to @now and
 * its allocation age to @st's clocks (scaled to the turn of its region
 * there: the same share of its lifetime left). Each slot is held first,
 * busy under a generation no token carries yet, then written, then given
 * the saved generation. Free slots whose generation is older than the
 * image's are raised to it. With NFSL_CKPT_LIVE see its comment; without,
 * the target is idle and about to take the image's key.
 * @refs: NULL, or room for img->nrecs: the payloads made busy
 * Returns the number of refs filled (res->restored).
 */
__u32 nfsl_ckpt_import(const struct nfsl_ckpt_img *img, const struct nfsl_ckpt_store *st,
		       const struct nfsl_ckpt_clock *now, unsigned int flags,
		       struct nfsl_ckpt_ref *refs, struct nfsl_ckpt_result *res);

/*
 * nfsl_ckpt_save - write the domain at pin directory @dir to @path
 * (created 0600 beside and renamed over, so a reader never sees half a
 * file). Returns 0, or -errno with a message in @err.
 */
int nfsl_ckpt_save(const char *dir, const char *path, struct nfsl_ckpt_result *res, char *err,
		   size_t errlen);

/* nfsl_ckpt_save_fd - the same into @fd (a memfd: a migration's copy). */
int nfsl_ckpt_save_fd(const char *dir, int fd, struct nfsl_ckpt_result *res, char *err,
		      size_t errlen);

/*
 * nfsl_ckpt_map - map the image of @fd (read-only) into *@buf, *@size
 * bytes; nfsl_ckpt_unmap(*buf, *size) when done. Returns 0 or -errno
 * (-EBADMSG: too short or too long to be an image), message in @err.
 */
int nfsl_ckpt_map(int fd, const char *what, const void **buf, size_t *size, char *err,
		  size_t errlen);
void nfsl_ckpt_unmap(const void *buf, size_t size);

/*
 * nfsl_ckpt_file_safe - refuse checkpoint input @fd that someone other than
 * the caller could have written, as ssh refuses a key file: the image's key
 * mints valid tokens. A regular file or a named FIFO must be owned by the
 * effective uid or root and not be writable by group or others. An
 * anonymous pipe or a socket passes: its writer is whoever the caller
 * connected it to (nfslice migrate's ssh channel). Anything else (a
 * terminal, a device, a directory) is no image. @what names the input in
 * messages ("checkpoint /x", "standard input"); @path, when not NULL, is
 * the name the fix gives (else the one /proc/self/fd has). Returns 0, or
 * -EPERM with a message naming the fix in @err ("... is writable by group
 * or others (mode 0666): chmod go-w FILE").
 */
int nfsl_ckpt_file_safe(int fd, const char *what, const char *path, char *err, size_t errlen);

/*
 * nfsl_ckpt_restore - load @path into the domain at @dir: the file is
 * checked first (nfsl_ckpt_parse, the domain's geometry: slots,
 * partitions, CPUs), then, under the host-wide lock and only if the
 * domain holds no parked payload (its own tokens would stop verifying),
 * nfsl_ckpt_import, and the saved key, threshold, keep, expiry, TTL and
 * smallest window become the domain's (its interfaces stay). The file must
 * pass nfsl_ckpt_file_safe. Returns 0; -EPERM (a file others could write),
 * -EBADMSG (not a checkpoint, corrupt, other version), -EINVAL (another
 * geometry), -EBUSY (payloads parked), other -errno; the message in @err.
 */
int nfsl_ckpt_restore(const char *dir, const char *path, struct nfsl_ckpt_result *res,
		      char *err, size_t errlen);

/*
 * A domain's store mapped read-write, with its clocks, for
 * nfsl_ckpt_write and nfsl_ckpt_import (a migration maps both stores
 * before it stops the old slicer: mapping 128 MiB takes milliseconds).
 * nfsl_ckpt_dstore_open - map the store of open domain @d (which must stay
 * open while it is used) and read its clocks. Returns 0 or -errno, the
 * message in @err.
 * nfsl_ckpt_dstore_clocks - read the clocks again (after the slicer
 * stopped: they are what the ages are measured on). Returns 0 or -errno.
 */
struct nfsl_ckpt_dstore {
	struct nfsl_ckpt_store st;
	const struct nfsl_domain *d;
	size_t len;     /* bytes mapped */
	int tcursor_fd; /* the tenant cursor map, -1 without */
};

int nfsl_ckpt_dstore_open(struct nfsl_ckpt_dstore *ds, const struct nfsl_domain *d, char *err,
			  size_t errlen);
int nfsl_ckpt_dstore_clocks(struct nfsl_ckpt_dstore *ds);
void nfsl_ckpt_dstore_close(struct nfsl_ckpt_dstore *ds);

#endif /* NFSL_CKPT_H */
