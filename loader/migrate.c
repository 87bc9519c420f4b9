// SPDX-License-Identifier: GPL-2.0
/*
 * nfslice migrate: move a domain to another instance on the same path, in
 * another network namespace, while traffic flows (issue 10 §7; UNO §3.3.2:
 * start the new instance, move the state, switch, let the old one go).
 *
 * Drain mode: nothing is copied or buffered. The new instance gets its own
 * key, so each instance's tokens pass the other's slicer and splicer
 * untouched (bad_token: not ours); the new one is attached holding (a
 * threshold no frame reaches), the old one stops slicing, the new one
 * starts, and the old splicer stays until its parked payloads are spliced
 * (busy slots at zero) or the wait ends (--wait, default the TTL, else
 * 1 s), then the old domain is detached. The two instances never both
 * slice a packet: a header sliced by one arrives at the other with DSCP
 * 63, which it does not slice again.
 *
 * Copy mode, for an old node that leaves the return path at once: the new
 * instance is attached holding, the old slicer stops, the old store's
 * busy slots (index, generation, payload, metadata, parked time with a
 * clock reference) and every slot's generation are copied into the new
 * store through a checkpoint image in memory (userspace/lib/nfsl/ckpt.h), the old
 * key becomes the new instance's key_old, the new one starts slicing and
 * honours both keys (NFSL_CFG_KEY_OLD), the old domain is detached without
 * a drain. The old headers still in flight then splice on the new
 * instance from the copies. A copy whose header the old splicer spliced
 * after the copy is freed as soon as the old store shows it released; one
 * whose header never comes is freed at its TTL (or when --wait ends).
 * Once no copy is left, the flag is cleared and key_old wiped.
 *
 * The steps run as this program's own commands (attach, set, detach) in the
 * right namespace, each a child that enters it first; the copy and the
 * configuration writes are library calls on both domains' pins. To
 * another host (--to ssh://HOST, remote.h) every step there is a command
 * run through ssh, the copy-mode import included (nfslice adopt, fed the
 * image on its standard input).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <endian.h>
#include <bpf/libbpf.h>
#include <jansson.h>

#include "nfslice.h"
#include "nfsl/cfg.h"
#include "nfsl/ckpt.h"
#include "nfsl/copyin.h"
#include "nfsl_store.h"
#include "nfsl/domains.h"
#include "nfsl/holding.h"
#include "util/json_writer.h"
#include "nfsl/netns.h"
#include "nfsl/remote.h"
#include "nfsl/retired.h"
#include "util/util.h"

enum { MODE_DRAIN, MODE_COPY };
static const char *const migrate_modes[] = { "drain", "copy", NULL };

struct migrate_opts {
	char *name;
	char *to;       /* target namespace: a name under /run/netns, or a path */
	char *nf_ports; /* in the target */
	__u32 wait_ms;
	int mode;       /* MODE_* */
	bool json, has_wait;
};

#define HOLD_THRESHOLD NFSL_HOLD_THRESHOLD /* attached, not slicing (holding.h) */

/*
 * Copy mode: after the old slicer's threshold is raised, a slicer run that
 * read the old threshold just before may still be parking a payload; the
 * copy waits this long (us) so that no slot is copied half written. One
 * XDP run takes microseconds and cannot sleep; a NAPI poll of 64 frames
 * well under 1 ms.
 */
#define COPY_GRACE_US 1000

static const struct migrate_opts migrate_defaults = {
	.name = "default",
	.mode = MODE_DRAIN,
};

/* Run "nfslice ARGS..." (argv[0] is the subcommand) in the namespace @ns
 * (NULL: ours), its standard output discarded (its errors go to our
 * stderr). Returns its exit status, or -1 when it could not run. */
static int run_in_netns(const char *ns, char *const argv[])
{
	char *args[32] = { "nfslice" };
	int st, n = 1;
	pid_t pid;

	for (; argv[n - 1] && n < 31; n++)
		args[n] = argv[n - 1];
	args[n] = NULL;
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		if (ns) {
			int fd = open(ns, O_RDONLY | O_CLOEXEC);

			if (fd < 0 || setns(fd, CLONE_NEWNET)) {
				fprintf(stderr, "nfslice: cannot enter %s: %s\n", ns, strerror(errno));
				_exit(1);
			}
		}
		int null = open("/dev/null", O_WRONLY | O_CLOEXEC);

		if (null >= 0)
			dup2(null, STDOUT_FILENO);
		execv("/proc/self/exe", args);
		_exit(127);
	}
	if (waitpid(pid, &st, 0) < 0)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Take the host-wide lock for the switch; the ns waited into *@wait_ns. */
