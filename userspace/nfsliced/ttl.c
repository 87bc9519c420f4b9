// SPDX-License-Identifier: GPL-2.0
/*
 * nfsliced's TTL eviction (issue 10 §2): one scanner (userspace/lib/nfsl/ttl.h) per
 * domain on the host, kept in step with the pins (a domain attached,
 * detached, or detached and attached again under its name), each scanned
 * every TTL / 4 (nfsl_ttl_interval_ns) of its current TTL; a domain whose
 * TTL is 0 is not scanned. The evictions are counted in the domain's
 * mgr_counters (nfslice stats) by the library.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>

#include "nfsliced.h"
#include "nfsl/domains.h"
#include "nfsl/ttl.h"
#include "util/util.h"

struct scanner {
	char dir[PATH_MAX];
	struct nfsl_ttl t;
	__u64 next_ns;  /* when to scan it next */
	bool seen;      /* found by the last refresh */
	bool open;      /* t is open */
};

static struct scanner *sc;
static size_t nsc;

atomic_ulong mgr_ttl_scans, mgr_ttl_evicted;

/* Store id of the domain at @dir, 0 when it cannot be read. */
static __u32 store_id(const char *dir)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);
	struct nfsl_domain d;

	if (nfsl_domain_open_dir(&d, dir))
		return 0;
	if (bpf_obj_get_info_by_fd(d.store_fd, &info, &len))
		info.id = 0;
	nfsl_domain_close(&d);
	return info.id;
}

static void close_scanner(struct scanner *s)
{
	if (s->open)
		nfsl_ttl_close(&s->t);
	s->open = false;
}

static void open_scanner(struct scanner *s)
{
	struct nfsl_domain d;
	int err = nfsl_domain_open_dir(&d, s->dir);

	if (!err) {
		err = nfsl_ttl_open(&s->t, &d);
		nfsl_domain_close(&d);
	}
	s->open = !err;
	if (err == -ENOENT)
		mgr_log(MGR_NOTICE, "%s: no park log (attached by an older nfslice): no "
			"TTL eviction until nfslice upgrade", s->dir);
	else if (err == -EPROTO)
		mgr_log(MGR_WARNING, "%s: attached by an nfslice whose maps have another layout: "
			"left alone (no TTL eviction, no metrics)", s->dir);
	else if (err)
		mgr_log(MGR_WARNING, "%s: no TTL eviction: %s", s->dir, strerror(-err));
	else
		mgr_log(MGR_INFO, "%s: TTL scanner open", s->dir);
}

void mgr_ttl_refresh(void)
{
	struct nfsl_dom_entry *v;
	size_t n;

	if (nfsl_domains_collect(&v, &n))
		return;
	for (size_t i = 0; i < nsc; i++)
		sc[i].seen = false;
	for (size_t k = 0; k < n; k++) {
		struct scanner *s = NULL;

		for (size_t i = 0; i < nsc && !s; i++)
			if (!strcmp(sc[i].dir, v[k].dir))
				s = &sc[i];
		if (!s) {
			struct scanner *grown = realloc(sc, (nsc + 1) * sizeof(*sc));

			if (!grown)
				break;
			sc = grown;
			s = &sc[nsc++];
			memset(s, 0, sizeof(*s));
			memcpy(s->dir, v[k].dir, sizeof(s->dir));
		}
		s->seen = true;
		/* Detached and attached again under the same name: a new
		 * store, and a scanner of the old one would free nothing. */
		if (s->open && s->t.store_id != store_id(s->dir))
			close_scanner(s);
		if (!s->open)
			open_scanner(s);
	}
	free(v);
	for (size_t i = 0; i < nsc;) {
		if (sc[i].seen) {
			i++;
			continue;
		}
		close_scanner(&sc[i]);
		sc[i] = sc[--nsc];
	}
}

__u64 mgr_ttl_tick(__u64 now)
{
	__u64 next = 0;

	for (size_t i = 0; i < nsc; i++) {
		struct scanner *s = &sc[i];
		struct nfsl_ttl_result r;

		if (!s->open)
			continue;
		if (now >= s->next_ns) {
			if (nfsl_ttl_scan(&s->t, now, &r)) {
				/* The pins went away under it: reopened or
				 * dropped at the next refresh. */
				close_scanner(s);
				continue;
			}
			atomic_fetch_add(&mgr_ttl_scans, 1);
			atomic_fetch_add(&mgr_ttl_evicted, r.evicted);
			if (r.evicted)
				mgr_log(MGR_DEBUG, "%s: %llu payloads older than %u us evicted",
					s->dir, (unsigned long long)r.evicted, r.ttl_us);
			/* TTL off: look again in a second (nfslice set --ttl). */
			s->next_ns = now + (r.ttl_us ? nfsl_ttl_interval_ns(r.ttl_us) :
						      1000000000ull);
		}
		if (!next || s->next_ns < next)
			next = s->next_ns;
	}
	return next;
}

void mgr_ttl_stop(void)
{
	for (size_t i = 0; i < nsc; i++)
		close_scanner(&sc[i]);
	free(sc);
	sc = NULL;
	nsc = 0;
}
