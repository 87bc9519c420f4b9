// SPDX-License-Identifier: GPL-2.0
/*
 * Inline splicing from a read-write mmap of the store (nfsl_xsk_splice.h).
 * The token check, the checksum and the header rewrite are the tc
 * splicer's (include/nfsl_splice.h); this file adds what the tc splicer
 * gets from helpers: the frame and the slot as plain memory, the MTU and
 * the buffer's room as arguments.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <bpf/bpf.h>

#include "nfsl_splice.h"
#include "nfsl/domain.h"
#include "nfsl/retired.h"
#include "util/util.h"
#include "xsk/nfsl_xsk_splice.h"

/* The domain's retired keys, mapped read-only (one value, one page), or
 * NULL when it has no list (a domain attached by an older nfslice). */
static const struct nfsl_retired *retired_map(const struct nfsl_domain *d)
{
	char path[PATH_MAX];
	void *m;
	int fd;

	if (nfsl_retired_path(path, sizeof(path), d->dir))
		return NULL;
	fd = bpf_obj_get(path);
	if (fd < 0)
		return NULL;
	if (nfsl_map_value_check(fd, sizeof(struct nfsl_retired))) {
		close(fd);
		return NULL;
	}
	m = mmap(NULL, sizeof(struct nfsl_retired), PROT_READ, MAP_SHARED, fd, 0);
	close(fd); /* the mapping holds the map */
	return m == MAP_FAILED ? NULL : m;
}

static void cfg_map_open(struct nfsl_xsk_store *st, long page);

int nfsl_xsk_store_open(struct nfsl_xsk_store *st, const struct nfsl_domain *d)
{
	struct bpf_map_info info = {};
	__u32 ilen = sizeof(info);
	long page = sysconf(_SC_PAGESIZE);
	size_t len;
	void *m;
	int fd, err;

	memset(st, 0, sizeof(*st));
	st->fd = -1;
	st->cfg_fd = -1;
	if (bpf_obj_get_info_by_fd(d->store_fd, &info, &ilen))
		return -errno;
	if (info.type != BPF_MAP_TYPE_ARRAY || !(info.map_flags & BPF_F_MMAPABLE) ||
	    info.value_size != sizeof(struct nfsl_slot) || !info.max_entries)
		return -EINVAL;
	/* An mmapable array is max_entries values of round_up(value_size, 8)
	 * bytes, the whole rounded up to pages (kernel/bpf/arraymap.c). */
	len = (size_t)info.max_entries * ((info.value_size + 7) & ~7u);
	len = (len + page - 1) / page * page;
	/* Our own fd: the caller may close the domain. */
	fd = fcntl(d->store_fd, F_DUPFD_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		err = -errno;
		close(fd);
		return err;
	}
	st->slots = m;
	st->nslots = info.max_entries;
	st->map_len = len;
	st->cfg = d->cfg;
	st->cfg_gen = d->cfg.cfg_gen;
	st->cfg_fd = d->config_fd >= 0 ? fcntl(d->config_fd, F_DUPFD_CLOEXEC, 0) : -1;
	st->fd = fd;
	st->retired = retired_map(d);
	if (st->cfg_fd >= 0)
		cfg_map_open(st, page);
	return 0;
}

/* Map the config read-only when it is mmapable (nfsl_xsk_splice.h
 * cfg_map); else leave cfg_map NULL: the re-read is then rate-limited. */
static void cfg_map_open(struct nfsl_xsk_store *st, long page)
{
	struct bpf_map_info info = {};
	__u32 ilen = sizeof(info);
	size_t len;
	void *m;

	if (bpf_obj_get_info_by_fd(st->cfg_fd, &info, &ilen) ||
	    !(info.map_flags & BPF_F_MMAPABLE) || info.value_size != sizeof(struct nfsl_config))
		return;
	len = ((info.value_size + 7) & ~7ul) * info.max_entries;
	len = (len + page - 1) / page * page;
	m = mmap(NULL, len, PROT_READ, MAP_SHARED, st->cfg_fd, 0);
	if (m == MAP_FAILED)
		return;
	st->cfg_map = m;
	st->cfg_map_len = len;
}

void nfsl_xsk_store_close(struct nfsl_xsk_store *st)
{
	if (!st->slots)
		return; /* zeroed, failed open, or closed: no fd of ours */
	munmap(st->slots, st->map_len);
	if (st->retired)
		munmap((void *)st->retired, sizeof(*st->retired));
	st->retired = NULL;
	close(st->fd);
	if (st->cfg_map)
		munmap((void *)st->cfg_map, st->cfg_map_len);
	st->cfg_map = NULL;
	if (st->cfg_fd >= 0)
		close(st->cfg_fd);
	st->slots = NULL;
	st->fd = -1;
	st->cfg_fd = -1;
}