static int switch_lock(__u64 *wait_ns)
{
	__u64 t0 = nfsl_now_ns();
	int lock = nfsl_domains_lock();

	*wait_ns = nfsl_now_ns() - t0;
	if (lock < 0)
		nfsl_err("cannot lock %s: %s", NFSL_LOCK_FILE, nfsl_lock_strerror(lock));
	return lock;
}

static void switch_unlock(int *lock)
{
	if (*lock >= 0)
		close(*lock);
	*lock = -1;
}

/* Pin directory of domain @name in the namespace @ns opens. */
static int target_dir(const char *ns, const char *name, char *dir, size_t len)
{
	__u64 cookie;
	int back, rc = nfsl_netns_enter(ns, &back);

	if (rc)
		return rc;
	rc = nfsl_netns_cookie(&cookie);
	nfsl_netns_return(back);
	return rc ? rc : nfsl_domain_dir_of(dir, len, cookie, name);
}

/* What the steps share: the old domain, the target, the attach command. */
struct migration {
	const struct migrate_opts *o;
	struct nfsl_domain d; /* the old instance */
	char ns[PATH_MAX], new_dir[PATH_MAX]; /* the target namespace, the new pins */
	bool remote;                        /* the target is another host: */
	struct nfsl_remote rem;             /* every step there a command */
	char *attach_argv[32]; /* nfslice attach ARGS for the new instance */
	__u32 wait_ms;
	__u64 t0;
};

/* Run "nfslice ARGV..." where the new instance is: its namespace here, or
 * its host. Returns the exit status, -1 when it could not run. */
static int run_at_target(const struct migration *m, char *const argv[])
{
	return m->remote ? nfsl_remote_run(&m->rem, argv) : run_in_netns(m->ns, argv);
}

/* The new instance's threshold: a map write here, a command on a host. */
static int set_target_threshold(const struct migration *m, const int *lock, __u32 threshold)
{
	char t[16];

	if (!m->remote)
		return nfsl_mig_threshold(m->new_dir, lock, threshold);
	snprintf(t, sizeof(t), "%u", threshold);
	if (run_at_target(m, (char *const[]){ "set", "--name", m->o->name, "--threshold", t,
					      NULL }))
		return nfsl_err("setting the threshold on %s failed (above)", m->o->to);
	return 0;
}

/*
 * Test hook (tests/integration/test_migrate.py, docs/cli.md "Killed
 * migrations"): NFSLICE_TEST_HOOK=kill-holding or stop-holding makes this
 * process raise SIGKILL or SIGSTOP on itself once the new instance is
 * attached holding and tagged, the point a kill used to leave it behind.
 */
static void test_hook(const char *point)
{
	const char *h = getenv("NFSLICE_TEST_HOOK");
	char want[32];

	if (!h)
		return;
	snprintf(want, sizeof(want), "kill-%s", point);
	if (!strcmp(h, want))
		raise(SIGKILL);
	snprintf(want, sizeof(want), "stop-%s", point);
	if (!strcmp(h, want))
		raise(SIGSTOP);
}

/* 1. The new instance, attached but holding: its own key, the old TTL.
 * Here it is tagged as ours at once (holding.h), so that a kill from now
 * until it slices leaves an instance `nfslice list` names and `nfslice gc`
 * removes. */
static int attach_new(struct migration *m)
{
	__u64 cookie = 0;
	char ttl[16];
	int err;

	snprintf(ttl, sizeof(ttl), "%u", m->d.cfg.ttl_us / 1000);
	if (run_at_target(m, m->attach_argv)) {
		nfsl_err("attaching the new instance in %s failed (above); nothing changed",
			 m->o->to);
		return -1;
	}
	if (!m->remote) {
		err = target_dir(m->ns, m->o->name, m->new_dir, sizeof(m->new_dir));
		if (!err) {
			nfsl_netns_cookie(&cookie);
			err = nfsl_holding_mark(m->new_dir, cookie);
		}
		if (err) {
			nfsl_err("cannot find or tag the new instance's pins: %s; detach it in %s",
				 strerror(-err), m->o->to);
			return -1;
		}
		test_hook("holding");
	}
	if (run_at_target(m, (char *const[]){ "set", "--name", m->o->name, "--ttl", ttl, NULL })) {
		nfsl_err("setting the new instance's TTL failed; detach it in %s", m->o->to);
		return -1;
	}
	return 0;
}

