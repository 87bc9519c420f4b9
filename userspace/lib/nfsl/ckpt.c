// SPDX-License-Identifier: GPL-2.0
/* Checkpoint, restore and import of a domain's store (ckpt.h). */
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

#include "nfsl/ckpt.h"
#include "nfsl/retired.h"
#include "nfsl_store.h"
#include "util/util.h"

/* Version 1's header: the fields up to flags (its pad, 0), then its
 * configuration. */
#define HDR_V1_FIXED offsetof(struct nfsl_ckpt_hdr, clock)
/* The oldest configuration an image may carry: up to the key. */
#define CFG_MIN offsetof(struct nfsl_config, ifaces)

#define ALIGN8(x) (((x) + 7) & ~(__u64)7)

static __u32 nparts(const struct nfsl_config *c)
{
	return c->nparts ? c->nparts : 1;
}

static __u32 nseq_of(const struct nfsl_config *c)
{
	return c->ncpus * nparts(c);
}

/* ------------------------------------------------------------ clocks -- */

/* The boot id's 32 hex digits (dashes skipped) as 16 bytes. */
static int boot_id(__u8 id[16])
{
	char buf[64];
	int n = 0, fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
	ssize_t len;

	memset(id, 0, 16);
	if (fd < 0)
		return -errno;
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len <= 0)
		return -EIO;
	for (ssize_t i = 0; i < len && n < 32; i++) {
		char c = buf[i];
		int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;

		if (v < 0)
			continue;
		id[n / 2] |= v << (n % 2 ? 0 : 4);
		n++;
	}
	return n == 32 ? 0 : -EIO;
}

int nfsl_ckpt_clock_now(struct nfsl_ckpt_clock *c)
{
	struct timespec t;

	c->mono_ns = nfsl_now_ns();
	clock_gettime(CLOCK_REALTIME, &t);
	c->real_ns = (__u64)t.tv_sec * 1000000000ull + t.tv_nsec;
	return boot_id(c->boot_id);
}

static bool zero16(const __u8 *b)
{
	for (int i = 0; i < 16; i++)
		if (b[i])
			return false;
	return true;
}

__u64 nfsl_ckpt_translate(const struct nfsl_ckpt_clock *src, const struct nfsl_ckpt_clock *dst,
			  __u64 parked_ns, __u64 age_ns)
{
	__u64 back = age_ns;

	if (!zero16(src->boot_id) && !memcmp(src->boot_id, dst->boot_id, 16))
		return parked_ns; /* one CLOCK_MONOTONIC */
	if (dst->real_ns > src->real_ns)
		back += dst->real_ns - src->real_ns;
	return dst->mono_ns > back ? dst->mono_ns - back : 0;
}

/* Read every CPU's value of per-CPU array @fd at @key into @per (ncpus
 * values at a stride of 8-byte-rounded struct nfsl_alloc). */
static int percpu_allocs(int fd, __u32 key, char *per)
{
	return bpf_map_lookup_elem(fd, &key, per) ? -errno : 0;
}

int nfsl_ckpt_clocks(const struct nfsl_config *cfg, int cursor_fd, int tcursor_fd, __u32 *seq,
		     __u32 *tseq)
{
	int ncpus = libbpf_num_possible_cpus(), rc = 0;
	/* A per-CPU value is copied out at a stride of 8 bytes. */
	size_t stride = (sizeof(struct nfsl_alloc) + 7) & ~(size_t)7;
	__u32 np = nparts(cfg);
	char *per;

	if (ncpus < 0)
		return ncpus;
	per = calloc(ncpus, stride);
	if (!per)
		return -ENOMEM;
#define SEQ_OF(c) ((int)(c) < ncpus ? ((struct nfsl_alloc *)(per + (c) * stride))->seq : 0)
	for (__u32 p = 0; p < np && !rc; p++) {
		rc = percpu_allocs(cursor_fd, p, per);
		for (__u32 c = 0; !rc && c < cfg->ncpus; c++)
			seq[c * np + p] = SEQ_OF(c);
		for (__u32 t = 0; tseq && !rc && t < NFSL_MAX_TENANTS; t++) {
			if (tcursor_fd >= 0)
				rc = percpu_allocs(tcursor_fd, p * NFSL_MAX_TENANTS + t, per);
			else
				memset(per, 0, ncpus * stride);
			for (__u32 c = 0; !rc && c < cfg->ncpus; c++)
				tseq[(c * np + p) * NFSL_MAX_TENANTS + t] = SEQ_OF(c);
		}
	}
#undef SEQ_OF
	free(per);
	return rc;
}

/* ------------------------------------------------------------- write -- */