/* The fields of a config that nfsl_token_ours_cfg reads. */
static void cfg_keys(struct nfsl_config *dst, const struct nfsl_config *src)
{
	memcpy(dst->key, src->key, sizeof(dst->key));
	memcpy(dst->key_old, src->key_old, sizeof(dst->key_old));
	dst->flags = src->flags;
}

/* Does @tok verify under @st's keys? A seqcount read (cfg_seq): workers
 * sharing the store see a refresh whole or not at all. */
static bool nfsl_xsk_token_ours(const struct nfsl_xsk_store *st, const struct nfsl_token *tok,
			   struct nfsl_slot *s)
{
	struct nfsl_config c;
	unsigned int seq;

	do {
		seq = __atomic_load_n(&st->cfg_seq, __ATOMIC_ACQUIRE);
		cfg_keys(&c, &st->cfg);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
	} while ((seq & 1) || seq != __atomic_load_n(&st->cfg_seq, __ATOMIC_RELAXED));
	return nfsl_token_ours_cfg(tok, s, &c);
}

/* May the config be read again now? With the config mapped: only when
 * its generation moved since our copy (every writer bumps it, userspace/lib/nfsl/
 * cfg.h) or its keys and flags differ from ours, a few loads: the
 * kernel copies a value front to back, so a read racing a write can see
 * the new generation (mid-value) with the old key_old (at its end); the
 * compare catches that on the next token. Without: at most once per
 * NFSL_XSK_REREAD_NS per store, whoever asks. */