/* The new instance slices: no longer holding. */
static void started_new(const struct migration *m)
{
	int err = m->remote ? 0 : nfsl_holding_clear(m->new_dir);

	if (err)
		nfsl_err("the new instance slices, but its holding tag stays (%s): nfslice "
			 "gc would detach it once this process ends; remove %s/%s", strerror(-err),
			 m->new_dir, NFSL_PIN_HOLDING);
}

/* What a drain-mode migration reports. */
struct drain_report {
	__u32 busy0, busy; /* busy slots at the switch, after the drain */
	__u64 waited_ms, lock_ns, t_stop, t_start, t_drained, t_end;
};

static void report_drain(const struct migration *m, const struct drain_report *r)
{
	const struct migrate_opts *o = m->o;
	struct json_writer jw;

	if (!o->json) {
		printf("nfslice: domain '%s' moved to %s: unsliced for %.3f ms, %u payloads "
		       "parked at the switch, %u left after %llu ms of drain%s, %.1f ms in all\n",
		       o->name, o->to, (r->t_start - r->t_stop) / 1e6, r->busy0, r->busy,
		       (unsigned long long)r->waited_ms,
		       r->busy ? " (dropped with the old store)" : "", (r->t_end - m->t0) / 1e6);
		return;
	}
	jsonw_init(&jw, stdout);
	jsonw_start_object(&jw);
	jsonw_string_field(&jw, "name", o->name);
	jsonw_string_field(&jw, "to", o->to);
	jsonw_string_field(&jw, "mode", "drain");
	jsonw_uint_field(&jw, "unsliced_ns", r->t_start - r->t_stop);
	jsonw_uint_field(&jw, "busy_at_switch", r->busy0);
	jsonw_uint_field(&jw, "busy_left", r->busy);
	jsonw_uint_field(&jw, "total_ns", r->t_end - m->t0);
	/* The phases: new instance attached (and the lock waited for),
	 * drained, old one detached. */
	jsonw_uint_field(&jw, "lock_wait_ns", r->lock_ns);
	jsonw_uint_field(&jw, "attach_ns", r->t_stop - m->t0);
	jsonw_uint_field(&jw, "drain_ns", r->t_drained - r->t_start);
	jsonw_uint_field(&jw, "detach_ns", r->t_end - r->t_drained);
	jsonw_end_object(&jw);
}

static int run_drain(struct migration *m)
{
	const struct migrate_opts *o = m->o;
	struct nfsl_domain *d = &m->d;
	__u64 t_stop, t_start, t_drained, waited = 0, lock_ns;
	__u32 busy = 0, busy0 = 0;
	int lock;

	if (attach_new(m))
		return -1;
	/* 2. The old one stops slicing; 3. the new one starts: both under one
	 * hold of the lock. */
	lock = switch_lock(&lock_ns);
	if (lock < 0)
		return -1;
	t_stop = nfsl_now_ns();
	if (nfsl_mig_threshold(d->dir, &lock, HOLD_THRESHOLD)) {
		switch_unlock(&lock);
		nfsl_err("stopping the old instance failed; both attached, the old one slicing: "
			 "detach the new one in %s", o->to);
		return -1;
	}
	/* Another host's write takes that host's lock; ours, held across the
	 * command, would only make this host's sessions wait out an ssh round
	 * trip (and, were both the same host, wait forever). */
	if (m->remote)
		switch_unlock(&lock);
	if (set_target_threshold(m, &lock, d->cfg.threshold)) {
		switch_unlock(&lock);
		nfsl_err("starting the new instance failed: the old one splices what it parked "
			 "and slices nothing; set its threshold back (nfslice set --threshold %u)",
			 d->cfg.threshold);
		return -1;
	}
	t_start = nfsl_now_ns();
	switch_unlock(&lock);
	started_new(m);
	nfsl_domain_busy_slots(d, &busy0);
	/* 4. The old splicer drains what the old slicer parked. */
	for (;;) {
		if (nfsl_domain_busy_slots(d, &busy) || !busy)
			break;
		waited = (nfsl_now_ns() - t_start) / 1000000;
		if (waited >= m->wait_ms)
			break;
		usleep(1000);
	}
	t_drained = nfsl_now_ns();
	/* 5. A header of the old instance released after this point finds
	 * no splicer that knows its key but the new one: it must drop it as
	 * stale, not pass it on truncated (issue 17 §1.2). Done before the
	 * detach: what the old store still holds now is dropped with it. */
	if (!m->remote && nfsl_retire_key(m->new_dir, d->cfg.key, nfsl_retire_grace_ms(&d->cfg)))
		nfsl_warn("nfslice: warning: ",
			  "the new instance could not take the old key as retired: a header "
			  "the old instance sliced that an NF releases from now on leaves "
			  "truncated; give migrate a --wait as long as the NFs hold headers");
	nfsl_domain_close(d);
	if (run_in_netns(NULL, (char *const[]){ "detach", "--name", o->name, NULL })) {
		nfsl_err("detaching the old instance failed (above): it slices nothing; "
			 "detach it by hand");
		return -1;
	}
	report_drain(m, &(struct drain_report){
				.busy0 = busy0, .busy = busy, .waited_ms = waited, .lock_ns = lock_ns,
				.t_stop = t_stop, .t_start = t_start, .t_drained = t_drained,
				.t_end = nfsl_now_ns() });
	return 0;
}

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
static void copy_rollback(struct migration *m, int *lock, const char *why)
{
	int bad = nfsl_mig_threshold(m->d.dir, lock, m->d.cfg.threshold);

	switch_unlock(lock); /* the detach takes it */
	bad |= run_at_target(m, (char *const[]){ "detach", "--name", m->o->name, NULL });
	nfsl_err("%s; %s", why,
		 bad ? "rolling back failed too (above): check both instances" :
		       "rolled back: the old instance slices again, the new one is detached");
}

