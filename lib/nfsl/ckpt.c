// SPDX-License-Identifier: GPL-2.0
/* Checkpoint and restore of a domain (ckpt.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <zlib.h>

#include "ckpt.h"
#include "nfsl_store.h"
#include "util.h"

/* The store of @d, mapped read-write (@len bytes). */
static struct nfsl_slot *map_store(const struct nfsl_domain *d, size_t *len)
{
	void *m;

	*len = (size_t)d->cfg.slots * sizeof(struct nfsl_slot);
	m = mmap(NULL, *len, PROT_READ | PROT_WRITE, MAP_SHARED, d->store_fd, 0);
	return m == MAP_FAILED ? NULL : m;
}

static __u32 nparts(const struct nfsl_config *c)
{
	return c->nparts ? c->nparts : 1;
}

/* Each partition's allocation clock, cpu-major (index cpu * nparts + part,
 * as nfsl_alloc_slot lays the store out). */
static int read_seqs(const struct nfsl_domain *d, __u32 *seq)
{
	int ncpus = libbpf_num_possible_cpus();
	/* A per-CPU value is copied out at a stride of 8 bytes. */
	size_t stride = (sizeof(struct nfsl_alloc) + 7) & ~(size_t)7;
	char *per;

	if (ncpus < 0)
		return ncpus;
	per = calloc(ncpus, stride);
	if (!per)
		return -ENOMEM;
	for (__u32 p = 0; p < nparts(&d->cfg); p++) {
		if (bpf_map_lookup_elem(d->cursor_fd, &p, per)) {
			free(per);
			return -errno;
		}
		for (__u32 c = 0; c < d->cfg.ncpus; c++)
			seq[c * nparts(&d->cfg) + p] =
				(int)c < ncpus ? ((struct nfsl_alloc *)(per + c * stride))->seq : 0;
	}
	free(per);
	return 0;
}

/* The partition (cpu-major) slot @i belongs to. */
static __u32 part_of(const struct nfsl_config *c, __u32 i)
{
	return i / c->part_slots;
}

static int write_all(int fd, const void *buf, size_t len, uLong *crc)
{
	const char *p = buf;

	*crc = crc32(*crc, buf, len);
	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= n;
	}
	return 0;
}

