// SPDX-License-Identifier: GPL-2.0
/* TTL eviction over the park log (ttl.h; docs/format.md "Park log"). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "nfsl/ttl.h"
#include "nfsl_store.h"

/* Bytes of one CPU's value in a per-CPU map lookup. */
#define PERCPU_ALLOC ((sizeof(struct nfsl_alloc) + 7) & ~(size_t)7)

static __u32 nparts_of(const struct nfsl_config *cfg)
{
	return cfg->nparts ? cfg->nparts : 1;
}

/* Geometry of @cfg into @t, and the per-partition state. */
static int setup(struct nfsl_ttl *t, const struct nfsl_config *cfg)
{
	__u64 n = (__u64)cfg->ncpus * nparts_of(cfg);

	if (!cfg->part_slots || !n || n * cfg->part_slots > cfg->slots)
		return -EINVAL;
	t->slots = cfg->slots;
	t->part_slots = cfg->part_slots;
	t->ncpus = cfg->ncpus;
	t->nparts = nparts_of(cfg);
	t->parts = calloc(n, sizeof(*t->parts));
	t->heads = calloc(n, sizeof(*t->heads));
	return t->parts && t->heads ? 0 : -ENOMEM;
}

static void init(struct nfsl_ttl *t)
{
	memset(t, 0, sizeof(*t));
	t->config_fd = t->cursor_fd = -1;
}

int nfsl_ttl_open_mem(struct nfsl_ttl *t, const struct nfsl_config *cfg, struct nfsl_slot *store,
		      const struct nfsl_park_rec *log, struct nfsl_mgr_counters *cnt)
{
	int err;

	init(t);
	err = setup(t, cfg);
	if (err) {
		nfsl_ttl_close(t);
		return err;
	}
	t->store = store;
	t->log = log;
	t->cnt = cnt;
	return 0;
}

/* mmap the array map @fd whole, checking its value size; *@n entries. */
static void *map_array(int fd, __u32 value_size, int prot, size_t *len, __u32 *n, __u32 *id)
{
	struct bpf_map_info info = {};
	__u32 ilen = sizeof(info);
	void *m;

	if (bpf_obj_get_info_by_fd(fd, &info, &ilen))
		return NULL;
	if (info.value_size != value_size || !(info.map_flags & BPF_F_MMAPABLE)) {
		errno = EINVAL;
		return NULL;
	}
	*len = (size_t)info.max_entries * value_size;
	m = mmap(NULL, *len, prot, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		*len = 0;
		return NULL;
	}
	if (n)
		*n = info.max_entries;
	if (id)
		*id = info.id;
	return m;
}

int nfsl_ttl_open(struct nfsl_ttl *t, const struct nfsl_domain *d)
{
	__u32 nstore, nlog;
	int err;

	init(t);
	if (d->parklog_fd < 0)
		return -ENOENT;
	err = setup(t, &d->cfg);
	if (err)
		goto fail;
	t->store = map_array(d->store_fd, sizeof(struct nfsl_slot), PROT_READ | PROT_WRITE,
			     &t->store_len, &nstore, &t->store_id);
	if (!t->store)
		goto fail_errno;
	t->log = map_array(d->parklog_fd, sizeof(struct nfsl_park_rec), PROT_READ, &t->log_len,
			   &nlog, NULL);
	if (!t->log)
		goto fail_errno;
	if (nstore < t->slots || nlog < t->slots) {
		err = -EINVAL;
		goto fail;
	}
	if (d->mgr_fd >= 0) {
		t->cnt = map_array(d->mgr_fd, sizeof(struct nfsl_mgr_counters),
				   PROT_READ | PROT_WRITE, &t->cnt_len, NULL, NULL);
		if (!t->cnt)
			goto fail_errno;
	}
	t->possible_cpus = libbpf_num_possible_cpus();
	if (t->possible_cpus < (int)t->ncpus) {
		err = t->possible_cpus < 0 ? t->possible_cpus : -EINVAL;
		goto fail;
	}
	t->percpu = calloc(t->possible_cpus, PERCPU_ALLOC);
	if (!t->percpu) {
		err = -ENOMEM;
		goto fail;
	}
	t->config_fd = fcntl(d->config_fd, F_DUPFD_CLOEXEC, 0);
	t->cursor_fd = t->config_fd < 0 ? -1 : fcntl(d->cursor_fd, F_DUPFD_CLOEXEC, 0);
	if (t->cursor_fd < 0)
		goto fail_errno;
	return 0;
fail_errno:
	err = errno ? -errno : -EIO;
fail:
	nfsl_ttl_close(t);
	return err;
}

void nfsl_ttl_close(struct nfsl_ttl *t)
{
	if (t->store_len)
		munmap(t->store, t->store_len);
	if (t->log_len)
		munmap((void *)t->log, t->log_len);
	if (t->cnt_len)
		munmap(t->cnt, t->cnt_len);
	if (t->config_fd >= 0)
		close(t->config_fd);
	if (t->cursor_fd >= 0)
		close(t->cursor_fd);
	free(t->parts);
	free(t->heads);
	free(t->percpu);
	init(t);
}

__u64 nfsl_ttl_interval_ns(__u32 ttl_us)
{
	__u64 q = (__u64)ttl_us * 1000 / 4;

	return q > 100000 ? q : 100000;
}