/* What a copy-mode migration reports (both targets). */
struct copy_report {
	struct nfsl_ckpt_result saved, imp;
	struct nfsl_follow f;
	__u64 lock_ns, t0, t_stop, t_saved, t_imported, t_start, t_detached, t_end;
};

static void report_copy(const struct migrate_opts *o, const struct copy_report *r)
{
	const struct nfsl_follow *f = &r->f;
	struct json_writer jw;

	if (!o->json) {
		printf("nfslice: domain '%s' copied to %s: unsliced for %.3f ms, %u payloads "
		       "copied (%llu bytes), %u imported; of those %u spliced there, %u "
		       "spliced by the old instance after the copy (freed), %u freed at the "
		       "TTL, %u left at the end of the wait (freed); the old key honoured for "
		       "%.1f ms; %.1f ms in all\n",
		       o->name, o->to, (r->t_start - r->t_stop) / 1e6, r->saved.saved,
		       (unsigned long long)r->saved.bytes, r->imp.restored, f->spliced, f->stale,
		       f->expired, f->left + f->raced, (r->t_end - r->t_start) / 1e6,
		       (r->t_end - r->t0) / 1e6);
		return;
	}
	jsonw_init(&jw, stdout);
	jsonw_start_object(&jw);
	jsonw_string_field(&jw, "name", o->name);
	jsonw_string_field(&jw, "to", o->to);
	jsonw_string_field(&jw, "mode", "copy");
	jsonw_uint_field(&jw, "unsliced_ns", r->t_start - r->t_stop);
	jsonw_uint_field(&jw, "busy_at_switch", r->saved.saved);
	jsonw_uint_field(&jw, "skipped", r->saved.skipped);
	jsonw_uint_field(&jw, "bytes", r->saved.bytes);
	jsonw_uint_field(&jw, "imported", r->imp.restored);
	jsonw_uint_field(&jw, "conflicts", r->imp.conflicts);
	jsonw_uint_field(&jw, "raised", r->imp.raised);
	jsonw_uint_field(&jw, "spliced_new", f->spliced);
	jsonw_uint_field(&jw, "stale_copies", f->stale);
	jsonw_uint_field(&jw, "expired", f->expired);
	jsonw_uint_field(&jw, "busy_left", f->left + f->raced);
	jsonw_uint_field(&jw, "total_ns", r->t_end - r->t0);
	/* The phases: new instance attached (and the lock waited for); old
	 * stopped .. image taken; imported (to a host: sent and imported);
	 * old detached; the old key honoured. */
	jsonw_uint_field(&jw, "lock_wait_ns", r->lock_ns);
	jsonw_uint_field(&jw, "attach_ns", r->t_stop - r->t0);
	jsonw_uint_field(&jw, "export_ns", r->t_saved - r->t_stop);
	jsonw_uint_field(&jw, "import_ns", r->t_imported - r->t_saved);
	jsonw_uint_field(&jw, "detach_ns", r->t_detached - r->t_start);
	jsonw_uint_field(&jw, "key_old_ns", r->t_end - r->t_start);
	jsonw_end_object(&jw);
}