int nfsl_ckpt_save(const char *dir, const char *path, struct nfsl_ckpt_result *res, char *err,
		   size_t errlen)
{
	struct nfsl_ckpt_hdr h = { .version = NFSL_CKPT_VERSION, .hdr_size = sizeof(h),
				   .cfg_size = sizeof(struct nfsl_config),
				   .slot_size = sizeof(struct nfsl_slot) };
	char tmp[4096];
	struct nfsl_ckpt_slot rec;
	struct nfsl_domain d;
	struct nfsl_slot *store = NULL;
	__u32 *seq = NULL;
	uLong crc = crc32(0, NULL, 0);
	size_t len = 0;
	int fd = -1, rc;
	__u64 now;

	memset(res, 0, sizeof(*res));
	rc = nfsl_domain_open_dir(&d, dir);
	if (rc)
		return nfsl_errf(err, errlen, rc, "cannot open the domain at %s: %s", dir, strerror(-rc));
	if (snprintf(tmp, sizeof(tmp), "%s.tmp%d", path, getpid()) >= (int)sizeof(tmp)) {
		rc = nfsl_errf(err, errlen, -ENAMETOOLONG, "checkpoint path too long: %s", path);
		goto out;
	}
	memcpy(h.magic, NFSL_CKPT_MAGIC, sizeof(h.magic));
	h.cfg = d.cfg;
	h.nseq = d.cfg.ncpus * nparts(&d.cfg);
	seq = calloc(h.nseq, sizeof(*seq));
	store = map_store(&d, &len);
	if (!seq || !store) {
		rc = nfsl_errf(err, errlen, -errno ?: -ENOMEM, "cannot map the store: %s",
			  strerror(errno ?: ENOMEM));
		goto out;
	}
	rc = read_seqs(&d, seq);
	if (rc) {
		nfsl_errf(err, errlen, rc, "cannot read the allocation cursors: %s", strerror(-rc));
		goto out;
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) {
		rc = nfsl_errf(err, errlen, -errno, "cannot create %s: %s", tmp, strerror(errno));
		goto out;
	}
	/* The header goes first with its counts unknown, and again at the
	 * end; the running CRC is the body's. */
	{
		uLong unused = 0;

		rc = write_all(fd, &h, sizeof(h), &unused);
	}
	if (!rc)
		rc = write_all(fd, seq, h.nseq * sizeof(*seq), &crc);
	now = nfsl_now_ns();
	for (__u32 i = 0; !rc && i < d.cfg.slots; i++) {
		struct nfsl_slot *s = &store[i];
		__u64 c0 = __atomic_load_n(&s->ctl, __ATOMIC_ACQUIRE);

		if (!NFSL_CTL_EXP(c0))
			continue;
		memset(&rec, 0, sizeof(rec));
		rec.index = i;
		memcpy(&rec.slot, s, sizeof(*s));
		if (__atomic_load_n(&s->ctl, __ATOMIC_ACQUIRE) != c0) {
			res->skipped++; /* released or reused while copied */
			continue;
		}
		rec.slot.ctl = c0;
		rec.slot.parked_ns = now > rec.slot.parked_ns ? now - rec.slot.parked_ns : 0;
		rc = write_all(fd, &rec, sizeof(rec), &crc);
		res->saved++;
	}
	if (rc) {
		nfsl_errf(err, errlen, rc, "cannot write %s: %s", tmp, strerror(-rc));
		goto out;
	}
	/* The CRC covers the header (crc field 0, final counts) and the body. */
	h.nslots = res->saved;
	{
		struct timespec t;

		clock_gettime(CLOCK_REALTIME, &t);
		h.taken_ns = (__u64)t.tv_sec * 1000000000ull + t.tv_nsec;
	}
	h.crc32 = 0;
	{
		uLong body = crc;

		crc = crc32(0, (const Bytef *)&h, sizeof(h));
		crc = crc32_combine(crc, body,
				    (z_off_t)h.nseq * sizeof(*seq) +
					    (z_off_t)res->saved * sizeof(rec));
	}
	h.crc32 = crc;
	if (pwrite(fd, &h, sizeof(h), 0) != sizeof(h) || fchmod(fd, 0600) || fsync(fd)) {
		rc = nfsl_errf(err, errlen, -errno, "cannot write %s: %s", tmp, strerror(errno));
		goto out;
	}
	res->bytes = sizeof(h) + (__u64)h.nseq * sizeof(*seq) + (__u64)res->saved * sizeof(rec);
	if (rename(tmp, path))
		rc = nfsl_errf(err, errlen, -errno, "cannot rename %s to %s: %s", tmp, path,
			  strerror(errno));
out:
	if (fd >= 0) {
		close(fd);
		if (rc)
			unlink(tmp);
	}
	if (store)
		munmap(store, len);
	free(seq);
	nfsl_domain_close(&d);
	return rc;
}

