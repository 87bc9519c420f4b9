// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Checkpoint images are untrusted input (issue 17 §1.3; docs/format.md
 * "Checkpoint file"): a crafted image with a valid CRC whose record names a
 * slot beyond the image's own store is refused by nfsl_ckpt_parse (before,
 * nfsl_ckpt_import read the image's clocks out of bounds for it when the
 * target store was larger: adopt's SEGV in born_clock), in both versions;
 * a configuration out of attach's ranges and a geometry that overflows 32
 * bits are refused too. nfsl_ckpt_file_safe refuses a checkpoint file
 * others could have written (owned by another uid, writable by group or
 * others), as ssh does for keys, and passes pipes and safe files.
 * Memory only: no BPF, no root needed (but for the chown case).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <criterion/criterion.h>
#include <zlib.h>

#include "nfsl/ckpt.h"
#include "ckpt_v1.h"

TestSuite(ckpt_untrusted, .timeout = 30);

/* A source store of 2 CPUs x 8 slots with slot 1 parked. */
static void src_store(struct nfsl_config *cfg, struct nfsl_slot *slots)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->ncpus = 2;
	cfg->nparts = 1;
	cfg->part_slots = 8;
	cfg->slots = 16;
	cfg->expiry = 2;
	memset(slots, 0, 16 * sizeof(*slots));
	slots[1].ctl = NFSL_CTL(3, 2);
	slots[1].len = 100;
	memset(slots[1].payload, 0xab, 100);
}

/* A version 2 image of @st, copied to the heap (exact size: ASan sees a
 * read past it), *@size bytes. */