/*
 * One copy-mode migration, whichever the target: the old store and the
 * image, the lock, the report; and the new instance's side, here (its
 * store mapped in this process) or on another host (nfslice adopt there,
 * fed through ssh).
 */
struct copy_run {
	struct migration *m;
	const char *at; /* "in" a namespace, "on" a host: for messages */
	struct nfsl_ckpt_dstore ods;
	const void *buf; /* the image */
	size_t size;
	int memfd, lock;
	struct copy_report r;
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
	 * takes that host's lock (run_drain). */
	bool unlock_early;
	/* The image imported, the new instance slicing with both keys
	 * (r.t_imported, r.t_start set), the lock still held when it was. */
	int (*import)(struct copy_run *c);
	/* After the old instance's detach: the imported copies followed to
	 * their end (r.f, r.t_end). */
	int (*follow)(struct copy_run *c);
	/* Release what open took; may turn *@rc into a failure. */
	void (*close)(struct copy_run *c, int *rc);
};

/* Here: the new store mapped beside the old one before the old slicer
 * stops (mapping 128 MiB takes milliseconds, which the unsliced window
 * need not hold). */
static int here_open(struct copy_run *c)
{
	const struct migration *m = c->m;
	char err[1024] = "";

	if (nfsl_domain_open_dir(&c->nd, m->new_dir) || c->nd.cfg.slots < m->d.cfg.slots)
		return nfsl_err("the new instance's store (%u slots) cannot hold the old one's "
				"indexes (%u): detach it in %s", c->nd.cfg.slots, m->d.cfg.slots,
				m->o->to);
	if (nfsl_ckpt_dstore_open(&c->nds, &c->nd, err, sizeof(err)))
		return nfsl_err("%s; detach the new instance in %s", err, m->o->to);
	return 0;
}

/* 4. Imported into the new store (NFSL_CKPT_LIVE: it keeps its key); the
 * old key as its key_old, not yet honoured; 5. the new instance slices and
 * honours both keys. */
static int here_import(struct copy_run *c)
{
	struct migration *m = c->m;
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
	nfsl_ckpt_import(&img, &c->nds.st, &now, NFSL_CKPT_LIVE, c->refs, &c->r.imp);
	memcpy(kc.key, img.cfg.key, sizeof(kc.key));
	if (nfsl_mig_key_old(m->new_dir, &c->lock, &kc)) {
		copy_rollback(m, &c->lock, "writing the old key into the new instance failed");
		return -1;
	}
	c->r.t_imported = nfsl_now_ns();
	if (nfsl_mig_key_old(m->new_dir, &c->lock, &(struct nfsl_key_old_change){
			.start = true, .threshold = m->d.cfg.threshold })) {
		copy_rollback(m, &c->lock, "starting the new instance failed");
		return -1;
	}
	c->r.t_start = nfsl_now_ns();
	return 0;
}

/* 7. Until no imported payload is left (or the wait ends), then the old
 * key is forgotten: cleared first, wiped once nothing reads it. */