/* A buffered writer that keeps the CRC-32 of what it wrote. */
struct wbuf {
	int fd;
	int err;
	bool nocrc;
	size_t n;
	__u64 bytes;
	uLong crc;
	char buf[1 << 16];
	__u8 payload[NFSL_PAYLOAD_MAX]; /* one slot's, copied before it is
					 * known to be whole */
};

static void wflush(struct wbuf *w)
{
	const char *p = w->buf;

	while (!w->err && w->n) {
		ssize_t k = write(w->fd, p, w->n);

		if (k < 0) {
			if (errno != EINTR)
				w->err = -errno;
			continue;
		}
		p += k;
		w->n -= k;
	}
	w->n = 0;
}

static void wput(struct wbuf *w, const void *data, size_t len)
{
	const char *p = data;

	if (!w->nocrc)
		w->crc = crc32(w->crc, data, len);
	w->bytes += len;
	while (len && !w->err) {
		size_t k = sizeof(w->buf) - w->n < len ? sizeof(w->buf) - w->n : len;

		memcpy(w->buf + w->n, p, k);
		w->n += k;
		p += k;
		len -= k;
		if (w->n == sizeof(w->buf))
			wflush(w);
	}
}

static void wpad8(struct wbuf *w)
{
	static const char zero[8];

	if (w->bytes % 8)
		wput(w, zero, 8 - w->bytes % 8);
}

int nfsl_ckpt_write(const struct nfsl_ckpt_store *st, int fd, unsigned int flags,
		    struct nfsl_ckpt_result *res, char *err, size_t errlen)
{
	const struct nfsl_config *cfg = st->cfg;
	struct nfsl_ckpt_hdr h = { .version = NFSL_CKPT_VERSION, .hdr_size = sizeof(h),
				   .cfg_size = sizeof(struct nfsl_config),
				   .slot_size = sizeof(struct nfsl_slot) };
	struct wbuf *w = calloc(1, sizeof(*w));
	__u32 *gen = NULL;
	uLong crc;
	int rc = 0;

	memset(res, 0, sizeof(*res));
	memcpy(h.magic, NFSL_CKPT_MAGIC, sizeof(h.magic));
	h.cfg = *cfg;
	h.nseq = nseq_of(cfg);
	h.ntseq = cfg->ntenants && st->tseq ? h.nseq * NFSL_MAX_TENANTS : 0;
	h.ngen = cfg->slots;
	gen = malloc((size_t)h.ngen * sizeof(*gen) + 1);
	if (!w || !gen) {
		rc = nfsl_errf(err, errlen, -ENOMEM, "out of memory");
		goto out;
	}
	w->fd = fd;
	w->crc = crc32(0, NULL, 0);
	w->nocrc = flags & NFSL_CKPT_NOCRC;
	if (w->nocrc)
		h.flags |= NFSL_CKPT_F_NOCRC;
	/* The clock reference before the first slot is read: a payload
	 * parked during the copy is at most that much younger. */
	nfsl_ckpt_clock_now(&h.clock);
	h.taken_ns = h.clock.real_ns;
	if (lseek(fd, sizeof(h), SEEK_SET) < 0) {
		rc = nfsl_errf(err, errlen, -errno, "cannot seek: %s", strerror(errno));
		goto out;
	}
	wput(w, st->seq, h.nseq * sizeof(__u32));
	if (h.ntseq)
		wput(w, st->tseq, h.ntseq * sizeof(__u32));
	wpad8(w);
	/* One pass: a store of 64k slots is 128 MiB, and each control word
	 * read is a cache miss. */
	for (__u32 i = 0; i < cfg->slots && !w->err; i++) {
		struct nfsl_slot *s = &st->slots[i];
		__u64 c0 = __atomic_load_n(&s->ctl, __ATOMIC_ACQUIRE);
		struct nfsl_ckpt_rec r = { .index = i, .ctl = c0 };

		gen[i] = NFSL_CTL_GEN(c0);
		if (!NFSL_CTL_EXP(c0))
			continue;
		r.parked_ns = s->parked_ns;
		r.len = s->len;
		r.csum = s->csum;
		r.dscp = s->dscp;
		r.flags = s->flags;
		r.tenant = s->tenant;
		r.ifindex = s->ifindex;
		r.born = s->born;
		if (r.len > NFSL_PAYLOAD_MAX)
			r.len = NFSL_PAYLOAD_MAX; /* never by the slicer */
		memcpy(w->payload, s->payload, r.len);
		if (__atomic_load_n(&s->ctl, __ATOMIC_ACQUIRE) != c0) {
			res->skipped++; /* released or reused while copied */
			continue;
		}
		wput(w, &r, sizeof(r));
		wput(w, w->payload, r.len);
		wpad8(w);
		res->saved++;
	}
	wput(w, gen, h.ngen * sizeof(*gen));
	wpad8(w);
	wflush(w);
	if (w->err) {
		rc = nfsl_errf(err, errlen, w->err, "cannot write the image: %s",
			       strerror(-w->err));
		goto out;
	}
	/* The CRC covers the header (crc field 0, final counts) and the body. */
	h.nslots = res->saved;
	h.body_size = w->bytes;
	if (!w->nocrc) {
		crc = crc32(0, (const Bytef *)&h, sizeof(h));
		h.crc32 = crc32_combine(crc, w->crc, (z_off_t)w->bytes);
	}
	if (pwrite(fd, &h, sizeof(h), 0) != sizeof(h)) {
		rc = nfsl_errf(err, errlen, -errno, "cannot write the image: %s", strerror(errno));
		goto out;
	}
	res->bytes = sizeof(h) + w->bytes;
out:
	free(gen);
	free(w);
	return rc;
}

