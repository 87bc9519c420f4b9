// SPDX-License-Identifier: GPL-2.0
/*
 * Copy mode of a migration (migrate.h), one path for both targets: the
 * old store and the image, the lock, the rollback; and the new instance's
 * side, the steps that differ (struct copy_transport): here (its store
 * mapped in this process) or on another host (nfslice adopt there, fed
 * through ssh; its protocol: docs/format.md).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <endian.h>
#include <jansson.h>

#include "nfsl/migrate_copy.h"
#include "nfsl/ckpt.h"
#include "nfsl/copyin.h"
#include "nfsl/errors.h"
#include "nfsl/holding.h"
#include "nfsl_store.h"
#include "util/util.h"

/*
 * After the old slicer's threshold is raised, a slicer run that read the
 * old threshold just before may still be parking a payload; the copy
 * waits this long (us) so that no slot is copied half written. One XDP
 * run takes microseconds and cannot sleep; a NAPI poll of 64 frames well
 * under 1 ms.
 */
#define COPY_GRACE_US 1000

/*
 * Give the image's memfd its pages before the old slicer stops: room for
 * the payloads parked now and a quarter more (whole slots: the largest
 * records), the generations and the clocks. tmpfs allocates and zeroes a
 * page on first write; at 64k payloads that was 250 of the ~300 ms the
 * image took (FALLOC_FL_KEEP_SIZE: the file stays empty). Best effort:
 * without it the image only takes longer.
 */
static void prealloc(int memfd, const struct nfsl_ckpt_dstore *ods)
{
	const struct nfsl_config *c = ods->st.cfg;
	__u64 busy = 0, len;

	for (__u32 i = 0; i < c->slots; i++)
		busy += NFSL_CTL_EXP(__atomic_load_n(&ods->st.slots[i].ctl, __ATOMIC_RELAXED)) != 0;
	len = sizeof(struct nfsl_ckpt_hdr) + (__u64)c->slots * 4 + 4096 +
	      (busy + busy / 4 + 64) * (sizeof(struct nfsl_ckpt_rec) + NFSL_PAYLOAD_MAX);
	fallocate(memfd, FALLOC_FL_KEEP_SIZE, 0, len);
}

/* Undo a copy that did not complete: the old instance slices again, the
 * new one goes (it sliced nothing). */
static void copy_rollback(struct nfsl_migration *m, int *lock, const char *why)
{
	int bad = nfsl_mig_threshold(m->d.dir, lock, m->d.cfg.threshold);

	nfsl_mig_unlock(lock); /* the detach takes it */
	bad |= nfsl_mig_run_at_target(m, (char *const[]){ "detach", "--name", (char *)m->r->name,
							   NULL });
	nfsl_err("%s; %s", why,
		 bad ? "rolling back failed too (above): check both instances" :
		       "rolled back: the old instance slices again, the new one is detached");
}

/*
 * One copy-mode migration, whichever the target: the old store and the
 * image, the lock, the result; and the new instance's side, here (its
 * store mapped in this process) or on another host (nfslice adopt there,
 * fed through ssh).
 */
struct copy_run {
	struct nfsl_migration *m;
	const char *at; /* "in" a namespace, "on" a host: for messages */
	struct nfsl_ckpt_dstore ods;
	const void *buf; /* the image */
	size_t size;
	int memfd, lock;
	struct nfsl_migrate_result *r;
	/* the new instance here */
	struct nfsl_domain nd;
	struct nfsl_ckpt_dstore nds;
	struct nfsl_ckpt_ref *refs;
	/* the new instance on a host: adopt's pipes */
	pid_t pid;
	int to;
	FILE *in;
	json_t *started;
	void (*old_pipe)(int);
};

/* Where the new instance is: the steps that differ. Each returns 0 or -1
 * (printed; after the old slicer stopped, rolled back). */
struct copy_transport {
	/* The new instance ready for the image: its store holds every old index. */
	int (*open)(struct copy_run *c);
	/* nfsl_ckpt_write's flags: in memory here no CRC; to a host one (it
	 * crosses a network). */
	unsigned int ckpt_flags;
	/* Release the lock once the old slicer stopped: a host's import
	 * takes that host's lock (drain_switch, migrate.c). */
	bool unlock_early;
	/* The image imported, the new instance slicing with both keys
	 * (r->t_imported, r->t_start set), the lock still held when it was. */
	int (*import)(struct copy_run *c);
	/* After the old instance's detach: the imported copies followed to
	 * their end (r->f, r->t_end). */
	int (*follow)(struct copy_run *c);
	/* Release what open took; may turn *@rc into a failure. */
	void (*close)(struct copy_run *c, int *rc);
};