static int here_follow(struct copy_run *c)
{
	const struct migration *m = c->m;

	nfsl_follow_imports(c->nds.st.slots, c->ods.st.slots, c->refs, c->r.imp.restored,
			    c->r.t_start, m->wait_ms, (__u64)m->d.cfg.ttl_us * 1000, &c->r.f);
	if (nfsl_mig_key_old(m->new_dir, NULL, &(struct nfsl_key_old_change){ .clear = true }) ||
	    nfsl_mig_key_old(m->new_dir, NULL, &(struct nfsl_key_old_change){ .wipe = true }))
		return nfsl_err("clearing the old key failed: the new instance still honours it "
				"(harmless; detach and attach to drop it)");
	c->r.t_end = nfsl_now_ns();
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
	const struct migration *m = c->m;
	char thr[16], wait[16];
	json_t *ready;
	int from = -1, rc = 0;

	c->old_pipe = signal(SIGPIPE, SIG_IGN); /* a dead ssh: EPIPE, not death */
	snprintf(thr, sizeof(thr), "%u", m->d.cfg.threshold);
	snprintf(wait, sizeof(wait), "%u", m->wait_ms);
	c->pid = nfsl_remote_spawn(&m->rem, (char *const[]){ "adopt", "--name", m->o->name,
							     "--threshold", thr, "--wait", wait,
							     NULL },
				   &c->to, &from);
	if (c->pid < 0 || !(c->in = fdopen(from, "r"))) {
		if (from >= 0)
			close(from);
		return nfsl_err("cannot start nfslice adopt on %s; detach the new instance there",
				m->o->to);
	}
	ready = adopt_line(c->in, "ready");
	if (!ready || jnum(ready, "slots") < m->d.cfg.slots)
		rc = nfsl_err("the new instance on %s is not ready (%s); detach it there", m->o->to,
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
	c->r.t_start = c->r.t_imported = nfsl_now_ns();
	c->r.imp.restored = jnum(c->started, "imported");
	c->r.imp.conflicts = jnum(c->started, "conflicts");
	c->r.imp.raised = jnum(c->started, "raised");
	return 0;
}

/* The old splicer is gone: the copies it made stale are final; adopt frees
 * them at once (send_stale), as here_follow does, and reports the end. */
static int host_follow(struct copy_run *c)
{
	json_t *done;

	c->r.f.stale = send_stale(c->to, c->buf, c->size, c->ods.st.slots);
	close(c->to);
	c->to = -1;
	done = adopt_line(c->in, "done");
	c->r.t_end = nfsl_now_ns();
	if (!done)
		return nfsl_err("the new instance on %s slices, but did not report its copies' "
				"end (above)", c->m->o->to);
	c->r.f.spliced = jnum(done, "spliced_new");
	c->r.f.stale = jnum(done, "stale_copies");
	c->r.f.expired = jnum(done, "expired");
	c->r.f.left = jnum(done, "busy_left");
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
		*rc = nfsl_err("nfslice adopt on %s failed at its end (above)", c->m->o->to);
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
				c->memfd < 0 && !*err ? strerror(errno) : err, c->at, c->m->o->to);
	prealloc(c->memfd, &c->ods);
	return 0;
}

/* 2. The old slicer stops; what it was parking settles. Here the lock is
 * held from then until the new instance slices: no other session's
 * command waits inside the unsliced window. 3. The busy slots, every
 * generation, the clocks, the key: an image in memory. */
static int copy_take_image(struct copy_run *c, const struct copy_transport *tp)
{
	struct migration *m = c->m;
	char err[1024] = "";

	c->lock = switch_lock(&c->r.lock_ns);
	if (c->lock < 0)
		return -1;
	c->r.t_stop = nfsl_now_ns();
	if (nfsl_mig_threshold(m->d.dir, &c->lock, HOLD_THRESHOLD))
		return nfsl_err("stopping the old instance failed; both attached, the old one "
				"slicing: detach the new one %s %s", c->at, m->o->to);
	if (tp->unlock_early)
		switch_unlock(&c->lock);
	usleep(COPY_GRACE_US);
	if (nfsl_ckpt_dstore_clocks(&c->ods) ||
	    nfsl_ckpt_write(&c->ods.st, c->memfd, tp->ckpt_flags, &c->r.saved, err, sizeof(err)) ||
	    nfsl_ckpt_map(c->memfd, "the image", &c->buf, &c->size, err, sizeof(err))) {
		copy_rollback(m, &c->lock, *err ? err : "cannot read the old instance's cursors");
		return -1;
	}
	c->r.t_saved = nfsl_now_ns();
	return 0;
}

/* Copy mode, one path for both targets (the steps that differ in @tp):
 * the new instance attached holding and ready, the old slicer stopped,
 * the image taken and imported, the new instance slicing with both keys,
 * 6. the old node leaving the return path at once (its store stays mapped
 * here: it tells which copies the old splicer made stale), the copies
 * followed to their end. */
static int run_copy(struct migration *m)
{
	const struct copy_transport *tp = m->remote ? &copy_to_host : &copy_here;
	struct copy_run c = {
		.m = m, .at = m->remote ? "on" : "in", .ods = { .tcursor_fd = -1 },
		.memfd = -1, .lock = -1, .r = { .t0 = m->t0 },
		.nd = { .store_fd = -1 }, .nds = { .tcursor_fd = -1 }, .pid = -1, .to = -1,
	};
	int rc = -1, detach_rc;

	if (attach_new(m))
		return -1;
	if (tp->open(&c) || copy_open_old(&c) || copy_take_image(&c, tp) || tp->import(&c))
		goto out;
	switch_unlock(&c.lock);
	started_new(m);
	detach_rc = run_in_netns(NULL, (char *const[]){ "detach", "--name", m->o->name,
							"--no-drain", NULL });
	if (detach_rc)
		nfsl_err("detaching the old instance failed (above): it slices nothing, its "
			 "splicer may still splice; detach it by hand");
	c.r.t_detached = nfsl_now_ns();
	if (tp->follow(&c))
		goto out;
	report_copy(m->o, &c.r);
	rc = detach_rc ? -1 : 0;
out:
	switch_unlock(&c.lock);
	tp->close(&c, &rc);
	nfsl_ckpt_unmap(c.buf, c.size);
	if (c.memfd >= 0)
		close(c.memfd);
	nfsl_ckpt_dstore_close(&c.ods);
	return rc;
}