/* Read and check the whole file @path; *@buf (free()) and its size. */
static int load_file(const char *path, char **buf, size_t *size, char *err, size_t errlen)
{
	const struct nfsl_ckpt_hdr *h;
	struct nfsl_ckpt_hdr z;
	struct stat st;
	uLong crc;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return nfsl_errf(err, errlen, -errno, "cannot open %s: %s", path, strerror(errno));
	if (fstat(fd, &st) || st.st_size < (off_t)sizeof(*h) || st.st_size > (1ll << 32)) {
		close(fd);
		return nfsl_errf(err, errlen, -EBADMSG, "%s is not an nfslice checkpoint (size %lld)",
			    path, (long long)st.st_size);
	}
	*size = st.st_size;
	*buf = malloc(*size);
	n = *buf ? read(fd, *buf, *size) : -1;
	close(fd);
	if (n != (ssize_t)*size) {
		free(*buf);
		return nfsl_errf(err, errlen, -EIO, "cannot read %s", path);
	}
	h = (const void *)*buf;
	if (memcmp(h->magic, NFSL_CKPT_MAGIC, sizeof(h->magic)))
		goto bad_magic;
	if (h->version != NFSL_CKPT_VERSION || h->hdr_size != sizeof(*h) ||
	    h->cfg_size != sizeof(struct nfsl_config) || h->slot_size != sizeof(struct nfsl_slot)) {
		nfsl_errf(err, errlen, -EBADMSG,
		     "%s is checkpoint version %u with structs of %u/%u/%u bytes; this "
		     "nfslice reads version %u with %zu/%zu/%zu: restore with the nfslice "
		     "that took it", path, h->version, h->hdr_size, h->cfg_size, h->slot_size,
		     NFSL_CKPT_VERSION, sizeof(*h), sizeof(struct nfsl_config),
		     sizeof(struct nfsl_slot));
		goto bad;
	}
	if (*size != sizeof(*h) + (size_t)h->nseq * sizeof(__u32) +
			     (size_t)h->nslots * sizeof(struct nfsl_ckpt_slot)) {
		nfsl_errf(err, errlen, -EBADMSG, "%s is truncated or too long for %u slots", path,
		     h->nslots);
		goto bad;
	}
	z = *h;
	z.crc32 = 0;
	crc = crc32(0, (const Bytef *)&z, sizeof(z));
	crc = crc32(crc, (const Bytef *)*buf + sizeof(z), *size - sizeof(z));
	if (crc != h->crc32) {
		nfsl_errf(err, errlen, -EBADMSG, "%s is corrupt (CRC-32 %08lx, expected %08x)", path,
		     crc, h->crc32);
		goto bad;
	}
	return 0;
bad_magic:
	nfsl_errf(err, errlen, -EBADMSG, "%s is not an nfslice checkpoint (no %s magic)", path,
	     NFSL_CKPT_MAGIC);
bad:
	free(*buf);
	return -EBADMSG;
}