/* Here: the new store mapped beside the old one before the old slicer
 * stops (mapping 128 MiB takes milliseconds, which the unsliced window
 * need not hold). */
static int here_open(struct copy_run *c)
{
	const struct nfsl_migration *m = c->m;
	char err[1024] = "";

	if (nfsl_domain_open_dir(&c->nd, m->new_dir) || c->nd.cfg.slots < m->d.cfg.slots)
		return nfsl_err("the new instance's store (%u slots) cannot hold the old one's "
				"indexes (%u): detach it in %s", c->nd.cfg.slots, m->d.cfg.slots,
				m->r->to);
	if (nfsl_ckpt_dstore_open(&c->nds, &c->nd, err, sizeof(err)))
		return nfsl_err("%s; detach the new instance in %s", err, m->r->to);
	return 0;
}

/* 4. Imported into the new store (NFSL_CKPT_LIVE: it keeps its key); the
 * old key as its key_old, not yet honoured; 5. the new instance slices and
 * honours both keys. */
static int here_import(struct copy_run *c)
{
	struct nfsl_migration *m = c->m;
	struct nfsl_key_old_change kc = { .set = true };
	struct nfsl_ckpt_clock now;
	struct nfsl_ckpt_img img;
	char err[1024] = "";

	if (nfsl_ckpt_parse(c->buf, c->size, NFSL_CKPT_TRUSTED, &img, err, sizeof(err))) {
		copy_rollback(m, &c->lock, err);
		return -1;
	}
	c->refs = calloc(img.nrecs + 1, sizeof(*c->refs));
	if (!c->refs || nfsl_ckpt_dstore_clocks(&c->nds) || nfsl_ckpt_clock_now(&now)) {
		copy_rollback(m, &c->lock, "cannot read the new instance's cursors or the clock");
		return -1;
	}
	nfsl_ckpt_import(&img, &c->nds.st, &now, NFSL_CKPT_LIVE, c->refs, &c->r->imp);
	memcpy(kc.key, img.cfg.key, sizeof(kc.key));
	if (nfsl_mig_key_old(m->new_dir, &c->lock, &kc)) {
		copy_rollback(m, &c->lock, "writing the old key into the new instance failed");
		return -1;
	}
	c->r->t_imported = nfsl_now_ns();
	if (nfsl_mig_key_old(m->new_dir, &c->lock, &(struct nfsl_key_old_change){
			.start = true, .threshold = m->d.cfg.threshold })) {
		copy_rollback(m, &c->lock, "starting the new instance failed");
		return -1;
	}
	c->r->t_start = nfsl_now_ns();
	return 0;
}

/* 7. Until no imported payload is left (or the wait ends), then the old
 * key is forgotten: cleared first, wiped once nothing reads it. */
static int here_follow(struct copy_run *c)
{
	const struct nfsl_migration *m = c->m;

	nfsl_follow_imports(c->nds.st.slots, c->ods.st.slots, c->refs, c->r->imp.restored,
			    c->r->t_start, m->wait_ms, (__u64)m->d.cfg.ttl_us * 1000, &c->r->f);
	if (nfsl_mig_key_old(m->new_dir, NULL, &(struct nfsl_key_old_change){ .clear = true }) ||
	    nfsl_mig_key_old(m->new_dir, NULL, &(struct nfsl_key_old_change){ .wipe = true }))
		return nfsl_err("clearing the old key failed: the new instance still honours it "
				"(harmless; detach and attach to drop it)");
	c->r->t_end = nfsl_now_ns();
	return 0;
}

static void here_close(struct copy_run *c, int *rc)
{
	free(c->refs);
	nfsl_ckpt_dstore_close(&c->nds);
	if (c->nd.store_fd >= 0)
		nfsl_domain_close(&c->nd);
}

static const struct copy_transport copy_here = {
	.open = here_open,
	.ckpt_flags = NFSL_CKPT_NOCRC,
	.import = here_import,
	.follow = here_follow,
	.close = here_close,
};

/* The next protocol line of nfslice adopt (loader/adopt.c) from @in: the
 * object when it is {"@event":true,...}, else NULL (the stream ended:
 * adopt printed why on its standard error). */
static json_t *adopt_line(FILE *in, const char *event)
{
	char *buf = NULL;
	size_t cap = 0;
	json_t *j = NULL;

	if (getline(&buf, &cap, in) > 0)
		j = json_loads(buf, 0, NULL);
	if (j && json_is_true(json_object_get(j, event))) {
		free(buf);
		return j;
	}
	if (j || (buf && *buf)) /* a line, but not the one due */
		nfsl_err("nfslice adopt said '%.*s', not \"%s\"", (int)strcspn(buf, "\n"), buf,
			 event);
	free(buf);
	json_decref(j);
	return NULL;
}