/* Count the comma-separated names of @list (NULL: 0). */
static __u32 count_list(const char *list)
{
	__u32 n = list && *list;

	for (; list && *list; list++)
		n += *list == ',';
	return n;
}

static int run_migrate(void *p, int argc, char **argv)
{
	const struct migrate_opts *o = p;
	struct migration m = { .o = o };
	char slots[16], keep[16], expiry[16];
	int n = 11, err, rc;

	if (!o->to)
		return nfsl_err("--to NETNS|ssh://HOST is required: the namespace of the new "
				"instance (a name under /run/netns, or a path), or its host"),
		       NFSL_EXIT_USAGE;
	m.remote = nfsl_remote_spec(o->to);
	if (m.remote) {
		if (nfsl_remote_parse(o->to, &m.rem))
			return NFSL_EXIT_USAGE;
	} else if (snprintf(m.ns, sizeof(m.ns), strchr(o->to, '/') ? "%s" : "/run/netns/%s",
			    o->to) >= (int)sizeof(m.ns) || access(m.ns, R_OK))
		return nfsl_err("--to %s: no such network namespace (%s): give a name "
				"'ip netns list' shows, or a path", o->to, m.ns), NFSL_EXIT_USAGE;
	err = nfsl_domain_open(&m.d, o->name);
	if (err)
		return nfsl_err_domain(err, o->name);
	snprintf(slots, sizeof(slots), "%u", m.d.cfg.slots);
	if (o->mode == MODE_COPY) {
		/* Every old index a slot of the new store: its partitions are
		 * CPUs x (1 + NF ports) of equal size (nfsl_config_split). */
		int ncpus = libbpf_num_possible_cpus();
		__u32 parts = (ncpus > 0 ? ncpus : 1) * (1 + count_list(o->nf_ports));

		snprintf(slots, sizeof(slots), "%u", (m.d.cfg.slots + parts - 1) / parts * parts);
	}
	snprintf(keep, sizeof(keep), "%u", m.d.cfg.keep);
	snprintf(expiry, sizeof(expiry), "%u", m.d.cfg.expiry);
	m.wait_ms = o->has_wait ? o->wait_ms :
		    m.d.cfg.ttl_us ? m.d.cfg.ttl_us / 1000 : 1000;
	memcpy(m.attach_argv, (char *[]){ "attach", "--name", o->name, "--threshold", "65535",
				  "--slots", slots, "--keep", keep, "--expiry", expiry },
	       11 * sizeof(char *));
	if (o->nf_ports) {
		m.attach_argv[n++] = "--nf-port";
		m.attach_argv[n++] = o->nf_ports;
	}
	for (int i = 0; i < argc && n < 30; i++)
		m.attach_argv[n++] = argv[i];
	m.attach_argv[n] = NULL;
	m.t0 = nfsl_now_ns();
	rc = o->mode == MODE_DRAIN ? run_drain(&m) : run_copy(&m);
	if (m.d.store_fd >= 0)
		nfsl_domain_close(&m.d);
	return rc;
}