static char *take(const struct nfsl_ckpt_store *st, size_t *size)
{
	struct nfsl_ckpt_result res;
	const void *m;
	char err[256], *buf;
	int fd = memfd_create("img", MFD_CLOEXEC);

	cr_assert_geq(fd, 0);
	cr_assert_eq(nfsl_ckpt_write(st, fd, 0, &res, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(nfsl_ckpt_map(fd, "img", &m, size, err, sizeof(err)), 0, "%s", err);
	buf = malloc(*size);
	cr_assert_not_null(buf);
	memcpy(buf, m, *size);
	nfsl_ckpt_unmap(m, *size);
	close(fd);
	return buf;
}

/* The CRC-32 over the image with the crc field zero, written in. */
static void reseal(char *buf, size_t size)
{
	size_t off = offsetof(struct nfsl_ckpt_hdr, crc32);
	__u32 crc;

	memset(buf + off, 0, 4);
	crc = crc32(0, (const Bytef *)buf, size);
	memcpy(buf + off, &crc, 4);
}

/* A target larger than the image: 2 CPUs x 1024 slots (adopt accepts an
 * image of fewer slots than its store). */
#define DST_PART 1024
#define DST_SLOTS (2 * DST_PART)

/* Parse as adopt does, and if accepted import live as adopt does: the old
 * code's born_clock then read img->seq[2047 / 8], 1 KiB past a 16-slot
 * image. */
static int adopt_like(const char *buf, size_t size, char *err, size_t errlen,
		      struct nfsl_slot *dst)
{
	struct nfsl_config dc = { .ncpus = 2, .nparts = 1, .part_slots = DST_PART,
				  .slots = DST_SLOTS, .expiry = 2 };
	__u32 dseq[2] = { 0, 0 };
	struct nfsl_ckpt_store ds = { .slots = dst, .cfg = &dc, .seq = dseq };
	struct nfsl_ckpt_result res = {};
	struct nfsl_ckpt_clock now = {};
	struct nfsl_ckpt_img img;
	int rc = nfsl_ckpt_parse(buf, size, 0, &img, err, errlen);

	if (!rc)
		nfsl_ckpt_import(&img, &ds, &now, NFSL_CKPT_LIVE, NULL, &res);
	return rc;
}

Test(ckpt_untrusted, v2_record_beyond_image)
{
	struct nfsl_slot *src = calloc(16, sizeof(*src)), *dst = calloc(DST_SLOTS, sizeof(*dst));
	__u32 seq[2] = { 5, 6 };
	struct nfsl_config sc;
	struct nfsl_ckpt_store ss = { .slots = src, .cfg = &sc, .seq = seq };
	char err[256], *buf;
	size_t size, rec;
	__u32 idx = DST_SLOTS - 1;

	src_store(&sc, src);
	buf = take(&ss, &size);
	cr_assert_eq(adopt_like(buf, size, err, sizeof(err), dst), 0, "%s", err);
	/* The one record follows the header and the 2 clocks (8 bytes). */
	rec = sizeof(struct nfsl_ckpt_hdr) + 8;
	cr_assert_eq(*(__u32 *)(buf + rec), 1);
	memcpy(buf + rec, &idx, 4);
	reseal(buf, size);
	memset(dst, 0, DST_SLOTS * sizeof(*dst));
	cr_assert_eq(adopt_like(buf, size, err, sizeof(err), dst), -EBADMSG);
	cr_expect_str_eq(err, "record 0 names slot 2047 of 16");
	cr_expect_eq(dst[idx].ctl, 0, "a refused image changed the store");
	free(buf);
	free(src);
	free(dst);
}

Test(ckpt_untrusted, v1_record_beyond_image)
{
	struct nfsl_slot *dst = calloc(DST_SLOTS, sizeof(*dst));
	struct nfsl_ckpt_slot_v1 rec = { .index = DST_SLOTS - 1 };
	struct nfsl_config cfg;
	struct nfsl_slot s[16];
	__u32 seq[2] = { 5, 6 };
	size_t size = CKPT_V1_SIZE;
	char *buf, err[256];

	src_store(&cfg, s);
	rec.slot = s[1];
	buf = ckpt_v1_image(&cfg, seq, &rec, 0);
	cr_assert_not_null(buf);
	reseal(buf, size);
	cr_assert_eq(adopt_like(buf, size, err, sizeof(err), dst), -EBADMSG);
	cr_expect_str_eq(err, "record 0 names slot 2047 of 16");
	/* A payload longer than a slot holds, refused (was cut silently). */
	rec.index = 1;
	rec.slot.len = NFSL_PAYLOAD_MAX + 1;
	memcpy(buf + CKPT_V1_REC_OFF, &rec, sizeof(rec));
	reseal(buf, size);
	cr_assert_eq(adopt_like(buf, size, err, sizeof(err), dst), -EBADMSG);
	cr_expect_str_eq(err, "record 0 holds 2017 payload bytes (at most 2016)");
	/* The same image with a sound record is read. */
	rec.slot.len = 100;
	memcpy(buf + CKPT_V1_REC_OFF, &rec, sizeof(rec));
	reseal(buf, size);
	cr_assert_eq(adopt_like(buf, size, err, sizeof(err), dst), 0, "%s", err);
	cr_expect_eq(dst[1].ctl, NFSL_CTL(3, 2));
	free(buf);
	free(dst);
}

/* The configuration restore adopts and a geometry whose product wraps in
 * 32 bits: refused, each by name. */
Test(ckpt_untrusted, config_and_geometry)
{
	struct nfsl_slot *src = calloc(16, sizeof(*src));
	__u32 seq[2] = { 5, 6 };
	struct nfsl_config sc;
	struct nfsl_ckpt_store ss = { .slots = src, .cfg = &sc, .seq = seq };
	size_t size, cfg_off = offsetof(struct nfsl_ckpt_hdr, cfg);
	struct nfsl_ckpt_img img;
	struct nfsl_config c;
	char err[256], *buf, *copy;

	src_store(&sc, src);
	buf = take(&ss, &size);
	copy = malloc(size);
	/* keep beyond NFSL_KEEP_MAX: restore would hand it to the slicer. */
	memcpy(copy, buf, size);
	memcpy(&c, copy + cfg_off, sizeof(c));
	c.keep = 4096;
	memcpy(copy + cfg_off, &c, sizeof(c));
	reseal(copy, size);
	cr_expect_eq(nfsl_ckpt_parse(copy, size, 0, &img, err, sizeof(err)), -EBADMSG);
	cr_expect_str_eq(err, "a configuration out of range (threshold 0, keep 4096, expiry 2, "
			      "window 0 of 8, 0 tenants)");
	/* 2 x 2^31 slots is 0 in 32 bits: the old check took slots = 0. */
	memcpy(copy, buf, size);
	memcpy(&c, copy + cfg_off, sizeof(c));
	c.part_slots = 1u << 31;
	c.slots = 0;
	memcpy(copy + cfg_off, &c, sizeof(c));
	reseal(copy, size);
	cr_expect_eq(nfsl_ckpt_parse(copy, size, 0, &img, err, sizeof(err)), -EBADMSG);
	cr_expect(strstr(err, "inconsistent geometry: 2 partitions (2 CPUs x 1) of 2147483648 "
			      "slots for 0"), "%s", err);
	free(copy);
	free(buf);
	free(src);
}

/* A file in /tmp with mode @mode (umask aside), open for reading. */
static int tmp_file(char *path, mode_t mode)
{
	int fd;

	strcpy(path, "/tmp/nfsl-ckpt-XXXXXX");
	fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	cr_assert_eq(fchmod(fd, mode), 0);
	return fd;
}

Test(ckpt_untrusted, file_safe)
{
	char path[64], want[256], err[512];
	int fd = tmp_file(path, 0666), p[2];

	/* Writable by others, then by group: refused, the fix named. */
	cr_expect_eq(nfsl_ckpt_file_safe(fd, "checkpoint X", path, err, sizeof(err)), -EPERM);
	snprintf(want, sizeof(want),
		 "checkpoint X is writable by group or others (mode 0666): chmod go-w %s", path);
	cr_expect_str_eq(err, want);
	cr_assert_eq(fchmod(fd, 0620), 0);
	cr_expect_eq(nfsl_ckpt_file_safe(fd, "checkpoint X", NULL, err, sizeof(err)), -EPERM);
	/* Without a path the fix names the file /proc/self/fd resolves. */
	snprintf(want, sizeof(want),
		 "checkpoint X is writable by group or others (mode 0620): chmod go-w %s", path);
	cr_expect_str_eq(err, want);
	/* Ours, 0600 or 0644: accepted. */
	cr_assert_eq(fchmod(fd, 0600), 0);
	cr_expect_eq(nfsl_ckpt_file_safe(fd, "checkpoint X", path, err, sizeof(err)), 0, "%s",
		     err);
	cr_assert_eq(fchmod(fd, 0644), 0);
	cr_expect_eq(nfsl_ckpt_file_safe(fd, "checkpoint X", path, err, sizeof(err)), 0, "%s",
		     err);
	/* Owned by nobody (65534), 0600: refused (root only can chown). */
	if (geteuid() == 0) {
		cr_assert_eq(fchown(fd, 65534, 65534), 0);
		cr_assert_eq(fchmod(fd, 0600), 0);
		cr_expect_eq(nfsl_ckpt_file_safe(fd, "checkpoint X", path, err, sizeof(err)),
			     -EPERM);
		snprintf(want, sizeof(want),
			 "checkpoint X is owned by uid 65534, not by you (uid 0) or root: "
			 "whoever owns it could have written the key it holds; check it and "
			 "chown 0 %s, or take the checkpoint again", path);
		cr_expect_str_eq(err, want);
	}
	close(fd);
	unlink(path);
	/* An anonymous pipe passes; a terminal or device is no image. */
	cr_assert_eq(pipe(p), 0);
	cr_expect_eq(nfsl_ckpt_file_safe(p[0], "standard input", NULL, err, sizeof(err)), 0,
		     "%s", err);
	close(p[0]);
	close(p[1]);
	fd = open("/dev/null", O_RDONLY);
	cr_expect_eq(nfsl_ckpt_file_safe(fd, "standard input", NULL, err, sizeof(err)), -EPERM);
	cr_expect(strstr(err, "standard input is not a file, a pipe or a socket"), "%s", err);
	close(fd);
	/* A named FIFO others may write: refused like a file. */
	strcpy(path, "/tmp/nfsl-fifo-XXXXXX");
	cr_assert_not_null(mkdtemp(path));
	strcat(path, "/fifo");
	cr_assert_eq(mkfifo(path, 0600), 0);
	cr_assert_eq(chmod(path, 0622), 0);
	fd = open(path, O_RDONLY | O_NONBLOCK);
	cr_assert_geq(fd, 0);
	cr_expect_eq(nfsl_ckpt_file_safe(fd, "standard input", NULL, err, sizeof(err)), -EPERM);
	cr_expect(strstr(err, "writable by group or others (mode 0622)"), "%s", err);
	close(fd);
	unlink(path);
	*strrchr(path, '/') = '\0';
	rmdir(path);
}