/* ------------------------------------------------------------- parse -- */

static int bad(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int bad(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -EBADMSG;
}

/* The CRC-32 of image @buf with its crc field (at the same offset in both
 * versions) taken as zero. */
static uLong image_crc(const char *buf, size_t size)
{
	static const __u32 zero;
	size_t off = offsetof(struct nfsl_ckpt_hdr, crc32);
	uLong crc = crc32(0, (const Bytef *)buf, off);

	crc = crc32(crc, (const Bytef *)&zero, sizeof(zero));
	return crc32(crc, (const Bytef *)buf + off + 4, size - off - 4);
}

int nfsl_ckpt_parse(const void *vbuf, size_t size, unsigned int flags, struct nfsl_ckpt_img *img,
		    char *err, size_t errlen)
{
	const char *buf = vbuf, *p, *end = buf + size;
	struct nfsl_ckpt_hdr h;
	size_t cfg_off, cfg_len, arrays;
	uLong crc;

	memset(img, 0, sizeof(*img));
	if (size < HDR_V1_FIXED || memcmp(buf, NFSL_CKPT_MAGIC, 8))
		return bad(err, errlen, "not an nfslice checkpoint (no %s magic)", NFSL_CKPT_MAGIC);
	memset(&h, 0, sizeof(h));
	memcpy(&h, buf, HDR_V1_FIXED);
	/* cfg_size a multiple of 4: the clocks and generations after it are
	 * read as __u32 in place. */
	if ((h.version != 1 && h.version != 2) || h.slot_size != sizeof(struct nfsl_slot) ||
	    h.cfg_size < CFG_MIN || h.cfg_size > sizeof(struct nfsl_config) || h.cfg_size % 4 ||
	    h.hdr_size != (h.version == 1 ? HDR_V1_FIXED : offsetof(struct nfsl_ckpt_hdr, cfg)) +
				   h.cfg_size)
		return bad(err, errlen,
			   "checkpoint version %u with structs of %u/%u/%u bytes; this nfslice "
			   "reads versions 1 and 2 with slots of %zu bytes and configurations of "
			   "%zu..%zu: restore with the nfslice that took it",
			   h.version, h.hdr_size, h.cfg_size, h.slot_size, sizeof(struct nfsl_slot),
			   (size_t)CFG_MIN, sizeof(struct nfsl_config));
	if (size < h.hdr_size)
		return bad(err, errlen, "truncated (%zu bytes, a header of %u)", size, h.hdr_size);
	if (h.flags & ~NFSL_CKPT_F_NOCRC)
		return bad(err, errlen, "of unknown flags %#x", h.flags);
	if ((h.flags & NFSL_CKPT_F_NOCRC) && !(flags & NFSL_CKPT_TRUSTED))
		return bad(err, errlen, "an image without CRC (a migration's, in memory): "
			   "not a checkpoint file");
	crc = h.flags & NFSL_CKPT_F_NOCRC ? 0 : image_crc(buf, size);
	if (crc != h.crc32)
		return bad(err, errlen, "corrupt (CRC-32 %08lx, expected %08x)", crc, h.crc32);
	if (h.version == 2)
		memcpy(&h, buf, offsetof(struct nfsl_ckpt_hdr, cfg));
	cfg_off = h.hdr_size - h.cfg_size;
	cfg_len = h.cfg_size;
	memcpy(&img->cfg, buf + cfg_off, cfg_len);
	img->version = h.version;
	img->nseq = h.nseq;
	img->nrecs = h.nslots;
	img->size = size;
	/* The geometry in 64 bits and within what attach makes: every slot
	 * index below slots then names a partition below nseq (born_clock). */
	if (!img->cfg.ncpus || img->cfg.ncpus > NFSL_MAX_CPUS ||
	    nparts(&img->cfg) > NFSL_MAX_PARTS || h.nseq != nseq_of(&img->cfg) ||
	    !img->cfg.part_slots ||
	    (__u64)img->cfg.slots != (__u64)img->cfg.part_slots * h.nseq ||
	    img->cfg.slots > NFSL_MAX_SLOTS)
		return bad(err, errlen, "inconsistent geometry: %u partitions (%u CPUs x %u) of "
			   "%u slots for %u (at most %u CPUs x %u, %u slots)", h.nseq,
			   img->cfg.ncpus, nparts(&img->cfg), img->cfg.part_slots,
			   img->cfg.slots, NFSL_MAX_CPUS, NFSL_MAX_PARTS, NFSL_MAX_SLOTS);
	/* What restore makes the domain's, in the ranges attach and set take. */
	if (img->cfg.threshold > 65535 || img->cfg.keep > NFSL_KEEP_MAX || !img->cfg.expiry ||
	    img->cfg.expiry > NFSL_MAX_EXPIRY || img->cfg.win_min > img->cfg.part_slots ||
	    img->cfg.ntenants > NFSL_MAX_TENANTS)
		return bad(err, errlen, "a configuration out of range (threshold %u, keep %u, "
			   "expiry %u, window %u of %u, %u tenants)", img->cfg.threshold,
			   img->cfg.keep, img->cfg.expiry, img->cfg.win_min, img->cfg.part_slots,
			   img->cfg.ntenants);
	p = buf + h.hdr_size;
	if (h.version == 1) {
		img->clock.real_ns = h.taken_ns;
		if (size - h.hdr_size != (size_t)h.nseq * 4 + (size_t)h.nslots *
							sizeof(struct nfsl_ckpt_slot_v1))
			return bad(err, errlen, "truncated or too long for %u slots", h.nslots);
		img->seq = (const __u32 *)p;
		img->recs = p + (size_t)h.nseq * 4;
		for (__u32 k = 0; k < h.nslots; k++) {
			struct nfsl_ckpt_slot_v1 v;

			memcpy(&v, img->recs + (size_t)k * sizeof(v), sizeof(v));
			if (v.index >= img->cfg.slots)
				return bad(err, errlen, "record %u names slot %u of %u", k,
					   v.index, img->cfg.slots);
			if (v.slot.len > NFSL_PAYLOAD_MAX)
				return bad(err, errlen,
					   "record %u holds %u payload bytes (at most %u)", k,
					   v.slot.len, NFSL_PAYLOAD_MAX);
		}
	} else {
		img->clock = h.clock;
		img->ntseq = h.ntseq;
		img->ngen = h.ngen;
		if (h.ntseq && (__u64)h.ntseq != (__u64)h.nseq * NFSL_MAX_TENANTS)
			return bad(err, errlen, "%u tenant clocks for %u partitions", h.ntseq,
				   h.nseq);
		if (h.ngen > img->cfg.slots)
			return bad(err, errlen, "%u generations for %u slots", h.ngen,
				   img->cfg.slots);
		arrays = ALIGN8(((size_t)h.nseq + h.ntseq) * 4);
		if (h.body_size != size - h.hdr_size ||
		    arrays + ALIGN8((size_t)h.ngen * 4) > h.body_size)
			return bad(err, errlen, "truncated or too long (%zu bytes, %llu expected)",
				   size, (unsigned long long)(h.hdr_size + h.body_size));
		img->seq = (const __u32 *)p;
		img->tseq = h.ntseq ? img->seq + h.nseq : NULL;
		img->recs = p + arrays;
		end -= ALIGN8((size_t)h.ngen * 4);
		img->gen = (const __u32 *)end;
		/* Every record in bounds, the last one ending where the
		 * generations begin. */
		p = img->recs;
		for (__u32 k = 0; k < h.nslots; k++) {
			struct nfsl_ckpt_rec r;

			if ((size_t)(end - p) < sizeof(r))
				return bad(err, errlen, "truncated in record %u of %u", k,
					   h.nslots);
			memcpy(&r, p, sizeof(r));
			if (r.index >= img->cfg.slots)
				return bad(err, errlen, "record %u names slot %u of %u", k,
					   r.index, img->cfg.slots);
			if (r.len > NFSL_PAYLOAD_MAX)
				return bad(err, errlen,
					   "record %u holds %u payload bytes (at most %u)", k,
					   r.len, NFSL_PAYLOAD_MAX);
			if ((size_t)(end - p) < ALIGN8(sizeof(r) + r.len))
				return bad(err, errlen, "truncated in record %u of %u", k,
					   h.nslots);
			p += ALIGN8(sizeof(r) + r.len);
		}
		if (p != end)
			return bad(err, errlen, "%zu bytes between the last record and the "
				   "generations", (size_t)(end - p));
	}
	return 0;
}

void nfsl_ckpt_next(const struct nfsl_ckpt_img *img, const char **pos, struct nfsl_ckpt_item *it)
{
	if (img->version == 1) {
		struct nfsl_ckpt_slot_v1 v;

		memcpy(&v, *pos, sizeof(v));
		memset(&it->rec, 0, sizeof(it->rec));
		it->rec.index = v.index;
		it->rec.ctl = v.slot.ctl;
		it->rec.len = v.slot.len > NFSL_PAYLOAD_MAX ? NFSL_PAYLOAD_MAX : v.slot.len;
		it->rec.csum = v.slot.csum;
		it->rec.dscp = v.slot.dscp;
		it->rec.flags = v.slot.flags;
		it->rec.tenant = v.slot.tenant;
		it->rec.ifindex = v.slot.ifindex;
		it->rec.born = v.slot.born;
		it->age_ns = v.slot.parked_ns; /* version 1 kept the age */
		it->payload = (const __u8 *)*pos + offsetof(struct nfsl_ckpt_slot_v1, slot.payload);
		*pos += sizeof(v);
		return;
	}
	memcpy(&it->rec, *pos, sizeof(it->rec));
	it->age_ns = img->clock.mono_ns > it->rec.parked_ns ?
			     img->clock.mono_ns - it->rec.parked_ns : 0;
	it->payload = (const __u8 *)*pos + sizeof(it->rec);
	*pos += ALIGN8(sizeof(it->rec) + it->rec.len);
}

/* ------------------------------------------------------------ import -- */

/*
 * The clock a payload's born counts on in a store of @cfg with clocks
 * @seq, @tseq: its tenant's in its partition when the store has tenants
 * (and tenant clocks), else its partition's; *@turn the attempts of one
 * turn of its region (the expiry unit, nfsl_slot_take).
 */
static __u32 born_clock(const struct nfsl_config *cfg, const __u32 *seq, const __u32 *tseq,
			__u32 index, __u32 tenant, __u32 *turn)
{
	__u32 p = index / cfg->part_slots;

	if (cfg->ntenants && tseq && tenant < cfg->ntenants && tenant < NFSL_MAX_TENANTS &&
	    cfg->tenants[tenant].size) {
		*turn = cfg->tenants[tenant].size;
		return tseq[p * NFSL_MAX_TENANTS + tenant];
	}
	*turn = cfg->part_slots;
	return seq[p];
}

__u32 nfsl_ckpt_import(const struct nfsl_ckpt_img *img, const struct nfsl_ckpt_store *st,
		       const struct nfsl_ckpt_clock *now, unsigned int flags,
		       struct nfsl_ckpt_ref *refs, struct nfsl_ckpt_result *res)
{
	const struct nfsl_config *dc = st->cfg;
	const char *pos = img->recs;
	struct nfsl_ckpt_item it;

	for (__u32 k = 0; k < img->nrecs; k++) {
		__u32 gen, tenant, oturn, nturn, oclock, nclock, age;
		struct nfsl_slot *s;
		__u64 cur, hold;

		nfsl_ckpt_next(img, &pos, &it);
		gen = NFSL_CTL_GEN(it.rec.ctl);
		if (!NFSL_CTL_EXP(it.rec.ctl) || !gen)
			continue; /* not busy: never written so */
		if (it.rec.index >= dc->slots) {
			res->conflicts++;
			continue;
		}
		s = &st->slots[it.rec.index];
		cur = __atomic_load_n(&s->ctl, __ATOMIC_ACQUIRE);
		/* Busy: taken meanwhile. Live, a generation not older than
		 * the saved one may be on a token of the target's key. */
		if (NFSL_CTL_EXP(cur) ||
		    ((flags & NFSL_CKPT_LIVE) && (int)(gen - NFSL_CTL_GEN(cur)) <= 0)) {
			res->conflicts++;
			continue;
		}
		tenant = it.rec.tenant;
		if (dc->ntenants && tenant >= dc->ntenants)
			tenant = 0;
		nclock = born_clock(dc, st->seq, st->tseq, it.rec.index, tenant, &nturn);
		/* Hold the slot first, busy under a generation no token carries
		 * and young on its clock, so that no slicer takes it while it
		 * is written; then the saved generation makes it the saved
		 * payload's. */
		s->born = nclock;
		hold = NFSL_CTL(NFSL_CTL_GEN(cur) + 1, NFSL_CTL_EXP(it.rec.ctl));
		if (!__atomic_compare_exchange_n(&s->ctl, &cur, hold, false, __ATOMIC_ACQ_REL,
						 __ATOMIC_RELAXED)) {
			res->conflicts++;
			continue;
		}
		s->len = it.rec.len;
		s->csum = it.rec.csum;
		s->dscp = it.rec.dscp;
		s->flags = it.rec.flags;
		s->tenant = tenant;
		s->ifindex = it.rec.ifindex;
		memcpy(s->payload, it.payload, it.rec.len);
		s->parked_ns = nfsl_ckpt_translate(&img->clock, now, it.rec.parked_ns, it.age_ns);
		/* The same share of its lifetime left on the new clock: its
		 * age in turns of its region there (one store, one geometry:
		 * the same age). */
		oclock = born_clock(&img->cfg, img->seq, img->tseq, it.rec.index, it.rec.tenant,
				    &oturn);
		age = oclock - it.rec.born;
		if (oturn && nturn != oturn)
			age = (__u32)((__u64)age * nturn / oturn);
		s->born = nclock - age;
		if (!__atomic_compare_exchange_n(&s->ctl, &hold, it.rec.ctl, false,
						 __ATOMIC_RELEASE, __ATOMIC_RELAXED)) {
			res->conflicts++;
			continue;
		}
		if (refs)
			refs[res->restored] = (struct nfsl_ckpt_ref){
				.index = it.rec.index, .gen = gen, .parked_ns = s->parked_ns
			};
		res->restored++;
	}
	/* A header whose payload was spliced or evicted before the image
	 * names a free slot here: with the generation raised it is stale
	 * (dropped), not foreign (passed on truncated). */
	for (__u32 i = 0; img->gen && i < img->ngen && i < dc->slots; i++) {
		__u64 cur;

		if (!img->gen[i])
			continue; /* never taken: nothing to raise (and no cache
				   * miss on its slot) */
		cur = __atomic_load_n(&st->slots[i].ctl, __ATOMIC_ACQUIRE);

		if (NFSL_CTL_EXP(cur) || (int)(img->gen[i] - NFSL_CTL_GEN(cur)) <= 0)
			continue;
		if (__atomic_compare_exchange_n(&st->slots[i].ctl, &cur, NFSL_CTL(img->gen[i], 0),
						false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
			res->raised++;
	}
	return res->restored;
}

/* ------------------------------------------------------ domain level -- */

void nfsl_ckpt_dstore_close(struct nfsl_ckpt_dstore *ds)
{
	if (ds->st.slots)
		munmap(ds->st.slots, ds->len);
	free(ds->st.seq);
	free(ds->st.tseq);
	if (ds->tcursor_fd >= 0)
		close(ds->tcursor_fd);
	memset(ds, 0, sizeof(*ds));
	ds->tcursor_fd = -1;
}

int nfsl_ckpt_dstore_clocks(struct nfsl_ckpt_dstore *ds)
{
	return nfsl_ckpt_clocks(&ds->d->cfg, ds->d->cursor_fd, ds->tcursor_fd, ds->st.seq,
				ds->st.tseq);
}

int nfsl_ckpt_dstore_open(struct nfsl_ckpt_dstore *ds, const struct nfsl_domain *d, char *err,
			  size_t errlen)
{
	char path[PATH_MAX + 32];
	__u32 n = nseq_of(&d->cfg);
	void *m;
	int rc;

	memset(ds, 0, sizeof(*ds));
	ds->tcursor_fd = -1;
	ds->d = d;
	ds->st.cfg = &d->cfg;
	ds->len = (size_t)d->cfg.slots * sizeof(struct nfsl_slot);
	m = mmap(NULL, ds->len, PROT_READ | PROT_WRITE, MAP_SHARED, d->store_fd, 0);
	if (m == MAP_FAILED)
		return nfsl_errf(err, errlen, -errno, "cannot map the store: %s", strerror(errno));
	ds->st.slots = m;
	ds->st.seq = calloc(n, sizeof(__u32));
	ds->st.tseq = d->cfg.ntenants ? calloc((size_t)n * NFSL_MAX_TENANTS, sizeof(__u32)) : NULL;
	if (!ds->st.seq || (d->cfg.ntenants && !ds->st.tseq)) {
		nfsl_ckpt_dstore_close(ds);
		return nfsl_errf(err, errlen, -ENOMEM, "out of memory");
	}
	if (d->cfg.ntenants) {
		snprintf(path, sizeof(path), "%s/%s", d->dir, NFSL_PIN_TENANT_CURSOR);
		ds->tcursor_fd = bpf_obj_get(path); /* -1: an older domain, zeros */
	}
	rc = nfsl_ckpt_dstore_clocks(ds);
	if (rc) {
		nfsl_ckpt_dstore_close(ds);
		return nfsl_errf(err, errlen, rc, "cannot read the allocation cursors: %s",
				 strerror(-rc));
	}
	return 0;
}

int nfsl_ckpt_save_fd(const char *dir, int fd, struct nfsl_ckpt_result *res, char *err,
		      size_t errlen)
{
	struct nfsl_domain d;
	struct nfsl_ckpt_dstore ds;
	int rc;

	memset(res, 0, sizeof(*res));
	rc = nfsl_domain_open_dir(&d, dir);
	if (rc)
		return nfsl_errf(err, errlen, rc, "cannot open the domain at %s: %s", dir,
				 strerror(-rc));
	rc = nfsl_ckpt_dstore_open(&ds, &d, err, errlen);
	if (!rc) {
		rc = nfsl_ckpt_write(&ds.st, fd, 0, res, err, errlen);
		nfsl_ckpt_dstore_close(&ds);
	}
	nfsl_domain_close(&d);
	return rc;
}

int nfsl_ckpt_save(const char *dir, const char *path, struct nfsl_ckpt_result *res, char *err,
		   size_t errlen)
{
	char tmp[4096];
	int fd, rc;

	memset(res, 0, sizeof(*res));
	if (snprintf(tmp, sizeof(tmp), "%s.tmp%d", path, getpid()) >= (int)sizeof(tmp))
		return nfsl_errf(err, errlen, -ENAMETOOLONG, "checkpoint path too long: %s", path);
	fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return nfsl_errf(err, errlen, -errno, "cannot create %s: %s", tmp, strerror(errno));
	rc = nfsl_ckpt_save_fd(dir, fd, res, err, errlen);
	if (!rc && (fchmod(fd, 0600) || fsync(fd)))
		rc = nfsl_errf(err, errlen, -errno, "cannot write %s: %s", tmp, strerror(errno));
	if (!rc && rename(tmp, path))
		rc = nfsl_errf(err, errlen, -errno, "cannot rename %s to %s: %s", tmp, path,
			       strerror(errno));
	close(fd);
	if (rc)
		unlink(tmp);
	return rc;
}

int nfsl_ckpt_map(int fd, const char *what, const void **buf, size_t *size, char *err,
		  size_t errlen)
{
	struct stat st;
	void *m;

	if (fstat(fd, &st))
		return nfsl_errf(err, errlen, -errno, "cannot read %s: %s", what, strerror(errno));
	if (st.st_size < (off_t)HDR_V1_FIXED || st.st_size > (1ll << 40))
		return nfsl_errf(err, errlen, -EBADMSG,
				 "%s is not an nfslice checkpoint (size %lld)", what,
				 (long long)st.st_size);
	m = mmap(NULL, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (m == MAP_FAILED)
		return nfsl_errf(err, errlen, -errno, "cannot map %s: %s", what, strerror(errno));
	*buf = m;
	*size = st.st_size;
	return 0;
}

void nfsl_ckpt_unmap(const void *buf, size_t size)
{
	if (buf)
		munmap((void *)buf, size);
}

int nfsl_ckpt_file_safe(int fd, const char *what, const char *path, char *err, size_t errlen)
{
	char link[64], name[PATH_MAX];
	uid_t euid = geteuid();
	struct stat st;
	ssize_t n;

	if (fstat(fd, &st))
		return nfsl_errf(err, errlen, -errno, "cannot read %s: %s", what, strerror(errno));
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, name, sizeof(name) - 1);
	name[n > 0 ? n : 0] = '\0';
	if (S_ISSOCK(st.st_mode) || (S_ISFIFO(st.st_mode) && !strncmp(name, "pipe:[", 6)))
		return 0; /* written by whom the caller connected it to */
	if (!S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode))
		return nfsl_errf(err, errlen, -EPERM,
				 "%s is not a file, a pipe or a socket (a terminal or a device): "
				 "give a checkpoint file", what);
	if (!path)
		path = n > 0 ? name : "FILE";
	if (st.st_uid != euid && st.st_uid != 0)
		return nfsl_errf(err, errlen, -EPERM,
				 "%s is owned by uid %u, not by you (uid %u) or root: whoever "
				 "owns it could have written the key it holds; check it and chown "
				 "%u %s, or take the checkpoint again", what, (unsigned)st.st_uid,
				 (unsigned)euid, (unsigned)euid, path);
	if (st.st_mode & (S_IWGRP | S_IWOTH))
		return nfsl_errf(err, errlen, -EPERM,
				 "%s is writable by group or others (mode %04o): chmod go-w %s",
				 what, (unsigned)(st.st_mode & 07777), path);
	return 0;
}

/* Map and parse the file @path; messages name it. */
static int load_file(const char *path, const void **buf, size_t *size,
		     struct nfsl_ckpt_img *img, char *err, size_t errlen)
{
	char why[PATH_MAX + 16];
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK), rc;

	if (fd < 0)
		return nfsl_errf(err, errlen, -errno, "cannot open %s: %s", path, strerror(errno));
	/* Checked on the file opened (not the name: it could be swapped). */
	snprintf(why, sizeof(why), "checkpoint %s", path);
	rc = nfsl_ckpt_file_safe(fd, why, path, err, errlen);
	if (!rc)
		rc = nfsl_ckpt_map(fd, path, buf, size, err, errlen);
	close(fd);
	if (rc)
		return rc;
	rc = nfsl_ckpt_parse(*buf, *size, 0, img, why, sizeof(why));
	if (rc) {
		nfsl_ckpt_unmap(*buf, *size);
		*buf = NULL;
		return nfsl_errf(err, errlen, rc, "%s is %s", path, why);
	}
	return 0;
}

int nfsl_ckpt_restore(const char *dir, const char *path, struct nfsl_ckpt_result *res,
		      char *err, size_t errlen)
{
	const struct nfsl_config *hc;
	struct nfsl_ckpt_clock now;
	struct nfsl_ckpt_img img;
	struct nfsl_domain d;
	struct nfsl_ckpt_dstore ds = { .tcursor_fd = -1 };
	const void *buf = NULL;
	__u32 busy, zero = 0;
	size_t size = 0;
	int rc, lock;

	memset(res, 0, sizeof(*res));
	rc = load_file(path, &buf, &size, &img, err, errlen);
	if (rc)
		return rc;
	hc = &img.cfg;
	lock = nfsl_domains_lock();
	if (lock < 0) {
		nfsl_ckpt_unmap(buf, size);
		return nfsl_errf(err, errlen, lock, "cannot lock %s: %s", NFSL_LOCK_FILE,
				 strerror(-lock));
	}
	rc = nfsl_domain_open_dir(&d, dir);
	if (rc) {
		nfsl_errf(err, errlen, rc, "cannot open the domain at %s: %s", dir, strerror(-rc));
		goto out_unlock;
	}
	if (hc->slots != d.cfg.slots || hc->part_slots != d.cfg.part_slots ||
	    hc->ncpus != d.cfg.ncpus || nparts(hc) != nparts(&d.cfg)) {
		rc = nfsl_errf(err, errlen, -EINVAL,
			       "%s holds a store of %u slots (%u CPUs x %u parts x %u); the domain "
			       "has %u (%u x %u x %u): attach it with the same --slots and NF "
			       "ports on a machine with as many CPUs", path, hc->slots, hc->ncpus,
			       nparts(hc), hc->part_slots, d.cfg.slots, d.cfg.ncpus,
			       nparts(&d.cfg), d.cfg.part_slots);
		goto out;
	}
	rc = nfsl_domain_busy_slots(&d, &busy);
	if (!rc && busy)
		rc = nfsl_errf(err, errlen, -EBUSY,
			       "the domain holds %u parked payloads: their tokens would stop "
			       "verifying under the checkpoint's key; restore into a domain "
			       "before traffic reaches it (attach, restore, then route traffic)",
			       busy);
	if (rc) {
		if (rc != -EBUSY)
			nfsl_errf(err, errlen, rc, "cannot read the store: %s", strerror(-rc));
		goto out;
	}
	rc = nfsl_ckpt_dstore_open(&ds, &d, err, errlen);
	if (rc)
		goto out;
	nfsl_ckpt_clock_now(&now);
	nfsl_ckpt_import(&img, &ds.st, &now, 0, NULL, res);
	{
		struct nfsl_config cfg = d.cfg;

		/* The key in use goes to the retired list first: a header it
		 * signed that an NF holds is stale, never outside traffic. */
		if (memcmp(cfg.key, hc->key, sizeof(cfg.key)) &&
		    (rc = nfsl_retire_key(dir, cfg.key, nfsl_retire_grace_ms(&cfg)))) {
			nfsl_errf(err, errlen, rc, "cannot retire the domain's key: %s",
				  strerror(-rc));
			goto out;
		}
		memcpy(cfg.key, hc->key, sizeof(cfg.key));
		cfg.threshold = hc->threshold;
		cfg.keep = hc->keep;
		cfg.expiry = hc->expiry;
		cfg.ttl_us = hc->ttl_us;
		cfg.win_min = hc->win_min;
		cfg.cfg_gen++;
		if (bpf_map_update_elem(d.config_fd, &zero, &cfg, BPF_ANY))
			rc = nfsl_errf(err, errlen, -errno, "cannot write the configuration: %s",
				       strerror(errno));
	}
	res->bytes = size;
out:
	nfsl_ckpt_dstore_close(&ds);
	nfsl_domain_close(&d);
out_unlock:
	close(lock);
	nfsl_ckpt_unmap(buf, size);
	return rc;
}