#define OFF(f) offsetof(struct migrate_opts, f)
static const struct nfsl_opt migrate_table[] = {
	{ "name", NFSL_OPT_STR, OFF(name),
	  .check = nfsl_name_opt_check, .metavar = "NAME",
	  .help = "domain name, here and in the target (default: default)" },
	{ "to", NFSL_OPT_STR, OFF(to), .metavar = "NETNS|ssh://HOST",
	  .help = "where the new instance goes: a namespace (a name under /run/netns, or a "
		  "path) or another host ([USER@]HOST, through ssh)" },
	{ "mode", NFSL_OPT_ENUM, OFF(mode), .choices = migrate_modes, .metavar = "MODE",
	  .help = "drain (the old splicer stays until its payloads are spliced) or copy "
		  "(the payloads move, the old node leaves at once) (default: drain)" },
	{ "nf-port", NFSL_OPT_STR, OFF(nf_ports), .metavar = "IFACE[,IFACE]",
	  .help = "NF ports of the new instance (attach --nf-port)" },
	{ "wait", NFSL_OPT_DURATION, OFF(wait_ms), 0, 600000, .unit = NFSL_MS,
	  .given = NFSL_GIVEN(struct migrate_opts, has_wait), .metavar = "MS",
	  .help = "drain: longest drain of the old instance; copy: longest time the new "
		  "one honours the old key; ms (default: the TTL, else 1000)" },
	{ "json", NFSL_OPT_FLAG, OFF(json), .help = "print the counts and timings (ns) as one "
						  "JSON object" },
	{ NULL },
};

const struct nfsl_cmd nfsl_cmd_migrate = {
	.name = "migrate",
	.summary = "move a domain to a new instance in another namespace or host (drain or copy)",
	.args = "IFACE...",
	.min_args = 1,
	.max_args = 16,
	.description =
		"Moves domain NAME of this namespace to a new instance on the same path\n"
		"in namespace NETNS (e.g. one standing in for a smart NIC) or on another\n"
		"host, attached to IFACE... there, while traffic flows (UNO §3.3.2, loss-free migration:\n"
		"start the new instance, move the state, switch, retire the old one).\n"
		"The new instance is attached with its own key and a threshold no frame\n"
		"reaches (keep, expiry and TTL as the old one's); the old one stops\n"
		"slicing (threshold 65535). Tokens of either instance pass the other\n"
		"untouched (not its key), and a sliced header is never sliced again, so\n"
		"the two never drop each other's packets.\n"
		"\n"
		"drain (default): nothing copied. The new one starts (the old\n"
		"threshold, slots as the old one's); the old splicer splices what the\n"
		"old slicer parked until its store is empty or --wait ms have passed;\n"
		"then the old domain is detached. For an old node that stays on the\n"
		"return path until then.\n"
		"\n"
		"copy: for an old node that leaves the return path at once. The new\n"
		"store gets at least the old one's slots (rounded up to its\n"
		"partitions) so every index stays a slot. The old store's parked\n"
		"payloads (index, generation, bytes, metadata, parked time with a clock\n"
		"reference) and every slot's generation are copied into the new store\n"
		"(a checkpoint image in memory, docs/format.md), the old key becomes the\n"
		"new instance's second key, the new one starts slicing and splices\n"
		"tokens of both keys, and the old domain is detached without a drain\n"
		"(detach --no-drain). A copy whose header the old splicer spliced after\n"
		"the copy is freed as soon as the old store shows it; one whose header\n"
		"does not come back within the TTL (or --wait) is freed then. When no\n"
		"copy is left, the old key is forgotten and the command returns.\n"
		"\n"
		"Another host (--to ssh://[USER@]HOST): every step there is an nfslice\n"
		"command run through ssh (NFSLICE_RSH, default 'ssh -o BatchMode=yes';\n"
		"NFSLICE_REMOTE, the command there, default 'nfslice'); IFACE... and\n"
		"--nf-port name that host's interfaces. The unsliced window then holds\n"
		"one ssh command (drain: nfslice set there) or the image's transfer\n"
		"(copy: nfslice adopt there reads it, CRC-32 checked; ssh encrypts it,\n"
		"and it holds the key). A copy the old splicer spliced after the image\n"
		"is freed at the TTL there (the old store is not visible).\n"
		"\n"
		"Prints the unsliced window (old stopped .. new started, copy included)\n"
		"and the total time; drain: payloads parked at the switch and left after\n"
		"the drain (lost with the old store); copy: payloads and bytes copied,\n"
		"imported, and how each copy ended. --json gives them as unsliced_ns,\n"
		"total_ns, busy_at_switch, busy_left and the phases (drain: attach_ns,\n"
		"drain_ns, detach_ns; copy: attach_ns, export_ns, import_ns, detach_ns,\n"
		"key_old_ns; copy adds bytes, imported, conflicts, raised, spliced_new,\n"
		"stale_copies, expired).",
	.caps = NFSL_CAPS_CHANGE,
	.caps_why = NFSL_CAPS_CHANGE_WHY,
	.opts = migrate_table,
	.run = run_migrate,
	.opts_size = sizeof(struct migrate_opts),
	.defaults = &migrate_defaults,
};