/* Evict the payload of entry @e if it still sits in its slot. */
static void evict(struct nfsl_ttl *t, const struct nfsl_park_rec *e, __u64 now_ns,
		  struct nfsl_ttl_result *res)
{
	struct nfsl_ttl_evicted ev = {
		.slot = e->slot,
		.gen = e->gen,
		.parked_ns = e->parked_ns,
		.age_ns = now_ns - e->parked_ns,
	};
	struct nfsl_slot *s;

	if (e->slot >= t->slots) { /* never from our slicer */
		res->raced++;
		return;
	}
	s = &t->store[e->slot];
	/* For the report: the slicer wrote them before the entry, and if the
	 * slot moved on since, the eviction below finds it gone. */
	ev.len = *(volatile __u16 *)&s->len;
	ev.ifindex = *(volatile __u32 *)&s->ifindex;
	switch (nfsl_slot_evict(s, e->gen, e->parked_ns)) {
	case NFSL_EVICT_DONE:
		res->evicted++;
		if (t->on_evict)
			t->on_evict(t->arg, &ev);
		break;
	case NFSL_EVICT_RACED:
		res->raced++;
		break;
	default: /* spliced, dropped, expired or taken again: nothing to do */
		break;
	}
}

/*
 * Read partition @g's log from its read position up to its clock @head:
 * entry of attempt r at r % part_slots, evicting what is TTL-old, until
 * the first young entry (the log is in parking order, so the rest is
 * younger still) or @head.
 */
static void scan_part(struct nfsl_ttl *t, __u32 g, __u32 head, __u64 now_ns, __u64 ttl_ns,
		      struct nfsl_ttl_result *res)
{
	const struct nfsl_park_rec *log = t->log + (size_t)g * t->part_slots;
	struct nfsl_ttl_part *p = &t->parts[g];
	__u32 L = t->part_slots, r = p->rd;

	if (!p->started || (__s32)(head - r) < -1) {
		/* The oldest attempt the log can still hold (the clock starts
		 * at 0: the first attempt is 1); also where the clock went
		 * back (a partition's state reset: tests, benchmarks). */
		r = head >= L ? head - L + 1 : 1;
		p->started = true;
	} else if ((__s32)(head - r) >= (__s32)L) {
		/* Fell a whole log behind: those entries are overwritten. */
		res->overrun += head - L + 1 - r;
		r = head - L + 1;
	}
	while ((__s32)(head - r) >= 0) {
		struct nfsl_park_rec e;
		bool whole = nfsl_park_log_read(&log[r % L], &e);

		if (e.seq != r || !whole) {
			/* The newest attempt may still be writing its entry:
			 * look again next time. */
			if (r == head)
				break;
			if ((e.seq && (__s32)(e.seq - r) > 0) || e.seq == r)
				res->overrun++; /* a later turn's entry */
			/* else: an older turn's: attempt r parked nothing */
			r++;
			res->walked++;
			continue;
		}
		if (e.parked_ns > now_ns || now_ns - e.parked_ns < ttl_ns) {
			__u64 due = e.parked_ns + ttl_ns;

			if (!res->next_ns || due < res->next_ns)
				res->next_ns = due;
			break;
		}
		evict(t, &e, now_ns, res);
		r++;
		res->walked++;
	}
	p->rd = r;
}

static void count(struct nfsl_mgr_counters *c, const struct nfsl_ttl_result *res)
{
	if (!c)
		return;
	__atomic_fetch_add(&c->ttl_scans, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&c->evicted_ttl, res->evicted, __ATOMIC_RELAXED);
	__atomic_fetch_add(&c->ttl_walked, res->walked, __ATOMIC_RELAXED);
	__atomic_fetch_add(&c->ttl_overrun, res->overrun, __ATOMIC_RELAXED);
	__atomic_fetch_add(&c->ttl_raced, res->raced, __ATOMIC_RELAXED);
}

int nfsl_ttl_scan_heads(struct nfsl_ttl *t, const __u32 *heads, __u64 now_ns, __u32 ttl_us,
			struct nfsl_ttl_result *res)
{
	__u32 n = t->ncpus * t->nparts;

	memset(res, 0, sizeof(*res));
	if (!ttl_us)
		return -EINVAL;
	res->ttl_us = ttl_us;
	for (__u32 g = 0; g < n; g++)
		scan_part(t, g, heads[g], now_ns, (__u64)ttl_us * 1000, res);
	count(t->cnt, res);
	return 0;
}

/* Each partition's clock from the per-CPU cursors, into t->heads. */
static int read_heads(struct nfsl_ttl *t)
{
	for (__u32 dst = 0; dst < t->nparts; dst++) {
		if (bpf_map_lookup_elem(t->cursor_fd, &dst, t->percpu))
			return -errno;
		for (__u32 cpu = 0; cpu < t->ncpus; cpu++) {
			const struct nfsl_alloc *a =
				(const void *)((const char *)t->percpu + cpu * PERCPU_ALLOC);

			t->heads[cpu * t->nparts + dst] = a->seq;
		}
	}
	return 0;
}

int nfsl_ttl_scan(struct nfsl_ttl *t, __u64 now_ns, struct nfsl_ttl_result *res)
{
	__u32 ttl_us = t->ttl_us, zero = 0;
	int err;

	memset(res, 0, sizeof(*res));
	if (!ttl_us) {
		struct nfsl_config cfg;

		if (bpf_map_lookup_elem(t->config_fd, &zero, &cfg))
			return -errno;
		ttl_us = cfg.ttl_us;
	}
	if (!ttl_us)
		return 0;
	err = read_heads(t);
	return err ? err : nfsl_ttl_scan_heads(t, t->heads, now_ns, ttl_us, res);
}