static __u32 jnum(const json_t *j, const char *key)
{
	return (__u32)json_integer_value(json_object_get(j, key));
}

static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/*
 * After the old instance's detach: tell adopt (@fd) which imported payloads
 * the old splicer spliced after the image (its slot in @olds no longer
 * holds that generation), as (index, generation) pairs of little-endian
 * __u32. Returns how many.
 */
static __u32 send_stale(int fd, const void *buf, size_t size, struct nfsl_slot *olds)
{
	struct nfsl_ckpt_item it;
	struct nfsl_ckpt_img img;
	const char *pos;
	char err[256];
	__u32 n = 0;

	if (nfsl_ckpt_parse(buf, size, NFSL_CKPT_TRUSTED, &img, err, sizeof(err)))
		return 0;
	pos = img.recs;
	for (__u32 i = 0; i < img.nrecs; i++) {
		__u32 gen, pair[2];

		nfsl_ckpt_next(&img, &pos, &it);
		gen = NFSL_CTL_GEN(it.rec.ctl);
		if (nfsl_slot_busy(&olds[it.rec.index], gen))
			continue;
		pair[0] = htole32(it.rec.index);
		pair[1] = htole32(gen);
		if (write_all(fd, (const char *)pair, sizeof(pair)))
			break;
		n++;
	}
	return n;
}

/* To a host: nfslice adopt there, started before the old slicer stops
 * (ssh and mapping the store take long), ready once its store is. */
static int host_open(struct copy_run *c)
{
	const struct nfsl_migration *m = c->m;
	char thr[16], wait[16];
	json_t *ready;
	int from = -1, rc = 0;

	c->old_pipe = signal(SIGPIPE, SIG_IGN); /* a dead ssh: EPIPE, not death */
	snprintf(thr, sizeof(thr), "%u", m->d.cfg.threshold);
	snprintf(wait, sizeof(wait), "%u", m->wait_ms);
	c->pid = nfsl_remote_spawn(&m->rem, (char *const[]){ "adopt", "--name", (char *)m->r->name,
							     "--threshold", thr, "--wait", wait,
							     NULL },
				   &c->to, &from);
	if (c->pid < 0 || !(c->in = fdopen(from, "r"))) {
		if (from >= 0)
			close(from);
		return nfsl_err("cannot start nfslice adopt on %s; detach the new instance there",
				m->r->to);
	}
	ready = adopt_line(c->in, "ready");
	if (!ready || jnum(ready, "slots") < m->d.cfg.slots)
		rc = nfsl_err("the new instance on %s is not ready (%s); detach it there", m->r->to,
			      ready ? "its store has fewer slots than the old one's indexes" :
				      "adopt ended, above");
	json_decref(ready);
	return rc;
}

/* The image (with its CRC) through ssh; adopt imports it and starts. */
static int host_import(struct copy_run *c)
{
	__u64 len = htole64(c->size);

	if (write_all(c->to, (const char *)&len, sizeof(len)) ||
	    write_all(c->to, c->buf, c->size)) {
		copy_rollback(c->m, &c->lock, "sending the image failed");
		return -1;
	}
	c->started = adopt_line(c->in, "started");
	if (!c->started) {
		copy_rollback(c->m, &c->lock, "the new instance did not start (its error above)");
		return -1;
	}
	c->r->t_start = c->r->t_imported = nfsl_now_ns();
	c->r->imp.restored = jnum(c->started, "imported");
	c->r->imp.conflicts = jnum(c->started, "conflicts");
	c->r->imp.raised = jnum(c->started, "raised");
	return 0;
}

/* The old splicer is gone: the copies it made stale are final; adopt frees
 * them at once (send_stale), as here_follow does, and reports the end. */
static int host_follow(struct copy_run *c)
{
	json_t *done;

	c->r->f.stale = send_stale(c->to, c->buf, c->size, c->ods.st.slots);
	close(c->to);
	c->to = -1;
	done = adopt_line(c->in, "done");
	c->r->t_end = nfsl_now_ns();
	if (!done)
		return nfsl_err("the new instance on %s slices, but did not report its copies' "
				"end (above)", c->m->r->to);
	c->r->f.spliced = jnum(done, "spliced_new");
	c->r->f.stale = jnum(done, "stale_copies");
	c->r->f.expired = jnum(done, "expired");
	c->r->f.left = jnum(done, "busy_left");
	json_decref(done);
	return 0;
}