static bool nfsl_xsk_cfg_changed(struct nfsl_xsk_store *st)
{
	const struct nfsl_config *m = st->cfg_map, *cur = &st->cfg;
	struct timespec ts;
	__u64 now, next;

	if (m)
		return __atomic_load_n(&m->cfg_gen, __ATOMIC_ACQUIRE) !=
			       __atomic_load_n(&st->cfg_gen, __ATOMIC_RELAXED) ||
		       m->flags != cur->flags || memcmp(m->key, cur->key, sizeof(m->key)) ||
		       memcmp(m->key_old, cur->key_old, sizeof(m->key_old));
	clock_gettime(CLOCK_MONOTONIC, &ts); /* vDSO: no system call */
	now = (__u64)ts.tv_sec * 1000000000ull + ts.tv_nsec;
	next = __atomic_load_n(&st->cfg_next_ns, __ATOMIC_RELAXED);
	return now >= next &&
	       __atomic_compare_exchange_n(&st->cfg_next_ns, &next, now + NFSL_XSK_REREAD_NS,
					   false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}

/*
 * nfsl_xsk_cfg_refresh - a token verified under neither key we hold: has
 * the domain's config changed (a copy-mode migration sets key_old and its
 * flag while the NF runs)? The one place the splice reads the config
 * again, and the place to refresh anything else a token may verify under
 * (a writer of such state must bump cfg_gen). Reads it into @c only when
 * nfsl_xsk_cfg_changed says so (random trailers that pass the token pre-check
 * cost no system call); true when its keys or flags differ from ours,
 * which are then replaced (unless another worker is replacing them: it
 * writes the same). False without a config map or when nothing changed.
 */
static bool nfsl_xsk_cfg_refresh(struct nfsl_xsk_store *st, struct nfsl_config *c)
{
	const struct nfsl_config *cur = &st->cfg; /* torn only by a refresh
						  * of these same values */
	__u32 zero = 0;
	bool mine;

	if (st->cfg_fd < 0 || !nfsl_xsk_cfg_changed(st))
		return false;
	__atomic_add_fetch(&st->rereads, 1, __ATOMIC_RELAXED);
	if (bpf_map_lookup_elem(st->cfg_fd, &zero, c))
		return false;
	/* The generation is recorded only once our keys are the ones it
	 * names (a copy torn by a concurrent write shows another generation
	 * in the map: read again next time). */
	mine = !st->cfg_map ||
	       c->cfg_gen == __atomic_load_n(&st->cfg_map->cfg_gen, __ATOMIC_ACQUIRE);
	if (!memcmp(cur->key, c->key, sizeof(c->key)) && cur->flags == c->flags &&
	    !memcmp(cur->key_old, c->key_old, sizeof(c->key_old))) {
		if (mine)
			__atomic_store_n(&st->cfg_gen, c->cfg_gen, __ATOMIC_RELAXED);
		return false;
	}
	if (__atomic_exchange_n(&st->cfg_lock, 1, __ATOMIC_ACQUIRE))
		return true;
	__atomic_store_n(&st->cfg_seq, st->cfg_seq + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	cfg_keys(&st->cfg, c);
	__atomic_store_n(&st->cfg_seq, st->cfg_seq + 1, __ATOMIC_RELEASE);
	if (mine)
		__atomic_store_n(&st->cfg_gen, c->cfg_gen, __ATOMIC_RELEASE);
	__atomic_store_n(&st->cfg_lock, 0, __ATOMIC_RELEASE);
	return true;
}

/* Does the check @t carried from receive still hold for the token @tok
 * the parse found at @off, the keys at seqcount @seq? Only while the
 * frame holds the same bytes at the same place under the same keys. */
static bool tok_carried(const struct nfsl_xsk_tok *t, const struct nfsl_token *tok, __u32 off,
			__u32 seq)
{
	return t && t->ours && t->off == off && t->cfg_seq == seq &&
	       !memcmp(&t->tok, tok, sizeof(*tok));
}

/*
 * The tc splicer's nfsl_token_find on a linear frame: does [@frame,
 * @frame + @len) end its IP packet with one of our tokens? Out: its parse
 * @p (not filled when false comes before the parse), the token @tok at
 * @tok_off, the slot @s it names (NULL: beyond the store). The MAC is
 * skipped when @carry (or NULL) says this token verified already
 * (tok_carried); a token that verifies under the keys is recorded in
 * @rec (or NULL), which is zeroed otherwise.
 */
static bool nfsl_xsk_token_find(struct nfsl_xsk_store *st, __u8 *frame, __u32 len,
				struct nfsl_pkt *p, __u32 *tok_off, struct nfsl_token *tok,
				struct nfsl_slot **s, const struct nfsl_xsk_tok *carry,
				struct nfsl_xsk_tok *rec)
{
	const struct nfsl_token *q;
	struct nfsl_config c;
	__u32 idx, seq;

	if (rec)
		memset(rec, 0, sizeof(*rec));
	/* Most frames that are not ours are told before the parse, as the tc
	 * splicer tells them (nfsl_splice_quick_token); @p is then not
	 * filled. */
	q = nfsl_splice_quick_token(frame, frame + len, len);
	if (q && (!nfsl_token_index(q, &idx) ||
		  (!nfsl_token_in_store(idx, st->nslots) &&
		   !(st->retired && nfsl_retired_any(st->retired)))))
		return false;
	if (nfsl_parse(frame, frame + len, p) || !nfsl_splice_token_off(p, tok_off))
		return false;
	memcpy(tok, frame + *tok_off, sizeof(*tok));
	if (!nfsl_token_index(tok, &idx))
		return false;
	*s = NULL;
	if (nfsl_token_in_store(idx, st->nslots)) {
		*s = &st->slots[idx];
		/* read before the check: a refresh meanwhile makes it stale (safe) */
		seq = __atomic_load_n(&st->cfg_seq, __ATOMIC_ACQUIRE);
		if (tok_carried(carry, tok, *tok_off, seq))
			return true;
		if (nfsl_xsk_token_ours(st, tok, *s)) {
			if (rec)
				*rec = (struct nfsl_xsk_tok){ .tok = *tok, .cfg_seq = seq,
							      .off = *tok_off, .ours = 1 };
			return true;
		}
		if (nfsl_xsk_cfg_refresh(st, &c) && nfsl_token_ours_cfg(tok, *s, &c))
			return true;
	}
	/* Under a key the domain retired: its payload is gone. Found, with
	 * no slot: every caller takes that as stale. */
	if (st->retired && nfsl_retired_any(st->retired) &&
	    nfsl_token_retired(tok, st->retired, nfsl_now_ns())) {
		*s = NULL;
		return true;
	}
	return false;
}

int nfsl_xsk_splice(struct nfsl_xsk_store *st, __u8 *frame, __u32 *len, __u32 room,
		    __u32 mtu)
{
	return nfsl_xsk_splice_tok(st, frame, len, room, mtu, NULL);
}

int nfsl_xsk_splice_tok(struct nfsl_xsk_store *st, __u8 *frame, __u32 *len, __u32 room,
			__u32 mtu, const struct nfsl_xsk_tok *t)
{
	__u32 tok_off, gen, plen, new_l3, new_len;
	struct nfsl_token tok;
	struct nfsl_slot *s;
	struct nfsl_pkt p;
	__u16 field, csum, psum;
	__u8 flags, dscp;

	if (*len > room)
		return NFSL_XSK_SPLICE_BAD;
	if (!nfsl_xsk_token_find(st, frame, *len, &p, &tok_off, &tok, &s, t, NULL))
		return NFSL_XSK_SPLICE_NOT_SLICED;
	gen = ntohl(tok.gen);
	if (!s || !nfsl_slot_busy(s, gen))
		return NFSL_XSK_SPLICE_STALE;
	/* Each field read once: an eviction may rewrite the slot meanwhile
	 * (the release below then fails), and a length read twice could
	 * differ between the bounds check and the copy. */
	plen = __atomic_load_n(&s->len, __ATOMIC_RELAXED);
	psum = __atomic_load_n(&s->csum, __ATOMIC_RELAXED);
	dscp = __atomic_load_n(&s->dscp, __ATOMIC_RELAXED);
	flags = __atomic_load_n(&s->flags, __ATOMIC_RELAXED);
	if (!nfsl_splice_len_ok(plen))
		return NFSL_XSK_SPLICE_STALE;

	new_l3 = tok_off + plen - p.l3off;
	new_len = tok_off + plen;
	if (new_l3 > mtu) {
		nfsl_slot_release(s, gen);
		return NFSL_XSK_SPLICE_TOO_BIG;
	}
	if (new_len > room) {
		nfsl_slot_release(s, gen);
		return NFSL_XSK_SPLICE_NO_ROOM;
	}

	/* The parse put the whole L4 header inside the frame. */
	memcpy(&field, frame + p.l4off + nfsl_l4_csum_off(p.proto), sizeof(field));
	csum = nfsl_splice_l4_csum(frame, frame + *len, &p, &tok, field, plen, psum, flags);
	if (nfsl_write_spliced(frame, frame + new_len, &p, dscp, new_l3, csum, flags)) {
		nfsl_slot_release(s, gen); /* parsed headers lie inside: never */
		return NFSL_XSK_SPLICE_BAD;
	}
	memcpy(frame + tok_off, s->payload, plen);
	/* Seqlock-style: the copy counts only if the slot still held our
	 * generation the whole time (the compare-and-swap is a full barrier:
	 * the copy cannot move past it). */
	if (!nfsl_slot_release(s, gen))
		return NFSL_XSK_SPLICE_STALE;
	*len = new_len;
	return NFSL_XSK_SPLICE_SPLICED;
}

__u32 nfsl_xsk_orig_len(struct nfsl_xsk_store *st, const __u8 *frame, __u32 len)
{
	return nfsl_xsk_orig_len_tok(st, frame, len, NULL);
}

__u32 nfsl_xsk_orig_len_tok(struct nfsl_xsk_store *st, const __u8 *frame, __u32 len,
			    struct nfsl_xsk_tok *t)
{
	struct nfsl_token tok;
	struct nfsl_slot *s = NULL;
	struct nfsl_pkt p = {};
	__u32 tok_off, plen, idx;

	if (t)
		memset(t, 0, sizeof(*t));
	if (st && st->slots) {
		/* With the store: only a token that verifies, from its slot. */
		if (nfsl_xsk_token_find(st, (__u8 *)frame, len, &p, &tok_off, &tok, &s, NULL, t) && s &&
		    nfsl_slot_busy(s, ntohl(tok.gen))) {
			plen = __atomic_load_n(&s->len, __ATOMIC_RELAXED);
			if (nfsl_splice_len_ok(plen))
				return tok_off + plen - p.l3off;
		}
	} else if (!nfsl_parse((__u8 *)frame, (__u8 *)frame + len, &p) &&
		   p.dscp == NFSL_DSCP_SLICED && nfsl_splice_token_off(&p, &tok_off)) {
		/* Without (an NF server in park): the length the token says. */
		memcpy(&tok, frame + tok_off, sizeof(tok));
		if (nfsl_token_index(&tok, &idx))
			return nfsl_token_orig_len(&p, &tok);
	}
	if (p.l3end || !nfsl_parse((__u8 *)frame, (__u8 *)frame + len, &p))
		return p.l3end - p.l3off;
	return 0;
}

int nfsl_xsk_release(struct nfsl_xsk_store *st, const __u8 *frame, __u32 len)
{
	return nfsl_xsk_release_tok(st, frame, len, NULL);
}

int nfsl_xsk_release_tok(struct nfsl_xsk_store *st, const __u8 *frame, __u32 len,
			 const struct nfsl_xsk_tok *t)
{
	struct nfsl_token tok;
	struct nfsl_slot *s;
	struct nfsl_pkt p;
	__u32 tok_off;

	/* The parser only reads. */
	if (!nfsl_xsk_token_find(st, (__u8 *)frame, len, &p, &tok_off, &tok, &s, t, NULL) || !s)
		return 0;
	return nfsl_slot_release(s, ntohl(tok.gen));
}