int nfsl_ckpt_restore(const char *dir, const char *path, struct nfsl_ckpt_result *res,
		      char *err, size_t errlen)
{
	const struct nfsl_ckpt_hdr *h;
	const struct nfsl_ckpt_slot *recs;
	const __u32 *oseq;
	struct nfsl_slot *store = NULL;
	struct nfsl_domain d;
	__u32 *nseq = NULL, busy, zero = 0;
	size_t size = 0, len = 0;
	char *buf = NULL;
	int rc, lock;
	__u64 now;

	memset(res, 0, sizeof(*res));
	rc = load_file(path, &buf, &size, err, errlen);
	if (rc)
		return rc;
	h = (const void *)buf;
	oseq = (const void *)(buf + sizeof(*h));
	recs = (const void *)(oseq + h->nseq);
	lock = nfsl_domains_lock();
	if (lock < 0) {
		free(buf);
		return nfsl_errf(err, errlen, lock, "cannot lock %s: %s", NFSL_LOCK_FILE,
			    strerror(-lock));
	}
	rc = nfsl_domain_open_dir(&d, dir);
	if (rc) {
		nfsl_errf(err, errlen, rc, "cannot open the domain at %s: %s", dir, strerror(-rc));
		goto out_unlock;
	}
	if (h->cfg.slots != d.cfg.slots || h->cfg.part_slots != d.cfg.part_slots ||
	    h->cfg.ncpus != d.cfg.ncpus || nparts(&h->cfg) != nparts(&d.cfg)) {
		rc = nfsl_errf(err, errlen, -EINVAL,
			  "%s holds a store of %u slots (%u CPUs x %u parts x %u); the domain "
			  "has %u (%u x %u x %u): attach it with the same --slots and NF ports "
			  "on a machine with as many CPUs", path, h->cfg.slots, h->cfg.ncpus,
			  nparts(&h->cfg), h->cfg.part_slots, d.cfg.slots, d.cfg.ncpus,
			  nparts(&d.cfg), d.cfg.part_slots);
		goto out;
	}
	rc = nfsl_domain_busy_slots(&d, &busy);
	if (!rc && busy)
		rc = nfsl_errf(err, errlen, -EBUSY,
			  "the domain holds %u parked payloads: their tokens would stop "
			  "verifying under the checkpoint's key; restore into a domain before "
			  "traffic reaches it (attach, restore, then route traffic)", busy);
	if (rc) {
		if (rc != -EBUSY)
			nfsl_errf(err, errlen, rc, "cannot read the store: %s", strerror(-rc));
		goto out;
	}
	nseq = calloc(h->nseq, sizeof(*nseq));
	store = map_store(&d, &len);
	if (!nseq || !store || (rc = read_seqs(&d, nseq))) {
		rc = nfsl_errf(err, errlen, rc ?: -ENOMEM, "cannot map the store or read its cursors");
		goto out;
	}
	now = nfsl_now_ns();
	for (__u32 k = 0; k < h->nslots; k++) {
		const struct nfsl_ckpt_slot *r = &recs[k];
		struct nfsl_slot *s;
		__u32 p;
		__u64 cur, hold;

		if (r->index >= d.cfg.slots || !NFSL_CTL_EXP(r->slot.ctl))
			continue;
		s = &store[r->index];
		cur = __atomic_load_n(&s->ctl, __ATOMIC_ACQUIRE);
		if (NFSL_CTL_EXP(cur))
			continue; /* taken meanwhile: the domain is not idle */
		p = part_of(&d.cfg, r->index);
		/* Hold the slot first, busy under a generation no token carries
		 * and young on its partition's clock, so that no slicer takes
		 * it while it is written; then the saved generation makes it
		 * the saved payload's. */
		s->born = nseq[p];
		hold = NFSL_CTL(NFSL_CTL_GEN(cur) + 1, NFSL_CTL_EXP(r->slot.ctl));
		if (!__atomic_compare_exchange_n(&s->ctl, &cur, hold, false, __ATOMIC_ACQ_REL,
						 __ATOMIC_RELAXED))
			continue;
		memcpy((char *)s + sizeof(s->ctl), (const char *)&r->slot + sizeof(s->ctl),
		       sizeof(*s) - sizeof(s->ctl));
		s->parked_ns = now > r->slot.parked_ns ? now - r->slot.parked_ns : 0;
		/* Same age on the new partition's allocation clock. */
		s->born = nseq[p] - (oseq[p] - r->slot.born);
		if (__atomic_compare_exchange_n(&s->ctl, &hold, r->slot.ctl, false,
						__ATOMIC_RELEASE, __ATOMIC_RELAXED))
			res->restored++;
	}
	{
		struct nfsl_config cfg = d.cfg;

		memcpy(cfg.key, h->cfg.key, sizeof(cfg.key));
		cfg.threshold = h->cfg.threshold;
		cfg.keep = h->cfg.keep;
		cfg.expiry = h->cfg.expiry;
		cfg.ttl_us = h->cfg.ttl_us;
		cfg.win_min = h->cfg.win_min;
		cfg.cfg_gen++;
		if (bpf_map_update_elem(d.config_fd, &zero, &cfg, BPF_ANY))
			rc = nfsl_errf(err, errlen, -errno, "cannot write the configuration: %s",
				  strerror(errno));
	}
	res->bytes = size;
out:
	if (store)
		munmap(store, len);
	free(nseq);
	nfsl_domain_close(&d);
out_unlock:
	close(lock);
	free(buf);
	return rc;
}
