// SPDX-License-Identifier: GPL-2.0
/*
 * pcap reader for --pcap: the classic libpcap format (microsecond or
 * nanosecond timestamps, either byte order), link type Ethernet. Frames are
 * kept whole; timestamps are ignored (the rate is --rate's). pcapng, other
 * link types and frames captured short of their length are refused with the
 * way out.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <byteswap.h>

#include "pg.h"

#define PCAP_MAGIC_US 0xa1b2c3d4u
#define PCAP_MAGIC_NS 0xa1b23c4du
#define PCAPNG_MAGIC 0x0a0d0d0au
#define LINKTYPE_ETHERNET 1

struct pcap_file_hdr {
	__u32 magic;
	__u16 major, minor;
	__s32 thiszone;
	__u32 sigfigs;
	__u32 snaplen;
	__u32 linktype;
};

struct pcap_rec_hdr {
	__u32 sec, frac;
	__u32 incl_len, orig_len;
};

static __u32 get32(__u32 v, bool swap)
{
	return swap ? bswap_32(v) : v;
}

static int read_records(FILE *f, const char *file, bool swap, __u32 max_len,
			struct pg_pcap *p, double *avg_len)
{
	struct pcap_rec_hdr rh;
	double bytes = 0;
	__u32 cap = 0;
	size_t got;

	while ((got = fread(&rh, 1, sizeof(rh), f)) == sizeof(rh)) {
		__u32 n = p->n + 1, incl = get32(rh.incl_len, swap);
		__u32 orig = get32(rh.orig_len, swap);
		struct pktgen_frame *fr;

		if (incl < orig)
			return pg_err("%s: frame %u was captured short (%u of %u bytes): "
				      "capture again with a snap length that keeps whole "
				      "frames (tcpdump -s 0)", file, n, incl, orig);
		if (incl < 14 || incl > max_len)
			return pg_err("%s: frame %u is %u bytes: frames of 14 to %u bytes "
				      "can be sent here (the interface's MTU + 18, at most "
				      "%u)", file, n, incl, max_len, PKTGEN_MAX_FRAME);
		if (p->n == PG_PCAP_MAX)
			return pg_err("%s: more than %d frames: cut the file (e.g. "
				      "editcap -r FILE OUT 1-%d)", file, PG_PCAP_MAX,
				      PG_PCAP_MAX);
		if (p->n == cap) {
			cap = cap ? cap * 2 : 64;
			if (cap > PG_PCAP_MAX)
				cap = PG_PCAP_MAX;
			fr = realloc(p->frames, cap * sizeof(*fr));
			if (!fr)
				return pg_err("out of memory for the frames of %s", file);
			p->frames = fr;
		}
		fr = &p->frames[p->n];
		memset(fr, 0, sizeof(*fr));
		fr->len = incl;
		if (fread(fr->data, incl, 1, f) != 1)
			return pg_err("%s: frame %u is cut off at the end of the file",
				      file, n);
		bytes += incl;
		p->n = n;
	}
	if (ferror(f))
		return pg_err("cannot read %s: %s", file, strerror(errno));
	if (got)
		return pg_err("%s: the header of frame %u is cut off at the end of "
			      "the file", file, p->n + 1);
	if (!p->n)
		return pg_err("%s has no frames", file);
	*avg_len = bytes / p->n;
	return 0;
}

int pg_pcap_load(const char *file, __u32 max_len, struct pg_pcap *p,
		 double *avg_len)
{
	struct pcap_file_hdr h;
	FILE *f = fopen(file, "rb");
	bool swap;
	int err;

	memset(p, 0, sizeof(*p));
	if (max_len > PKTGEN_MAX_FRAME)
		max_len = PKTGEN_MAX_FRAME;
	if (!f)
		return pg_err("cannot open pcap file '%s': %s", file, strerror(errno));
	if (fread(&h, sizeof(h), 1, f) != 1) {
		err = pg_err("%s is not a pcap file: shorter than a pcap header", file);
		goto out;
	}
	if (h.magic == PCAPNG_MAGIC) {
		err = pg_err("%s is pcapng: write classic pcap instead (tcpdump -w does; "
			     "or convert: editcap -F pcap %s OUT.pcap)", file, file);
		goto out;
	}
	swap = h.magic == bswap_32(PCAP_MAGIC_US) || h.magic == bswap_32(PCAP_MAGIC_NS);
	if (!swap && h.magic != PCAP_MAGIC_US && h.magic != PCAP_MAGIC_NS) {
		err = pg_err("%s is not a pcap file (magic 0x%08x)", file, h.magic);
		goto out;
	}
	if (get32(h.linktype, swap) != LINKTYPE_ETHERNET) {
		err = pg_err("%s has link type %u: only Ethernet (1) frames can be sent",
			     file, get32(h.linktype, swap));
		goto out;
	}
	err = read_records(f, file, swap, max_len, p, avg_len);
out:
	if (err) {
		free(p->frames);
		p->frames = NULL;
		p->n = 0;
	}
	fclose(f);
	return err;
}