static void host_close(struct copy_run *c, int *rc)
{
	if (c->to >= 0)
		close(c->to);
	if (c->in)
		fclose(c->in);
	if (c->pid > 0 && nfsl_remote_wait(c->pid) && !*rc)
		*rc = nfsl_err("nfslice adopt on %s failed at its end (above)", c->m->r->to);
	json_decref(c->started);
	signal(SIGPIPE, c->old_pipe); /* host_open ran: it set it */
}

static const struct copy_transport copy_to_host = {
	.open = host_open,
	.unlock_early = true,
	.import = host_import,
	.follow = host_follow,
	.close = host_close,
};

/* The old store mapped and the image's memfd given its pages, before the
 * old slicer stops. */
static int copy_open_old(struct copy_run *c)
{
	char err[1024] = "";

	if (nfsl_ckpt_dstore_open(&c->ods, &c->m->d, err, sizeof(err)) ||
	    (c->memfd = memfd_create("nfslice-migrate", MFD_CLOEXEC)) < 0)
		return nfsl_err("%s; detach the new instance %s %s",
				c->memfd < 0 && !*err ? strerror(errno) : err, c->at, c->m->r->to);
	prealloc(c->memfd, &c->ods);
	return 0;
}

/* 2. The old slicer stops; what it was parking settles. Here the lock is
 * held from then until the new instance slices: no other session's
 * command waits inside the unsliced window. 3. The busy slots, every
 * generation, the clocks, the key: an image in memory. */
static int copy_take_image(struct copy_run *c, const struct copy_transport *tp)
{
	struct nfsl_migration *m = c->m;
	char err[1024] = "";

	c->lock = nfsl_mig_lock(&c->r->lock_ns);
	if (c->lock < 0)
		return -1;
	c->r->t_stop = nfsl_now_ns();
	if (nfsl_mig_threshold(m->d.dir, &c->lock, NFSL_HOLD_THRESHOLD))
		return nfsl_err("stopping the old instance failed; both attached, the old one "
				"slicing: detach the new one %s %s", c->at, m->r->to);
	if (tp->unlock_early)
		nfsl_mig_unlock(&c->lock);
	usleep(COPY_GRACE_US);
	if (nfsl_ckpt_dstore_clocks(&c->ods) ||
	    nfsl_ckpt_write(&c->ods.st, c->memfd, tp->ckpt_flags, &c->r->saved, err, sizeof(err)) ||
	    nfsl_ckpt_map(c->memfd, "the image", &c->buf, &c->size, err, sizeof(err))) {
		copy_rollback(m, &c->lock, *err ? err : "cannot read the old instance's cursors");
		return -1;
	}
	c->r->t_saved = nfsl_now_ns();
	return 0;
}

/* Copy mode, one path for both targets (the steps that differ in @tp):
 * the new instance attached holding and ready, the old slicer stopped,
 * the image taken and imported, the new instance slicing with both keys,
 * 6. the old node leaving the return path at once (its store stays mapped
 * here: it tells which copies the old splicer made stale), the copies
 * followed to their end. */
int nfsl_mig_copy(struct nfsl_migration *m, struct nfsl_migrate_result *res)
{
	const struct copy_transport *tp = m->remote ? &copy_to_host : &copy_here;
	struct copy_run c = {
		.m = m, .at = m->remote ? "on" : "in", .ods = { .tcursor_fd = -1 },
		.memfd = -1, .lock = -1, .r = res,
		.nd = { .store_fd = -1 }, .nds = { .tcursor_fd = -1 }, .pid = -1, .to = -1,
	};
	int rc = -1, detach_rc;

	if (nfsl_mig_attach_new(m))
		return -1;
	if (tp->open(&c) || copy_open_old(&c) || copy_take_image(&c, tp) || tp->import(&c))
		goto out;
	nfsl_mig_unlock(&c.lock);
	nfsl_mig_started_new(m);
	detach_rc = nfsl_mig_detach_old(m, true);
	if (detach_rc)
		nfsl_err("detaching the old instance failed (above): it slices nothing, its "
			 "splicer may still splice; detach it by hand");
	res->t_detached = nfsl_now_ns();
	if (tp->follow(&c))
		goto out;
	res->done = true;
	rc = detach_rc ? -1 : 0;
out:
	nfsl_mig_unlock(&c.lock);
	tp->close(&c, &rc);
	nfsl_ckpt_unmap(c.buf, c.size);
	if (c.memfd >= 0)
		close(c.memfd);
	nfsl_ckpt_dstore_close(&c.ods);
	return rc;
}
